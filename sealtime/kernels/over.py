"""Window functions (``OVER``) and list aggregates, recomputed per touched partition.

Problem. ``SUM(x) OVER (PARTITION BY p ORDER BY o)``, ``LAG``, ``RANK`` give every row a
value that depends on the other rows of its partition: one row inserted early in the
order changes the value of every row after it. Differential semantics still hold per
partition key and time: the output at time t is f(the partition's rows at t) for every
row, and the output update is the difference from the time before. ``collect_list`` is
the same with one output row per key.

Approach (Materialize recomputes a partition's window functions the same way). The tick
is laid out as a `Timeline` (`sealtime.kernels.general_reduce`): per touched key, slot 0
is its rows before the tick and slots 1..m its distinct times. For every slot the key's
rows are expanded to their copies, put in one total order (the ORDER BY columns, then the
row's other values: `item_ranks`, so ties never depend on arrival order), and every
function is evaluated with segmented numpy operations (positions, peer groups, prefix
sums, a sparse table for min/max over bounded frames). The output at slot s is its rows
with their values, minus those of slot s - 1, consolidated (rows whose values did not
change cancel). A tick costs O(sum over touched keys of rows x (times in the tick + 1)):
untouched partitions cost nothing, a touched one is recomputed whole.

Frames are ``(unit, start, end)``: unit ``"rows"`` or ``"range"``, bounds None
(unbounded) or an offset (negative: preceding; 0: the current row, or its peers for
``range``; positive: following).

>>> import pyarrow as pa
>>> spec = OverSpec(keys=("k",), values=("x",), order=(("x", True),), tie=(),
...                 functions=(OverFn("r", "row_number"), OverFn("s", "sum", "x")))
>>> delta = pa.table({"__h": [1, 1], "k": ["a", "a"], "x": [5, 3],
...                   "__r": [50, 30], "_time": [1, 2], "_diff": [1, 1]})
>>> out, run = over_step(delta, spec, lambda q: None)
>>> sorted(zip(out["_time"].to_pylist(), out["x"].to_pylist(), out["r"].to_pylist(),
...            out["s"].to_pylist(), out["_diff"].to_pylist()))
[(1, 5, 1, 5, 1), (2, 3, 1, 3, 1), (2, 5, 1, 5, -1), (2, 5, 2, 8, 1)]
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import PlanError
from ..plan.over import ListKind, WindowKind
from .differential_top_k import TopKSpec, item_ranks
from .general_reduce import Timeline, pack_keys, timeline, value_ranks
from .keyed import int64s, updates_schema, validity

__all__ = [
    "COLLECT_KINDS",
    "KINDS",
    "CollectSpec",
    "OverFn",
    "OverSpec",
    "collect_step",
    "over_step",
]

#: the window functions (and the aggregates allowed over a frame)
KINDS = tuple(WindowKind)
KINDS = (
    "row_number",
    "rank",
    "dense_rank",
    "percent_rank",
    "cume_dist",
    "ntile",
    "lag",
    "lead",
    "first_value",
    "last_value",
    "count",
    "sum",
    "avg",
    "min",
    "max",
)
#: list aggregates of `collect_step`
COLLECT_KINDS = tuple(ListKind)
W = WindowKind


class _Form(enum.Enum):
    """How a function's computed column becomes its output: rows taken by index,
    values found by rank, floats, integers."""

    TAKE = "take"
    RANK = "rank"
    FLOAT = "float"
    INT = "int"


_TAKES = (W.LAG, W.LEAD, W.FIRST_VALUE, W.LAST_VALUE, W.MIN, W.MAX)
_FLOATS = (W.PERCENT_RANK, W.CUME_DIST, W.AVG)


@dataclass(frozen=True)
class OverFn:
    """One window function: output column `name`, `kind` (`KINDS`), the value column it
    reads (``count`` without one counts rows), `offset` (``lag``/``lead``'s offset,
    ``ntile``'s buckets) and the `frame` of an aggregate or ``first_value``/``last_value``
    (see the module docstring)."""

    name: str
    kind: WindowKind
    column: str | None = None
    offset: int = 1
    frame: tuple[str, int | None, int | None] = ("range", None, 0)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise PlanError(f"unknown window function {self.kind!r} (one of {', '.join(KINDS)})")
        object.__setattr__(self, "kind", WindowKind(self.kind))


@dataclass(frozen=True)
class OverSpec:
    """Partition keys, value columns (the rest of the row), the order ``(column,
    ascending)`` (nulls first ascending, last descending, as Spark's default), the
    tie-break columns, and the functions."""

    keys: tuple[str, ...]
    values: tuple[str, ...]
    order: tuple[tuple[str, bool], ...]
    tie: tuple[str, ...]
    functions: tuple[OverFn, ...]


@dataclass(frozen=True)
class CollectSpec:
    """Group keys, value columns, and the lists: ``(name, kind, column)`` with kind
    ``"list"`` (every non-null value, with repeats) or ``"set"`` (each once), values in
    ascending order."""

    keys: tuple[str, ...]
    values: tuple[str, ...]
    lists: tuple[tuple[str, str, str], ...]


# ---------------------------------------------------------------------------- helpers


def _expand(tl: Timeline, copies: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Every (global slot, item) present, once per copy (or once, without `copies`)."""
    ev, lo, hi, count = tl.segments()
    item = tl.ev_item[ev]
    lens = hi - lo
    total = int(lens.sum())
    idx = np.repeat(np.arange(len(ev), dtype=np.int64), lens)
    start = np.repeat(np.cumsum(lens) - lens, lens)
    slot = lo[idx] + (np.arange(total, dtype=np.int64) - start)
    it = item[idx]
    if copies:
        n = count[idx]
        rep = np.repeat(np.arange(total, dtype=np.int64), n)
        slot, it = slot[rep], it[rep]
    return slot, it


def _segments(slot: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For rows sorted by slot: each row's segment's first and last index, and its
    position in the segment."""
    n = len(slot)
    start = np.ones(n, dtype=bool)
    start[1:] = slot[1:] != slot[:-1]
    first = np.maximum.accumulate(np.where(start, np.arange(n), 0))
    end = np.ones(n, dtype=bool)
    end[:-1] = start[1:]
    last = np.minimum.accumulate(np.where(end, np.arange(n), n)[::-1])[::-1]
    return first, last, np.arange(n) - first


def _sparse_table(values: np.ndarray, op: Callable) -> list[np.ndarray]:
    """Levels of a sparse table: level j holds op over ``values[i : i + 2**j]``."""
    levels = [values]
    width = 1
    while 2 * width <= len(values):
        prev = levels[-1]
        levels.append(op(prev[:-width], prev[width:]))
        width *= 2
    return levels


def _range_query(
    levels: list[np.ndarray], a: np.ndarray, b: np.ndarray, op: Callable
) -> np.ndarray:
    """op over ``values[a..b]`` (inclusive, a <= b) for every pair."""
    length = b - a + 1
    j = np.floor(np.log2(np.maximum(length, 1))).astype(np.int64)
    out = np.empty(len(a), dtype=levels[0].dtype)
    for level in np.unique(j):
        m = j == level
        lv = levels[level]
        out[m] = op(lv[a[m]], lv[b[m] - (1 << level) + 1])
    return out


def _frame(
    fn: OverFn,
    pos: np.ndarray,
    first: np.ndarray,
    last: np.ndarray,
    peer_first: np.ndarray,
    peer_last: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Each row's frame as global indices ``[a, b]`` (empty when a > b)."""
    i = first + pos
    unit, start, end = fn.frame
    if start is None:
        a = first.copy()
    elif start == 0:
        a = peer_first if unit == "range" else i
    else:
        a = np.maximum(i + start, first)
    # Deliberately parallel to `start`: each bound clamps to its own side of the partition.
    if end is None:
        b = last.copy()
    elif end == 0:
        b = peer_last if unit == "range" else i
    else:
        b = np.minimum(i + end, last)
    return a, b


def _frame_sum(x: np.ndarray, first: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Sums of `x` over ``[a, b]`` within each row's segment (which starts at `first`):
    running sums restarted per segment, so a frame from the segment's start adds its
    values in row order, as Spark does."""
    starts = np.zeros(len(x), dtype=bool)
    starts[np.unique(first)] = True
    run = segmented_cumsum_any(x, starts)
    before = np.where(a > first, run[np.maximum(a - 1, 0)], 0)
    return run[b] - before


def segmented_cumsum_any(x: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Running sums of `x` (ints or floats) restarted where `starts` is set; floats are
    added in row order within each segment (no subtraction of earlier segments' sums,
    which would carry their rounding and NaNs over).

    >>> segmented_cumsum_any(np.array([1, 2, 3, 4]), np.array([True, False, True, False])).tolist()
    [1, 3, 3, 7]
    """
    if np.issubdtype(x.dtype, np.floating):
        out = np.empty_like(x)
        bounds = np.append(np.flatnonzero(starts), len(x))
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            out[lo:hi] = np.cumsum(x[lo:hi])
        return out
    total = np.cumsum(x)
    before = total - x
    idx = np.maximum.accumulate(np.where(starts, np.arange(len(x)), 0))
    return total - before[idx]


def _consolidate(
    at: np.ndarray, item: np.ndarray, sigs: list[np.ndarray], diff: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the distinct (time, item, values) rows with a nonzero summed diff, and
    those sums."""
    if not len(at):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    words = [at, item, *sigs]
    order = np.lexsort(words[::-1])
    w = [x[order] for x in words]
    first = np.ones(len(order), dtype=bool)
    for x in w:
        first[1:] &= x[1:] == x[:-1]
    first[1:] = ~first[1:]
    starts = np.flatnonzero(first)
    total = np.add.reduceat(diff[order], starts)
    keep = total != 0
    return order[starts[keep]], total[keep]


def _float_bits(x: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Float64 values as comparable int64 words (NaN one value, nulls another)."""
    y = np.where(np.isnan(x), np.nan, x + 0.0)  # (-0.0 becomes 0.0; every NaN the same)
    bits = y.view(np.int64).copy()
    bits[np.isnan(y)] = 0x7FF8000000000000
    bits[~valid] = -1
    return bits


# ---------------------------------------------------------------------------- over


def _check(spec: OverSpec) -> None:
    for fn in spec.functions:
        if fn.kind not in KINDS:
            raise PlanError(f"unknown window function {fn.kind!r} (one of {', '.join(KINDS)})")
        if fn.column is not None and fn.column not in spec.values:
            raise PlanError(f"window function {fn.name!r} reads {fn.column!r}, not a value column")


def output_schema(spec: OverSpec, schema: pa.Schema) -> pa.Schema:
    """Keys, values, the functions' columns (int64, float64 or the column's type),
    ``_time``, ``_diff``."""
    fields = [schema.field(c) for c in (*spec.keys, *spec.values)]
    for fn in spec.functions:
        if fn.kind in _TAKES:
            fields.append(pa.field(fn.name, schema.field(fn.column).type))
        elif fn.kind in _FLOATS:
            fields.append(pa.field(fn.name, pa.float64()))
        elif fn.kind is W.SUM:
            floating = pa.types.is_floating(schema.field(fn.column).type)
            fields.append(pa.field(fn.name, pa.float64() if floating else pa.int64()))
        else:
            fields.append(pa.field(fn.name, pa.int64()))
        if fn.kind in (W.LAG, W.LEAD):
            fields.append(pa.field(f"{fn.name}__out", pa.bool_()))
    return updates_schema(fields)


# The kernel signature `(delta, spec, lookup) -> (output, new_run)`, deliberately the
# same as `general_reduce`'s and `collect_step`'s: a step may run any of them.
def over_step(
    delta: pa.Table,
    spec: OverSpec,
    lookup: Callable[[pa.Table], object | None],
) -> tuple[pa.Table, pa.Table]:
    """One partition's step of the window functions (see the module docstring).

    `delta` and the new run are those of `general_reduce` (an additive arrangement of
    the partitions' rows). Returns ``(output, new_run)``: keys, values, one column per
    function (``lag``/``lead`` also ``<name>__out``: true where the offset is outside
    the partition, so that the operator substitutes the default), ``_time``, ``_diff``.
    """
    _check(spec)
    schema = output_schema(spec, delta.schema)
    tl = timeline(delta, spec.keys, spec.values, lookup)
    if tl.total == 0 or not len(tl.item_row):
        return schema.empty_table(), tl.run
    rank = item_ranks(tl, TopKSpec(spec.keys, spec.values, spec.order, spec.tie, 1))
    slot, it = _expand(tl)
    order = np.lexsort([rank[it], slot])
    slot, it = slot[order], it[order]
    row = tl.item_row[it]
    n = len(slot)
    first, last, pos = _segments(slot)
    size = last - first + 1
    # peers: rows of one slot with equal ORDER BY values
    peer_start = np.ones(n, dtype=bool)
    peer_start[1:] = slot[1:] != slot[:-1]
    for column, _ in spec.order:
        r = value_ranks(tl.rows.column(column))[row]
        peer_start[1:] |= r[1:] != r[:-1]
    idx = np.arange(n)
    peer_first = np.maximum.accumulate(np.where(peer_start, idx, 0))
    peer_end = np.ones(n, dtype=bool)
    peer_end[:-1] = peer_start[1:]
    peer_last = np.minimum.accumulate(np.where(peer_end, idx, n)[::-1])[::-1]

    cols: dict[str, tuple[str, np.ndarray, np.ndarray | None]] = {}  # name -> (kind, data, valid)
    sigs: list[np.ndarray] = []
    flags: dict[str, np.ndarray] = {}
    cache: dict[str, tuple] = {}

    def column(c: str) -> tuple[pa.Array, np.ndarray, np.ndarray]:
        """A value column of tl.rows, its validity and dense ranks, per sorted row."""
        if c not in cache:
            col = tl.rows.column(c).combine_chunks()
            cache[c] = (col, validity(col), value_ranks(col))
        col, valid, ranks = cache[c]
        return col, valid[row], ranks[row]

    for fn in spec.functions:
        kind = fn.kind
        if kind is W.ROW_NUMBER:
            values = pos + 1
        elif kind is W.RANK:
            values = peer_first - first + 1
        elif kind is W.DENSE_RANK:
            c = np.cumsum(peer_start)
            values = c - c[first] + 1
        elif kind is W.PERCENT_RANK:
            r = peer_first - first
            values = np.where(size > 1, r / np.maximum(size - 1, 1), 0.0)
        elif kind is W.CUME_DIST:
            values = (peer_last - first + 1) / size
        elif kind is W.NTILE:
            b = max(int(fn.offset), 1)
            q, rem = size // b, size % b
            big = rem * (q + 1)
            values = np.where(
                pos < big,
                pos // np.maximum(q + 1, 1) + 1,
                (pos - big) // np.maximum(q, 1) + rem + 1,
            )
        elif kind in (W.LAG, W.LEAD):
            k = int(fn.offset)
            src = idx - k if kind is W.LAG else idx + k
            inside = (pos - k >= 0) if kind is W.LAG else (pos + k < size)
            src = np.where(inside, src, -1)
            _, valid, ranks = column(fn.column)  # type: ignore[arg-type]
            cols[fn.name] = (_Form.TAKE, src, None)
            sigs.append(np.where(src >= 0, ranks[np.maximum(src, 0)], -2))
            flags[fn.name] = ~inside
            sigs.append(inside.astype(np.int64))
            continue
        else:
            a, b = _frame(fn, pos, first, last, peer_first, peer_last)
            empty = a > b
            if kind in (W.FIRST_VALUE, W.LAST_VALUE):
                src = np.where(empty, -1, np.clip(a if kind is W.FIRST_VALUE else b, 0, n - 1))
                _, valid, ranks = column(fn.column)  # type: ignore[arg-type]
                cols[fn.name] = (_Form.TAKE, src, None)
                sigs.append(np.where(src >= 0, ranks[np.maximum(src, 0)], -2))
                continue
            ac, bc = np.clip(a, 0, n - 1), np.clip(b, 0, n - 1)
            if fn.column is None:  # count(*)
                values = np.where(empty, 0, b - a + 1)
            else:
                col, valid, ranks = column(fn.column)
                count = np.where(empty, 0, _frame_sum(valid.astype(np.int64), first, ac, bc))
                if kind is W.COUNT:
                    values = count
                elif kind in (W.SUM, W.AVG):
                    floating = pa.types.is_floating(col.type)
                    raw = col.to_numpy(zero_copy_only=False) if floating else int64s(col)
                    x = np.asarray(raw, dtype=np.float64 if floating else np.int64)[row]
                    x = np.where(valid, x, 0)
                    total = np.where(empty, 0, _frame_sum(x, first, ac, bc))
                    has = count > 0
                    if kind is W.SUM:
                        cols[fn.name] = (_Form.FLOAT if floating else _Form.INT, total, has)
                        sigs.append(
                            _float_bits(total.astype(np.float64), has)
                            if floating
                            else np.where(has, total, 0)
                        )
                        sigs.append(has.astype(np.int64))
                    else:
                        mean = total / np.maximum(count, 1)
                        cols[fn.name] = (_Form.FLOAT, mean, has)
                        sigs.append(_float_bits(mean.astype(np.float64), has))
                    continue
                else:  # min / max over the frame, through ranks (nulls ignored)
                    big = np.iinfo(np.int64).max
                    if kind is W.MIN:
                        v = np.where(valid, ranks, big)
                        levels = _sparse_table(v, np.minimum)
                        best = _range_query(levels, np.minimum(ac, bc), bc, np.minimum)
                        best = np.where(empty | (best == big), -1, best)
                    else:
                        v = np.where(valid, ranks, -1)
                        levels = _sparse_table(v, np.maximum)
                        best = _range_query(levels, np.minimum(ac, bc), bc, np.maximum)
                        best = np.where(empty, -1, best)
                    cols[fn.name] = (_Form.RANK, best, None)
                    sigs.append(best)
                    continue
        cols[fn.name] = (_Form.FLOAT if kind in _FLOATS else _Form.INT, np.asarray(values), None)
        v = np.asarray(values)
        sigs.append(
            _float_bits(v.astype(np.float64), np.ones(n, bool))
            if kind in _FLOATS
            else v.astype(np.int64)
        )

    # output: rows of slot s at time(s) with +1; of slot s - 1 at time(s) with -1
    key_of_slot = tl.slot_key
    base = tl.base_slots()
    plus = ~base[slot]
    minus = np.zeros(n, dtype=bool)
    nxt = np.minimum(slot + 1, tl.total - 1)
    minus = (slot + 1 < tl.total) & ~base[nxt] & (key_of_slot[nxt] == key_of_slot[slot])
    rows_idx = np.concatenate([np.flatnonzero(plus), np.flatnonzero(minus)])
    at = np.concatenate([slot[plus], slot[minus] + 1])
    diff = np.concatenate(
        [np.ones(int(plus.sum()), np.int64), -np.ones(int(minus.sum()), np.int64)]
    )
    keep, total = _consolidate(at, it[rows_idx], [s[rows_idx] for s in sigs], diff)
    src = rows_idx[keep]
    at = at[keep]
    out_rows = row[src]
    keys = tl.key_table.take(pa.array(key_of_slot[at], pa.int64()))
    values_t = tl.rows.take(pa.array(out_rows, pa.int64()))
    arrays = [keys.column(c) for c in spec.keys] + [values_t.column(c) for c in spec.values]
    for fn in spec.functions:
        form, data, valid = cols[fn.name]
        field = schema.field(fn.name)
        if form is _Form.TAKE:
            s = data[src]
            col = tl.rows.column(fn.column).combine_chunks()
            arrays.append(
                col.take(
                    pa.array(np.where(s >= 0, row[np.maximum(s, 0)], 0), pa.int64(), mask=s < 0)
                )
            )
        elif form is _Form.RANK:
            r = data[src]
            col = tl.rows.column(fn.column).combine_chunks()
            ranks = value_ranks(col)
            where = np.zeros(int(ranks.max(initial=-1)) + 1, dtype=np.int64)
            ok = np.flatnonzero(ranks >= 0)
            where[ranks[ok]] = ok
            at_row = where[np.where(r >= 0, r, 0)] if len(where) else np.zeros(len(r), np.int64)
            arrays.append(col.take(pa.array(at_row, pa.int64(), mask=r < 0)))
        else:
            d = data[src]
            mask = None if valid is None else ~valid[src]
            arrays.append(pa.array(d, field.type, mask=mask))
        if fn.kind in (W.LAG, W.LEAD):
            arrays.append(pa.array(flags[fn.name][src], pa.bool_()))
    arrays += [pa.array(tl.slot_time[at], pa.int64()), pa.array(total, pa.int64())]
    return pa.Table.from_arrays(arrays, schema=schema), tl.run


# ---------------------------------------------------------------------------- collect


def collect_schema(spec: CollectSpec, schema: pa.Schema) -> pa.Schema:
    """Keys, one list column per list, ``_time``, ``_diff``."""
    fields = [schema.field(c) for c in spec.keys]
    for name, _, column in spec.lists:
        fields.append(pa.field(name, pa.list_(schema.field(column).type)))
    return updates_schema(fields)


def collect_step(
    delta: pa.Table,
    spec: CollectSpec,
    lookup: Callable[[pa.Table], object | None],
) -> tuple[pa.Table, pa.Table]:
    """One partition's step of list aggregates: per key and slot, the sorted list of
    each column's values; where a key's lists (or presence) change from one slot to the
    next, the old row -1 and the new row +1.

    >>> spec = CollectSpec(("k",), ("x",), (("xs", "list", "x"),))
    >>> delta = pa.table({"__h": [1, 1], "k": ["a", "a"], "x": [5, 3],
    ...                   "__r": [50, 30], "_time": [1, 2], "_diff": [1, 1]})
    >>> out, _ = collect_step(delta, spec, lambda q: None)
    >>> sorted(zip(out["_time"].to_pylist(), out["xs"].to_pylist(), out["_diff"].to_pylist()))
    [(1, [5], 1), (2, [3, 5], 1), (2, [5], -1)]
    """
    for _, kind, column in spec.lists:
        if kind not in COLLECT_KINDS or column not in spec.values:
            raise PlanError(f"collect: bad list ({kind!r}, {column!r})")
    schema = collect_schema(spec, delta.schema)
    tl = timeline(delta, spec.keys, spec.values, lookup)
    if tl.total == 0 or not len(tl.item_row):
        return schema.empty_table(), tl.run
    # the key's presence at every slot (copies of its rows)
    dpos = np.maximum(tl.ev_new, 0) - np.maximum(tl.ev_old, 0)
    present = tl.running(dpos) > 0
    t = np.flatnonzero(~tl.base_slots())
    prev = t - 1
    changed = present[t] != present[prev]
    lists = []
    for _, named, column in spec.lists:
        kind = ListKind(named)
        col = tl.rows.column(column).combine_chunks()
        ranks = value_ranks(col)
        slot, it = _expand(tl, copies=kind is ListKind.LIST)
        vr = ranks[tl.item_row[it]]
        keep = vr >= 0
        slot, vr = slot[keep], vr[keep]
        order = np.lexsort(pack_keys([slot, vr])[::-1])
        slot, vr = slot[order], vr[order]
        if kind is ListKind.SET and len(slot):
            first = np.ones(len(slot), dtype=bool)
            first[1:] = (slot[1:] != slot[:-1]) | (vr[1:] != vr[:-1])
            slot, vr = slot[first], vr[first]
        offsets = np.searchsorted(slot, np.arange(tl.total + 1), side="left")
        lens = np.diff(offsets)
        same = lens[t] == lens[prev]
        check = np.flatnonzero(same & (lens[t] > 0))
        if len(check):
            n = lens[t][check]
            a = np.repeat(offsets[t][check], n) + (
                np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            )
            b = np.repeat(offsets[prev][check], n) + (
                np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            )
            differ = vr[a] != vr[b]
            bad = np.zeros(len(check), dtype=bool)
            np.logical_or.at(bad, np.repeat(np.arange(len(check)), n), differ)
            same[check[bad]] = False
        changed |= ~same
        where = np.zeros(int(ranks.max(initial=-1)) + 1, dtype=np.int64)
        ok = np.flatnonzero(ranks >= 0)
        where[ranks[ok]] = ok
        lists.append((col, vr, offsets, where))
    minus = changed & present[prev]
    plus = changed & present[t]
    parts = []
    for mask, src, sign in ((minus, prev, -1), (plus, t, 1)):
        if not mask.any():
            continue
        src, at = src[mask], t[mask]
        keys = tl.key_table.take(pa.array(tl.slot_key[src], pa.int64()))
        arrays = [keys.column(k) for k in spec.keys]
        for col, vr, offsets, where in lists:
            n = offsets[src + 1] - offsets[src]
            idx = np.repeat(offsets[src], n) + (
                np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
            )
            values = col.take(pa.array(where[vr[idx]], pa.int64()))
            offs = np.concatenate([[0], np.cumsum(n)]).astype(np.int32)
            arrays.append(pa.ListArray.from_arrays(pa.array(offs, pa.int32()), values))
        arrays += [
            pa.array(tl.slot_time[at], pa.int64()),
            pa.array(np.full(len(at), sign), pa.int64()),
        ]
        parts.append(pa.Table.from_arrays(arrays, schema=schema))
    output = pa.concat_tables(parts) if parts else schema.empty_table()
    return output, tl.run
