"""Hydration: operators added to a running dataflow catch up with their inputs' history.

A view created while the dataflow runs reads inputs that already hold history: its
operators must first see all of it, then follow the live ticks (DESIGN.md §12). The
engine hydrates a group of new nodes on *private copies* of everything they read: every
live node upstream of them, sources and side outputs included, is cloned with a
temporary id, and the new nodes are wired to the clones. The cloned roots advance through
the recorded bindings a slice at a time — each tick, beside the live work, as many
bindings as fit a budget of rows — so a large history never stops the world, and the
other views keep sealing. Everything a clone computes is a function of the log and the
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

__all__ = ["HYDRATION_ROWS_PER_TICK", "HydrationGroup", "Hydrations"]

#: log rows a hydrating group reads per tick, at most (at least one binding's worth)
HYDRATION_ROWS_PER_TICK = 2_000_000


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

    def advance(self, bindings: Sequence[Binding], rows_budget: int) -> None:
        """Go through the next slice of bindings: at least one, and as many as keep the
        rows read within `rows_budget`."""
        rows = 0
        while self.reached < len(bindings):
            step = sum(p.rows for p in bindings[self.reached].sources.values())
            if rows and rows + step > rows_budget:
                break
            rows += step
            self.reached += 1

    def caught_up(self, bindings: Sequence[Binding]) -> bool:
        """Have the copied roots gone through every binding minted so far?"""
        return self.reached >= len(bindings)


class Hydrations:
    """The hydrating groups of one engine, and the temporary ids of their copies."""

    def __init__(self, first_id: int) -> None:
        self.next_id = first_id
        self.groups: list[HydrationGroup] = []

    @property
    def active(self) -> bool:
        """Is any group hydrating?"""
        return bool(self.groups)

    def begin(
        self, new: Sequence[PlanNode], sinks: Sequence[SinkEdge], live: Mapping[int, PlanNode]
    ) -> HydrationGroup:
        """A group for the `new` nodes (topological order) and their `sinks`, over
        copies of the `live` nodes they read."""
        new_by_id = {n.id: n for n in new}
        physical: list[PlanNode] = []
        copies: dict[int, int] = {}
        placed: dict[int, PlanNode] = {}  # live or new id -> its node in the group

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
        group = HydrationGroup(
            new=new_by_id,
            physical=physical,
            copies=copies,
            # (a sink on a live node reads a copy of it: it gets the history first)
            sinks=[SinkEdge(place(e.node), e.sink) for e in sinks],
            live_sinks=list(sinks),
        )
        self.groups.append(group)
        return group

    def nodes(self) -> list[PlanNode]:
        """Every group's physical nodes."""
        return [n for g in self.groups for n in g.physical]

    def sinks(self) -> list[SinkEdge]:
        """Every group's sinks (on physical nodes)."""
        return [s for g in self.groups for s in g.sinks]

    def root_frontiers(
        self, bindings: Sequence[Binding], rows_budget: int = HYDRATION_ROWS_PER_TICK
    ) -> dict[int, int | None]:
        """Advance every group by a slice and return its copied roots' frontiers."""
        out: dict[int, int | None] = {}
        for group in self.groups:
            group.advance(bindings, rows_budget)
            out.update(group.root_frontiers(bindings))
        return out

    def finished(self, bindings: Sequence[Binding]) -> list[HydrationGroup]:
        """Remove and return the groups that have caught up with `bindings`."""
        done = [g for g in self.groups if g.caught_up(bindings)]
        self.groups = [g for g in self.groups if not g.caught_up(bindings)]
        return done
