"""`MutableAntichain`: counted times whose frontier is maintained incrementally.

Progress tracking keeps, per location, a count of outstanding capabilities/messages at
each time; what matters downstream is only the *frontier* of that multiset — the minimal
times whose count is positive — and how it changes.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from sealtime.time.antichain import Antichain
from sealtime.time.order import less_equal, less_than, sorted_times

__all__ = ["MutableAntichain"]

T = TypeVar("T")


class MutableAntichain(Generic[T]):
    """A multiset of times with counts, exposing the frontier of positive-count times.

    Counts may go negative transiently (e.g. a retraction processed before the matching
    insertion); a time belongs to the frontier when its accumulated count is positive and
    no other positive-count time is strictly less than it.

    Like timely, updates are checked against the current frontier and the frontier is
    rebuilt only if some update could change it: an update strictly beyond a frontier
    element, or a decrement at a time not ≥ the frontier, costs O(frontier width) and
    no rebuild. A rebuild scans the positive counts (O(n · width)), except for int times,
    where a min-heap of the positive-count times makes it O(log n) amortised.

    >>> frontier = MutableAntichain.new_bottom(1)
    >>> frontier.update_iter([(1, -1), (2, 7)])
    [(1, -1), (2, 1)]
    >>> frontier.frontier()
    Antichain([2])
    >>> frontier.count_for(2)
    7
    """

    __slots__ = ("_counts", "_frontier", "_heap")

    # Unhashable: mutable, and equality compares contents.
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, updates: Iterable[tuple[T, int]] = ()) -> None:
        self._counts: dict[T, int] = {}  # every non-zero accumulated count
        self._frontier: list[T] = []  # minimal elements of the positive-count times
        self._heap: list[int] = []  # int times only: a min-heap of the positive-count times
        self.update_iter(updates)

    @classmethod
    def new_bottom(cls, bottom: T) -> MutableAntichain[T]:
        """A mutable antichain holding `bottom` once (timely's `new_bottom`).

        >>> MutableAntichain.new_bottom(0).frontier()
        Antichain([0])
        """
        return cls([(bottom, 1)])

    @classmethod
    def from_elem(cls, t: T) -> MutableAntichain[T]:
        """Same as `new_bottom`: the time `t` with count 1.

        >>> MutableAntichain.from_elem(1).count_for(1)
        1
        """
        return cls([(t, 1)])

    @classmethod
    def from_antichain(cls, antichain: Iterable[T]) -> MutableAntichain[T]:
        """Each element of `antichain` with count 1.

        >>> MutableAntichain.from_antichain(Antichain([3])).frontier()
        Antichain([3])
        """
        return cls((t, 1) for t in antichain)

    def update_iter(self, updates: Iterable[tuple[T, int]]) -> list[tuple[T, int]]:
        """Apply a batch of `(t, diff)` updates; return the frontier's changes.

        The result lists each time that left the frontier with -1 and each time that
        joined it with +1 (sorted by `sort_key`): applying it to a counter of the old
        frontier gives the new frontier, whatever the counts themselves did.

        >>> frontier = MutableAntichain()
        >>> frontier.update_iter([(2, 3), (5, 1)])
        [(2, 1)]
        >>> frontier.update_iter([(5, 1)])  # beyond the frontier: no change
        []
        >>> frontier.update_iter([(2, -3), (1, -1)])  # 1 goes negative: not in frontier
        [(2, -1), (5, 1)]
        >>> frontier.update_iter([(1, 1)])  # ... and back to zero
        []
        """
        counts = self._counts
        frontier = self._frontier
        heap = self._heap
        rebuild = False
        for t, diff in updates:
            if not diff:
                continue
            if not rebuild:
                # Skip the rebuild if this update cannot change the frontier: it is
                # strictly beyond a positive frontier element, or it lowers a count that
                # is already non-positive (times not ≥ the frontier are never positive).
                if type(t) is int:
                    if frontier:  # ints are totally ordered: at most one element
                        f = frontier[0]
                        rebuild = not (f < t or (diff < 0 and t < f))  # type: ignore[operator]
                    else:
                        rebuild = diff > 0
                else:
                    for f in frontier:
                        if f.less_than(t):  # type: ignore[attr-defined]
                            break  # beyond the frontier
                    else:
                        if diff > 0:
                            rebuild = True
                        else:
                            for f in frontier:
                                if f.less_equal(t):  # type: ignore[attr-defined]
                                    rebuild = True
                                    break
            prev = counts.get(t, 0)
            total = prev + diff
            if total:
                counts[t] = total
                if total > 0 >= prev and type(t) is int:
                    heapq.heappush(heap, t)  # type: ignore[type-var]
            else:
                del counts[t]
        if len(heap) > 2 * len(counts) + 32:
            # Stale entries (times whose count dropped) pile up when counts oscillate
            # beyond the frontier; rebuilding the heap now and then bounds its size.
            heap[:] = [t for t, c in counts.items() if c > 0 and type(t) is int]
            heapq.heapify(heap)
        if not rebuild:
            return []
        return self._rebuild()

    def update(self, t: T, diff: int) -> list[tuple[T, int]]:
        """Apply one update; same as `update_iter([(t, diff)])`.

        >>> MutableAntichain().update(4, 1)
        [(4, 1)]
        """
        return self.update_iter(((t, diff),))

    def _rebuild(self) -> list[tuple[T, int]]:
        old = self._frontier
        counts = self._counts
        heap = self._heap
        # Int times: the heap holds every positive-count time (and stale entries, popped
        # here), so the new minimum costs O(log n) per retired time instead of a scan.
        while heap and counts.get(heap[0], 0) <= 0:  # type: ignore[call-overload]
            heapq.heappop(heap)
        new: list[T]
        if heap:
            new = [heap[0]]  # type: ignore[list-item]
        else:
            # Any other partial order: the minimal elements of the positive-count times,
            # O(n · width) like timely's rebuild (which scans all updates as well).
            acc: Antichain[T] = Antichain()
            for t, c in counts.items():
                if c > 0:
                    acc.insert(t)
            new = acc._elements
        self._frontier = new
        if len(old) == 1 and len(new) == 1 and type(old[0]) is int:  # the common int case
            o, n = old[0], new[0]
            if o == n:
                return []
            return [(o, -1), (n, 1)] if o < n else [(n, 1), (o, -1)]  # type: ignore[operator]
        old_set, new_set = set(old), set(new)
        changes = {t: -1 for t in old if t not in new_set}
        changes.update((t, 1) for t in new if t not in old_set)
        return [(t, changes[t]) for t in sorted_times(changes)]

    def copy(self) -> MutableAntichain[T]:
        """An independent copy.

        >>> a = MutableAntichain.new_bottom(0); b = a.copy(); b.update(0, -1)
        [(0, -1)]
        >>> a.frontier()
        Antichain([0])
        """
        m: MutableAntichain[T] = MutableAntichain()
        m._counts = dict(self._counts)
        m._frontier = list(self._frontier)
        m._heap = list(self._heap)
        return m

    __copy__ = copy

    def frontier(self) -> Antichain[T]:
        """The current frontier, as a new `Antichain` (a snapshot, safe to mutate).

        >>> from sealtime.time import Product
        >>> MutableAntichain([(Product(0, 1), 1), (Product(1, 0), 2)]).frontier()
        Antichain([Product(0, 1), Product(1, 0)])
        """
        return Antichain._from_minimal(self._frontier)

    def count_for(self, t: T) -> int:
        """The accumulated count of `t` (may be negative; 0 if absent).

        >>> m = MutableAntichain([(3, 2), (3, -5)]); m.count_for(3), m.count_for(4)
        (-3, 0)
        """
        return self._counts.get(t, 0)

    def less_than(self, t: T) -> bool:
        """True if some frontier element is strictly less than `t`.

        >>> m = MutableAntichain.new_bottom(1); m.less_than(2), m.less_than(1)
        (True, False)
        """
        return any(less_than(f, t) for f in self._frontier)

    def less_equal(self, t: T) -> bool:
        """True if some frontier element is ≤ `t`.

        >>> m = MutableAntichain.new_bottom(1); m.less_equal(1), m.less_equal(0)
        (True, False)
        """
        return any(less_equal(f, t) for f in self._frontier)

    def is_empty(self) -> bool:
        """True if no time has a positive count (the frontier is empty).

        >>> MutableAntichain().is_empty(), MutableAntichain.new_bottom(0).is_empty()
        (True, False)
        """
        return not self._frontier

    def updates(self) -> Iterator[tuple[T, int]]:
        """Every time with a non-zero accumulated count, sorted by `sort_key`.

        >>> list(MutableAntichain([(3, 1), (1, -1), (2, 0)]).updates())
        [(1, -1), (3, 1)]
        """
        counts = self._counts
        return iter([(t, counts[t]) for t in sorted_times(counts)])

    def clear(self) -> list[tuple[T, int]]:
        """Drop every count; return the frontier changes (each element with -1).

        >>> MutableAntichain.new_bottom(2).clear()
        [(2, -1)]
        """
        self._counts = {}
        self._heap = []
        old, self._frontier = self._frontier, []
        return [(t, -1) for t in sorted_times(old)]

    # Deliberately like `ChangeBatch`'s: both compare their counts and show their updates.
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MutableAntichain):
            return NotImplemented
        return self._counts == other._counts

    def __repr__(self) -> str:
        return f"MutableAntichain({list(self.updates())!r})"
