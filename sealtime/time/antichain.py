"""`Antichain`: a set of mutually incomparable times, used as a frontier.

A frontier says "every time still to come is ≥ one of these elements"; the empty antichain
says "no time will ever come again" — the stream is finished.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from sealtime.time.lattice import join as _join
from sealtime.time.order import less_equal, less_than, sorted_times

__all__ = ["Antichain"]

T = TypeVar("T")


class Antichain(Generic[T]):
    """A set of pairwise incomparable times (timely's `Antichain`).

    Built by `insert`ing times: a time is kept only if nothing already present is ≤ it,
    and it evicts everything ≥ it, so the antichain is always the set of minimal elements
    of everything inserted. Equality and hashing ignore insertion order. Do not mutate an
    antichain while it is a dict key or set member.

    Antichains are partially ordered as frontiers: `A <= B` iff every element of `B` is ≥
    some element of `A` (B's future is contained in A's). `<`, `>`, `>=` are the matching
    strict / reversed partial order, like `frozenset`'s subset operators — two antichains
    can be incomparable, so never sort a list of antichains with them.

    >>> frontier = Antichain()
    >>> frontier.insert(2)
    True
    >>> frontier.insert(3)
    False
    >>> frontier.insert(1), frontier
    (True, Antichain([1]))
    >>> from sealtime.time import Product
    >>> Antichain([Product(2, 0), Product(0, 2), Product(3, 3)]).elements()
    (Product(0, 2), Product(2, 0))
    >>> Antichain([1]) <= Antichain([2]), Antichain([2]) <= Antichain([1])
    (True, False)
    >>> Antichain([Product(0, 1)]) <= Antichain([Product(1, 0)])  # incomparable frontiers
    False
    >>> Antichain([Product(1, 0)]) <= Antichain([Product(0, 1)])
    False
    """

    __slots__ = ("_elements", "_sorted")

    def __init__(self, elements: Iterable[T] = ()) -> None:
        self._sorted: tuple[T, ...] | None = None
        if isinstance(elements, Antichain):  # already minimal: skip the O(n²) inserts
            self._elements: list[T] = list(elements._elements)
            return
        self._elements = []
        for t in elements:
            self.insert(t)

    @classmethod
    def from_elem(cls, t: T) -> Antichain[T]:
        """The antichain `{t}`.

        >>> Antichain.from_elem(5)
        Antichain([5])
        """
        return cls._from_minimal((t,))

    @classmethod
    def _from_minimal(cls, elements: Iterable[T]) -> Antichain[T]:
        # Trusted constructor: `elements` are already pairwise incomparable.
        a = cls.__new__(cls)
        a._elements = list(elements)
        a._sorted = None
        return a

    def insert(self, t: T) -> bool:
        """Add `t` unless some element is ≤ `t`; evict elements ≥ `t`. True if added.

        >>> a = Antichain.from_elem(2)
        >>> a.insert(3), a.insert(1), a
        (False, True, Antichain([1]))
        """
        elements = self._elements
        if type(t) is int:
            for e in elements:
                if e <= t:  # type: ignore[operator]
                    return False
            elements.clear()  # a total order: every element is ≥ t (else we returned)
            elements.append(t)
        else:
            for e in elements:
                if less_equal(e, t):
                    return False
            elements[:] = [e for e in elements if not less_equal(t, e)]
            elements.append(t)
        self._sorted = None
        return True

    def extend(self, times: Iterable[T]) -> bool:
        """Insert every time in `times`; True if any of them was added.

        >>> a = Antichain([3])
        >>> a.extend([4, 2, 5]), a
        (True, Antichain([2]))
        """
        added = False
        for t in times:
            added = self.insert(t) or added
        return added

    def clear(self) -> None:
        """Remove every element (the result denotes a finished stream).

        >>> a = Antichain([1]); a.clear(); a.is_empty()
        True
        """
        self._elements.clear()
        self._sorted = None

    def copy(self) -> Antichain[T]:
        """An independent copy.

        >>> a = Antichain([1]); b = a.copy(); b.insert(0); a
        True
        Antichain([1])
        """
        return Antichain._from_minimal(self._elements)

    __copy__ = copy

    def less_than(self, t: T) -> bool:
        """True if some element is strictly less than `t`.

        >>> a = Antichain.from_elem(2)
        >>> a.less_than(3), a.less_than(2), a.less_than(1)
        (True, False, False)
        """
        return any(less_than(e, t) for e in self._elements)

    def less_equal(self, t: T) -> bool:
        """True if some element is ≤ `t` (i.e. `t` may still occur in the future).

        >>> a = Antichain.from_elem(2)
        >>> a.less_equal(3), a.less_equal(2), a.less_equal(1)
        (True, True, False)
        """
        return any(less_equal(e, t) for e in self._elements)

    def less_equal_antichain(self, other: Antichain[T]) -> bool:
        """Frontier order: every element of `other` is ≥ some element of `self`.

        The empty antichain is the greatest: `A.less_equal_antichain(Antichain())` always.

        >>> Antichain([1]).less_equal_antichain(Antichain([3])), Antichain([1]) <= Antichain()
        (True, True)
        >>> Antichain() <= Antichain([1])
        False
        """
        mine = self._elements
        return all(any(less_equal(a, b) for a in mine) for b in other._elements)

    def __le__(self, other: object) -> bool:
        if not isinstance(other, Antichain):
            return NotImplemented
        return self.less_equal_antichain(other)

    def __ge__(self, other: object) -> bool:
        if not isinstance(other, Antichain):
            return NotImplemented
        return other.less_equal_antichain(self)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Antichain):
            return NotImplemented
        return self.less_equal_antichain(other) and self != other

    def __gt__(self, other: object) -> bool:
        if not isinstance(other, Antichain):
            return NotImplemented
        return other.less_equal_antichain(self) and self != other

    def meet(self, other: Antichain[T]) -> Antichain[T]:
        """Greatest lower bound in the frontier order: minimal elements of the union.

        >>> from sealtime.time import Product
        >>> Antichain([Product(0, 2)]).meet(Antichain([Product(2, 0)])).elements()
        (Product(0, 2), Product(2, 0))
        >>> Antichain([3]).meet(Antichain())
        Antichain([3])
        """
        result = self.copy()
        result.extend(other._elements)
        return result

    def join(self, other: Antichain[T]) -> Antichain[T]:
        """Least upper bound in the frontier order: minimal pairwise joins.

        The times ≥ the result are exactly those ≥ both frontiers. The empty antichain
        (finished) absorbs: `A.join(Antichain())` is empty.

        >>> from sealtime.time import Product
        >>> Antichain([Product(0, 2)]).join(Antichain([Product(2, 0)]))
        Antichain([Product(2, 2)])
        >>> Antichain([3]).join(Antichain())
        Antichain([])
        """
        result: Antichain[T] = Antichain()
        for a in self._elements:
            for b in other._elements:
                result.insert(_join(a, b))
        return result

    def elements(self) -> tuple[T, ...]:
        """The elements, sorted by `sort_key` when sortable (deterministic).

        >>> Antichain([5]).elements(), Antichain().elements()
        ((5,), ())
        """
        if self._sorted is None:
            self._sorted = tuple(sorted_times(self._elements))
        return self._sorted

    def as_option(self) -> T | None:
        """The single element, or None if empty; for totally ordered (int) frontiers.

        A wider antichain (a partially ordered frontier) has no single element: a
        ``ValueError``, as ``int("x")`` is one (this floor raises no sealtime errors;
        `sealtime.errors` lists it).

        >>> Antichain([4]).as_option(), Antichain().as_option()
        (4, None)
        >>> from sealtime.time import Product
        >>> Antichain([Product(0, 1), Product(1, 0)]).as_option()
        Traceback (most recent call last):
        ...
        ValueError: as_option() on an antichain of 2 elements: it holds one time at most only when times are totally ordered; read elements() instead
        """
        if len(self._elements) > 1:
            raise ValueError(
                f"as_option() on an antichain of {len(self._elements)} elements: it holds one "
                "time at most only when times are totally ordered; read elements() instead"
            )
        return self._elements[0] if self._elements else None

    def is_empty(self) -> bool:
        """True for the empty antichain: the stream is finished.

        >>> Antichain().is_empty(), Antichain([0]).is_empty()
        (True, False)
        """
        return not self._elements

    def __contains__(self, t: object) -> bool:
        return t in self._elements

    def __iter__(self) -> Iterator[T]:
        return iter(self.elements())

    def __len__(self) -> int:
        return len(self._elements)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Antichain):
            return NotImplemented
        mine, theirs = self._elements, other._elements
        if len(mine) != len(theirs):
            return False
        if len(mine) == 1:
            return bool(mine[0] == theirs[0])
        return set(mine) == set(theirs)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash(frozenset(self._elements))

    def __repr__(self) -> str:
        return f"Antichain({list(self.elements())!r})"
