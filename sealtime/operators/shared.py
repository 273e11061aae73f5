"""Shared arrangements: one arrangement of a collection by a key, read by every operator
that needs that collection arranged that way (differential's ``arrange``, Materialize's
indexes).

The first operator that asks for an `ArrangementKey` creates the arrangement and
writes it every tick (it is the *writer*); later ones read the version it writes in
the same tick. Two operators may share only when their arrangement advances in
lockstep: same collection, same key and value columns, and the same roots deciding its
frontier.

>>> shared = SharedArrangements()
>>> key = ArrangementKey(collection=3, key=("item",), values=("qty",), roots=frozenset({0}))
>>> a, writer = shared.arrangement(key, "/tmp/st-doc/side0", 2)
>>> b, second = shared.arrangement(key, "/tmp/st-doc/other", 2)
>>> writer, second, a is b, len(shared)
(True, False, True, 1)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..arrangement.arrangement import Arrangement

__all__ = ["ArrangementKey", "SharedArrangements"]


@dataclass(frozen=True)
class ArrangementKey:
    """What an arrangement holds: `collection` (a plan node id) keyed by `key`, with the
    `values` columns, advancing with the frontiers of `roots` (plan node ids)."""

    collection: int
    key: tuple[str, ...]
    values: tuple[str, ...]
    roots: frozenset[int]


class SharedArrangements:
    """The arrangements of one running dataflow, by `ArrangementKey`."""

    def __init__(self) -> None:
        self._by_key: dict[ArrangementKey, Arrangement] = {}

    def arrangement(
        self, key: ArrangementKey, directory: str, partitions: int
    ) -> tuple[Arrangement, bool]:
        """The arrangement for `key` and whether the caller writes it: a new one in
        `directory` (the caller writes it), or the one another operator made."""
        found = self._by_key.get(key)
        if found is not None:
            return found, False
        made = Arrangement(directory, partitions)
        self._by_key[key] = made
        return made, True

    def __len__(self) -> int:
        return len(self._by_key)
