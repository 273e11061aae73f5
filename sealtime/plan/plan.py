"""`Plan`: what a dataflow hands the engine — nodes, sinks and run settings — and the
graph questions the engine asks of it.

>>> from pyspark.sql import types as T
>>> from sealtime.plan import Negate, Source
>>> from sealtime.sources import Rows
>>> s = T.StructType([T.StructField("k", T.StringType())])
>>> src = Source(id=0, name="s", inputs=(), schema=s, source=Rows({"k": "string"}, []))
>>> plan = Plan((src,), (), RunConfig("f", "/tmp/d"))
>>> plan.fingerprint()
["Source:s:[]:['k']:{'idle_timeout': None, 'lateness': None, 'max_future': None, 'max_rows': None, 'source': Rows, 'time_column': None}"]
>>> Plan((Negate(id=1, name="n", inputs=(src,), schema=s),), (), RunConfig("f", "/tmp/d"))
Traceback (most recent call last):
...
sealtime.errors.PlanError: plan: node 'n' reads node 's', which is not in this plan (a collection of another dataflow?)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..errors import PlanError
from .graph import GraphNode, graph_of
from .node import PlanNode
from .source import Source, SourceOutput

__all__ = [
    "DataPathTuning",
    "Plan",
    "RunConfig",
    "SinkEdge",
    "log_derived",
    "row_source",
    "upstream_sources",
]


class SinkEdge(NamedTuple):
    """A sink (a `sealtime.sinks.Sink`) and the node whose output it receives."""

    node: PlanNode
    sink: Any


@dataclass(frozen=True)
class DataPathTuning:
    """Thresholds of the data path that trade one cost against another, never results:
    any values give the same outputs (`Dataflow(tuning=...)`; the defaults are the
    measured break-even points, docs/dataplane.md).

    >>> DataPathTuning().pushdown_rows, DataPathTuning(copy_part_factor=0.0).copy_part_factor
    (750000, 0.0)
    """

    #: a tick that takes part of an immutable Parquet file logs a copy of the part when the
    #: rest of the file holds more than this many times its rows (event time); otherwise
    #: it links the file and reads the part by row index ("Parts of large files")
    copy_part_factor: float = 1.0
    #: `copy_part_factor` in ingestion time, where each part is read by one tick only
    copy_part_factor_ingestion: float = 6.0
    #: rows outside a tick's range (estimated) above which a range filter on event time
    #: has literal bounds (pushed down to skip row groups, new generated code per tick);
    #: at or below it, run-time bounds (the same code every tick)
    pushdown_rows: int = 750_000
    #: bytes of rows an Arrow sink may hold collected ahead of the frontier
    #: (`sealtime.engine.ahead`); beyond it the sink collects each tick's sealed rows alone
    ahead_max_bytes: int = 256 * 2**20


@dataclass(frozen=True)
class RunConfig:
    """The settings of a run that the engine needs (no user objects, no Spark).

    >>> RunConfig("f", "/tmp/d", record=False).checkpoint_every is None
    True
    """

    name: str
    data_dir: str
    record: bool = True
    shuffle_partitions: int | None = None
    checkpoint_every: int | None = None
    truncate_log: bool = True
    #: the graph changes while it runs (views added and dropped): a resumed data dir is
    #: not checked against one fingerprint of the whole plan
    live: bool = False
    #: keyed operators over per-row functions of one collection share one Spark job a
    #: tick (`sealtime.engine.fusion`); False runs each alone (same results)
    fuse: bool = True
    #: the data dir's lease length in seconds and a forced takeover of a live owner
    #: (`sealtime.storage.ownership`; None: the process's defaults, as ``--lease``)
    lease: float | None = None
    takeover: bool | None = None
    #: data-path thresholds (`DataPathTuning`): costs only, never results
    tuning: DataPathTuning = DataPathTuning()


@dataclass(frozen=True)
class Plan:
    """The operator nodes in topological order, each sink with the node it reads, and
    the run settings. Frozen: the engine never looks at the `Dataflow` object, and the
    graph cannot change under a run. It checks itself when built (every input and every
    sink's node is in the plan, each sink object is used once).

    `fingerprint()` is the canonical text of every node and sink kind: a data dir
    written by one plan is refused to a plan with another (naming the first
    difference).
    """

    nodes: tuple[PlanNode, ...]
    sinks: tuple[SinkEdge, ...]
    config: RunConfig

    def __post_init__(self) -> None:
        known = {id(n) for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                if id(i) not in known:
                    raise PlanError(
                        f"plan: node {n.name!r} reads node {i.name!r}, which is not in this "
                        "plan (a collection of another dataflow?)"
                    )
        seen: set[int] = set()
        for node, sink in self.sinks:
            if id(node) not in known:
                raise PlanError(f"plan: a sink reads node {node.name!r}, not in this plan")
            if id(sink) in seen:
                raise PlanError(
                    f"plan: one {type(sink).__name__} object receives two collections; give "
                    "each collection its own sink object"
                )
            seen.add(id(sink))

    def fingerprint(self) -> list[str]:
        """Every node's `PlanNode.fingerprint` and each sink's kind."""
        lines = [n.fingerprint() for n in self.nodes]
        lines += [f"sink:{node.id}:{type(sink).__name__}" for node, sink in self.sinks]
        return lines

    def graph(self) -> list[GraphNode]:
        """The plan as progress tracking sees it (roots, edges, path summaries)."""
        return graph_of(self.nodes)

    def sources(self) -> list[Source]:
        """The source nodes, in plan order."""
        return [n for n in self.nodes if isinstance(n, Source)]

    def readers(self) -> dict[int, list[int]]:
        """Per node id, the ids of the nodes that read its output frame (a side output
        reads its source's log, not the source's output)."""
        out: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for node in self.nodes:
            if isinstance(node, SourceOutput):
                continue
            for inp in node.inputs:
                out[inp.id].append(node.id)
        return out

    def upstream(self, node_ids: Iterable[int]) -> set[int]:
        """The given nodes and every node they are computed from."""
        out = set(node_ids)
        for node in reversed(self.nodes):  # reverse topological order
            if node.id in out:
                out.update(i.id for i in node.inputs)
        return out

    def downstream(self, node_id: int) -> set[int]:
        """The node and every node computed from it."""
        out = {node_id}
        for node in self.nodes:  # topological order
            if any(i.id in out for i in node.inputs):
                out.add(node.id)
        return out


def log_derived(node: PlanNode) -> bool:
    """Is `node`'s output a plan over one source's ingest log alone: a source or a side
    output, or recomputable one-input operators over one? Its updates over any time
    range can then be built again from the log, as one plan for several ticks.

    >>> from pyspark.sql import types as T
    >>> from sealtime.plan import Negate, Distinct, Source
    >>> from sealtime.sources import Rows
    >>> s = T.StructType([T.StructField("k", T.StringType())])
    >>> src = Source(id=0, name="s", inputs=(), schema=s, source=Rows({"k": "string"}, []))
    >>> neg = Negate(id=1, name="n", inputs=(src,), schema=s)
    >>> log_derived(neg), log_derived(Distinct(id=2, name="d", inputs=(neg,), schema=s))
    (True, False)
    """
    while node.recomputable:
        node = node.inputs[0]
    return isinstance(node, (Source, SourceOutput))


def row_source(node: PlanNode) -> Source | None:
    """The source whose main output `node` is, through per-row operators only (None:
    `node` is something else). Such a node's updates can be computed from each log
    entry once, at all its times, and handed out as their times are sealed.

    >>> from pyspark.sql import types as T
    >>> from sealtime.plan import Consolidate, Negate, Source
    >>> from sealtime.sources import Rows
    >>> s = T.StructType([T.StructField("k", T.StringType())])
    >>> src = Source(id=0, name="s", inputs=(), schema=s, source=Rows({"k": "string"}, []))
    >>> row_source(Negate(id=1, name="n", inputs=(src,), schema=s)) is src
    True
    >>> row_source(Consolidate(id=1, name="c", inputs=(src,), schema=s)) is None
    True
    """
    while node.per_row:
        node = node.inputs[0]
    return node if isinstance(node, Source) else None


def upstream_sources(node: PlanNode) -> frozenset[int]:
    """The ids of the roots (sources, side outputs) whose frontiers decide `node`'s."""
    if not node.inputs or node.own_frontier:
        return frozenset([node.id])
    out: frozenset[int] = frozenset()
    for i in node.inputs:
        out |= upstream_sources(i)
    return out
