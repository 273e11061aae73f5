"""Frontiers of the data plane: one int per edge, ``None`` for the empty frontier.

The data plane's times are totally ordered ints, so every frontier has at most one
element; ``None`` (the empty antichain) means the stream is finished. `FrontierTracker`
turns the roots' frontiers (sources, and side outputs, which follow their source's
binding times) into the frontier at every operator with the progress tracker of
`sealtime.progress` (timely's reachability). Each root holds a capability at its
frontier; every other node contributes the path summary it declares
(`sealtime.plan.PlanNode.summary`): the identity for almost all (a windowed reduction
emits at ``window_end - 1``, a time its input frontier has not passed, so it needs no
capability of its own), `RoundUp` for ``advance_time``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..errors import InternalError
from ..plan import GraphNode, PlanNode, graph_of
from ..progress import GraphBuilder, PathSummary, Source, Target
from ..time import Antichain
from ..time.order import MIN_TIME

__all__ = ["FrontierTracker", "f_min", "output_frontier"]


def f_min(values: Iterable[int | None]) -> int | None:
    """Meet of single-element frontiers; None (empty) is the top.

    >>> f_min([3, None, 2]), f_min([None, None])
    (2, None)
    """
    present = [v for v in values if v is not None]
    return min(present) if present else None


def output_frontier(summary: PathSummary | None, input_frontier: int | None) -> int | None:
    """The frontier of an operator's output given its input frontier, through its path
    `summary` (rounded up for ``advance_time``, unchanged by the identity: None).

    >>> from sealtime.progress import RoundUp
    >>> output_frontier(RoundUp(10), 11), output_frontier(None, 11), output_frontier(RoundUp(10), None)
    (20, 11, None)
    """
    if input_frontier is None or summary is None:
        return input_frontier
    return summary.results_in(input_frontier)


class FrontierTracker:
    """Frontier at every node's inputs, given the roots' frontiers, computed by the
    progress tracker: each root holds a capability at its frontier; each other node is
    an operator with one output and its declared summary from every input to it.

    >>> from pyspark.sql import types as T
    >>> from sealtime.plan import AdvanceTime, Join, Negate, Source
    >>> from sealtime.sources import Rows
    >>> s = T.StructType([T.StructField("k", T.StringType())])
    >>> rows = Rows({"k": "string"}, [])
    >>> a = Source(id=0, name="a", inputs=(), schema=s, source=rows)
    >>> b = Source(id=1, name="b", inputs=(), schema=s, source=rows)
    >>> j = Join(id=2, name="j", inputs=(a, b), schema=s, on=("k",))
    >>> ft = FrontierTracker.of([a, b, j])
    >>> ft.advance({0: 10, 1: 4})[2], ft.advance({0: 10, 1: None})[2], ft.advance({0: None, 1: None})[2]
    (4, 10, None)
    >>> t = AdvanceTime(id=1, name="t", inputs=(a,), schema=s, granularity=10)
    >>> m = Negate(id=2, name="m", inputs=(t,), schema=s)
    >>> ft = FrontierTracker.of([a, t, m])
    >>> [ft.advance({0: f})[2] for f in (11, 20, 21, None)]
    [20, 20, 30, None]
    """

    def __init__(self, graph: Sequence[GraphNode]) -> None:
        self.nodes = list(graph)
        builder = GraphBuilder()
        for node in self.nodes:
            if node.root:
                builder.add_node(node.id, 0, 1, None, name=node.describe())
                continue
            table = None if node.summary is None else [[node.summary] for _ in node.inputs]
            builder.add_node(node.id, len(node.inputs), 1, table, name=node.describe())
        for node in self.nodes:
            if node.root:
                continue
            for port, inp in enumerate(node.inputs):
                builder.add_edge(Source(inp, 0), Target(node.id, port))
        self.tracker = builder.build()
        self.capabilities = {
            n.id: self.tracker.capability(Source(n.id, 0), MIN_TIME) for n in self.nodes if n.root
        }
        self.tracker.propagate_all()

    @classmethod
    def of(cls, nodes: Sequence[PlanNode]) -> FrontierTracker:
        """The tracker of plan nodes (in topological order)."""
        return cls(graph_of(nodes))

    def advance(self, roots: Mapping[int, int | None]) -> dict[int, int | None]:
        """Move the roots' capabilities to their new frontiers (None = finished) and
        return the frontier at every node's inputs (a root's is its own)."""
        for nid, frontier in roots.items():
            cap = self.capabilities.get(nid)
            if cap is None or cap.dropped:
                continue
            if frontier is None:
                cap.drop()
            elif frontier != cap.time():
                cap.downgrade(frontier)
        self.tracker.propagate_all()
        out: dict[int, int | None] = {}
        for node in self.nodes:
            cap = self.capabilities.get(node.id)
            if cap is not None:
                out[node.id] = None if cap.dropped else cap.time()
                continue
            ports = [self.tracker.frontier(Target(node.id, p)) for p in range(len(node.inputs))]
            out[node.id] = f_min(_single(a) for a in ports)
        return out


def _single(antichain: Antichain) -> int | None:
    elements = antichain.elements()
    if len(elements) > 1:  # pragma: no cover - the data plane is totally ordered
        raise InternalError(f"data-plane frontier with several elements: {antichain}")
    return elements[0] if elements else None
