"""Durable view history: a publisher's `HistoryProvider` backed by a persist `Shard`.

View subscriptions need the history of the view (a snapshot, then updates from any
frontier a reconnecting subscriber reached). `InMemoryHistory` loses it when the process
ends; `ShardHistory` keeps it in a `sealtime.storage.Shard` (Parquet batches + upper/since
in the metadata store), so a subscriber can resume with no gap and no duplicate **after
the publishing process restarted**.

Two places hold updates, and each time is served from exactly one of them:

* times below the **sealed** frontier come from the shard (they are durable);
* times at or above it come from memory: the rows `Publisher.send` appended while the
  epoch was open.

The writer (the `Publish` sink) follows "log before propagating" (SMILE): it appends the
updates of ``[lo, hi)`` to the shard (``compare_and_append``), then sends them to the
publisher (which calls `append`), advances the publisher's lower frontier to ``hi`` and
finally calls `seal(hi)`, which drops those times from memory. Until `seal`, the shard's
new batch is not read (reads stop at the sealed frontier), so a subscriber registering in
between gets the in-memory copy and never both.

>>> import tempfile
>>> import pyarrow as pa
>>> from sealtime.storage import MetadataStore, Shard
>>> from sealtime.time import Antichain
>>> d = tempfile.mkdtemp(); store = MetadataStore.open(d)
>>> shard = Shard.create(store, "v", pa.schema([("k", pa.string())]), d)
>>> h = ShardHistory(shard)
>>> upd = pa.table({"k": ["a"], "_time": [0], "_diff": [1]})
>>> _ = shard.compare_and_append(upd, 0, 1)
>>> h.append(0, upd.drop_columns(["_time"])); h.seal(1)
>>> ShardHistory(shard).snapshot(Antichain([1])).to_pylist()   # e.g. after a restart
[{'k': 'a', '_diff': 1}]
>>> [t for t, _ in ShardHistory(shard).updates_from(Antichain([0]))]
[0]
>>> store.close()
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from sealtime.errors import InternalError, ReadBelowSinceError, StateError
from sealtime.time import Antichain

from ..columns import DIFF, TIME, consolidate

__all__ = ["ShardHistory"]


def _element(frontier: Antichain[Any]) -> int | None:
    elements = frontier.elements()
    if len(elements) > 1:  # pragma: no cover - shards are totally ordered
        raise InternalError(f"a shard history needs totally ordered times, got {frontier!r}")
    return None if not elements else int(elements[0])


class ShardHistory:
    """A `HistoryProvider` whose sealed part lives in a `Shard` (int times only).

    The sealed frontier starts at the shard's upper, so a restarted publisher serves the
    whole durable history. `compact(since)` lets the shard consolidate times before
    `since`; resuming from a frontier ≤ since is then refused with a reason.
    """

    def __init__(self, shard: Any) -> None:
        self.shard = shard
        self._lock = threading.Lock()
        self._sealed: int | None = shard.upper
        self._mem: dict[int, list[pa.Table]] = {}
        self._schema = pa.schema([*shard.schema, pa.field(DIFF, pa.int64())])

    @property
    def sealed(self) -> int | None:
        """Times below this are read from the shard (None: all of them, it is finished)."""
        return self._sealed

    def append(self, time: Any, updates: pa.Table) -> None:
        """Keep the updates of an open epoch in memory until `seal` passes it."""
        with self._lock:
            self._mem.setdefault(int(time), []).append(updates)

    def seal(self, frontier: int | None) -> None:
        """The shard is durable below `frontier` (None: finished): serve those times from it."""
        with self._lock:
            self._sealed = frontier
            for t in [t for t in self._mem if frontier is None or t < frontier]:
                del self._mem[t]

    def since(self) -> Antichain[Any] | None:
        """Resuming from a frontier below this is refused (None: nothing was compacted)."""
        st = self.shard.state()
        if st.since is None:
            return Antichain()
        if st.since <= st.lower:
            return None
        # Compaction advanced updates at times ≤ since to since: a subscriber must have
        # seen all of them, i.e. resume from a frontier > since.
        return Antichain([st.since + 1])

    def compact(self, since: int) -> None:
        """Allow and run compaction of the shard's updates at times ≤ `since`.

        `since` must be below the sealed frontier (the history must stay able to serve
        snapshots as of the publisher's lower frontier).
        """
        sealed = self._sealed
        if sealed is not None and since >= sealed:
            raise StateError(
                f"compact({since}): must be below the sealed frontier {sealed} (snapshots as "
                "of the lower frontier must stay possible)"
            )
        self.shard.downgrade_since(since)
        self.shard.compact(grace_seconds=0)

    # ------------------------------------------------------------------ reading
    def _read(self, lo: int | None, hi: int | None) -> pa.Table:
        """Raw shard updates with ``lo <= _time < hi`` (bounds None = open)."""
        files = [
            f
            for b in self.shard.batches()
            if (lo is None or b.upper is None or b.upper > lo) and (hi is None or b.lower < hi)
            for f in b.files
        ]
        full = self.shard.full_schema
        if not files:
            return full.empty_table()
        cond = None
        if lo is not None:
            cond = pc.field(TIME) >= lo
        if hi is not None:
            upper = pc.field(TIME) < hi
            cond = upper if cond is None else cond & upper
        return pads.dataset(files, schema=full, format="parquet").to_table(filter=cond)

    def _user(self, table: pa.Table) -> pa.Table:
        return table.select(self._schema.names).cast(self._schema)

    def snapshot(self, as_of: Antichain[Any]) -> pa.Table:
        """Consolidated updates of every time not ≥ `as_of` (shard part + open epochs)."""
        a = _element(as_of)
        with self._lock:
            sealed = self._sealed
            mem = [tb for t, tbs in self._mem.items() if a is None or t < a for tb in tbs]
        hi = a if sealed is None else (sealed if a is None else min(a, sealed))
        tables = []
        lower = self.shard.lower
        if hi is None or hi > lower:
            since = self.shard.since
            if since is not None and hi is not None and hi - 1 < since:
                raise ReadBelowSinceError(self.shard.name, since, hi - 1)
            tables.append(self._user(self._read(None, hi)))
        tables.extend(self._user(tb) for tb in mem)
        if not tables:
            return self._schema.empty_table()
        return consolidate(pa.concat_tables(tables))

    def updates_from(self, frontier: Antichain[Any]) -> list[tuple[Any, pa.Table]]:
        """Every update at a time ≥ `frontier`, grouped by time, in time order."""
        f = _element(frontier)
        if f is None:
            return []
        with self._lock:
            sealed = self._sealed
            mem = {t: list(tbs) for t, tbs in self._mem.items() if t >= f}
        out: list[tuple[Any, pa.Table]] = []
        if sealed is None or f < sealed:
            raw = self._read(f, sealed)
            if raw.num_rows:
                times = raw.column(TIME).to_numpy()
                order = np.argsort(times, kind="stable")
                raw = raw.take(pa.array(order))
                times = times[order]
                cuts = np.flatnonzero(np.diff(times)) + 1
                user = self._user(raw)
                for start, end in zip(np.r_[0, cuts], np.r_[cuts, len(times)]):
                    out.append((int(times[start]), user.slice(int(start), int(end - start))))
        for t in sorted(mem):
            tables = [self._user(tb) for tb in mem[t]]
            out.append((t, tables[0] if len(tables) == 1 else pa.concat_tables(tables)))
        return out
