"""Frontier helpers of the pub-sub protocol: the *upper* frontier and frontier merging.

The lower frontier of a stream is an ordinary (minimal) `Antichain`: every time not ≥ one
of its elements is complete. The *upper* frontier is the dual: the **maximal** antichain of
the times of all data published so far, so "some data at a time ≤ t' was published" for
every element t'. `Antichain.insert` keeps minimal elements, hence the separate
`UpperFrontier` here; its elements are still pairwise incomparable, so it converts to an
`Antichain` for transport and display.

>>> from sealtime.time import Product
>>> upper = UpperFrontier()
>>> for t in [Product(0, 1), Product(1, 0), Product(0, 0), Product(1, 1)]:
...     _ = upper.insert(t)
>>> upper
UpperFrontier([Product(1, 1)])
>>> upper.covers(Product(0, 1)), upper.covers(Product(2, 0))
(True, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from sealtime.time import Antichain, less_equal, sorted_times

__all__ = ["UpperFrontier", "covered_by", "merge_lowers", "merge_uppers"]


class UpperFrontier:
    """A maximal antichain: the greatest elements of everything inserted.

    >>> u = UpperFrontier([3, 5, 4])
    >>> u.elements(), u.covers(5), u.covers(6)
    ((5,), True, False)
    """

    __slots__ = ("_elements",)

    def __init__(self, times: Iterable[Any] = ()) -> None:
        self._elements: list[Any] = []
        for t in times:
            self.insert(t)

    def insert(self, t: Any) -> bool:
        """Add `t` unless it is ≤ some element; evict elements ≤ `t`. True if added.

        >>> u = UpperFrontier([4])
        >>> u.insert(2), u.insert(7), u.elements()
        (False, True, (7,))
        """
        elements = self._elements
        if type(t) is int:
            if elements and elements[0] >= t:
                return False
            elements[:] = [t]
            return True
        for e in elements:
            if less_equal(t, e):
                return False
        elements[:] = [e for e in elements if not less_equal(e, t)]
        elements.append(t)
        return True

    def covers(self, t: Any) -> bool:
        """True if `t` ≤ some element (data at `t` may already have been published).

        >>> UpperFrontier([4]).covers(4), UpperFrontier().covers(0)
        (True, False)
        """
        return covered_by(self._elements, t)

    def elements(self) -> tuple[Any, ...]:
        """The elements, in a deterministic order.

        >>> UpperFrontier([1, 2]).elements()
        (2,)
        """
        return tuple(sorted_times(self._elements))

    def antichain(self) -> Antichain[Any]:
        """The same elements as an `Antichain` (they are pairwise incomparable).

        >>> UpperFrontier([2]).antichain()
        Antichain([2])
        """
        return Antichain(self._elements)

    def is_empty(self) -> bool:
        """True before any data was published.

        >>> UpperFrontier().is_empty()
        True
        """
        return not self._elements

    def copy(self) -> UpperFrontier:
        """An independent copy.

        >>> UpperFrontier([1]).copy()
        UpperFrontier([1])
        """
        other = UpperFrontier()
        other._elements = list(self._elements)
        return other

    # The container methods of `Antichain`, of which this is the dual, on purpose.
    def __iter__(self) -> Iterator[Any]:
        return iter(self.elements())

    def __len__(self) -> int:
        return len(self._elements)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, UpperFrontier):
            return NotImplemented
        return set(self._elements) == set(other._elements)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"UpperFrontier({list(self.elements())!r})"


def covered_by(upper: Iterable[Any], t: Any) -> bool:
    """True if `t` ≤ some element of `upper` (Strymon's stream-mode filter test).

    >>> from sealtime.time import Product
    >>> covered_by([Product(2, 0)], Product(1, 0)), covered_by([Product(2, 0)], Product(1, 1))
    (True, False)
    """
    return any(less_equal(t, u) for u in upper)


def merge_uppers(uppers: Iterable[Iterable[Any]]) -> Antichain[Any]:
    """The maximal antichain of the union of several upper frontiers (group subscription).

    >>> from sealtime.time import Product
    >>> merge_uppers([[Product(2, 0)], [Product(0, 2), Product(1, 0)]])
    Antichain([Product(0, 2), Product(2, 0)])
    """
    merged = UpperFrontier()
    for upper in uppers:
        for t in upper:
            merged.insert(t)
    return merged.antichain()


def merge_lowers(lowers: Iterable[Iterable[Any]]) -> Antichain[Any]:
    """The minimal antichain of the union of several lower frontiers.

    A time is complete in the merged stream iff it is complete in every partition, i.e. not
    ≥ any element of any partition's lower frontier.

    >>> merge_lowers([[3], [5], []])
    Antichain([3])
    """
    merged: Antichain[Any] = Antichain()
    for lower in lowers:
        merged.extend(lower)
    return merged
