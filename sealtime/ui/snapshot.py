"""One immutable snapshot of a running dataflow per tick, for the web page and metrics.

The engine calls `Monitor.publish` once at the end of every tick. Publishing reads the
engine's typed snapshot (`sealtime.engine.snapshot.EngineSnapshot`: frontiers, counters,
the bindings just minted, publishers' subscriber counts; no Spark job, no py4j call, no
file I/O) and the tick's report, never the engine's attributes. It builds a frozen
`Snapshot` and swaps one reference, so readers (the web server's threads, the Prometheus
collector) never lock the tick and never see a half-updated state.

Times are milliseconds (the data plane's logical time). *Lag* is the ticker's clock at
the tick (the binding's ``into_time``, from the injectable ``Dataflow(clock=...)``)
minus a frontier: how far a stream's completeness trails the clock.

>>> m = Monitor(None, history=3)
>>> m.snapshot.tick, m.version
(0, 0)
"""

from __future__ import annotations

import dataclasses
import threading
import time as _time
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import Any

from ..engine.bindings import Binding
from ..engine.snapshot import EngineSnapshot, PublicationView, SourceView
from ..time.order import MIN_TIME
from .layout import layout

__all__ = [
    "TICK_BUCKETS",
    "EdgeInfo",
    "Monitor",
    "NodeInfo",
    "OperatorCounts",
    "PublicationInfo",
    "Snapshot",
    "SourceInfo",
    "TickPoint",
]

#: Upper bounds (seconds) of the tick-duration histogram's buckets.
TICK_BUCKETS: tuple[float, ...] = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


@dataclass(frozen=True)
class OperatorCounts:
    """An operator's numbers for the page and `/metrics`: those of the latest tick and
    running totals since the monitor started (`sealtime.engine.stats.OperatorStats`).

    `counting` says how rows are measured: ``"kernel"`` (inside its Spark tasks),
    ``"source"`` (at ingestion), ``"fused"`` (a stateless expression run inside its
    consumer's stage: no count of its own) or ``"native"`` (not counted). A count is
    None where it is not measured — never a made-up number. In a tick where the
    operator did not step, its rows and times are 0 and its state is the last known.

    >>> OperatorCounts("fused").rows_in is None
    True
    """

    counting: str
    #: the latest tick's rows in / out, state rows after it, driver and kernel seconds
    rows_in: int | None = None
    rows_out: int | None = None
    state_rows: int | None = None
    plan_seconds: float = 0.0
    kernel_seconds: float | None = None
    #: totals since the monitor started; `steps`: ticks in which the operator stepped
    steps: int = 0
    rows_in_total: int | None = None
    rows_out_total: int | None = None
    plan_seconds_total: float = 0.0
    kernel_seconds_total: float | None = None


@dataclass(frozen=True)
class NodeInfo:
    """One operator (or sink) of the graph, with its frontiers after the tick."""

    id: int
    kind: str
    name: str
    inputs: tuple[int, ...]
    x: float
    layer: int
    #: frontier at the operator's input / of its output (None: finished)
    frontier_in: int | None = None
    frontier_out: int | None = None
    lag_ms: int | None = None
    #: the time range ``[lo, hi)`` the operator processed in this tick, if any
    sealed: tuple[int, int | None] | None = None
    #: rows that entered at this operator in this tick and in all (sources only; other
    #: operators' counts would need a Spark job per tick)
    rows_tick: int | None = None
    rows_total: int | None = None
    stateful: bool = False
    #: directory of durable state (its size is measured off the tick, by the reader)
    state_dir: str | None = None
    #: a sink reads it or a downstream operator does (unread side outputs cost nothing)
    read: bool = True
    #: rows in/out, state rows and times (None: sinks, or before the first tick)
    counts: OperatorCounts | None = None

    @property
    def is_sink(self) -> bool:
        """Is this box a sink (sinks are not plan nodes: they have negative ids)?"""
        return self.id < 0


@dataclass(frozen=True)
class EdgeInfo:
    """An edge ``src -> dst``; its frontier is the frontier of `src`'s output."""

    src: int
    dst: int
    frontier: int | None
    lag_ms: int | None


@dataclass(frozen=True)
class SourceInfo(SourceView):
    """A source as the engine reports it (`SourceView`) after the tick, with what the
    page adds: its lag behind the binding time and the rows this tick read."""

    lag_ms: int | None = None
    rows_tick: int = 0


#: a published topic: its mode, addresses and subscribers' queue depths (the engine's)
PublicationInfo = PublicationView


@dataclass(frozen=True)
class TickPoint:
    """One point of the tick plot."""

    tick: int
    into_time: int
    seconds: float
    rows: int
    frontier: int | None


@dataclass(frozen=True)
class Snapshot:
    """Everything the page and `/metrics` show, as of the end of one tick.

    Never mutated after `Monitor.publish` builds it; `to_dict` gives its JSON form.
    """

    flow: str
    data_dir: str
    tick: int = 0
    into_time: int | None = None
    frontier: int | None = None
    seconds: float = 0.0
    rows_in: int = 0
    #: wall-clock seconds when published (display only: "updated 2 s ago")
    published_at: float = 0.0
    # Tuples of records alike in form to EngineSnapshot's on purpose: the UI keeps its
    # own shapes (it reads the snapshot only).
    nodes: tuple[NodeInfo, ...] = ()
    edges: tuple[EdgeInfo, ...] = ()
    sources: tuple[SourceInfo, ...] = ()
    publications: tuple[PublicationInfo, ...] = ()
    history: tuple[TickPoint, ...] = ()
    bindings: tuple[Binding, ...] = ()
    bindings_total: int = 0
    commits_total: int = 0
    #: cumulative tick-duration histogram: counts per `TICK_BUCKETS` bound, +Inf last
    tick_buckets: tuple[int, ...] = field(default=(0,) * (len(TICK_BUCKETS) + 1))
    tick_seconds_sum: float = 0.0
    recovered_from: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able dict (bindings reduced to positions and frontiers)."""
        out = asdict(self)
        out["bindings"] = [_binding_summary(b) for b in self.bindings]
        for s in out["sources"]:
            s["late_files"] = len(s["late_files"])
            s["error_files"] = len(s["error_files"])
        return out

    def source(self, name: str) -> SourceInfo | None:
        """The source named `name`, if any."""
        return next((s for s in self.sources if s.name == name), None)


def _binding_summary(b: Binding) -> dict[str, Any]:
    return {
        "tick": b.tick,
        "into_time": b.into_time,
        "sources": {
            name: {"position": part.position, "frontier": part.frontier, "rows": part.rows}
            for name, part in b.sources.items()
        },
    }


def _add(total: Any, value: Any, steps: int) -> Any:
    """A running total that stays None once a step was not counted (a partial sum would
    be a made-up number), and starts at the first counted step."""
    if value is None or (total is None and steps):
        return None
    return (total or 0) + value


def _lag(clock: int | None, frontier: int | None) -> int | None:
    if clock is None or frontier is None:
        return None
    return max(0, clock - frontier)


class Monitor:
    """Holds the latest `Snapshot` of one dataflow and the short history behind it.

    `publish(engine, report)` is the engine's per-tick hook; `snapshot` is what readers
    take (a plain attribute read: the swap is atomic). `history` is the number of
    ticks the plot keeps; `bindings` the number of recent bindings the page shows.
    """

    def __init__(self, flow: Any, history: int = 120, bindings: int = 50) -> None:
        self.flow = flow
        self._history: deque[TickPoint] = deque(maxlen=history)
        self._bindings = bindings
        self._buckets = [0] * (len(TICK_BUCKETS) + 1)
        self._seconds_sum = 0.0
        self._commits = 0
        #: per operator: its counts as of the latest tick (running totals included)
        self._counts: dict[int, OperatorCounts] = {}
        self._changed = threading.Condition()
        self.version = 0
        if flow is None:
            self.snapshot = Snapshot("", "", published_at=_time.time())
        else:
            state = flow.engine.snapshot() if flow.started else None
            self.snapshot = self._build(state, None)

    # ------------------------------------------------------------------ the hook
    def publish(self, engine: Any, report: Any) -> None:
        """Build and swap in the snapshot of the tick `report` describes (called by the
        engine at the end of each tick)."""
        self._history.append(
            TickPoint(
                report.tick, report.into_time, report.seconds, report.rows_in, report.frontier
            )
        )
        i = next((k for k, b in enumerate(TICK_BUCKETS) if report.seconds <= b), len(TICK_BUCKETS))
        for k in range(i, len(self._buckets)):  # cumulative, like Prometheus' `le`
            self._buckets[k] += 1
        self._seconds_sum += report.seconds
        state = engine.snapshot()
        self._commits += sum(1 for sink in state.sinks if sink.node in report.sealed)
        self._count(state, report)
        snap = self._build(state, report)
        with self._changed:
            self.snapshot = snap
            self.version += 1
            self._changed.notify_all()

    def _count(self, state: EngineSnapshot, report: Any) -> None:
        """Fold the tick's `OperatorStats` into each operator's `OperatorCounts`."""
        stats = report.operators
        for op in state.operators:
            nid = op.id
            before = self._counts.get(nid) or OperatorCounts(op.counting)
            s = stats.get(nid)
            if s is None:  # did not step: nothing went in or out (where it is counted)

                def idle(last: Any) -> Any:
                    return 0 if last is not None else None

                self._counts[nid] = dataclasses.replace(
                    before,
                    rows_in=idle(before.rows_in),
                    rows_out=idle(before.rows_out),
                    plan_seconds=0.0,
                    kernel_seconds=idle(before.kernel_seconds),
                )
                continue
            self._counts[nid] = OperatorCounts(
                counting=s.counting,
                rows_in=s.rows_in,
                rows_out=s.rows_out,
                state_rows=s.state_rows if s.state_rows is not None else before.state_rows,
                plan_seconds=s.plan_seconds,
                kernel_seconds=s.kernel_seconds,
                steps=before.steps + 1,
                rows_in_total=_add(before.rows_in_total, s.rows_in, before.steps),
                rows_out_total=_add(before.rows_out_total, s.rows_out, before.steps),
                plan_seconds_total=before.plan_seconds_total + s.plan_seconds,
                kernel_seconds_total=_add(
                    before.kernel_seconds_total, s.kernel_seconds, before.steps
                ),
            )

    def wait(self, version: int, timeout: float) -> int:
        """Block until a snapshot newer than `version` exists (or `timeout`); returns
        the current version."""
        with self._changed:
            self._changed.wait_for(lambda: self.version > version, timeout=timeout)
            return self.version

    # ------------------------------------------------------------------ building
    def _build(self, state: EngineSnapshot | None, report: Any) -> Snapshot:
        """The page's snapshot: from the engine's `state` once it runs, else from the
        dataflow's plan (the graph, nothing sealed)."""
        flow = self.flow
        if state is None:
            plan = flow.compile()
            ops = [
                (n.id, n.kind, n.name, tuple(i.id for i in n.inputs), MIN_TIME, MIN_TIME)
                for n in plan.nodes
            ]
            sinks = [
                (-(k + 1), node.id, type(sink).__name__)
                for k, (node, sink) in enumerate(plan.sinks)
            ]
            views = {}
        else:
            ops = [
                (o.id, o.kind, o.name, o.inputs, o.frontier_in, o.frontier_out)
                for o in state.operators
            ]
            sinks = [(-(k.index + 1), k.node, k.kind) for k in state.sinks]
            views = {o.id: o for o in state.operators}
        names = {nid: name for nid, _, name, *_ in ops}
        graph: dict[int, list[int]] = {nid: list(ins) for nid, _, _, ins, _, _ in ops}
        for sid, node, _ in sinks:
            graph[sid] = [node]  # (sinks get negative ids: they are not plan nodes)
        pos = layout(graph)
        clock = report.into_time if report is not None else None
        binding = state.bindings[-1] if state is not None and state.bindings else None
        clock = clock if clock is not None else (binding.into_time if binding else None)
        consumers = {nid: 0 for nid, *_ in ops}
        for ins in graph.values():
            for i in ins:
                consumers[i] = consumers.get(i, 0) + 1
        sources = {s.node: s for s in state.sources} if state is not None else {}
        infos: list[NodeInfo] = []
        out_frontier: dict[int, int | None] = {}
        for nid, kind, name, ins, f_in, f_out in ops:
            out_frontier[nid] = f_out
            src = sources.get(nid)
            rows_tick = None
            if src is not None and binding is not None:
                part = binding.sources.get(src.name)
                rows_tick = part.rows if part is not None else 0
            view = views.get(nid)
            infos.append(
                NodeInfo(
                    id=nid,
                    kind=kind,
                    name=name,
                    inputs=tuple(ins),
                    x=pos[nid][0],
                    layer=pos[nid][1],
                    frontier_in=f_in,
                    frontier_out=f_out,
                    lag_ms=_lag(clock, f_out),
                    sealed=(report.sealed.get(nid) if report is not None else None),
                    rows_tick=rows_tick,
                    rows_total=src.rows if src is not None else None,
                    stateful=view.stateful if view is not None else False,
                    state_dir=view.state_dir if view is not None else None,
                    read=view.read if view is not None else consumers[nid] > 0,
                    counts=self._counts.get(nid),
                )
            )
        for sid, node, kind in sinks:
            f = out_frontier.get(node)
            # A sink is drawn as a node too: alike in form to the NodeInfo above, its values its own.
            infos.append(
                NodeInfo(
                    id=sid,
                    kind="sink",
                    name=f"{kind} ← {names.get(node, node)}",
                    inputs=(node,),
                    x=pos[sid][0],
                    layer=pos[sid][1],
                    frontier_in=f,
                    frontier_out=f,
                    lag_ms=_lag(clock, f),
                    sealed=(report.sealed.get(node) if report is not None else None),
                )
            )
        edges = tuple(
            EdgeInfo(i, n.id, out_frontier.get(i), _lag(clock, out_frontier.get(i)))
            for n in infos
            for i in n.inputs
        )
        infos_sources = tuple(
            SourceInfo(
                **{f.name: getattr(s, f.name) for f in dataclasses.fields(s)},
                lag_ms=_lag(clock, s.frontier),
                rows_tick=(
                    binding.sources[s.name].rows
                    if binding is not None and s.name in binding.sources
                    else 0
                ),
            )
            for s in (state.sources if state is not None else ())
        )
        return Snapshot(
            flow=flow.name,
            data_dir=flow.data_dir,
            tick=state.tick if state is not None else 0,
            into_time=clock,
            frontier=report.frontier if report is not None else None,
            seconds=report.seconds if report is not None else 0.0,
            rows_in=report.rows_in if report is not None else 0,
            published_at=_time.time(),
            nodes=tuple(infos),
            edges=edges,
            sources=infos_sources,
            publications=state.publications if state is not None else (),
            history=tuple(self._history),
            bindings=state.bindings[-self._bindings :] if state is not None else (),
            bindings_total=state.bindings_total if state is not None else 0,
            commits_total=self._commits,
            tick_buckets=tuple(self._buckets),
            tick_seconds_sum=self._seconds_sum,
            recovered_from=dict(state.recovered_from) if state is not None else {},
        )
