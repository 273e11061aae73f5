"""The runtime operators: one class per operator, each in its own module.

`build` turns a plan node into its runtime operator through one table, from the node's
type (`sealtime.plan`) to the class (or, where the plan leaves a physical choice, a
function choosing the class).

| module | operator |
|---|---|
| `source` | `SourceRead`, `SourceOutput`: a source's log, main and side outputs |
| `map`, `negate`, `consolidate`, `union`, `window`, `inspect`, `constant` | stateless operators |
| `advance_time` | `AdvanceTime`: times rounded up to a multiple (stateless, delays time) |
| `reduce` | `Reduce` (accumulable kernel), `GeneralReduce` (any aggregate under retractions), `Distinct` |
| `top_k` | `TopK`: the first k rows per key at every time |
| `windowed_reduce` | `WindowedReduce`: per-window aggregate / top-k, emitted when sealed |
| `join` | `Join`: bilinear inner join over two (shareable) arrangements |
| `session_reduce` | `SessionReduce`: per-session aggregate / top-k (Spark-native, spilled state) |
| `timeout` | `Timeout`: a row when a key has had no update for a span of logical time |
| `over` | `Over` (window functions), `Collect` (list aggregates): touched partitions recomputed |
| `temporal_filter` | `TemporalFilter`: rows visible while ``since <= time < until`` (stateless, delays) |
| `interval_join` | `IntervalJoin`: a join whose sides drop rows no later row can match |
| `cumulate` | `AssignCumulating`: Flink's cumulating windows (stateless) |
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import plan as P
from ..errors import PlanError
from .advance_time import AdvanceTime
from .base import Env, LogReader, Operator, kernel_tasks
from .consolidate import Consolidate
from .constant import Constant
from .cumulate import AssignCumulating
from .inspect import Inspect
from .interval_join import IntervalJoin
from .join import Join
from .map import Filter, Map, Project
from .negate import Negate
from .over import Collect, Over
from .reduce import Distinct, reduce_operator
from .session_reduce import SessionReduce
from .shared import ArrangementKey, SharedArrangements
from .source import SourceOutput, SourceRead
from .temporal_filter import TemporalFilter
from .timeout import Timeout
from .top_k import TopK
from .union import Union
from .window import AssignWindows
from .windowed_reduce import WindowedReduce

__all__ = [
    "OPERATORS",
    "ArrangementKey",
    "Env",
    "LogReader",
    "Operator",
    "SharedArrangements",
    "build",
    "kernel_tasks",
]

#: the runtime operator of each plan node type
OPERATORS: dict[type[P.PlanNode], Callable[[Any, Env], Operator[Any]]] = {
    P.Source: SourceRead,
    P.SourceOutput: SourceOutput,
    P.Filter: Filter,
    P.Project: Project,
    P.Map: Map,
    P.Negate: Negate,
    P.Consolidate: Consolidate,
    P.Constant: Constant,
    P.Union: Union,
    P.AssignWindows: AssignWindows,
    P.Inspect: Inspect,
    P.AdvanceTime: AdvanceTime,
    P.Reduce: reduce_operator,
    P.Distinct: Distinct,
    P.TopK: TopK,
    P.WindowedReduce: WindowedReduce,
    P.SessionReduce: SessionReduce,
    P.Join: Join,
    P.Timeout: Timeout,
    P.Over: Over,
    P.Collect: Collect,
    P.TemporalFilter: TemporalFilter,
    P.IntervalJoin: IntervalJoin,
    P.AssignCumulating: AssignCumulating,
}


def build(node: P.PlanNode, env: Env) -> Operator[Any]:
    """The runtime operator of a plan node."""
    make = OPERATORS.get(type(node))
    if make is None:
        raise PlanError(f"no runtime operator for plan node {node.describe()}")
    return make(node, env)
