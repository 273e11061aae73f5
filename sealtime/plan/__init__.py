"""The logical plan: one frozen dataclass per operator, with typed fields.

`sealtime.dataflow` (the Python API) and `sealtime.sql` build plans; `sealtime.operators`
turns each node into a runtime operator (a type → class table) and `sealtime.engine`
runs them. Nothing here runs Spark: a plan is data (see README.md for the code map).
"""

from .aggregates import Aggregate, AggregateKind
from .constant import Constant
from .cumulate import AssignCumulating, Cumulating
from .graph import GRAPH_NAMESPACE, GraphNode, graph_of
from .interval_join import IntervalJoin
from .join import Join
from .node import NOT_FINGERPRINTED, WINDOW_END, WINDOW_START, PlanNode
from .order import OrderKey, parse_order_by
from .over import Collect, CollectList, Over, OverFunction, OverOrder
from .plan import (
    DataPathTuning,
    Plan,
    RunConfig,
    SinkEdge,
    log_derived,
    row_source,
    upstream_sources,
)
from .reduce import Aggregation, Distinct, Reduce, SessionReduce, TopK, TopKOrder, WindowedReduce
from .source import Connector, SideOutput, Source, SourceOutput
from .stateless import (
    AdvanceTime,
    AssignWindows,
    Consolidate,
    Filter,
    Inspect,
    Map,
    Negate,
    Project,
    Union,
)
from .temporal import TemporalFilter
from .timeout import LAST_UPDATE, TIMED_OUT_AT, Timeout
from .windows import Session, Sliding, Tumbling, WindowSpec

__all__ = [
    "GRAPH_NAMESPACE",
    "LAST_UPDATE",
    "NOT_FINGERPRINTED",
    "TIMED_OUT_AT",
    "WINDOW_END",
    "WINDOW_START",
    "AdvanceTime",
    "AssignCumulating",
    "Aggregate",
    "AggregateKind",
    "Aggregation",
    "AssignWindows",
    "Collect",
    "CollectList",
    "Connector",
    "Consolidate",
    "Constant",
    "Cumulating",
    "DataPathTuning",
    "Distinct",
    "Filter",
    "GraphNode",
    "Inspect",
    "IntervalJoin",
    "Join",
    "Map",
    "Negate",
    "OrderKey",
    "Over",
    "OverFunction",
    "OverOrder",
    "Plan",
    "PlanNode",
    "Project",
    "Reduce",
    "RunConfig",
    "Session",
    "SessionReduce",
    "SideOutput",
    "SinkEdge",
    "Sliding",
    "Source",
    "SourceOutput",
    "TemporalFilter",
    "Timeout",
    "TopK",
    "TopKOrder",
    "Tumbling",
    "Union",
    "WindowSpec",
    "WindowedReduce",
    "graph_of",
    "log_derived",
    "parse_order_by",
    "row_source",
    "upstream_sources",
]
