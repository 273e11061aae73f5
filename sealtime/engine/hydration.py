"""Hydration: operators added to a running dataflow catch up with their inputs' history.

A view created while the dataflow runs reads inputs that already hold history: its
operators must first see all of it, then follow the live ticks (DESIGN.md §12). The
engine hydrates a group of new nodes on *private copies* of everything they read: every
live node upstream of them, sources and side outputs included, is cloned with a
temporary id, and the new nodes are wired to the clones. The cloned roots advance through
the recorded bindings a slice at a time — each tick, beside the live work, as many
bindings as fit a budget of rows (`HydrationPace`: sized so that a slice costs a tick
less than a live tick, within at most ~8 ticks a hydration) — so a large history never
stops the world, and the other views keep sealing. Views created between the same two
ticks hydrate as one group, over one set of copies. Everything a clone computes is a function of the log and the
bindings, so when the cloned roots reach the live roots' frontiers (the latest binding),
each clone holds exactly what the live node it copies holds: the clones are dropped, the
new nodes are wired to the live nodes in the same place of every frontier, and from the
next tick on they are live (`HydrationGroup.merge`).

>>> h = Hydrations(first_id=1_000)
>>> h.active, h.next_id
(False, 1000)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..plan import PlanNode, SinkEdge, Source, SourceOutput
from ..time.order import MIN_TIME
from .bindings import Binding

__all__ = ["HYDRATION_ROWS_PER_TICK", "HydrationGroup", "HydrationPace", "Hydrations"]

#: log rows the hydrating groups read in their first tick (then `HydrationPace` adapts)
HYDRATION_ROWS_PER_TICK = 200_000


@dataclass
class HydrationPace:
    """How many log rows the hydrating groups read per tick.

    A tick that hydrates does the live work plus a slice of history per hydrating
    group. The budget (rows per slice) adapts so that the slice costs about `share` of
    a live tick (a tick with hydration then
    seals at most ~(1 + share) live ticks after the one before: "adding a view delays
    other views by at most one tick"): after each tick that hydrated, the budget is
    scaled by how far the slice's extra seconds were from that share, within a factor
    `step` per tick and between `least` and `most` rows. The live tick's seconds are a
    moving average of the ticks that did not hydrate. A slice never holds fewer than
    twice the rows a live tick reads, nor fewer than the group's `floor`: a hydrating
    tick has a fixed cost (its own Spark jobs) that no budget removes, so a hydration
    takes at most about `ticks` ticks even when each costs the live ticks more than the
    share. Only how fast a view hydrates depends on this, never what it computes
    (`HydrationGroup.advance`).

    >>> pace = HydrationPace(rows=100_000)
    >>> pace.observe(1.0, 0, live_rows=1_000)  # (a live tick: 1 s)
    >>> pace.observe(3.0, 100_000, live_rows=1_000); pace.rows  # (2 s: 2.5x its share)
    50000
    >>> pace.observe(1.2, 50_000, live_rows=1_000); pace.rows  # (0.2 s: grow)
    100000
    >>> pace.observe(9.0, 100_000, live_rows=40_000); pace.rows  # (at least 2 live ticks)
    80000
    >>> pace.floor(left=2_000_000)  # (the history over `ticks` ticks, and a live tick's)
    290000
    """

    rows: int = HYDRATION_ROWS_PER_TICK
    share: float = 0.8
    step: float = 2.0
    least: int = 10_000
    most: int = 20_000_000
    ticks: int = 8
    #: moving average of the seconds of ticks without hydration (None: none seen yet)
    live_seconds: float | None = None
    #: the most rows a live tick read lately (a moving maximum)
    live_rows: float = 0.0

    def observe(self, seconds: float, hydrated_rows: int, live_rows: int = 0) -> None:
        """A tick took `seconds`, read `live_rows` rows of live input and
        `hydrated_rows` rows of history."""
        self.live_rows = max(float(live_rows), 0.9 * self.live_rows)
        if not hydrated_rows:
            last = self.live_seconds
            self.live_seconds = seconds if last is None else 0.7 * last + 0.3 * seconds
            return
        if self.live_seconds is None:
            return
        extra = max(seconds - self.live_seconds, 1e-3)
        scale = min(self.step, max(1 / self.step, self.share * self.live_seconds / extra))
        least = max(self.least, int(2 * self.live_rows))
        self.rows = int(min(self.most, max(least, hydrated_rows * scale)))

    def floor(self, left: int) -> int:
        """The least rows of every slice of a hydration that starts with `left` rows of
        history: those over `ticks` ticks, plus what a live tick adds meanwhile."""
        return -(-left // self.ticks) + int(self.live_rows)


@dataclass
class HydrationGroup:
    """New nodes hydrating on private copies of what they read.

    * `new`: the new nodes as the plan has them (inputs: live or other new nodes);
    * `physical`: what runs while hydrating — the copies (temporary ids), then the new
      nodes wired to copies, in topological order;
    * `copies`: temporary id → the id of the live node it copies;
    * `sinks`: the new sinks, on `physical` nodes;
    * `reached`: how many recorded bindings the copied roots have gone through.
    """

    new: dict[int, PlanNode]
    physical: list[PlanNode]
    copies: dict[int, int]
    sinks: list[SinkEdge]
    reached: int = 0
    #: the least rows of each of its slices (`HydrationPace.floor`, set by the first)
    floor: int | None = None
    #: the new sinks as the plan will have them once merged
    live_sinks: list[SinkEdge] = field(default_factory=list)

    @property
    def roots(self) -> list[PlanNode]:
        """The copied roots (sources, side outputs): their frontiers lag the live ones'."""
        return [
            n for n in self.physical if n.id in self.copies and (not n.inputs or n.own_frontier)
        ]

    def root_frontiers(self, bindings: Sequence[Binding]) -> dict[int, int | None]:
        """Each copied root's frontier after the first `reached` recorded bindings."""
        binding = bindings[self.reached - 1] if self.reached else None
        out: dict[int, int | None] = {}
        for root in self.roots:
            name = root.name if isinstance(root, Source) else root.inputs[0].name
            part = binding.sources.get(name) if binding is not None else None
            if part is None:
                out[root.id] = MIN_TIME  # (the source had no binding yet)
            elif isinstance(root, SourceOutput):
                out[root.id] = None if part.state.exhausted else binding.into_time + 1
            else:
                out[root.id] = part.frontier
        return out

    def advance(self, bindings: Sequence[Binding], rows_budget: int) -> int:
        """Go through the next slice of bindings: at least one, and as many as keep the
        rows read within `rows_budget`. Returns the rows read."""
        rows, taken = 0, 0
        while self.reached < len(bindings):
            step = sum(p.rows for p in bindings[self.reached].sources.values())
            if taken and rows + step > rows_budget:
                break
            rows += step
            taken += 1
            self.reached += 1
        return rows

    def rows_left(self, bindings: Sequence[Binding]) -> int:
        """Rows of the recorded bindings the copied roots have not gone through yet."""
        return sum(p.rows for b in bindings[self.reached :] for p in b.sources.values())

    def caught_up(self, bindings: Sequence[Binding]) -> bool:
        """Have the copied roots gone through every binding minted so far?"""
        return self.reached >= len(bindings)


class Hydrations:
    """The hydrating groups of one engine, and the temporary ids of their copies."""

    def __init__(self, first_id: int) -> None:
        self.next_id = first_id
        self.groups: list[HydrationGroup] = []
        self.pace = HydrationPace()
        #: rows of history the groups read in the latest `root_frontiers`, in how many
        #: slices (groups that read)
        self.rows_read = 0
        self.slices = 0

    @property
    def active(self) -> bool:
        """Is any group hydrating?"""
        return bool(self.groups)

    def begin(
        self, new: Sequence[PlanNode], sinks: Sequence[SinkEdge], live: Mapping[int, PlanNode]
    ) -> list[PlanNode]:
        """Hydrate the `new` nodes (topological order) and their `sinks` over copies of
        the `live` nodes they read: in the group that has not started yet (views created
        between the same two ticks share its copies), else in a new one. Returns the
        physical nodes added (copies and new nodes)."""
        group = self.groups[-1] if self.groups and self.groups[-1].reached == 0 else None
        new_by_id = {n.id: n for n in new}
        physical: list[PlanNode] = []
        copies: dict[int, int] = {}
        placed: dict[int, PlanNode] = {}  # live or new id -> its node in the group
        if group is not None:
            placed = {n.id: n for n in group.physical if n.id not in group.copies}
            placed |= {group.copies[n.id]: n for n in group.physical if n.id in group.copies}

        def place(node: PlanNode) -> PlanNode:
            if node.id in placed:
                return placed[node.id]
            inputs = tuple(place(i) for i in node.inputs)
            if node.id in new_by_id:
                made = dataclasses.replace(node, inputs=inputs)
            else:
                made = dataclasses.replace(node, id=self.next_id, inputs=inputs)
                copies[self.next_id] = node.id
                self.next_id += 1
            placed[node.id] = made
            physical.append(made)
            return made

        for node in new:
            place(node)
        # (a sink on a live node reads a copy of it: it gets the history first)
        placed_sinks = [SinkEdge(place(e.node), e.sink) for e in sinks]
        if group is None:
            self.groups.append(
                HydrationGroup(new_by_id, physical, copies, placed_sinks, live_sinks=list(sinks))
            )
        else:
            group.new.update(new_by_id)
            group.physical.extend(physical)
            group.copies.update(copies)
            group.sinks.extend(placed_sinks)
            group.live_sinks.extend(sinks)
        return physical

    def remove(self, group: HydrationGroup, node_ids: set[int], sinks: set[int]) -> set[int]:
        """Take out of `group` the nodes `node_ids` (new or live ones), what of the group
        reads them, and the sinks whose object ids are in `sinks`; the group goes when
        none of its new nodes is left. Returns the ids of the group's nodes removed."""
        gone = {
            n.id for n in group.physical if n.id in node_ids or group.copies.get(n.id) in node_ids
        }
        for n in group.physical:  # (topological: what reads a removed node goes too)
            if any(i.id in gone for i in n.inputs):
                gone.add(n.id)
        if set(group.new) <= gone:
            self.groups.remove(group)
            return {n.id for n in group.physical}
        group.physical[:] = [n for n in group.physical if n.id not in gone]
        for nid in gone:
            group.new.pop(nid, None)
            group.copies.pop(nid, None)

        def kept(e: SinkEdge) -> bool:
            return e.node.id not in gone | node_ids and id(e.sink) not in sinks

        group.sinks[:] = [e for e in group.sinks if kept(e)]
        group.live_sinks[:] = [e for e in group.live_sinks if kept(e)]
        return gone

    def nodes(self) -> list[PlanNode]:
        """Every group's physical nodes."""
        return [n for g in self.groups for n in g.physical]

    def sinks(self) -> list[SinkEdge]:
        """Every group's sinks (on physical nodes)."""
        return [s for g in self.groups for s in g.sinks]

    def root_frontiers(
        self, bindings: Sequence[Binding], rows_budget: int | None = None
    ) -> dict[int, int | None]:
        """Advance every group by one slice of at least one binding and at most
        `rows_budget` rows (default: the pace's budget for what the group has left), and
        return their copied roots' frontiers."""
        out: dict[int, int | None] = {}
        self.rows_read, self.slices = 0, 0
        for group in self.groups:
            budget = rows_budget
            if budget is None:
                if group.floor is None:
                    group.floor = self.pace.floor(group.rows_left(bindings))
                budget = max(self.pace.rows, group.floor)
            read = group.advance(bindings, budget)
            self.rows_read += read
            self.slices += bool(read)
            out.update(group.root_frontiers(bindings))
        return out

    def observe(self, seconds: float, live_rows: int) -> None:
        """The tick that read `rows_read` rows of history in `slices` slices and
        `live_rows` of live input took `seconds` (the pace, per slice)."""
        self.pace.observe(seconds, self.rows_read // max(1, self.slices), live_rows)

    def finished(self, bindings: Sequence[Binding]) -> list[HydrationGroup]:
        """Remove and return the groups that have caught up with `bindings`."""
        done = [g for g in self.groups if g.caught_up(bindings)]
        self.groups = [g for g in self.groups if not g.caught_up(bindings)]
        return done
