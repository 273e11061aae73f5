"""Frontiers of the data plane: one int per edge, ``None`` for the empty frontier.

The data plane's times are totally ordered ints, so every frontier has at most one
element; ``None`` (the empty antichain) means the stream is finished. `FrontierTracker`
turns source frontiers into the frontier at every operator with the progress tracker of
`sealtime.progress` (timely's reachability): sources hold a capability at their frontier,
operators' path summaries are the identity (windowed reductions emit at ``window_end - 1``,
a time their input frontier has not passed, so they need no capability of their own),
except ``advance_time(to=g)``, whose summary is `RoundUp(g)`: its output frontier is its
input frontier rounded up to a multiple of ``g`` (see `node_summary`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..dataflow.plan import Node

__all__ = ["FrontierTracker", "f_le", "f_min", "node_summary"]


def f_min(values: Iterable[int | None]) -> int | None:
    """Meet of single-element frontiers; None (empty) is the top.

    >>> f_min([3, None, 2]), f_min([None, None])
    (2, None)
    """
    present = [v for v in values if v is not None]
    return min(present) if present else None


def f_le(a: int | None, b: int | None) -> bool:
    """``a <= b`` for frontiers, with None (empty) the largest.

    >>> f_le(1, None), f_le(None, 1)
    (True, False)
    """
    if b is None:
        return True
    return a is not None and a <= b


def node_summary(node: Node):
    """The path summary from each input of `node` to its output: `RoundUp` for
    ``advance_time``, None (the identity) for every other operator.

    >>> node_summary(Node("advance_time", "a", [], None, params={"granularity": 1000}))
    RoundUp(1000)
    """
    if node.kind == "advance_time":
        from ..progress import RoundUp

        return RoundUp(node.params["granularity"])
    return None


class FrontierTracker:
    """Frontier at every node's inputs, given the sources' frontiers, computed by the
    progress tracker: each source holds a capability at its frontier; each operator is a
    node with one output and identity summaries from every input to it.

    >>> from sealtime.dataflow.plan import Node
    >>> a = Node("source", "a", [], None, id=0); b = Node("source", "b", [], None, id=1)
    >>> j = Node("join", "j", [a, b], None, id=2)
    >>> ft = FrontierTracker([a, b, j])
    >>> ft.advance({0: 10, 1: 4})[2], ft.advance({0: 10, 1: None})[2], ft.advance({0: None, 1: None})[2]
    (4, 10, None)
    """

    def __init__(self, nodes: Sequence[Node]) -> None:
        from ..progress import GraphBuilder, Source, Target
        from ..time.order import MIN_TIME

        self.nodes = list(nodes)
        builder = GraphBuilder()
        for node in self.nodes:
            summary = node_summary(node)
            table = None if summary is None else [[summary] for _ in node.inputs]
            builder.add_node(node.id, len(node.inputs), 1, table, name=node.describe())
        for node in self.nodes:
            for port, inp in enumerate(node.inputs):
                builder.add_edge(Source(inp.id, 0), Target(node.id, port))
        self.tracker = builder.build()
        self._target = Target
        self.capabilities = {
            n.id: self.tracker.capability(Source(n.id, 0), MIN_TIME)
            for n in self.nodes
            if not n.inputs
        }
        self.tracker.propagate_all()

    def advance(self, sources: Mapping[int, int | None]) -> dict[int, int | None]:
        """Move the sources' capabilities to their new frontiers (None = finished) and
        return the frontier at every node's inputs (a source's is its own).

        >>> from sealtime.dataflow.plan import Node
        >>> s = Node("source", "s", [], None, id=0)
        >>> a = Node("advance_time", "a", [s], None, params={"granularity": 10}, id=1)
        >>> m = Node("map", "m", [a], None, id=2)
        >>> ft = FrontierTracker([s, a, m])
        >>> [ft.advance({0: f})[2] for f in (11, 20, 21, None)]
        [20, 20, 30, None]
        """
        for nid, frontier in sources.items():
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
            if not node.inputs:
                cap = self.capabilities[node.id]
                out[node.id] = None if cap.dropped else cap.time()
                continue
            ports = [
                self.tracker.frontier(self._target(node.id, p)) for p in range(len(node.inputs))
            ]
            out[node.id] = f_min(_single(a) for a in ports)
        return out


def _single(antichain) -> int | None:
    elements = antichain.elements()
    if len(elements) > 1:  # pragma: no cover - the data plane is totally ordered
        raise AssertionError(f"data-plane frontier with several elements: {antichain}")
    return elements[0] if elements else None
