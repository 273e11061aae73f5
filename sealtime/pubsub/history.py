"""History providers for view-mode subscriptions (Materialize `SUBSCRIBE` / SMILE views).

Stream mode keeps no history. A publisher given a `HistoryProvider` additionally serves
**view** subscriptions: a consistent snapshot as of the lower frontier (the accumulated
updates of all complete times), then every update `(row, _diff)` per time, then progress;
a reconnecting subscriber passes the frontier it had reached (`resume`) and receives
exactly the updates at times ≥ that frontier — no gap, no duplicate.

`InMemoryHistory` keeps the updates in memory (tests, small views). A durable provider
(shards in the storage layer) implements the same three methods; that is another issue.

>>> import pyarrow as pa
>>> from sealtime.time import Antichain
>>> h = InMemoryHistory()
>>> h.append(1, pa.Table.from_arrays([pa.array(["a", "b"]), pa.array([1, 1])], names=["k", "_diff"]))
>>> h.append(2, pa.Table.from_arrays([pa.array(["a"]), pa.array([-1])], names=["k", "_diff"]))
>>> h.snapshot(Antichain([3])).to_pylist()
[{'k': 'b', '_diff': 1}]
>>> [t for t, _ in h.updates_from(Antichain([2]))]
[2]
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import pyarrow as pa

from sealtime.errors import StateError
from sealtime.time import Antichain, sorted_times

from ..columns import DIFF, consolidate

__all__ = ["HistoryProvider", "InMemoryHistory"]


@runtime_checkable
class HistoryProvider(Protocol):
    """What a publisher needs to serve view subscriptions.

    All methods are called with the publisher's lock held, in the order updates are
    published, so `snapshot` + `updates_from` + the live stream never overlap or miss.
    """

    def append(self, time: Any, updates: pa.Table) -> None:
        """Record updates (rows with an int64 `_diff` column) at `time`."""
        ...

    def since(self) -> Antichain[Any] | None:
        """Compaction frontier (None: nothing compacted); resuming below it is refused."""
        ...

    def snapshot(self, as_of: Antichain[Any]) -> pa.Table:
        """Consolidated updates of every time not ≥ `as_of` (requires since ≤ as_of)."""
        ...

    def updates_from(self, frontier: Antichain[Any]) -> list[tuple[Any, pa.Table]]:
        """Every recorded update at a time ≥ `frontier`, grouped by time."""
        ...


class InMemoryHistory:
    """All updates in memory, with optional compaction (`compact(since)`).

    >>> InMemoryHistory().since() is None
    True
    """

    def __init__(self) -> None:
        self._updates: dict[Any, list[pa.Table]] = {}
        self._base: pa.Table | None = None  # consolidated updates of compacted times
        self._since: Antichain[Any] | None = None
        self._schema: pa.Schema | None = None

    def append(self, time: Any, updates: pa.Table) -> None:
        """Record updates at `time`."""
        if self._schema is None:
            self._schema = updates.schema
        self._updates.setdefault(time, []).append(updates)

    def since(self) -> Antichain[Any] | None:
        """The compaction frontier, or None before any `compact` (every resume works)."""
        return None if self._since is None else self._since.copy()

    def compact(self, since: Antichain[Any]) -> None:
        """Fold the updates of every time not ≥ `since` into one consolidated base.

        After this, snapshots as of frontiers ≥ `since` still work, but a subscriber can
        no longer resume from a frontier below `since`.

        >>> h = InMemoryHistory()
        >>> h.append(1, pa.Table.from_arrays([pa.array([7]), pa.array([1])], names=["x", "_diff"]))
        >>> h.compact(Antichain([5])); h.since(), h.updates_from(Antichain([0]))
        (Antichain([5]), [])
        """
        done = [t for t in self._updates if not since.less_equal(t)]
        tables = [tb for t in done for tb in self._updates.pop(t)]
        if self._base is not None:
            tables.insert(0, self._base)
        if tables:
            self._base = consolidate(pa.concat_tables(tables))
        self._since = since.copy()

    def snapshot(self, as_of: Antichain[Any]) -> pa.Table:
        """Consolidated updates of the times not ≥ `as_of` (plus the compacted base)."""
        if self._since is not None and not self._since.less_equal_antichain(as_of):
            raise StateError(
                f"snapshot as of {as_of!r} is below since {self._since!r}: those times are "
                "compacted; snapshot as of a frontier >= since"
            )
        tables = [] if self._base is None else [self._base]
        for t in sorted_times(self._updates):
            if not as_of.less_equal(t):
                tables.extend(self._updates[t])
        if not tables:
            schema = self._schema or pa.schema([(DIFF, pa.int64())])
            return schema.empty_table()
        return consolidate(pa.concat_tables(tables))

    def updates_from(self, frontier: Antichain[Any]) -> list[tuple[Any, pa.Table]]:
        """Recorded updates at times ≥ `frontier`, in time order, one table per time."""
        out = []
        for t in sorted_times(self._updates):
            if frontier.less_equal(t):
                tables = self._updates[t]
                out.append((t, tables[0] if len(tables) == 1 else pa.concat_tables(tables)))
        return out
