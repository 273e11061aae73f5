"""Keys inside a kernel: exact grouping and lookups by a 64-bit hash.

Every keyed row carries ``__h``, a 64-bit hash of its key computed on Spark
(``xxhash64``). Sorting and searching on one int64 column is what makes kernels fast
(numpy sorts, merges and binary searches), but two different keys may share a hash.
So equality is never decided by the hash alone: rows with equal hashes are compared on
their key columns, and when a collision is found the slow, exact path (a pyarrow sort
on the hash *and* the key columns) takes over. Collisions are rare (about one pair in
2**64), so the exact path costs nothing in practice and is exercised in tests by
forcing a weak hash.

Nested key columns (lists, structs) cannot be compared by pyarrow; for them equality
falls back to the hash alone (documented in docs/arrangements.md).

>>> import pyarrow as pa
>>> t = pa.table({"__h": [7, 3, 7, 3], "k": ["b", "a", "c", "a"]})
>>> order, starts = exact_groups(t, ["k"])
>>> [t.column("k")[int(i)].as_py() for i in order], starts.tolist()
(['a', 'a', 'b', 'c'], [True, False, True, True])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..columns import DIFF, TIME

__all__ = [
    "HASH",
    "MIX",
    "ROW_CNT",
    "ROW_HASH",
    "comparable",
    "exact_groups",
    "match",
    "same_values",
    "segment_ids",
    "slices_without",
    "updates_schema",
]

#: the key's hash (int64, Spark's ``xxhash64`` of the key columns): routes and groups keys
HASH = "__h"
#: the row's hash (key and values): groups equal rows cheaply (verified on the values)
ROW_HASH = "__r"
#: an arranged row's accumulated multiplicity (the deltas' ``_diff``, summed)
ROW_CNT = "__cnt"
#: 0x9E3779B97F4A7C15 (the golden ratio) as int64: ``h * MIX + r`` spreads one hash
#: over another when two are combined into one group id
MIX = np.int64(-7046029254386353131)


def updates_schema(fields: Iterable[pa.Field]) -> pa.Schema:
    """`fields`, then int64 ``_time`` and ``_diff``: the schema of a collection's updates.

    >>> updates_schema([pa.field("k", pa.string())]).names
    ['k', '_time', '_diff']
    """
    return pa.schema([*fields, pa.field(TIME, pa.int64()), pa.field(DIFF, pa.int64())])


def comparable(table: pa.Table | pa.Schema, columns: Sequence[str]) -> list[str]:
    """The columns among `columns` whose values pyarrow can compare and sort."""
    schema = table if isinstance(table, pa.Schema) else table.schema
    out = []
    for c in columns:
        t = schema.field(c).type
        if not (pa.types.is_nested(t) or pa.types.is_dictionary(t)):
            out.append(c)
    return out


def same_values(x: pa.Array | pa.ChunkedArray, y: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Element-wise equality where null equals null and NaN equals NaN (SQL grouping).

    >>> same_values(pa.array([1, None, 2]), pa.array([1, None, 3])).tolist()
    [True, True, False]
    """
    eq = pc.fill_null(pc.equal(x, y), False)
    both_null = pc.and_(pc.is_null(x), pc.is_null(y))
    out = pc.or_(eq, both_null)
    if pa.types.is_floating(x.type):
        nan = pc.fill_null(pc.and_(pc.is_nan(x), pc.is_nan(y)), False)
        out = pc.or_(out, nan)
    return np.asarray(out.to_numpy(zero_copy_only=False), dtype=bool)


def _take(table: pa.Table, column: str, idx: np.ndarray) -> pa.Array:
    col = table.column(column)
    return col.take(pa.array(idx, pa.int64()))


def _rows_equal(
    a: pa.Table, ia: np.ndarray, b: pa.Table, ib: np.ndarray, columns: Sequence[str]
) -> np.ndarray:
    """For each pair (a[ia[j]], b[ib[j]]): are the rows equal on `columns`?"""
    ok = np.ones(len(ia), dtype=bool)
    for c in columns:
        if not len(ia):
            break
        ok &= same_values(_take(a, c, ia), _take(b, c, ib))
    return ok


def segment_ids(starts: np.ndarray) -> np.ndarray:
    """Segment number of every element, from the mask of segment starts.

    >>> segment_ids(np.array([True, False, True, True])).tolist()
    [0, 0, 1, 2]
    """
    return np.cumsum(starts, dtype=np.int64) - 1


def exact_groups(
    table: pa.Table,
    keys: Sequence[str],
    then: np.ndarray | None = None,
    hash_column: str = HASH,
) -> tuple[np.ndarray, np.ndarray]:
    """Order the rows so that equal keys are adjacent (by hash, then key), optionally
    ordered by `then` (e.g. ``_time``) inside a key; return ``(order, starts)`` where
    ``starts[i]`` marks the first row of a key in ``order``.

    The fast path sorts on the int64 hash (and `then`) only and verifies that rows with
    equal hashes have equal keys; a collision switches to an exact sort on the key
    columns. Within a key the order is by `then` (stable otherwise).
    """
    n = table.num_rows
    if n == 0:
        return np.zeros(0, np.int64), np.zeros(0, bool)
    h = np.asarray(table.column(hash_column).to_numpy(), dtype=np.int64)
    order = np.lexsort((then, h)) if then is not None else np.argsort(h, kind="stable")
    hs = h[order]
    starts = np.empty(n, dtype=bool)
    starts[0] = True
    np.not_equal(hs[1:], hs[:-1], out=starts[1:])
    cols = comparable(table, keys)
    if cols and not starts.all():
        first = order[np.flatnonzero(starts)[segment_ids(starts)]]
        rest = ~starts
        if not _rows_equal(table, order[rest], table, first[rest], cols).all():
            return _exact_slow(table, keys, cols, then, hash_column)
    return order, starts


def _exact_slow(
    table: pa.Table,
    keys: Sequence[str],
    cols: Sequence[str],
    then: np.ndarray | None,
    hash_column: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact grouping when two keys share a hash: sort by hash and key columns."""
    n = table.num_rows
    sort_table = table.select([hash_column, *cols])
    sort_keys = [(hash_column, "ascending", "at_end")] + [(c, "ascending", "at_end") for c in cols]
    if then is not None:
        sort_table = sort_table.append_column("__then", pa.array(then))
        sort_keys.append(("__then", "ascending", "at_end"))
    order = np.asarray(pc.sort_indices(sort_table, sort_keys=sort_keys)).astype(np.int64)
    starts = np.zeros(n, dtype=bool)
    starts[0] = True
    h = np.asarray(table.column(hash_column).to_numpy(), dtype=np.int64)[order]
    starts[1:] |= h[1:] != h[:-1]
    for c in cols:
        col = _take(table, c, order)
        starts[1:] |= ~same_values(col.slice(1), col.slice(0, n - 1))
    return order, starts


def match(
    entries: pa.Table,
    queries: pa.Table,
    keys: Sequence[str],
    query_hash: np.ndarray | None = None,
    hash_column: str = HASH,
) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(query row, entry row)`` with equal keys; `entries` sorted by hash.

    Every entry whose hash equals a query's is a candidate (several for a multiset,
    or when hashes collide); candidates are then compared on the key columns.

    >>> e = pa.table({"__h": [1, 5, 5, 9], "k": [1, 5, 6, 9]})
    >>> q = pa.table({"__h": [5, 2, 9], "k": [5, 2, 9]})
    >>> [a.tolist() for a in match(e, q, ["k"])]
    [[0, 2], [1, 3]]
    """
    if entries.num_rows == 0 or queries.num_rows == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    eh = np.asarray(entries.column(hash_column).to_numpy(), dtype=np.int64)
    qh = (
        query_hash
        if query_hash is not None
        else np.asarray(queries.column(hash_column).to_numpy(), dtype=np.int64)
    )
    lo = np.searchsorted(eh, qh, side="left")
    hi = np.searchsorted(eh, qh, side="right")
    counts = hi - lo
    total = int(counts.sum())
    if total == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    qi = np.repeat(np.arange(len(qh), dtype=np.int64), counts)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
    ei = np.repeat(lo, counts) + within
    cols = comparable(entries, keys)
    if cols:
        ok = _rows_equal(queries, qi, entries, ei, cols)
        if not ok.all():
            qi, ei = qi[ok], ei[ok]
    return qi, ei


def slices_without(
    table: pa.Table, drop: np.ndarray, start: int = 0, stop: int | None = None
) -> pa.Table:
    """Rows `start`..`stop` of `table` without the (sorted) row numbers in `drop`, as
    slices of `table` between them: no row is copied, which pays over a filter or a
    take when few rows are dropped from wide rows.

    >>> t = pa.table({"x": [0, 1, 2, 3, 4, 5]})
    >>> slices_without(t, np.array([2, 4]), 1)["x"].to_pylist()
    [1, 3, 5]
    >>> slices_without(t, np.array([0]), 0, 1).num_rows
    0
    """
    stop = table.num_rows if stop is None else stop
    bounds = [start, *[x for d in drop.tolist() for x in (d, d + 1)], stop]
    pieces = [table.slice(a, b - a) for a, b in zip(bounds[::2], bounds[1::2]) if b > a]
    return pa.concat_tables(pieces) if pieces else table.slice(0, 0)


def int64s(col: pa.Array | pa.ChunkedArray, fill: int = 0) -> np.ndarray:
    """`col` as an int64 numpy array, nulls as `fill`.

    >>> int64s(pa.array([1, None, 3])).tolist()
    [1, 0, 3]
    """
    if col.null_count:
        col = pc.fill_null(col, fill)
    return np.asarray(col.to_numpy(), dtype=np.int64)


def validity(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """True where `col` is not null."""
    if not col.null_count:
        return np.ones(len(col), dtype=bool)
    return np.asarray(pc.is_valid(col).to_numpy(zero_copy_only=False), dtype=bool)


def segmented_cumsum(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Inclusive running sums restarting where `starts` is True (``starts[0]`` must be;
    int64 wraps).

    >>> segmented_cumsum(np.array([1, 2, 3, 4]), np.array([True, False, True, False])).tolist()
    [1, 3, 3, 7]
    """
    cs = np.cumsum(x)
    if not len(x):
        return cs
    first = np.flatnonzero(starts)
    return cs - np.repeat(cs[first] - x[first], np.diff(first, append=len(x)))
