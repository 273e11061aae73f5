"""One hash partition of an arrangement, as seen by the task that processes it.

A task reads the partition's state *as of the version before its own* (the live spine
runs up to ``version - 1``) and writes exactly one new run for ``version``. Two merge
semantics exist:

* **upsert** — a run holds, per key, the key's whole state (e.g. the accumulators of an
  aggregate); the newest run that has a key wins, so a lookup takes the first match
  scanning from the newest run. A key whose state is empty is written as an empty row
  (it shadows older runs) and dropped when it reaches the oldest run.
* **additive** — a run holds ``(row, __cnt)`` count changes (a multiset, e.g. a join
  side); a lookup sums the counts of equal rows over all runs and drops zeros.

Compaction is amortised like a binary counter on sizes: the new run absorbs the newest
live run while that run is at most twice its size, so each row is rewritten
O(log(state)) times and a tick writes O(its delta) on average, never O(state) because
the state is large. Rows keep the hash order, so merges are merges of sorted runs.

>>> import tempfile
>>> part = SpinePartition(tempfile.mkdtemp(), 1, ["k"], "additive")
>>> _ = part.write(pa.table({"__h": [1, 2], "k": ["a", "b"], "__r": [0, 0], "__cnt": [1, 1]}))
>>> SpinePartition(part.directory, 2, ["k"], "additive").lookup(
...     pa.table({"__h": [1], "k": ["a"]})).entries.to_pydict()
{'__h': [1], 'k': ['a'], '__r': [0], '__cnt': [1]}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import ConfigError
from ..kernels.keyed import HASH, MIX, ROW_CNT, ROW_HASH, exact_groups, match
from ..storage.fs import DataFS
from .runs import as_fs, live_spine, read_run, run_rows, spine_name, write_run

__all__ = ["CNT", "ROW_HASH", "Lookup", "SpinePartition", "consolidate_rows"]

CNT = ROW_CNT  # (the name `operators.windowed_reduce` imports)


@dataclass
class Lookup:
    """What a lookup found: for query row ``query[j]`` the entry row ``entries[j]``.

    Upsert: at most one entry per query. Additive: every live row of the query's key,
    consolidated (one entry per distinct row, non-zero count).
    """

    query: np.ndarray
    entries: pa.Table


def _empty_like(schema: pa.Schema) -> pa.Table:
    return schema.empty_table()


def consolidate_rows(table: pa.Table, keys: Sequence[str], columns: Sequence[str]) -> pa.Table:
    """Sum ``__cnt`` of equal rows (equal on `columns`, which include the keys) and drop
    zero counts; the result is sorted by ``__h``. Rows carry ``__h`` (key hash) and
    ``__r`` (row hash).

    >>> t = pa.table({"__h": [1, 1, 1], "k": [1, 1, 1], "v": [5, 6, 5], "__r": [9, 8, 9],
    ...               "__cnt": [1, 1, -1]})
    >>> consolidate_rows(t, ["k"], ["k", "v"]).to_pydict()
    {'__h': [1], 'k': [1], 'v': [6], '__r': [8], '__cnt': [1]}
    """
    if table.num_rows == 0:
        return table
    h = np.asarray(table.column(HASH).to_numpy(), dtype=np.int64)
    r = np.asarray(table.column(ROW_HASH).to_numpy(), dtype=np.int64)
    with np.errstate(over="ignore"):
        mixed = h * MIX + r
    probe = table.append_column("__m", pa.array(mixed))
    # Group by the mixed hash, verified on every column: exact whatever the hashes do.
    order, starts = exact_groups(probe, list(columns), then=None, hash_column="__m")
    cnt = np.asarray(table.column(ROW_CNT).to_numpy(), dtype=np.int64)[order]
    first = np.flatnonzero(starts)
    sums = np.add.reduceat(cnt, first) if len(first) else cnt[:0]
    keep = sums != 0
    rows = order[first[keep]]
    out = table.take(pa.array(rows, pa.int64()))
    out = out.set_column(
        out.schema.get_field_index(ROW_CNT), ROW_CNT, pa.array(sums[keep], pa.int64())
    )
    # Back to hash order (the mixed hash scrambled it); stable keeps equal keys adjacent.
    hh = np.asarray(out.column(HASH).to_numpy(), dtype=np.int64)
    return out.take(pa.array(np.argsort(hh, kind="stable"), pa.int64()))


class SpinePartition:
    """The runs of one partition directory, read at ``version - 1``, written at `version`.

    `directory` is the partition's `DataFS` (or a local path or URI). `keys` are the
    key columns (besides ``__h``); `mode` is ``"upsert"`` or
    ``"additive"``. For upsert, `empty` tells which rows hold an empty state (dropped
    when merged into the oldest run).
    """

    def __init__(
        self,
        directory: DataFS | str,
        version: int,
        keys: Sequence[str],
        mode: str,
        empty: Callable[[pa.Table], np.ndarray] | None = None,
        columns: Sequence[str] | None = None,
    ) -> None:
        if mode not in ("upsert", "additive"):
            raise ConfigError(f"SpinePartition(mode={mode!r}): use 'upsert' or 'additive'")
        self.fs = as_fs(directory)
        self.directory = self.fs.location
        self.version = version
        self.keys = list(keys)
        self.mode = mode
        self.empty = empty
        self.columns = list(columns) if columns is not None else None
        self._runs = live_spine(self.fs, version - 1)
        self._tables: dict[str, pa.Table] = {}

    @property
    def run_count(self) -> int:
        return len(self._runs)

    def _table(self, name: str) -> pa.Table:
        if name not in self._tables:
            self._tables[name] = read_run(self.fs, name)
        return self._tables[name]

    def rows(self) -> int:
        """Rows stored in the live runs (entries, not distinct keys)."""
        return sum(run_rows(self.fs, r.name) for r in self._runs)

    # ------------------------------------------------------------------ reads
    def lookup(self, queries: pa.Table) -> Lookup:
        """Find the state of the keys of `queries` (which carry ``__h`` and the keys)."""
        tables = [self._table(r.name) for r in self._runs]
        if not tables or queries.num_rows == 0:
            schema = tables[0].schema if tables else None
            empty = _empty_like(schema) if schema is not None else pa.table({})
            return Lookup(np.zeros(0, np.int64), empty)
        qh = np.asarray(queries.column(HASH).to_numpy(), dtype=np.int64)
        if self.mode == "upsert":
            found = np.full(queries.num_rows, -1, np.int64)
            pieces: list[tuple[np.ndarray, pa.Table]] = []
            for table in reversed(tables):  # newest first: the first match wins
                todo = np.flatnonzero(found < 0)
                if not len(todo):
                    break
                qi, ei = match(table, queries.take(pa.array(todo, pa.int64())), self.keys, qh[todo])
                if len(qi):
                    found[todo[qi]] = 1
                    pieces.append((todo[qi], table.take(pa.array(ei, pa.int64()))))
            if not pieces:
                return Lookup(np.zeros(0, np.int64), _empty_like(tables[-1].schema))
            q = np.concatenate([p[0] for p in pieces])
            entries = pa.concat_tables([p[1] for p in pieces], promote_options="none")
            order = np.argsort(q, kind="stable")
            return Lookup(q[order], entries.take(pa.array(order, pa.int64())))
        # additive: every entry of the key in every run, consolidated per distinct row
        qs, parts = [], []
        for table in tables:
            qi, ei = match(table, queries, self.keys, qh)
            if len(qi):
                qs.append(qi)
                parts.append(table.take(pa.array(ei, pa.int64())))
        if not parts:
            return Lookup(np.zeros(0, np.int64), _empty_like(tables[-1].schema))
        q = np.concatenate(qs)
        entries = pa.concat_tables(parts, promote_options="none")
        if len(parts) > 1:
            entries = entries.append_column("__q", pa.array(q, pa.int64()))
            cols = ["__q", *self._row_columns(entries)]
            entries = consolidate_rows(entries, self.keys, cols)
            q = np.asarray(entries.column("__q").to_numpy(), dtype=np.int64)
            entries = entries.drop(["__q"])
        order = np.argsort(q, kind="stable")
        return Lookup(q[order], entries.take(pa.array(order, pa.int64())))

    def _row_columns(self, table: pa.Table) -> list[str]:
        if self.columns is not None:
            return list(self.columns)
        return [c for c in table.column_names if c not in (HASH, ROW_HASH, ROW_CNT, "__q")]

    def scan(self) -> pa.Table | None:
        """The whole partition's state (consolidated), or None when empty."""
        tables = [self._table(r.name) for r in self._runs]
        if not tables:
            return None
        if len(tables) == 1:
            return tables[0]
        return self._merge(tables, bottom=True)

    # ------------------------------------------------------------------ writes
    def write(self, new: pa.Table, expire: tuple[str, int] | None = None) -> str:
        """Write `new` (this version's run, sorted by ``__h``) and merge it with the
        newest runs while they are at most twice its size. Returns the file written (its
        location).

        `expire` ``(column, bound)``: rows whose `column` is at or below `bound` are
        dropped from what is written (the keys of windows the frontier has passed: no
        later update can have them, so no lookup will ask for them)."""
        first = self.version
        acc = _expire(new, expire)
        runs = list(self._runs)
        while runs and run_rows(self.fs, runs[-1].name) <= 2 * max(acc.num_rows, 1):
            older = runs.pop()
            first = older.first
            acc = self._merge([_expire(self._table(older.name), expire), acc], bottom=not runs)
        if not runs and self.mode == "upsert" and self.empty is not None and acc.num_rows:
            keep = ~self.empty(acc)
            if not keep.all():
                acc = acc.filter(pa.array(keep))
        name = spine_name(first, self.version)
        write_run(self.fs, name, acc)
        return self.fs.join(name)

    def _merge(self, tables: list[pa.Table], bottom: bool) -> pa.Table:
        """Merge runs (oldest first) into one run in hash order."""
        tables = [t for t in tables if t.num_rows] or tables[:1]
        if len(tables) == 1:
            merged = tables[0]
        else:
            schema = tables[-1].schema
            merged = pa.concat_tables([t.cast(schema) for t in tables], promote_options="none")
        if self.mode == "additive":
            return consolidate_rows(merged, self.keys, self._row_columns(merged))
        if len(tables) == 1:
            out = merged
        else:
            age = np.concatenate([np.full(t.num_rows, i, np.int64) for i, t in enumerate(tables)])
            order, starts = exact_groups(merged, self.keys, then=age)
            ends = np.empty(len(starts), dtype=bool)
            ends[:-1] = starts[1:]
            ends[-1:] = True
            out = merged.take(pa.array(order[ends], pa.int64()))  # the newest row per key
        if bottom and self.empty is not None and out.num_rows:
            keep = ~self.empty(out)
            if not keep.all():
                out = out.filter(pa.array(keep))
        return out


def _expire(table: pa.Table, expire: tuple[str, int] | None) -> pa.Table:
    """`table` without the rows whose ``expire[0]`` is at or below ``expire[1]``."""
    if expire is None or not table.num_rows or expire[0] not in table.column_names:
        return table
    import pyarrow.compute as pc

    column, bound = expire
    keep = pc.fill_null(pc.greater(table.column(column), bound), True)
    return table if pc.all(keep).as_py() else table.filter(keep)
