"""`Probe`: a read-only view of the frontier at one location (timely's `ProbeHandle`).

Probes answer "may a time ≤ t still show up here?" so that the engine (or a test) can
wait for a time to be sealed at some point in the graph. They read the tracker's state as
of its last `propagate_all()`.
"""

from __future__ import annotations

from typing import Any

from sealtime.progress.location import Location
from sealtime.progress.reachability import Tracker
from sealtime.time import Antichain, less_equal, less_than

__all__ = ["Probe"]


class Probe:
    """Observe the frontier of `tracker` at `location`.

    >>> from sealtime.progress import GraphBuilder, Source, Target
    >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_node(1, 1, 0)
    >>> b.add_edge(Source(0, 0), Target(1, 0)); tracker = b.build()
    >>> probe = Probe(tracker, Target(1, 0))
    >>> cap = tracker.capability(Source(0, 0), 5); _ = tracker.propagate_all()
    >>> probe.less_than(5), probe.less_equal(5), probe.less_than(6), probe.done()
    (False, True, True, False)
    >>> cap.drop(); _ = tracker.propagate_all(); probe.done()
    True
    """

    __slots__ = ("_tracker", "_location", "_lid")

    def __init__(self, tracker: Tracker, location: Location) -> None:
        if not isinstance(tracker, Tracker):
            raise TypeError(f"Probe needs a Tracker, got {tracker!r}")
        self._tracker = tracker
        self._location = location
        self._lid = tracker._id(location)  # validates the location

    @property
    def location(self) -> Location:
        """The observed location.

        >>> from sealtime.progress import GraphBuilder, Target
        >>> b = GraphBuilder(); b.add_node(0, 1, 0)
        >>> Probe(b.build(), Target(0, 0)).location
        Target(node=0, port=0)
        """
        return self._location

    def frontier(self) -> Antichain[Any]:
        """The current frontier (a snapshot).

        >>> from sealtime.progress import GraphBuilder, Target
        >>> b = GraphBuilder(); b.add_node(0, 1, 0)
        >>> Probe(b.build(), Target(0, 0)).frontier()
        Antichain([])
        """
        return Antichain(self._tracker._frontier_list(self._lid))

    def less_than(self, time: Any) -> bool:
        """True if some frontier element is strictly less than `time`.

        Then some time strictly before `time` may still appear here.

        >>> from sealtime.progress import GraphBuilder, Target
        >>> b = GraphBuilder(); b.add_node(0, 1, 0); t = b.build()
        >>> t.update_target(Target(0, 0), 3, 1); _ = t.propagate_all()
        >>> Probe(t, Target(0, 0)).less_than(3), Probe(t, Target(0, 0)).less_than(4)
        (False, True)
        """
        return any(less_than(f, time) for f in self._tracker._frontier_list(self._lid))

    # Deliberately parallel to `less_than` (doctest included: each doctest stands alone).
    def less_equal(self, time: Any) -> bool:
        """True if some frontier element is ≤ `time`: `time` may still appear here.

        `not probe.less_equal(t)` means every time ≤ `t` is complete (sealed).

        >>> from sealtime.progress import GraphBuilder, Target
        >>> b = GraphBuilder(); b.add_node(0, 1, 0); t = b.build()
        >>> t.update_target(Target(0, 0), 3, 1); _ = t.propagate_all()
        >>> Probe(t, Target(0, 0)).less_equal(3), Probe(t, Target(0, 0)).less_equal(2)
        (True, False)
        """
        return any(less_equal(f, time) for f in self._tracker._frontier_list(self._lid))

    def done(self) -> bool:
        """True if the frontier is empty: no time will ever appear here again.

        >>> from sealtime.progress import GraphBuilder, Target
        >>> b = GraphBuilder(); b.add_node(0, 1, 0)
        >>> Probe(b.build(), Target(0, 0)).done()
        True
        """
        return not self._tracker._frontier_list(self._lid)

    def __repr__(self) -> str:
        return f"Probe({self._location}, frontier={self.frontier()!r})"
