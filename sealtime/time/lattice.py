"""Lattice operations on timestamps: `join`, `meet`, `advance_by`.

`int` and `Product` timestamps form lattices: any two times have a least upper bound
(`join`) and a greatest lower bound (`meet`). `advance_by` uses them to move a time forward
to a representative that no future query (any time ≥ the frontier) can tell apart from
it — the basis of compaction (differential dataflow's `Lattice::advance_by`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from sealtime.time.order import Product

__all__ = ["advance_by", "join", "meet"]

T = TypeVar("T")


def join(a: T, b: T) -> T:
    """Least upper bound: `max` for ints, component-wise for `Product`, else `a.join(b)`.

    >>> join(3, 5)
    5
    >>> join(Product(1, 4), Product(2, 3))
    Product(2, 4)
    """
    if type(a) is int:
        return a if a >= b else b  # type: ignore[operator]
    if type(a) is Product:
        return Product(join(a.outer, b.outer), join(a.inner, b.inner))  # type: ignore[attr-defined, return-value]
    return a.join(b)  # type: ignore[attr-defined, no-any-return]


def meet(a: T, b: T) -> T:
    """Greatest lower bound: `min` for ints, component-wise for `Product`, else `a.meet(b)`.

    >>> meet(3, 5)
    3
    >>> meet(Product(1, 4), Product(2, 3))
    Product(1, 3)
    """
    if type(a) is int:
        return a if a <= b else b  # type: ignore[operator]
    if type(a) is Product:
        return Product(meet(a.outer, b.outer), meet(a.inner, b.inner))  # type: ignore[attr-defined, return-value]
    return a.meet(b)  # type: ignore[attr-defined, no-any-return]


def advance_by(t: T, frontier: Iterable[T]) -> T:
    """Advance `t` to the greatest time that no time ≥ `frontier` can tell apart from it.

    The result is the meet, over the frontier elements `f`, of `join(t, f)`. For every
    time `g` that is ≥ some element of the frontier, `advance_by(t, frontier) ≤ g` iff
    `t ≤ g`; so `t` may be replaced by the result once only times ≥ the frontier are of
    interest (compaction). The result is ≥ `t`, and ≥ every other time with that property
    (differential dataflow's `Lattice::advance_by`).

    An empty frontier (no future times: the property holds vacuously) leaves `t`
    unchanged, which is what differential's implementation does. `frontier` may be an
    `Antichain` or any iterable of times.

    >>> advance_by(Product(3, 7), [Product(4, 8), Product(5, 3)])
    Product(4, 7)
    >>> advance_by(3, [5]), advance_by(7, [5]), advance_by(3, [])
    (5, 7, 3)
    """
    it = iter(frontier)
    first = next(it, None)
    if first is None:
        return t
    result = join(t, first)
    for f in it:
        result = meet(result, join(t, f))
    return result
