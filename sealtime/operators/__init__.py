"""The runtime operators: one class per operator, each in its own module.

`build` is the one place where a plan node's kind selects its operator class.

| module | operator |
|---|---|
| `source` | `SourceRead`, `SourceOutput`: a source's log, main and side outputs |
| `map`, `negate`, `consolidate`, `union`, `window`, `inspect` | stateless operators |
| `advance_time` | `AdvanceTime`: times rounded up to a multiple (stateless, delays time) |
| `reduce` | `Reduce` (accumulable kernel), `GeneralReduce` (any aggregate under retractions), `Distinct` |
| `top_k` | `TopK`: the first k rows per key at every time |
| `windowed_reduce` | `WindowedReduce`: per-window aggregate / top-k, emitted when sealed |
| `join` | `Join`: bilinear inner join over two (shareable) arrangements |
| `session_reduce` | `SessionReduce`: per-session aggregate / top-k (Spark-native, spilled state) |
| `timeout` | `Timeout`: a row when a key has had no update for a span of logical time |
"""

from __future__ import annotations

from ..dataflow.plan import Node
from ..dataflow.windows import Session
from .advance_time import AdvanceTime
from .base import Env, Operator, kernel_tasks, log_derived, row_source
from .consolidate import Consolidate
from .inspect import Inspect
from .join import Join
from .map import Map
from .negate import Negate
from .reduce import Distinct, GeneralReduce, Reduce, accumulable
from .session_reduce import SessionReduce
from .source import SourceOutput, SourceRead
from .timeout import Timeout
from .top_k import TopK
from .union import Union
from .window import AssignWindows
from .windowed_reduce import WindowedReduce

__all__ = ["Env", "Operator", "build", "kernel_tasks", "log_derived", "row_source"]

_STATELESS = {
    "source": SourceRead,
    "source_output": SourceOutput,
    "map": Map,
    "negate": Negate,
    "consolidate": Consolidate,
    "union": Union,
    "window": AssignWindows,
    "inspect": Inspect,
    "advance_time": AdvanceTime,
}


def build(node: Node, env: Env) -> Operator:
    """The runtime operator of a plan node."""
    if node.kind in _STATELESS:
        return _STATELESS[node.kind](node, env)
    if node.kind == "reduce":
        p = node.params
        src = node.inputs[0]
        if p["what"] == "top_k":
            return TopK(node, env)
        if accumulable(p["aggregates"], src.schema, src.monotonic):
            return Reduce(node, env)
        return GeneralReduce(node, env)
    if node.kind == "windowed_reduce":
        if isinstance(node.inputs[0].window, Session):
            return SessionReduce(node, env)
        return WindowedReduce(node, env)
    if node.kind == "join":
        return Join(node, env)
    if node.kind == "distinct":
        return Distinct(node, env)
    if node.kind == "timeout":
        return Timeout(node, env)
    raise NotImplementedError(f"no operator for plan node kind {node.kind!r}")
