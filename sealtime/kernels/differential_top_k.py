"""The top-k kernel: the first k rows of every key, at every time, under retractions.

Problem. ``top_k(by=..., order_by=..., k=...)`` must satisfy, for every key and every
time t, ``output accumulated to t == the first k rows of the key's multiset at t``. When
a row of the top k is retracted the next one moves up, so the key's whole multiset is
kept (an additive arrangement, as for the general reduce), and one event-time tick may
hold thousands of distinct times of a key: recomputing the top k at each of them over
the key's rows would cost O(|rows of key| x |times of key|).

Approach. The tick is laid out as a `Timeline` (see `sealtime.kernels.general_reduce`): per key,
slot 0 is the state before the tick and slots 1..m its distinct times; every distinct
row (*item*) is present with some count during intervals of slots. The items are ranked
once by the requested order, which is made total so the answer is deterministic: the
`order` columns (ascending: nulls first; descending: nulls last; NaN is the greatest
number, as in Spark), then the `tie` columns ascending with nulls first, then the row
hash ``__r``, then every value column (ascending, nulls first) for rows whose hashes
collide. `per_slot_topk` then gives the rows taken at every slot (``min(count, k -
taken so far)`` copies each) in O(N log S + S k), and the output is the change of the
copies of each row from one slot to the next.

Measured (numpy 2.4, pyarrow 26; CPU time, best of 6, on a 2-core machine shared with
other jobs, wall time up to 1.5 times that): one partition of 50,000 delta rows over 1,000
keys with 50 distinct times per key, against 200,000 state entries of those keys, ordered
by an int64 column descending with a string tie column: k = 3 0.54 s, k = 1 0.42 s. About
a quarter is the timeline, a third the ranking of the 250,000 items (pyarrow ranks of the
order and tie columns, one lexsort), a third `per_slot_topk`.

>>> import pyarrow as pa
>>> spec = TopKSpec(keys=("k",), values=("x",), order=(("x", False),), tie=(), k=1)
>>> delta = pa.table({"__h": [1, 1, 1], "k": ["a", "a", "a"], "x": [5, 9, 9],
...                   "__r": [50, 90, 90], "_time": [1, 2, 3], "_diff": [1, 1, -1]})
>>> out, run = top_k_step(delta, spec, lambda q: None)
>>> sorted(zip(out["_time"].to_pylist(), out["x"].to_pylist(), out["_diff"].to_pylist()))
[(1, 5, 1), (2, 5, -1), (2, 9, 1), (3, 5, 1), (3, 9, -1)]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import PlanError
from .general_reduce import Timeline, pack_keys, timeline, value_ranks
from .interval_top_k import MAX_K, per_slot_topk
from .keyed import ROW_HASH, comparable, updates_schema

__all__ = ["TopKSpec", "item_ranks", "top_k_step"]


@dataclass(frozen=True)
class TopKSpec:
    """Key columns, value columns (the rest of the row), the order ``(column, ascending)``,
    the tie-break columns and k. `order` and `tie` columns are value columns."""

    keys: tuple[str, ...]
    values: tuple[str, ...]
    order: tuple[tuple[str, bool], ...]
    tie: tuple[str, ...]
    k: int


def item_ranks(tl: Timeline, spec: TopKSpec) -> np.ndarray:
    """The position of every item of `tl` in the spec's total order (0 = first).

    Ranks are global, but only their order within a key matters.
    """
    used = list(dict.fromkeys([*(c for c, _ in spec.order), *spec.tie, *spec.values, ROW_HASH]))
    items = tl.rows.select(used).take(pa.array(tl.item_row, pa.int64()))
    columns: list[np.ndarray] = []  # dense, >= 0, most significant first
    for column, ascending in spec.order:
        r = value_ranks(items.column(column))  # -1 = null
        top = r.max(initial=0)
        # ascending: nulls (0) first; descending: reversed values, nulls (top + 1) last
        columns.append(r + 1 if ascending else np.where(r < 0, top + 1, top - r))
    columns += [value_ranks(items.column(c)) + 1 for c in spec.tie]
    row_hash = np.asarray(items.column(ROW_HASH).to_numpy(), dtype=np.int64)
    words = [*pack_keys(columns), row_hash]
    perm = np.lexsort(words[::-1])
    if len(perm) > 1:
        # Rows whose order, tie and row hash all agree still need a fixed order: by value.
        w = [x[perm] for x in words]
        tied = np.ones(len(perm) - 1, dtype=bool)
        for x in w:
            tied &= x[1:] == x[:-1]
        if tied.any():
            by_value = [value_ranks(items.column(c)) + 1 for c in comparable(items, spec.values)]
            words += pack_keys(by_value)
            perm = np.lexsort(words[::-1])
    rank = np.empty(len(perm), dtype=np.int64)
    rank[perm] = np.arange(len(perm), dtype=np.int64)
    return rank


def _check(delta: pa.Table, spec: TopKSpec) -> None:
    if not 1 <= spec.k <= MAX_K:
        raise PlanError(f"top_k: k must be in 1..{MAX_K}, got {spec.k}")
    for c in (*(c for c, _ in spec.order), *spec.tie):
        if c not in spec.values:
            raise PlanError(f"top_k orders by {c!r}, which is not a value column")


def top_k_step(
    delta: pa.Table,
    spec: TopKSpec,
    lookup: Callable[[pa.Table], object | None],
) -> tuple[pa.Table, pa.Table]:
    """One partition's step of a differential top-k (see the module docstring).

    `delta`, `lookup` and the new run are those of `general_reduce` (the same additive
    arrangement). Returns ``(output, new_run)``: output rows are keys, values, ``_time``
    and ``_diff``, the change of the copies of that row in the key's top k at that time.

    >>> spec = TopKSpec(("k",), ("x",), order=(("x", True),), tie=(), k=2)
    >>> delta = pa.table({"__h": [0, 0], "k": [1, 1], "x": [None, 4], "__r": [1, 2],
    ...                   "_time": [5, 5], "_diff": [3, 1]})
    >>> out, run = top_k_step(delta, spec, lambda q: None)
    >>> out.select(["x", "_diff"]).to_pylist()  # nulls first, 2 of the 3 copies
    [{'x': None, '_diff': 2}]
    """
    _check(delta, spec)
    keys, values = list(spec.keys), list(spec.values)
    schema = updates_schema(delta.schema.field(c) for c in (*keys, *values))
    tl = timeline(delta, keys, values, lookup)
    if tl.total == 0 or not len(tl.item_row):
        return schema.empty_table(), tl.run
    rank = item_ranks(tl, spec)
    ev, lo, hi, count = tl.segments()
    key = tl.ev_key[ev]
    base = tl.offsets[key]
    top = per_slot_topk(tl.n_slots, key, lo - base, hi - base, rank[tl.ev_item[ev]], count, spec.k)

    # Copies at slot s minus copies at slot s - 1, for every slot after a key's base.
    t = tl.offsets[top.group] + top.slot
    after = top.slot > 0
    before = top.slot + 1 < tl.n_slots[top.group]
    at = np.concatenate([t[after], t[before] + 1])
    item = np.concatenate([top.rank[after], top.rank[before]])
    diff = np.concatenate([top.taken[after], -top.taken[before]])
    if not len(at):
        return schema.empty_table(), tl.run
    order = np.lexsort(pack_keys([at, item])[::-1])
    at, item, diff = at[order], item[order], diff[order]
    first = np.ones(len(at), dtype=bool)
    first[1:] = (at[1:] != at[:-1]) | (item[1:] != item[:-1])
    idx = np.flatnonzero(first)
    total = np.add.reduceat(diff, idx)
    keep = total != 0
    at, item, total = at[idx[keep]], item[idx[keep]], total[keep]

    item_of_rank = np.empty(len(rank), dtype=np.int64)
    item_of_rank[rank] = np.arange(len(rank), dtype=np.int64)
    rows = tl.rows.take(pa.array(tl.item_row[item_of_rank[item]], pa.int64()))
    key_rows = tl.key_table.take(pa.array(tl.slot_key[at], pa.int64()))
    arrays = [key_rows.column(c) for c in keys] + [rows.column(c) for c in values]
    arrays += [pa.array(tl.slot_time[at], pa.int64()), pa.array(total, pa.int64())]
    return pa.Table.from_arrays(arrays, schema=schema), tl.run
