"""`ChangeBatch`: an accumulating collection of `(time, diff)` updates.

Timely keeps a vector of updates and consolidates (sorts and sums) it lazily. In Python a
dict already sums at the cost of an append, so this batch consolidates on every update
(dropping times whose diff reaches zero) and only *ordering* is lazy: the sorted view is
computed when someone reads the batch, and cached until the next change.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Generic, TypeVar

from sealtime.time.order import sorted_times

__all__ = ["ChangeBatch"]

T = TypeVar("T")


class ChangeBatch(Generic[T]):
    """A consolidated multiset of `(time, diff)` changes (timely's `ChangeBatch`).

    Reading it (`iter`, `into_inner`, `drain`, ...) yields each time with a non-zero total
    diff exactly once, sorted by `sort_key` when the times are sortable.

    >>> batch = ChangeBatch()
    >>> batch.update(17, 1)
    >>> batch.update(17, -1)
    >>> batch.is_empty()
    True
    >>> batch.extend([(3, 2), (1, 1), (3, -1)])
    >>> batch.into_inner()
    [(1, 1), (3, 1)]
    """

    __slots__ = ("_counts", "_sorted")

    # Unhashable: the batch is mutable and equality compares contents.
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, updates: Iterable[tuple[T, int]] = ()) -> None:
        self._counts: dict[T, int] = {}
        self._sorted: list[tuple[T, int]] | None = None
        self.extend(updates)

    @classmethod
    def new_from(cls, t: T, diff: int) -> ChangeBatch[T]:
        """A batch holding the single update `(t, diff)`.

        >>> ChangeBatch.new_from(17, 1).into_inner()
        [(17, 1)]
        """
        batch: ChangeBatch[T] = cls()
        batch.update(t, diff)
        return batch

    def update(self, t: T, diff: int) -> None:
        """Add `diff` to the count of `t`.

        >>> batch = ChangeBatch(); batch.update(17, 1); batch.update(17, -1)
        >>> batch.is_empty()
        True
        """
        if diff:
            counts = self._counts
            total = counts.get(t, 0) + diff
            if total:
                counts[t] = total
            else:
                del counts[t]
            self._sorted = None

    def extend(self, updates: Iterable[tuple[T, int]]) -> None:
        """Apply every `(t, diff)` in `updates`.

        >>> batch = ChangeBatch(); batch.extend([(17, 1), (17, -1), (5, 2)])
        >>> batch.into_inner()
        [(5, 2)]
        """
        counts = self._counts
        for t, diff in updates:  # `update`'s body, deliberately inlined: a call costs more
            if diff:
                total = counts.get(t, 0) + diff
                if total:
                    counts[t] = total
                else:
                    del counts[t]
        self._sorted = None

    def compact(self) -> None:
        """Consolidate: after this, the batch holds each time once, with no zero diffs.

        Kept for timely parity; the dict representation is always consolidated, so this
        only builds the sorted view.

        >>> batch = ChangeBatch([(17, 1), (17, -1)]); batch.compact(); len(batch)
        0
        """
        self._view()

    def _view(self) -> list[tuple[T, int]]:
        if self._sorted is None:
            counts = self._counts
            self._sorted = [(t, counts[t]) for t in sorted_times(counts)]
        return self._sorted

    def is_empty(self) -> bool:
        """True if every time's accumulated diff is zero.

        >>> ChangeBatch([(1, 2), (1, -2)]).is_empty(), ChangeBatch([(1, 2)]).is_empty()
        (True, False)
        """
        return not self._counts

    def drain(self) -> list[tuple[T, int]]:
        """Return the consolidated updates (sorted) and leave the batch empty.

        >>> batch = ChangeBatch([(17, 1), (17, -1), (3, 4)])
        >>> batch.drain(), batch.is_empty()
        ([(3, 4)], True)
        """
        out = self._view()
        self._counts = {}
        self._sorted = None
        return out

    def drain_into(self, other: ChangeBatch[T]) -> None:
        """Move every update into `other`, leaving this batch empty.

        >>> a, b = ChangeBatch([(1, 1)]), ChangeBatch([(1, 1)])
        >>> a.drain_into(b); (a.into_inner(), b.into_inner())
        ([], [(1, 2)])
        """
        other.extend(self._counts.items())
        self.clear()

    def clear(self) -> None:
        """Drop every update.

        >>> batch = ChangeBatch([(1, 1)]); batch.clear(); batch.is_empty()
        True
        """
        self._counts = {}
        self._sorted = None

    def copy(self) -> ChangeBatch[T]:
        """An independent copy.

        >>> a = ChangeBatch([(1, 1)]); b = a.copy(); b.update(1, -1); (a.into_inner(), b.is_empty())
        ([(1, 1)], True)
        """
        batch: ChangeBatch[T] = ChangeBatch()
        batch._counts = dict(self._counts)
        return batch

    __copy__ = copy

    def into_inner(self) -> list[tuple[T, int]]:
        """The consolidated updates as a new sorted list (the batch is unchanged).

        >>> ChangeBatch([(2, 1), (1, 1)]).into_inner()
        [(1, 1), (2, 1)]
        """
        return list(self._view())

    def iter(self) -> Iterator[tuple[T, int]]:
        """Iterate the consolidated updates in sorted order.

        >>> list(ChangeBatch([(2, 1), (1, 1), (2, 1)]).iter())
        [(1, 1), (2, 2)]
        """
        return iter(self._view())

    def count_for(self, t: T) -> int:
        """The accumulated diff of `t` (0 if absent).

        >>> ChangeBatch([(2, 1), (2, 4)]).count_for(2), ChangeBatch().count_for(2)
        (5, 0)
        """
        return self._counts.get(t, 0)

    def __iter__(self) -> Iterator[tuple[T, int]]:
        return iter(self._view())

    def __len__(self) -> int:
        return len(self._counts)

    def __bool__(self) -> bool:
        return bool(self._counts)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChangeBatch):
            return NotImplemented
        return self._counts == other._counts

    def __repr__(self) -> str:
        return f"ChangeBatch({self._view()!r})"
