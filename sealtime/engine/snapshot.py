"""`EngineSnapshot`: the engine's state as a typed, read-only record.

Everything above the engine (the web view, ``/metrics``, ``sealtime status``, tests)
reads the engine through `Engine.snapshot()`, never through its attributes —
introspection is data, as Materialize's ``mz_*`` relations are. Building a snapshot
reads only Python objects the engine holds (frontiers, counters, the latest bindings):
no Spark job, no py4j call, no file I/O, so it is cheap enough to take every tick.

>>> s = EngineSnapshot(flow="f", data_dir="/d", tick=0)
>>> s.operator(3) is None, s.source("bids") is None, s.frontier is None
(True, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..plan import Source
from ..sinks.publish import Publish
from .bindings import Binding
from .frontiers import f_min

if TYPE_CHECKING:
    from .coordinator import Engine
    from .ingest import SourceRuntime

__all__ = [
    "SNAPSHOT_BINDINGS",
    "SNAPSHOT_LOG_LOOKBACK",
    "EngineSnapshot",
    "LogFileView",
    "OperatorView",
    "PublicationView",
    "SinkView",
    "SourceView",
]


#: how many recent bindings a snapshot carries, and log entries it looks back over
SNAPSHOT_BINDINGS = 50
SNAPSHOT_LOG_LOOKBACK = 256


@dataclass(frozen=True)
class OperatorView:
    """One operator of the plan and where it stands.

    * `frontier_in`: its input frontier after its last step (None: finished);
      `frontier_out`: its output's, through its path summary;
    * `counting`: how its rows are measured (`sealtime.operators.Operator.counting`);
    * `state_dir`: the directory of its durable state (None: stateless);
    * `read`: a sink or a downstream operator reads it (unread side outputs cost
      nothing);
    * `waiting`: its input waits in the log from this time on (None: nothing waits).
    """

    id: int
    kind: str
    name: str
    inputs: tuple[int, ...]
    frontier_in: int | None
    frontier_out: int | None
    stateful: bool
    counting: str
    state_dir: str | None
    read: bool
    waiting: int | None = None
    #: hydrating: catching up with its inputs' history before it joins the live ticks;
    #: `copy_of`: a hydrating copy of this live node (None: not a copy)
    hydrating: bool = False
    copy_of: int | None = None
    #: the members of the fusion group it runs in, itself included (`sealtime.engine.
    #: fusion`: one Spark job a tick for all of them); empty: it runs alone
    fused_with: tuple[int, ...] = ()


# The views are parallel frozen dataclasses on purpose: plain read-only records.
@dataclass(frozen=True)
class LogFileView:
    """A recent ingest-log entry holding late or error rows."""

    path: str
    late_path: str
    late: int


@dataclass(frozen=True)
class SourceView:
    """A source's health, positions and counters."""

    name: str
    node: int
    health: str | None
    position: Any
    acknowledged: Any
    frontier: int | None
    rows: int
    late: int
    errors: int
    exhausted: bool
    event_time: bool
    #: recent log entries holding late rows / error rows
    late_files: tuple[LogFileView, ...] = ()
    error_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class SinkView:
    """A sink and the node whose output it receives."""

    index: int
    node: int
    kind: str
    exactly_once: bool


@dataclass(frozen=True)
class PublicationView:
    """A published topic: its mode, addresses and subscribers' queue depths."""

    topic: str
    mode: str
    addresses: tuple[str, ...]
    subscribers: int
    #: per partition: {subscriber peer: messages waiting in its queue}
    queues: tuple[dict[str, int], ...] = ()


@dataclass(frozen=True)
class EngineSnapshot:
    """The engine after its latest tick (see the module docstring).

    `bindings` are the most recent ones (oldest first), `bindings_total` how many were
    minted; `recovered_from` says what a restart resumed from (``ticks``, ``checkpoint``).
    """

    flow: str
    data_dir: str
    tick: int
    operators: tuple[OperatorView, ...] = ()
    sources: tuple[SourceView, ...] = ()
    sinks: tuple[SinkView, ...] = ()
    publications: tuple[PublicationView, ...] = ()
    bindings: tuple[Binding, ...] = ()
    bindings_total: int = 0
    recovered_from: dict[str, Any] = field(default_factory=dict)
    replaying: bool = False
    finished: bool = False

    @property
    def into_time(self) -> int | None:
        """The latest binding's time (None before the first)."""
        return self.bindings[-1].into_time if self.bindings else None

    @property
    def frontier(self) -> int | None:
        """The least input frontier over all operators (None: everything is sealed)."""
        return f_min(o.frontier_in for o in self.operators)

    def operator(self, node_id: int) -> OperatorView | None:
        """The operator of plan node `node_id`, if any."""
        return next((o for o in self.operators if o.id == node_id), None)

    def source(self, name: str) -> SourceView | None:
        """The source named `name`, if any."""
        return next((s for s in self.sources if s.name == name), None)


def snapshot_of(engine: Engine) -> EngineSnapshot:
    """`engine`'s state now (what `Engine.snapshot` returns)."""
    read = {nid for nid, readers in engine.dataplane.readers.items() if readers}
    copies = {c: live for g in engine.hydrations.groups for c, live in g.copies.items()}
    hydrating = engine.hydrating() | set(copies)
    read |= {node.id for node, _ in engine.plan.sinks}
    fused = {
        m.id: tuple(x.id for x in g.members) for g in engine.dataplane.groups for m in g.members
    }
    operators = tuple(
        OperatorView(
            id=node.id,
            kind=node.kind,
            name=node.name,
            inputs=tuple(i.id for i in node.inputs),
            frontier_in=engine.dataplane.done[node.id],
            frontier_out=engine.frontier_of(node),
            stateful=engine.ops[node.id].stateful,
            counting=engine.ops[node.id].counting,
            state_dir=engine.ops[node.id].env.state_dir if engine.ops[node.id].stateful else None,
            read=node.id in read or isinstance(node, Source),
            waiting=w.lo if (w := engine.dataplane.waiting.get(node.id)) else None,
            hydrating=node.id in hydrating,
            copy_of=copies.get(node.id),
            fused_with=fused.get(node.id, ()),
        )
        for node in engine.plan.nodes
    )
    return EngineSnapshot(
        flow=engine.config.name,
        data_dir=engine.config.data_dir,
        tick=engine.tick_no,
        operators=operators,
        sources=tuple(_source_view(engine, nid, s) for nid, s in engine.sources.items()),
        sinks=tuple(
            SinkView(i, node.id, type(sink).__name__, bool(sink.exactly_once))
            for i, (node, sink) in enumerate(engine.plan.sinks)
        ),
        publications=tuple(
            PublicationView(
                topic=sink.topic,
                mode=sink.mode,
                addresses=tuple(f"{h}:{p}" for h, p in sink.addresses),
                subscribers=sum(p.subscriber_count for p in sink.publishers),
                queues=tuple(p.queue_depths for p in sink.publishers),
            )
            for _, sink in engine.plan.sinks
            if isinstance(sink, Publish)
        ),
        bindings=tuple(engine.bindings[-SNAPSHOT_BINDINGS:]),
        bindings_total=len(engine.bindings),
        recovered_from=dict(engine.recovered_from),
        replaying=engine.replaying,
        finished=engine.finished(),
    )


def _source_view(engine: Engine, nid: int, s: SourceRuntime) -> SourceView:
    # Fields copied by name: alike only in form to other keyword-argument calls.
    return SourceView(
        name=s.name,
        node=nid,
        health=s.health,
        position=s.position,
        acknowledged=engine.remap.acknowledged.get(s.name),
        frontier=s.frontier,
        rows=s.rows_in,
        late=s.late_count,
        errors=s.error_count,
        exhausted=s.exhausted,
        event_time=s.event_time,
        late_files=tuple(
            LogFileView(f.path, f.late_path, f.late)
            for f in s.files[-SNAPSHOT_LOG_LOOKBACK:]
            if f.late != 0
        ),
        error_files=tuple(f.path for f in s.error_files[-SNAPSHOT_LOG_LOOKBACK:]),
    )
