"""Views added and dropped while a dataflow runs: the engine's changing plan.

`LivePlan` holds the part of `sealtime.engine.coordinator.Engine` that changes the
running plan between ticks: `extend` adds nodes and sinks (new sources go live at once;
everything else hydrates first, in groups of copies: `sealtime.engine.hydration`),
`shrink` removes them with their state, and a group that caught up joins the live plan
(`_merge_hydrated`). Every change ends in `_replan`; before the next tick (or checkpoint,
or snapshot) `_refresh_plan` hands the new plan, once for all changes since, to the
frontier tracker, the sink stage and the dataplane (whose fusion groups are found again:
`sealtime.engine.fusion`). Nothing here runs inside a tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import StateError
from ..plan import Plan, PlanNode, SinkEdge, Source, SourceOutput
from ..time.order import MIN_TIME
from .frontiers import FrontierTracker

if TYPE_CHECKING:
    from ..operators import Operator
    from ..storage.fs import DataFS
    from .bindings import Binding
    from .commits import SinkStage
    from .dataplane import Dataplane
    from .hydration import Hydrations
    from .ingest import SourceRuntime
    from .retention import LogRetention

__all__ = ["LivePlan"]


class LivePlan:
    """The plan-changing methods of the engine (see the module docstring); the engine
    provides the attributes declared here."""

    _plan: Plan
    config: Any
    live_nodes: list[PlanNode]
    live_sinks: list[SinkEdge]
    hydrations: Hydrations
    sources: dict[int, SourceRuntime]
    log_readers: dict[int, SourceRuntime]
    ops: dict[int, Operator[Any]]
    sinks: SinkStage
    dataplane: Dataplane
    retention: LogRetention
    tracker: FrontierTracker
    data_fs: DataFS
    bindings: list[Binding]

    def _open_sources(
        self, nodes: Sequence[Source], stored: list[Binding], acked: dict[str, Any]
    ) -> dict[int, SourceRuntime]:
        raise NotImplementedError  # (the engine's)

    def _build_operators(self, nodes: Sequence[PlanNode]) -> dict[int, Operator[Any]]:
        raise NotImplementedError  # (the engine's)

    def extend(self, nodes: Sequence[PlanNode], sinks: Sequence[SinkEdge] = ()) -> None:
        """Add `nodes` (topological order, reading live nodes or each other) and
        `sinks` between ticks. New sources and their side outputs go live at once (they
        have no history); every other new node hydrates first (`sealtime.engine.hydration`)
        and joins the live ticks once it has caught up."""
        roots = [n for n in nodes if isinstance(n, (Source, SourceOutput))]
        rest = [n for n in nodes if not isinstance(n, (Source, SourceOutput))]
        root_ids = {n.id for n in roots}
        # (sinks on nodes that exist already, e.g. PUBLISH of a live view, hydrate too)
        later = [e for e in sinks if e.node.id not in root_ids]
        if rest or later:
            self._check_history([*rest, *(e.node for e in later)])
        new_sources = [n for n in roots if isinstance(n, Source)]
        opened = self._open_sources(new_sources, [], {})
        self.sources.update(opened)
        self.log_readers.update(opened)
        self.live_nodes += roots
        self._add_operators(roots)
        self.live_sinks += [e for e in sinks if e.node.id in root_ids]
        if rest or later:
            live = {n.id: n for n in self.live_nodes}
            added = self.hydrations.begin(rest, later, live)
            copies = self.hydrations.groups[-1].copies
            for copy in added:
                if copy.id in copies and isinstance(copy, Source):
                    self.log_readers[copy.id] = self.sources[copies[copy.id]]
            self._add_operators(added)
        self._replan()

    def _add_operators(self, nodes: Sequence[PlanNode]) -> None:
        """Operators for nodes joining a running plan: their state starts empty (files
        an earlier run left under their directories go)."""
        built = self._build_operators(nodes)
        for op in built.values():
            op.restore({})
        self.ops.update(built)

    def hydrating(self) -> set[int]:
        """The ids of the nodes still hydrating (not yet live)."""
        return {nid for g in self.hydrations.groups for nid in g.new}

    def _check_history(self, nodes: Sequence[PlanNode]) -> None:
        """Refuse to hydrate `nodes` when a source they read no longer holds its whole
        history: what its log dropped is gone, so they could not compute it."""
        seen: set[int] = set()
        stack = list(nodes)
        marks = self.retention.marks()
        while stack:
            node = stack.pop()
            if node.id in seen:
                continue
            seen.add(node.id)
            stack += node.inputs
            if isinstance(node, Source) and marks.get(node.name, MIN_TIME) > MIN_TIME:
                raise StateError(
                    f"{nodes[-1].describe()} reads source {node.name!r}, whose ingest log "
                    f"before time {marks[node.name]} was removed (its retain_history); it "
                    "cannot be computed from the start. Create the source with a longer "
                    "RETAIN HISTORY (retain_history=None keeps it all), or define the view "
                    "before the history it needs is dropped"
                )

    def shrink(self, node_ids: set[int], sinks: Sequence[Any] = ()) -> None:
        """Remove the nodes `node_ids` and the sink objects `sinks` between ticks (with
        what a hydrating group computes for them): their operators' state and
        the side effects of dropped sources go (the ingest log of a dropped source is
        deleted)."""
        dropped_sinks = {id(s) for s in sinks}
        for group in list(self.hydrations.groups):
            node_ids |= self.hydrations.remove(group, node_ids, dropped_sinks)
        self.live_nodes = [n for n in self.live_nodes if n.id not in node_ids]
        self.live_sinks = [e for e in self.live_sinks if id(e.sink) not in dropped_sinks]
        for nid in node_ids:
            self._forget(nid)
            runtime = self.sources.pop(nid, None)
            if runtime is not None:
                runtime.close()
                # (its log and truncation mark go: a new source of that name starts anew)
                rel = self.data_fs.rel(runtime.log_dir)
                if rel:
                    self.data_fs.delete_dir(rel)
                self.retention.forget(runtime.name)
        self._replan()

    def _forget(self, nid: int) -> None:
        """Drop node `nid`'s operator and the durable state under its directory."""
        op = self.ops.pop(nid, None)
        self.log_readers.pop(nid, None)
        rel = self.data_fs.rel(op.env.state_dir) if op is not None else None
        if rel:  # (never the data dir itself)
            self.data_fs.delete_dir(rel)

    def _replan(self) -> None:
        """Run the live nodes and every hydrating group's copies from the next tick.
        The plan is rebuilt when next needed (`_refresh_plan`: before a tick, a
        checkpoint, a snapshot), once for a batch of changes: rebuilding it finds the
        fusion groups again, which at 150 views took ~80 % of a `CREATE VIEW`."""
        self._plan_stale = True

    def _refresh_plan(self) -> None:
        """Rebuild the plan after changes (`_replan`), if any."""
        if not getattr(self, "_plan_stale", False):
            return
        self._plan_stale = False
        nodes = [*self.live_nodes, *self.hydrations.nodes()]
        sinks = [*self.live_sinks, *self.hydrations.sinks()]
        self._plan = plan = Plan(tuple(nodes), tuple(sinks), self.config)
        self.tracker = FrontierTracker(plan.graph())
        self.sinks.retarget(plan)
        self.dataplane.retarget(
            plan,
            frame_sinks=self.sinks.frame_nodes,
            ahead=self.sinks.ahead_nodes,
            # (hydrating copies fuse too: those of one group always seal the same range,
            # and a group's copies only fuse with each other, as they read its copies)
            live=None,
            collected=self.sinks.collects,
        )
        self.retention.plan = plan

    def _merge_hydrated(self) -> bool:
        """Groups that caught up join the live plan: copies dropped, new nodes wired to
        the live nodes. Returns whether any did."""
        merged = []
        live = {n.id for n in self.live_nodes}
        for group in self.hydrations.finished(self.bindings):
            reads = {i.id for n in group.new.values() for i in n.inputs} - set(group.new)
            if not reads <= live:  # (it reads a view still hydrating: that one goes first)
                self.hydrations.groups.append(group)
                continue
            for nid in group.copies:
                self._forget(nid)
            self.live_nodes += list(group.new.values())
            self.live_sinks += group.live_sinks
            live |= set(group.new)
            merged.append(group)
        if merged:
            self._replan()
        return bool(merged)
