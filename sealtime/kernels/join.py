"""The join kernel: a bilinear equi-join of two collections, one partition of one tick.

With ``A``, ``B`` the inputs accumulated before the tick (the two arrangements) and
``dA``, ``dB`` the tick's updates, the output updates are (differential dataflow's
join)::

    dA ⋈ B   at dA's time       A ⋈ dB   at dB's time       dA ⋈ dB   at the later time

with the product of the multiplicities. Only the keys the tick touches are looked up,
so a tick costs O(delta + matching state + output), whatever the state's size (plus a
sort of the output of the keys both deltas touch, below).

The output is consolidated per (row, time) before it leaves the partition (a row's key
decides its partition, so this is complete): when a tick spans several times, the
three terms can pair one row with an update of the other side and with that update's
retraction at the same output time, and such pairs cancel. Only the keys both deltas
touch can produce such pairs, so only their rows are consolidated. Consolidated, the output
is the one canonical stream of differences, the same however the times were cut into
ticks — a restart that catches up on logged ticks in one step emits what the
uninterrupted run did.

Input rows carry ``__side`` (0 = left, 1 = right), ``__h`` (key hash), ``__r`` (row
hash), the key columns, both sides' payload columns (the other side's are null),
``_time`` and ``_diff``. Arrangement rows are ``(__h, keys, payload, __r, __cnt)``.

>>> import pyarrow as pa
>>> spec = JoinSpec(keys=("k",), left=("a",), right=("b",))
>>> d = pa.table({"__side": pa.array([0, 1], pa.int8()), "__h": [1, 1], "__r": [5, 6],
...     "k": [1, 1], "a": ["x", None], "b": [None, "y"], "_time": [3, 4], "_diff": [1, 1]})
>>> out, runs = join_step(d, spec, lambda side, q: None)
>>> out.select(["k", "a", "b", "_time", "_diff"]).to_pylist()
[{'k': 1, 'a': 'x', 'b': 'y', '_time': 4, '_diff': 1}]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..columns import DIFF, TIME
from .keyed import HASH, MIX, ROW_CNT, ROW_HASH, exact_groups, match, slices_without, updates_schema

__all__ = ["JoinSpec", "join_step", "side_schema"]

SIDE = "__side"


@dataclass(frozen=True)
class JoinSpec:
    """Key columns and each side's payload (non-key) columns."""

    keys: tuple[str, ...]
    left: tuple[str, ...]
    right: tuple[str, ...]

    def payload(self, side: int) -> tuple[str, ...]:
        return self.left if side == 0 else self.right


def side_schema(spec: JoinSpec, side: int, input_schema: pa.Schema) -> pa.Schema:
    """Arrangement rows of one side: ``__h``, keys, payload, ``__r``, ``__cnt``."""
    fields = [pa.field(HASH, pa.int64())]
    fields += [input_schema.field(c) for c in (*spec.keys, *spec.payload(side))]
    fields += [pa.field(ROW_HASH, pa.int64()), pa.field(ROW_CNT, pa.int64())]
    return pa.schema(fields)


def _i64(col) -> np.ndarray:
    return np.asarray(col.to_numpy(), dtype=np.int64)


def _consolidate(rows: pa.Table, columns: list[str], with_time: bool) -> pa.Table:
    """Sum ``_diff`` of equal (row[, time]) and drop zeros; sorted by ``__h``.

    Most deltas of an append-only stream hold every (row, time) once: then nothing is
    summed and the rows only need ordering by hash, stably, with no row taken at all
    when they already are in that order (a hash table finds repeats in O(n); the
    general path sorts twice and takes the wide rows twice: docs/dataplane.md, "The join
    kernel copies no row it need not"). Otherwise rows group by the mixed row hash
    (verified on values), then sort by ``__h`` stably from the groups' order."""
    if rows.num_rows == 0:
        return rows
    h = _i64(rows.column(HASH))
    r = _i64(rows.column(ROW_HASH))
    with np.errstate(over="ignore"):
        mixed = h * MIX + r
        if with_time:
            mixed = mixed * MIX + _i64(rows.column(TIME))
    diffs = _i64(rows.column(DIFF))
    if pd.Index(mixed).is_unique and bool(diffs.all()):
        if bool((h[1:] >= h[:-1]).all()):
            return rows
        return rows.take(pa.array(np.argsort(h, kind="stable"), pa.int64()))
    probe = rows.append_column("__m", pa.array(mixed))
    cols = columns + ([TIME] if with_time else [])
    order, starts = exact_groups(probe, cols, then=None, hash_column="__m")
    first = np.flatnonzero(starts)
    sums = np.add.reduceat(diffs[order], first)
    keep = sums != 0
    picked = order[first[keep]]
    by_hash = np.argsort(h[picked], kind="stable")
    out = rows.take(pa.array(picked[by_hash], pa.int64()))
    return out.set_column(out.schema.get_field_index(DIFF), DIFF, pa.array(sums[keep][by_hash]))


def _consolidate_output(
    parts: list[pa.Table], da: pa.Table, db: pa.Table, columns: list[str]
) -> pa.Table | None:
    """The tick's output consolidated per (row, time). Two updates of one output row at
    one time can only come from a key that both deltas touch (``dA ⋈ B`` and ``A ⋈ dB``
    pair distinct rows per time; ``dA ⋈ dB`` is what meets them), so only those keys'
    rows are sorted: a tick whose deltas touch disjoint keys pays nothing."""
    if not parts:
        return None
    out = pa.concat_tables(parts)
    if not (da.num_rows and db.num_rows and out.num_rows):
        return out
    both = _common(_i64(da.column(HASH)), _i64(db.column(HASH)))
    if not len(both):
        return out
    touched = np.isin(_i64(out.column(HASH)), both)
    if touched.all():
        return _consolidate(out, columns, with_time=True)
    rest = out.filter(pa.array(~touched))
    merged = _consolidate(out.filter(pa.array(touched)), columns, with_time=True)
    return pa.concat_tables([rest, merged])


def _rows_where(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of `table` where `mask` holds, in order. When few rows are left out
    (a join whose other side's delta is small), slices of `table` between them: no
    row is copied.

    >>> t = pa.table({"x": [0, 1, 2, 3, 4]})
    >>> _rows_where(t, np.array([1, 1, 0, 1, 1], bool))["x"].to_pylist()
    [0, 1, 3, 4]
    """
    out = np.flatnonzero(~mask)
    if not len(out):
        return table
    if len(out) > max(16, len(mask) // 64):
        return table.filter(pa.array(mask))
    return slices_without(table, out)


def _common(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The values in both `a` and `b`, both sorted (consolidated deltas are): binary
    searches of the smaller in the larger, not a sort of both (``np.intersect1d``).

    >>> _common(np.array([1, 3, 3, 7, 9]), np.array([3, 4, 9])).tolist()
    [3, 9]
    """
    small, large = (a, b) if len(a) <= len(b) else (b, a)
    small = np.unique(small)
    pos = np.searchsorted(large, small)
    found = pos < len(large)
    found[found] = large[pos[found]] == small[found]
    return small[found]


def _pairs(entries: pa.Table, queries: pa.Table, keys: tuple[str, ...]):
    """Matching (query, entry) pairs; `entries` sorted by ``__h``."""
    return match(entries, queries, list(keys))


def join_step(
    delta: pa.Table,
    spec: JoinSpec,
    lookup: Callable[[int, pa.Table], object | None],
) -> tuple[pa.Table, tuple[pa.Table, pa.Table]]:
    """One partition's step. `lookup(side, queries)` returns that side's arrangement
    entries for the queries' keys (a `Lookup`: ``query`` indices and ``entries``), or
    None. Returns the output (keys, left payload, right payload, ``_time``, ``_diff``)
    and the two new runs (the sides' consolidated deltas, times collapsed)."""
    schema = delta.schema
    keys = list(spec.keys)
    out_fields = [schema.field(c) for c in (*keys, *spec.left, *spec.right)]
    out_schema = updates_schema(out_fields)
    # SQL equality: a null key matches nothing, so such rows need no state at all.
    for k in keys:
        if delta.column(k).null_count:
            delta = delta.filter(pc.is_valid(delta.column(k)))
    side = np.asarray(delta.column(SIDE).to_numpy(), dtype=np.int8)
    deltas = []
    for s in (0, 1):
        cols = [HASH, *keys, *spec.payload(s), ROW_HASH, TIME, DIFF]
        # (the other side's payload is not copied)
        rows = _rows_where(delta.select(cols), side == s)
        deltas.append(_consolidate(rows, [*keys, *spec.payload(s)], with_time=True))
    da, db = deltas
    parts: list[pa.Table] = []

    work_schema = out_schema.append(pa.field(HASH, pa.int64())).append(
        pa.field(ROW_HASH, pa.int64())
    )

    def emit(a_rows: pa.Table, b_rows: pa.Table, time: np.ndarray, diff: np.ndarray) -> None:
        if not len(diff):
            return
        arrays = [a_rows.column(k) for k in keys]
        arrays += [a_rows.column(c) for c in spec.left]
        arrays += [b_rows.column(c) for c in spec.right]
        arrays += [pa.array(time, pa.int64()), pa.array(diff, pa.int64())]
        # The output row's hash: its key's, and its two halves' row hashes mixed.
        with np.errstate(over="ignore"):
            row = _i64(a_rows.column(ROW_HASH)) * MIX + _i64(b_rows.column(ROW_HASH))
        arrays += [a_rows.column(HASH), pa.array(row, pa.int64())]
        parts.append(pa.Table.from_arrays(arrays, schema=work_schema))

    for s, d in ((0, da), (1, db)):
        if d.num_rows == 0:
            continue
        # distinct keys of this side's delta, looked up in the other side's arrangement
        order, starts = exact_groups(d, keys)
        key_rows = order[starts]
        queries = d.select([HASH, *keys]).take(pa.array(key_rows, pa.int64()))
        found = lookup(1 - s, queries)
        if found is None or not len(found.query):
            continue
        entries = found.entries
        # the delta rows of key j are order[start_j:end_j]; pair each with key j's entries
        kid = np.cumsum(starts) - 1  # key index per position in `order`
        q = found.query  # sorted
        lo = np.searchsorted(q, kid, side="left")
        hi = np.searchsorted(q, kid, side="right")
        n = hi - lo
        total = int(n.sum())
        if not total:
            continue
        drow = np.repeat(order, n)
        within = np.arange(total) - np.repeat(np.cumsum(n) - n, n)
        erow = np.repeat(lo, n) + within
        dtab = d.take(pa.array(drow, pa.int64()))
        etab = entries.take(pa.array(erow, pa.int64()))
        diff = _i64(dtab.column(DIFF)) * _i64(etab.column(ROW_CNT))
        time = _i64(dtab.column(TIME))
        if s == 0:
            emit(dtab, etab, time, diff)
        else:
            emit(etab, dtab, time, diff)
    if da.num_rows and db.num_rows:
        qi, ei = _pairs(db, da, spec.keys)  # db sorted by hash: entries; da: queries
        if len(qi):
            a = da.take(pa.array(qi, pa.int64()))
            b = db.take(pa.array(ei, pa.int64()))
            time = np.maximum(_i64(a.column(TIME)), _i64(b.column(TIME)))
            diff = _i64(a.column(DIFF)) * _i64(b.column(DIFF))
            emit(a, b, time, diff)
    output = _consolidate_output(parts, da, db, [*keys, *spec.left, *spec.right])
    output = output.select(out_schema.names) if output is not None else out_schema.empty_table()

    runs = []
    for s, d in ((0, da), (1, db)):
        # The side's new run: its updates with the times collapsed, consolidated.
        cols = [HASH, *keys, *spec.payload(s), ROW_HASH]
        collapsed = _consolidate(d, [*keys, *spec.payload(s)], with_time=False)
        run = collapsed.select(cols).append_column(ROW_CNT, collapsed.column(DIFF))
        runs.append(run.cast(side_schema(spec, s, schema)))
    return output, (runs[0], runs[1])
