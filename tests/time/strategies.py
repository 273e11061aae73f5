"""Timestamp kinds, finite universes and brute-force reference definitions for the tests.

The reference order `ref_le` is written independently of `sealtime.time` (it recurses on
the components itself) so the properties compare the library against a second opinion.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from sealtime.time import Product


@functools.lru_cache(maxsize=1 << 16)  # the universes are tiny; keeps brute force cheap
def ref_le(a: Any, b: Any) -> bool:
    """Reference partial order: ints by value, products component-wise."""
    if isinstance(a, int):
        return a <= b
    return ref_le(a.outer, b.outer) and ref_le(a.inner, b.inner)


def ref_lt(a: Any, b: Any) -> bool:
    return ref_le(a, b) and a != b


def ref_minimal(times: Iterable[Any]) -> set[Any]:
    """The minimal elements of a finite set of times."""
    pool = set(times)
    return {t for t in pool if not any(ref_lt(u, t) for u in pool)}


def ref_frontier(counts: Counter) -> set[Any]:
    """Minimal elements among the times with a positive accumulated count."""
    return ref_minimal(t for t, c in counts.items() if c > 0)


def up_set(antichain: Iterable[Any], universe: Iterable[Any]) -> frozenset[Any]:
    """Times of `universe` that are ≥ some element of `antichain`."""
    elems = list(antichain)
    return frozenset(g for g in universe if any(ref_le(a, g) for a in elems))


def _box(dims: int, size: int) -> tuple[Any, ...]:
    """All times of a small box lattice: ints, `Product`s, or nested `Product`s."""
    if dims == 1:
        return tuple(range(size))
    if dims == 2:
        return tuple(Product(a, b) for a, b in itertools.product(range(size), repeat=2))
    return tuple(Product(Product(a, b), c) for a, b, c in itertools.product(range(size), repeat=3))


@dataclass(frozen=True)
class Kind:
    """One timestamp type under test: a finite lattice ("universe") to draw times from.

    The universe is closed under join and meet, so brute-force checks over it are exact.
    Times are drawn with `sampled_from` (one cheap draw each, shrinking to the minimum).
    """

    name: str
    universe: tuple[Any, ...]

    def __repr__(self) -> str:
        return self.name

    @property
    def time(self) -> st.SearchStrategy[Any]:
        """One time of the universe."""
        return st.sampled_from(self.universe)

    # Lists are decoded from one `st.binary` draw rather than drawn element by element:
    # hypothesis pays per draw, and one draw per example keeps 1000 examples per property
    # cheap. Shrinking still works: shorter byte strings give shorter lists, and smaller
    # bytes give smaller times (byte 0 is the universe's minimum with diff +1).

    def times(self, min_size: int = 0, max_size: int = 10) -> st.SearchStrategy[list[Any]]:
        """Lists of times."""
        u, n = self.universe, len(self.universe)
        return st.binary(min_size=min_size, max_size=max_size).map(
            lambda bs: [u[b % n] for b in bs]
        )

    def updates(self, max_size: int) -> st.SearchStrategy[list[tuple[Any, int]]]:
        """Lists of `(time, diff)` with small diffs of both signs."""
        return st.binary(max_size=max_size).map(lambda bs: [self._update(b) for b in bs])

    def batches(self, max_updates: int) -> st.SearchStrategy[list[list[tuple[Any, int]]]]:
        """Lists of batches of `(time, diff)` (about one byte in six ends a batch)."""
        return st.binary(max_size=max_updates).map(self._split_batches)

    def _update(self, b: int) -> tuple[Any, int]:
        return self.universe[(b // 6) % len(self.universe)], _DIFFS[b % 6]

    def _split_batches(self, bs: bytes) -> list[list[tuple[Any, int]]]:
        batches: list[list[tuple[Any, int]]] = [[]]
        for b in bs:
            if b % 6 == 5:
                batches.append([])
            else:
                batches[-1].append(self._update(b))
        return batches


_DIFFS = (1, -1, 2, -2, 3, -3)  # indexed by byte % 6 (in `batches`, 5 ends a batch)


# Hypothesis properties run on ints and on `Product`s of ints; nested products (a third,
# bigger universe) are covered by exhaustive, deterministic checks, which are cheaper.
INT = Kind("int", _box(1, 12))
PRODUCT = Kind("product", _box(2, 5))
NESTED = Kind("nested", _box(3, 3))

KINDS = [INT, PRODUCT]
ALL_KINDS = [INT, PRODUCT, NESTED]
