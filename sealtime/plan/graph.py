"""`GraphNode`: the shape of a plan as progress tracking sees it, storable as JSON.

The engine records its plan's graph in the metadata store, so that a reader without
the dataflow's code (``sealtime status``) computes every operator's frontier from the
stored bindings exactly as the engine did: the same roots, edges and path summaries
through the same progress tracker.

>>> from sealtime.progress import RoundUp
>>> g = GraphNode(id=1, kind="advance_time", name="a", inputs=(0,), root=False, summary=RoundUp(10))
>>> GraphNode.from_json(g.to_json()) == g, g.to_json()["summary"]
(True, {'type': 'RoundUp', 'args': [10]})
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PlanError
from ..progress import summary as summaries
from ..progress.summary import PathSummary
from .node import PlanNode

__all__ = ["GRAPH_NAMESPACE", "GraphNode", "graph_of"]

#: the metadata-store namespace the engine records each dataflow's graph under
GRAPH_NAMESPACE = "dataflow-graph"


def graph_of(nodes: Sequence[PlanNode]) -> list[GraphNode]:
    """Plan nodes (in topological order) as progress tracking sees them: a source or a
    side output is a root; every other node has its inputs and declared summary."""
    return [
        GraphNode(
            id=n.id,
            kind=n.kind,
            name=n.name,
            inputs=tuple(i.id for i in n.inputs),
            root=not n.inputs or n.own_frontier,
            summary=n.summary(),
        )
        for n in nodes
    ]


@dataclass(frozen=True)
class GraphNode:
    """A node for the progress tracker: its inputs (ids), whether it is a root (its
    frontier given from outside: a source, a side output) and its path summary from
    every input to its output (None: the identity)."""

    id: int
    kind: str
    name: str
    inputs: tuple[int, ...]
    root: bool
    summary: PathSummary | None = None

    def describe(self) -> str:
        """``#id kind name(#inputs)``."""
        ins = ", ".join(f"#{i}" for i in self.inputs)
        return f"#{self.id} {self.kind} {self.name}({ins})"

    def to_json(self) -> dict[str, Any]:
        """The stored form (the summary as its type's name and constructor arguments)."""
        summary = None
        if self.summary is not None:
            made, args = self.summary.__reduce__()[:2]
            summary = {"type": made.__name__, "args": list(args)}
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "inputs": list(self.inputs),
            "root": self.root,
            "summary": summary,
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> GraphNode:
        """Read `to_json`'s form."""
        summary = None
        if d.get("summary") is not None:
            made = getattr(summaries, d["summary"]["type"], None)
            if not (isinstance(made, type) and issubclass(made, PathSummary)):
                raise PlanError(f"stored plan graph: unknown path summary {d['summary']!r}")
            summary = made(*d["summary"]["args"])
        return cls(int(d["id"]), d["kind"], d["name"], tuple(d["inputs"]), bool(d["root"]), summary)
