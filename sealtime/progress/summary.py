"""Path summaries: what happens to a timestamp along a path through the graph.

A path summary is a monotone function from times to times, or to nothing: `results_in(t)`
is the least time a message at `t` can become after following the path, and `None` means
the path cannot produce any time from `t` (the result would leave the int64 range, or a
bounded loop has run out of iterations). Summaries compose with `followed_by`, and are
partially ordered: `s1 ≤ s2` iff `s1.results_in(t) ≤ s2.results_in(t)` for every `t`,
where `None` counts as greater than every time (a path that produces nothing constrains
nothing). Between two locations there may be several incomparable summaries, kept as an
`Antichain` of summaries.

Every summary here is *inflationary* — `results_in(t)` is `None` or ≥ `t` — because an
operator may delay a time but never send into the past. A summary `advances()` if every
time it produces is strictly greater than its input; every cycle of a dataflow graph
needs one, or the frontier on the cycle could never move past a time.

These kinds cover sealtime's graphs:

* `Identity()` — the time is unchanged (plain operators, edges).
* `Add(n, limit)` — for `int` times: `t + n`, or `None` once that exceeds `limit`
  (default: the int64 maximum, like timely's `checked_add`).
* `RoundUp(g)` — for `int` times: the least multiple of `g` that is ≥ `t` (the summary
  of ``advance_time``, differential's ``delay``): a time on a multiple stays.
* `Chain(steps)` — for `int` times: the steps one after the other, when no single
  summary above says the same (e.g. `RoundUp(2)` then `RoundUp(3)`).
* `ProductSummary(outer, inner)` — for `Product` times: one summary per coordinate;
  `ProductSummary(Identity(), Add(1))` is the feedback edge of an iterative loop.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, NoReturn

from sealtime.errors import PlanError
from sealtime.time import Product

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "Add",
    "Chain",
    "Identity",
    "PathSummary",
    "ProductSummary",
    "RoundUp",
]

#: Largest time an `Add` summary produces by default (data-plane times are int64).
INT64_MAX = 2**63 - 1
#: Smallest int64; an `Add` that cannot produce a time ≥ this is empty.
INT64_MIN = -(2**63)


class PathSummary(ABC):
    """Base class of path summaries (timely's `PathSummary` trait).

    Subclasses are immutable and hashable, implement `results_in`, `followed_by`,
    `less_equal` and `advances`, and are inflationary (`results_in(t)` is None or ≥ t).
    `less_equal`/`less_than` make summaries a `PartialOrder`, so an `Antichain` of
    summaries keeps only the minimal ones.

    >>> from sealtime.time import Antichain
    >>> Antichain([Add(2), Add(1), Identity()])
    Antichain([Identity()])
    >>> isinstance(Add(1), PathSummary)
    True
    """

    __slots__ = ()

    @abstractmethod
    def results_in(self, t: Any) -> Any | None:
        """The least time `t` becomes along this path, or None if it cannot continue.

        >>> Add(3).results_in(4), Add(3, limit=5).results_in(4)
        (7, None)
        """

    @abstractmethod
    def followed_by(self, other: PathSummary) -> PathSummary | None:
        """The summary of this path then `other`; None if the composite yields no time.

        >>> Add(1).followed_by(Add(2))
        Add(3)
        """

    @abstractmethod
    def less_equal(self, other: PathSummary) -> bool:
        """True iff `self.results_in(t) ≤ other.results_in(t)` for every time `t`.

        `None` (no time) is above every time. Summaries for different time types are
        incomparable.

        >>> Add(1).less_equal(Add(2)), Add(2).less_equal(Add(1))
        (True, False)
        """

    @abstractmethod
    def advances(self) -> bool:
        """True iff every time this summary produces is strictly greater than its input.

        A cycle of the graph is only allowed if one of its summaries advances.

        >>> Identity().advances(), Add(0).advances(), Add(1).advances()
        (False, False, True)
        """

    @abstractmethod
    def sort_key(self) -> tuple[Any, ...]:
        """A total-order key, for deterministic output only (not the partial order).

        >>> sorted([Add(2), Identity(), Add(1)], key=lambda s: s.sort_key())
        [Identity(), Add(1), Add(2)]
        """

    def less_than(self, other: PathSummary) -> bool:
        """`self ≤ other` and not `other ≤ self` (strictly less in the partial order).

        >>> Add(1).less_than(Add(2)), Add(1).less_than(Add(1)), Identity().less_than(Add(0))
        (True, False, False)
        """
        return self.less_equal(other) and not other.less_equal(self)


class _ByValue(PathSummary):
    """A summary equal to, hashed, shown and pickled as its constructor arguments
    (`_args`).

    >>> RoundUp(10) == RoundUp(10), repr(Chain((Add(1), RoundUp(5))))
    (True, 'Chain((Add(1), RoundUp(5)))')
    """

    __slots__ = ()

    @abstractmethod
    def _args(self) -> tuple[Any, ...]:
        """The constructor arguments that make this summary."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._args() == other._args()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self), *self._args()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(repr(a) for a in self._args())})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), self._args())


class Identity(PathSummary):
    """The summary that leaves every time unchanged; works for any time type.

    It is the least summary: it is ≤ every (inflationary) summary.

    >>> Identity().results_in(5), Identity().results_in(Product(1, 2))
    (5, Product(1, 2))
    >>> Identity().followed_by(Add(2)), Identity().less_equal(Add(0))
    (Add(2), True)
    """

    __slots__ = ()

    def results_in(self, t: Any) -> Any:
        """`t` itself.

        >>> Identity().results_in(3)
        3
        """
        return t

    def followed_by(self, other: PathSummary) -> PathSummary:
        """`other`: following the identity changes nothing.

        >>> Identity().followed_by(Identity())
        Identity()
        """
        _check_summary(other)
        return other

    def less_equal(self, other: PathSummary) -> bool:
        """Always True for a summary: every summary is inflationary.

        >>> Identity().less_equal(ProductSummary(Add(1), Identity()))
        True
        """
        return isinstance(other, PathSummary)

    def advances(self) -> bool:
        """False: the identity never advances a time.

        >>> Identity().advances()
        False
        """
        return False

    def sort_key(self) -> tuple[Any, ...]:
        """`(0, 0, 0)`: sorts before every other summary.

        >>> Identity().sort_key()
        (0, 0, 0)
        """
        return (0, 0, 0)

    def __eq__(self, other: object) -> bool:
        return type(other) is Identity

    def __hash__(self) -> int:
        return hash(Identity)

    def __repr__(self) -> str:
        return "Identity()"


class Add(PathSummary):
    """For `int` times: add `n ≥ 0`; produce nothing once the result exceeds `limit`.

    `limit` defaults to the int64 maximum, so `Add(n)` behaves like timely's `u64`
    summaries (overflow = no time). A smaller `limit` bounds a loop: a feedback edge
    `Add(1, limit=9)` lets times circulate until 9.

    >>> Add(2).results_in(5)
    7
    >>> Add(1).results_in(INT64_MAX) is None
    True
    >>> Add(1, limit=9).results_in(8), Add(1, limit=9).results_in(9)
    (9, None)
    >>> Add(-1)
    Traceback (most recent call last):
    ...
    sealtime.errors.PlanError: Add(n) needs n >= 0 (a path may delay a time, never move it back); got n=-1
    """

    __slots__ = ("n", "limit")

    n: int
    limit: int

    def __init__(self, n: int, limit: int = INT64_MAX) -> None:
        if type(n) is not int:
            raise TypeError(f"Add(n) needs an int n, got {n!r}")
        if type(limit) is not int:
            raise TypeError(f"Add(limit=...) needs an int, got {limit!r}")
        if n < 0:
            raise PlanError(
                f"Add(n) needs n >= 0 (a path may delay a time, never move it back); got n={n}"
            )
        if not (limit - n >= INT64_MIN and limit <= INT64_MAX):
            raise PlanError(
                f"Add({n}, limit={limit}): limit must be an int64 and leave room for some "
                f"int64 time t with t + {n} <= limit"
            )
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "limit", limit)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Add is immutable; cannot set {name!r}")

    def results_in(self, t: int) -> int | None:
        """`t + n`, or None if that is beyond `limit`.

        >>> Add(1).results_in(2), Add(1, limit=2).results_in(2)
        (3, None)
        """
        r = t + self.n
        return r if r <= self.limit else None

    def followed_by(self, other: PathSummary) -> PathSummary | None:
        """Compose: `Add(n, L)` then `Add(m, M)` is `Add(n + m, min(L + m, M))`.

        The composite produces `t + n + m` exactly when `t + n ≤ L` and `t + n + m ≤ M`.
        None if it could never produce an int64 time.

        >>> Add(1).followed_by(Add(2)), Add(1).followed_by(Identity())
        (Add(3), Add(1))
        >>> Add(1, limit=5).followed_by(Add(2))
        Add(3, limit=7)
        >>> Add(2**63).followed_by(Add(2**63)) is None  # beyond the whole int64 range
        True
        """
        if type(other) is Identity:
            return self
        if type(other) in (RoundUp, Chain):
            return Chain((self, other))
        if type(other) is not Add:
            _cannot_follow(self, other, "int times")
        n = self.n + other.n
        limit = min(self.limit + other.n, other.limit)
        if limit - n < INT64_MIN:
            return None  # no int64 time survives this path
        return Add(n, limit)

    def less_equal(self, other: PathSummary) -> bool:
        """`Add(n, L) ≤ Add(m, M)` iff `n ≤ m` and `L - n ≥ M - m` (defined wherever M is).

        Compared with `Identity()`, only `Add(0)` (no limit) is ≤ it.

        >>> Add(1).less_equal(Add(2)), Add(1, limit=5).less_equal(Add(2))
        (True, False)
        >>> Add(0).less_equal(Identity()), Add(0, limit=5).less_equal(Identity())
        (True, False)
        """
        if type(other) is Add:
            return self.n <= other.n and self.limit - self.n >= other.limit - other.n
        if type(other) is Identity:
            return self.n == 0 and self.limit >= INT64_MAX
        return False

    def advances(self) -> bool:
        """True iff `n > 0`.

        >>> Add(0).advances(), Add(3).advances()
        (False, True)
        """
        return self.n > 0

    def sort_key(self) -> tuple[Any, ...]:
        """`(0, n, -limit)`.

        >>> Add(2).sort_key() < Add(3).sort_key()
        True
        """
        return (0, self.n, -self.limit)

    def __eq__(self, other: object) -> bool:
        if type(other) is not Add:
            return NotImplemented
        return self.n == other.n and self.limit == other.limit

    def __hash__(self) -> int:
        return hash((Add, self.n, self.limit))

    def __repr__(self) -> str:
        if self.limit == INT64_MAX:
            return f"Add({self.n})"
        return f"Add({self.n}, limit={self.limit})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (Add, (self.n, self.limit))


def _ceil(t: int, g: int) -> int:
    return -((-t) // g) * g


class RoundUp(_ByValue):
    """For `int` times: the least multiple of `g` (≥ 1) that is ≥ `t`.

    The summary of ``advance_time(to=g)``: an update at `t` leaves at ``ceil_g(t)``, so
    the output frontier is the input frontier rounded up — every time below it is
    complete. It never advances a time on a multiple (`advances()` is False) and it
    produces nothing where the multiple would leave the int64 range.

    >>> RoundUp(10).results_in(11), RoundUp(10).results_in(20), RoundUp(10).results_in(-5)
    (20, 20, 0)
    >>> RoundUp(10).followed_by(RoundUp(30)), RoundUp(30).followed_by(RoundUp(10))
    (RoundUp(30), RoundUp(30))
    >>> RoundUp(10).less_equal(RoundUp(30)), RoundUp(30).less_equal(RoundUp(10))
    (True, False)
    >>> RoundUp(0)
    Traceback (most recent call last):
    ...
    sealtime.errors.PlanError: RoundUp(g) needs an int g >= 1; got 0
    """

    __slots__ = ("g",)

    g: int

    def __init__(self, g: int) -> None:
        if type(g) is not int or g < 1:
            raise PlanError(f"RoundUp(g) needs an int g >= 1; got {g!r}")
        object.__setattr__(self, "g", g)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"RoundUp is immutable; cannot set {name!r}")

    def results_in(self, t: int) -> int | None:
        """``ceil(t / g) * g``, or None beyond the int64 range.

        >>> RoundUp(1000).results_in(1), RoundUp(1000).results_in(INT64_MAX) is None
        (1000, True)
        """
        r = _ceil(t, self.g)
        return r if r <= INT64_MAX else None

    def followed_by(self, other: PathSummary) -> PathSummary | None:
        """Compose; one `RoundUp` when one granularity divides the other, else a `Chain`.

        >>> RoundUp(2).followed_by(RoundUp(3)), RoundUp(2).followed_by(Identity())
        (Chain((RoundUp(2), RoundUp(3))), RoundUp(2))
        """
        if type(other) is Identity:
            return self
        if type(other) is RoundUp:
            if other.g % self.g == 0:
                return other
            if self.g % other.g == 0:
                return self
        if type(other) in (RoundUp, Add, Chain):
            return Chain((self, other))
        _cannot_follow(self, other, "int times")

    def less_equal(self, other: PathSummary) -> bool:
        """``ceil_g(t) ≤ ceil_h(t)`` for all `t` iff `g` divides `h`; `RoundUp(1)` is the
        identity. Against other kinds the answer is False unless it is certain (a
        conservative False only keeps an extra summary in an antichain).

        >>> RoundUp(1).less_equal(Identity()), RoundUp(5).less_equal(Identity())
        (True, False)
        """
        if type(other) is RoundUp:
            return other.g % self.g == 0
        if type(other) is Identity:
            return self.g == 1
        if type(other) is Chain:
            return other.steps[0] == self or (self.g == 1)
        return False

    def advances(self) -> bool:
        """False: a time already on a multiple of `g` stays where it is.

        >>> RoundUp(10).advances()
        False
        """
        return False

    def sort_key(self) -> tuple[Any, ...]:
        """`(2, g)`.

        >>> RoundUp(10).sort_key()
        (2, 10)
        """
        return (2, self.g)

    def _args(self) -> tuple[Any, ...]:
        return (self.g,)


class Chain(_ByValue):
    """For `int` times: `steps` (`Add`/`RoundUp`) applied one after the other.

    The composite of summaries that no single kind expresses. Comparisons are exact
    only in the certain cases (equal chains, or a prefix relation); otherwise
    `less_equal` answers False, which keeps both summaries in an antichain (safe:
    a frontier is the least over its summaries).

    >>> c = Chain((RoundUp(2), RoundUp(3)))
    >>> c.results_in(1), c.results_in(4), c.advances(), Chain((Add(1), RoundUp(5))).advances()
    (3, 6, False, True)
    """

    __slots__ = ("steps",)

    steps: tuple[PathSummary, ...]

    def __init__(self, steps: tuple[PathSummary, ...]) -> None:
        flat: list[PathSummary] = []
        for s in steps:
            if type(s) is Chain:
                flat.extend(s.steps)
            elif type(s) in (Add, RoundUp):
                flat.append(s)
            elif type(s) is not Identity:
                raise TypeError(f"Chain takes Add/RoundUp steps (int times), got {s!r}")
        object.__setattr__(self, "steps", tuple(flat))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"Chain is immutable; cannot set {name!r}")

    def results_in(self, t: int) -> int | None:
        """Each step in turn; None as soon as one yields None."""
        out: int | None = t
        for s in self.steps:
            out = s.results_in(out)
            if out is None:
                return None
        return out

    def followed_by(self, other: PathSummary) -> PathSummary | None:
        """This chain, then `other`.

        >>> Chain((RoundUp(2), RoundUp(3))).followed_by(Add(1))
        Chain((RoundUp(2), RoundUp(3), Add(1)))
        """
        if type(other) is Identity:
            return self
        if type(other) in (Add, RoundUp, Chain):
            return Chain((self, other))
        _cannot_follow(self, other, "int times")

    def less_equal(self, other: PathSummary) -> bool:
        """True when certain: equal chains, or `other` is this chain followed by more
        (every step is inflationary and monotone).

        >>> a = Chain((RoundUp(2), RoundUp(3)))
        >>> a.less_equal(a.followed_by(Add(1))), a.followed_by(Add(1)).less_equal(a)
        (True, False)
        """
        if type(other) is Chain:
            return other.steps[: len(self.steps)] == self.steps
        return False

    def advances(self) -> bool:
        """True iff some step advances (the others never move a time back)."""
        return any(s.advances() for s in self.steps)

    def sort_key(self) -> tuple[Any, ...]:
        """`(3, step keys...)`."""
        return (3, *(s.sort_key() for s in self.steps))

    def _args(self) -> tuple[Any, ...]:
        return (self.steps,)


class ProductSummary(PathSummary):
    """For `Product` times: `outer` applies to `t.outer`, `inner` to `t.inner`.

    None if either coordinate yields None. `ProductSummary(Identity(), Add(1))` is the
    summary of an iterative loop's feedback edge (next iteration, same outer time).

    >>> loop = ProductSummary(Identity(), Add(1))
    >>> loop.results_in(Product(5, 0))
    Product(5, 1)
    >>> loop.followed_by(loop)
    ProductSummary(Identity(), Add(2))
    >>> loop.advances(), ProductSummary(Identity(), Identity()).advances()
    (True, False)
    """

    __slots__ = ("outer", "inner", "_hash")

    outer: PathSummary
    inner: PathSummary

    def __init__(self, outer: PathSummary, inner: PathSummary) -> None:
        _check_summary(outer)
        _check_summary(inner)
        object.__setattr__(self, "outer", outer)
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "_hash", hash((ProductSummary, outer, inner)))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ProductSummary is immutable; cannot set {name!r}")

    def results_in(self, t: Product) -> Product | None:
        """Apply each coordinate's summary; None if either yields None.

        >>> ProductSummary(Add(1), Add(2, limit=3)).results_in(Product(0, 0))
        Product(1, 2)
        >>> ProductSummary(Add(1), Add(2, limit=3)).results_in(Product(0, 2)) is None
        True
        """
        outer = self.outer.results_in(t.outer)
        if outer is None:
            return None
        inner = self.inner.results_in(t.inner)
        if inner is None:
            return None
        return Product(outer, inner)

    def followed_by(self, other: PathSummary) -> PathSummary | None:
        """Compose coordinate-wise; None if either coordinate's composite is None.

        >>> ProductSummary(Add(1), Identity()).followed_by(ProductSummary(Identity(), Add(1)))
        ProductSummary(Add(1), Add(1))
        """
        if type(other) is Identity:
            return self
        if type(other) is not ProductSummary:
            _cannot_follow(self, other, "Product times")
        # Deliberately parallel to `results_in`: coordinate-wise, stopping at the first None.
        outer = self.outer.followed_by(other.outer)
        if outer is None:
            return None
        inner = self.inner.followed_by(other.inner)
        if inner is None:
            return None
        return ProductSummary(outer, inner)

    def less_equal(self, other: PathSummary) -> bool:
        """Coordinate-wise `less_equal` (both coordinates range independently).

        >>> a, b = ProductSummary(Add(1), Identity()), ProductSummary(Identity(), Add(1))
        >>> a.less_equal(b), b.less_equal(a), a.less_equal(ProductSummary(Add(1), Add(1)))
        (False, False, True)
        """
        if type(other) is ProductSummary:
            return self.outer.less_equal(other.outer) and self.inner.less_equal(other.inner)
        if type(other) is Identity:
            return self.outer.less_equal(other) and self.inner.less_equal(other)
        return False

    def advances(self) -> bool:
        """True iff either coordinate advances (the product order then strictly grows).

        >>> ProductSummary(Add(1), Identity()).advances()
        True
        """
        return self.outer.advances() or self.inner.advances()

    def sort_key(self) -> tuple[Any, ...]:
        """`(1, outer key, inner key)`.

        >>> ProductSummary(Identity(), Add(1)).sort_key()
        (1, (0, 0, 0), (0, 1, -9223372036854775807))
        """
        return (1, self.outer.sort_key(), self.inner.sort_key())

    def __eq__(self, other: object) -> bool:
        if type(other) is not ProductSummary:
            return NotImplemented
        return self.outer == other.outer and self.inner == other.inner

    def __hash__(self) -> int:
        return self._hash  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"ProductSummary({self.outer!r}, {self.inner!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ProductSummary, (self.outer, self.inner))


def _check_summary(value: object) -> None:
    if not isinstance(value, PathSummary):
        raise TypeError(
            f"expected a PathSummary (Identity(), Add(n), ProductSummary(...)), got {value!r}"
        )


def _cannot_follow(summary: PathSummary, other: object, times: str) -> NoReturn:
    # `summary` (over `times`) has no composite with `other`: say whether `other` is no
    # summary at all, or one of another kind of time.
    _check_summary(other)
    raise TypeError(f"cannot follow {summary!r} ({times}) by {other!r}")
