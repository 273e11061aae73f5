"""Partial orders on timestamps: the `PartialOrder` protocol, `Product`, `minimum`.

Timestamps in sealtime are either plain Python `int`s (totally ordered, the data-plane
time) or objects implementing the `PartialOrder` protocol, such as `Product`. Code that is
generic over the timestamp type compares times with the free functions `less_equal` and
`less_than`, never with `<=`/`<` directly, because `Product` deliberately has no Python
ordering operators (see `Product`).

A second, *total* order — `sort_key` — exists only to make output deterministic (sorted
antichain elements, sorted change batches). It is a linear extension of the partial order
for `int` and `Product` (if `a` ≤ `b` then `sort_key(a) <= sort_key(b)`), but it is not
the partial order: `sort_key(Product(0, 5)) < sort_key(Product(1, 0))` although the two
times are incomparable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol, TypeAlias, TypeVar, runtime_checkable

__all__ = [
    "MAX_TIME",
    "MIN_TIME",
    "PartialOrder",
    "Product",
    "Timestamp",
    "describe_frontier",
    "frontier_le",
    "less_equal",
    "less_than",
    "minimum",
    "sort_key",
    "sorted_times",
]

#: Bounds of the data plane's int64 logical times: below / above any real time, with
#: room left for ``- lateness`` and ``+ window size`` without overflow.
#:
#: >>> MIN_TIME < -(10**18) < 10**18 < MAX_TIME
#: True
MIN_TIME = -(2**62)
MAX_TIME = 2**62


@runtime_checkable
class PartialOrder(Protocol):
    """A timestamp type with a partial order (timely's `PartialOrder` trait).

    Implementations must make `less_equal` reflexive, antisymmetric and transitive, and
    `less_than(other)` must equal `less_equal(other) and self != other`. They must also be
    hashable and immutable, because antichains and change batches key on them.

    >>> isinstance(Product(1, 2), PartialOrder)
    True
    >>> isinstance(3, PartialOrder)  # ints are handled by the free functions instead
    False
    """

    def less_equal(self, other: Any) -> bool:
        """True when `self` ≤ `other` in the partial order."""
        ...

    def less_than(self, other: Any) -> bool:
        """True when `self` ≤ `other` and `self != other`."""
        ...


#: Anything usable as a time: an `int` or a `PartialOrder` (e.g. a `Product`).
Timestamp: TypeAlias = int | PartialOrder

T = TypeVar("T")


def less_equal(a: Any, b: Any) -> bool:
    """`a` ≤ `b` in the partial order: `<=` for ints, `a.less_equal(b)` otherwise.

    >>> less_equal(1, 2), less_equal(2, 2), less_equal(3, 2)
    (True, True, False)
    >>> less_equal(Product(1, 5), Product(2, 5)), less_equal(Product(1, 5), Product(2, 4))
    (True, False)
    """
    if type(a) is int:  # fast path: the data-plane timestamp
        return a <= b
    return a.less_equal(b)


def less_than(a: Any, b: Any) -> bool:
    """`a` < `b` in the partial order: `<` for ints, `a.less_than(b)` otherwise.

    >>> less_than(1, 2), less_than(2, 2)
    (True, False)
    >>> less_than(Product(1, 2), Product(1, 3)), less_than(Product(1, 2), Product(1, 2))
    (True, False)
    """
    if type(a) is int:
        return a < b
    return a.less_than(b)


class Product:
    """A pair of timestamps ordered by the product order (timely's `Product`).

    `Product(a, b)` ≤ `Product(c, d)` iff `a` ≤ `c` and `b` ≤ `d` (each with
    `less_equal`), so components may be ints or further `Product`s. Instances are
    immutable and hashable, and equal only to `Product`s with equal components.

    `Product` intentionally defines no `<`, `<=`, `>`, `>=`: Python's `sorted` would take
    them for a total order and silently produce an order that depends on the input order.
    Use `less_equal`/`less_than` for the partial order and `sort_key` for a deterministic
    total order (lexicographic by `(outer, inner)`).

    >>> p = Product(1, 2)
    >>> p
    Product(1, 2)
    >>> p.less_equal(Product(1, 3)), p.less_than(Product(1, 2)), p.less_equal(Product(0, 9))
    (True, False, False)
    >>> Product(Product(0, 1), 2).less_equal(Product(Product(0, 2), 2))
    True
    >>> Product(1, 2) == Product(1, 2), len({Product(1, 2), Product(1, 2)})
    (True, 1)
    >>> Product(1, 2) < Product(2, 3)
    Traceback (most recent call last):
    ...
    TypeError: '<' not supported between instances of 'Product' and 'Product'
    """

    __slots__ = ("outer", "inner", "_hash")

    outer: Any
    inner: Any

    def __init__(self, outer: Any, inner: Any) -> None:
        object.__setattr__(self, "outer", outer)
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "_hash", hash((outer, inner)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Product is immutable; cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Product is immutable; cannot delete {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (Product, (self.outer, self.inner))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Product:
            return NotImplemented
        return self.outer == other.outer and self.inner == other.inner  # type: ignore[attr-defined]

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return self._hash  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"Product({self.outer!r}, {self.inner!r})"

    def less_equal(self, other: Product) -> bool:
        """Product order: both components ≤.

        >>> Product(1, 2).less_equal(Product(2, 2)), Product(1, 2).less_equal(Product(2, 1))
        (True, False)
        """
        a, b = self.outer, other.outer
        if not (a <= b if type(a) is int else a.less_equal(b)):
            return False
        a, b = self.inner, other.inner
        return a <= b if type(a) is int else a.less_equal(b)  # type: ignore[no-any-return]

    def less_than(self, other: Product) -> bool:
        """Strict product order: ≤ and not equal (one component may stay equal).

        >>> Product(1, 2).less_than(Product(1, 3)), Product(1, 2).less_than(Product(1, 2))
        (True, False)
        """
        if not self.less_equal(other):
            return False
        return self.outer != other.outer or self.inner != other.inner  # type: ignore[no-any-return]

    def sort_key(self) -> tuple[Any, Any]:
        """Lexicographic `(outer, inner)` key: a total order for sorting output only.

        >>> sorted([Product(1, 0), Product(0, 5)], key=Product.sort_key)
        [Product(0, 5), Product(1, 0)]
        """
        return (sort_key(self.outer), sort_key(self.inner))

    @classmethod
    def minimum(cls, outer: Any = int, inner: Any = int) -> Product:
        """The least `Product` whose components are like `outer` and `inner`.

        Each argument is a timestamp type (e.g. `int`) or an example value; see `minimum`.

        >>> Product.minimum()
        Product(0, 0)
        >>> Product.minimum(Product(3, 4), int)
        Product(Product(0, 0), 0)
        """
        return cls(minimum(outer), minimum(inner))


def minimum(like: Any) -> Any:
    """The least timestamp of the type of `like` (a type, or an example timestamp).

    * `int` (or any int): `0`, like timely's unsigned timestamps — negative ints still
      compare correctly, they are just below the "minimum".
    * a `Product` instance: the component-wise minimum, recursively (the type alone does
      not say what the components are; use `Product.minimum(outer, inner)` for that).
    * any other type or instance: its `minimum()` method/classmethod.

    >>> minimum(int), minimum(42)
    (0, 0)
    >>> minimum(Product(3, Product(4, 5)))
    Product(0, Product(0, 0))
    """
    if like is int or type(like) is int:
        return 0
    if like is Product:
        return Product.minimum()
    if type(like) is Product:
        return Product(minimum(like.outer), minimum(like.inner))
    fn = getattr(like, "minimum", None)
    if fn is None:
        raise TypeError(f"no minimum() known for timestamp type {like!r}")
    return fn()


def sort_key(t: Any) -> Any:
    """A total-order key for deterministic output (NOT the partial order).

    Ints are their own key, `Product`s sort lexicographically by `(outer, inner)`, objects
    with a `sort_key()` method use it, anything else is used as is. For ints and products
    the key is a linear extension of the partial order: `less_equal(a, b)` implies
    `sort_key(a) <= sort_key(b)`.

    >>> sort_key(3), sort_key(Product(1, Product(2, 3)))
    (3, (1, (2, 3)))
    """
    if type(t) is int:
        return t
    fn = getattr(t, "sort_key", None)
    return t if fn is None else fn()


def sorted_times(times: Iterable[T]) -> list[T]:
    """`times` sorted by `sort_key`; if the keys are not comparable, in the given order.

    >>> sorted_times([Product(1, 0), Product(0, 5), Product(0, 1)])
    [Product(0, 1), Product(0, 5), Product(1, 0)]
    """
    items = list(times)
    if len(items) < 2:
        return items
    try:
        # `sorted` (not `list.sort`) so a failed sort leaves `items` untouched.
        return sorted(items) if type(items[0]) is int else sorted(items, key=sort_key)
    except TypeError:
        return items  # not sortable: keep the caller's order rather than failing


def frontier_le(a: int | None, b: int | None) -> bool:
    """The frontier order of the data plane's frontiers (at most one int time; ``None``
    is the empty frontier, after every time): ``Antichain([a]) <= Antichain([b])``
    without building antichains.

    >>> frontier_le(1, 2), frontier_le(2, 1), frontier_le(1, None), frontier_le(None, 1)
    (True, False, True, False)
    """
    return b is None or (a is not None and a <= b)


def describe_frontier(frontier: Any) -> str:
    """A frontier in words, for people: ``"no time sealed yet"`` for the initial
    frontier (``MIN_TIME``, the internal minimum), ``"all times sealed"`` for the empty
    one (``None`` or an empty antichain), else ``"sealed before <t>"``.

    >>> describe_frontier(MIN_TIME), describe_frontier(None), describe_frontier(1500)
    ('no time sealed yet', 'all times sealed', 'sealed before 1500')
    >>> describe_frontier([Product(0, 3), Product(2, 1)])
    'sealed before Product(0, 3), Product(2, 1)'
    """
    if frontier is None:
        return "all times sealed"
    elements = [frontier] if isinstance(frontier, int) else list(frontier)
    if not elements:
        return "all times sealed"
    if all(type(t) is int and t <= MIN_TIME for t in elements):
        return "no time sealed yet"
    return "sealed before " + ", ".join(str(t) for t in sorted_times(elements))
