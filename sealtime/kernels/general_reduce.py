"""The general reduce kernel: any per-key aggregate, at every time, under retractions.

Problem. Differential dataflow's ``reduce`` promises, for every key and *every* time t,
``output accumulated to t == f(input accumulated to t)``. The accumulable kernel
(`sealtime.kernels.accumulate`) covers aggregates whose state is a small vector that
updates add to; ``min``, ``max`` and ``count_distinct`` under retractions are not of that
kind: removing the minimum needs the next one, so the key's whole multiset must be kept
(an *additive* arrangement of ``(row, __cnt)``). And an event-time tick may hold
thousands of distinct times of one key: evaluating f at each of them over the key's rows
is O(|rows of key| x |times of key|).

Approach. One partition of one tick is laid out as a *timeline*: every key touched by the
delta gets slots ``0..m`` where slot 0 is the state before the tick (read from the
arrangement) and slots ``1..m`` are the key's distinct times in the tick, in order. Every
distinct row (an *item*: key and values, recognised exactly by the row hash ``__r`` and a
comparison of the values) gets its count at every slot from its state count and its
updates: a few *events* ``(item, slot, count before, count after)``. Then

* ``count``, ``sum`` and ``avg`` are sums over the present items, so each event adds
  ``value * (max(after, 0) - max(before, 0))`` at its slot, and one running sum per key
  gives the aggregate at every slot (decimal sums exactly, in 128 bits plus overflow
  detection, through `Int128`);
* ``min``, ``max`` and ``count_distinct`` see each *value* present during intervals of
  slots; `per_slot_topk` (k = 1) and `per_slot_count` answer them at every slot in
  O(N log S), never expanding an interval to its slots.

Values are compared through their dense ranks (pyarrow's sort order: numbers, strings by
bytes, NaN after every number, -0.0 equal to 0.0), so any orderable type works. Where the
output row of a key changes from one slot to the next the kernel emits the old row with
``-1`` and the new one with ``+1``; a slot that leaves the row as it was emits nothing.
The tick's new run is the delta consolidated per item with the times collapsed, appended
to the additive arrangement. The whole step costs O((delta + touched state) log) plus
the output.

`Timeline` is shared with the top-k kernel (`sealtime.kernels.differential_top_k`), which ranks the
items themselves instead of their values.

Measured (numpy 2.4, pyarrow 26; CPU time, best of 6, on a 2-core machine shared with
other jobs, wall time up to 1.5 times that): one partition of 50,000 delta rows over 1,000
keys with 50 distinct times per key (70% insertions, 30% retractions of state rows),
against 200,000 state entries of those keys: ``min`` + ``count_distinct`` of an int64
column 0.28 s (of a string column 0.31 s), all six kinds at once (count, int64 sum,
decimal avg, min, max of a string, count_distinct) 0.56 s; the timeline alone (250,000
rows grouped into items and events) is 0.14 s of that. Looking the state up in a one-run
`SpinePartition` instead of memory adds nothing measurable.

>>> import pyarrow as pa
>>> spec = ReduceSpec(keys=("k",), values=("x",),
...                   aggs=(GAgg("n", "count"), GAgg("lo", "min", "x")))
>>> delta = pa.table({"__h": [1, 1, 1], "k": ["a", "a", "a"], "x": [5, 3, 5],
...                   "__r": [50, 30, 50], "_time": [1, 2, 3], "_diff": [1, 1, -1]})
>>> out, run = general_reduce(delta, spec, lambda q: None)
>>> sorted(zip(out["_time"].to_pylist(), out["_diff"].to_pylist(), out["n"].to_pylist(),
...            out["lo"].to_pylist()))
[(1, 1, 1, 5), (2, -1, 1, 5), (2, 1, 2, 3), (3, -1, 2, 3), (3, 1, 1, 3)]
>>> run.select(["x", "__cnt"]).to_pylist()
[{'x': 3, '__cnt': 1}]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..columns import DIFF, TIME
from ..errors import PlanError, SchemaError
from ..plan.aggregates import AggregateKind
from .aggregates import CheckedAggregate, ValueRepr
from .int128 import Int128
from .interval_top_k import per_slot_count, per_slot_topk
from .keyed import (
    HASH,
    MIX,
    ROW_CNT,
    ROW_HASH,
    exact_groups,
    int64s,
    segment_ids,
    segmented_cumsum,
    updates_schema,
    validity,
)

__all__ = [
    "GAgg",
    "KINDS",
    "ReduceSpec",
    "Timeline",
    "general_reduce",
    "output_schema",
    "pack_keys",
    "run_schema",
    "timeline",
    "value_ranks",
]

KINDS = tuple(k.value for k in AggregateKind)
_DEC_BOUND = Int128.from_pyints([10**38])  # decimal(38) holds |v| < 10**38


# ---------------------------------------------------------------------------- the spec


@dataclass(frozen=True)
class GAgg(CheckedAggregate):
    """One aggregate of a general reduce.

    `kind` is one of `KINDS`. `column` is the value column it reads (unused by
    ``count``, which counts rows: count(*)). Sums and averages keep ``repr`` ``"int"``
    (int64, wrapping) or ``"dec"`` (exact decimal128(38, `scale`)).

    >>> GAgg("m", "avg", "x", "dec", 2).output_columns()
    ['__s_m', '__n_m']
    """

    name: str
    kind: AggregateKind
    column: str | None = None
    repr: ValueRepr = ValueRepr.INT
    scale: int = 0

    def output_columns(self) -> list[str]:
        """The output columns of this aggregate (avg has a sum and a count)."""
        if self.kind is AggregateKind.AVG:
            return [f"__s_{self.name}", f"__n_{self.name}"]
        return [self.name]


@dataclass(frozen=True)
class ReduceSpec:
    """The key columns, the value columns the aggregates read, and the aggregates."""

    keys: tuple[str, ...]
    values: tuple[str, ...]
    aggs: tuple[GAgg, ...]


def run_schema(keys: Sequence[str], values: Sequence[str], schema: pa.Schema) -> pa.Schema:
    """Schema of the additive arrangement's rows: ``__h``, keys, values, ``__r``, ``__cnt``.

    >>> run_schema(["k"], ["x"], pa.schema([("k", pa.string()), ("x", pa.int64())])).names
    ['__h', 'k', 'x', '__r', '__cnt']
    """
    fields = [pa.field(HASH, pa.int64())]
    fields += [schema.field(c) for c in (*keys, *values)]
    fields += [pa.field(ROW_HASH, pa.int64()), pa.field(ROW_CNT, pa.int64())]
    return pa.schema(fields)


# ---------------------------------------------------------------------------- helpers


def pack_keys(columns: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Fewer int64 sort keys with the same lexicographic order as `columns` (most
    significant first; every value >= 0): adjacent columns are packed into one word while
    their bits fit 63. One `np.sort` or a short `np.lexsort` then replaces a long one.

    >>> [w.tolist() for w in pack_keys([np.array([1, 0]), np.array([2, 3])])]
    [[6, 3]]
    """
    words: list[np.ndarray] = []
    word, used = None, 0
    for c in columns:
        c = np.asarray(c, dtype=np.int64)
        bits = max(1, int(c.max(initial=0)).bit_length())
        if word is not None and used + bits <= 63:
            word = (word << bits) | c
            used += bits
        else:
            if word is not None:
                words.append(word)
            word, used = c.copy(), bits
    if word is not None:
        words.append(word)
    return words


def _sorted_columns(columns: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The columns (values >= 0) sorted together lexicographically (most significant
    first): one `np.sort` of packed words when they fit 63 bits, else a lexsort."""
    bits = [max(1, int(c.max(initial=0)).bit_length()) for c in columns]
    if sum(bits) > 63:
        order = np.lexsort(columns[::-1])
        return [c[order] for c in columns]
    packed = np.sort(pack_keys(columns)[0])
    out = []
    for b in bits[::-1]:
        out.append(packed & ((1 << b) - 1))
        packed = packed >> b
    return out[::-1]


def value_ranks(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Dense ascending ranks (0-based, int64) of any orderable column; -1 for null.

    Equal values share a rank; NaN ranks after every number, -0.0 equals 0.0, strings
    compare by bytes (pyarrow's sort order).

    >>> value_ranks(pa.array([2.5, None, float("nan"), -1.0, 2.5])).tolist()
    [1, -1, 2, 0, 1]
    """
    if len(col) == 0:
        return np.zeros(0, dtype=np.int64)
    rank = np.asarray(pc.rank(col, sort_keys="ascending", tiebreaker="dense")).astype(np.int64)
    rank -= 1
    if col.null_count:
        rank[~validity(col)] = -1
    return rank


# ---------------------------------------------------------------------------- timeline


@dataclass
class Timeline:
    """One partition's tick laid out as items present over per-key time slots.

    Keys (`key_table`, ``__h`` and the key columns, one row per distinct key of the
    delta) own consecutive *global slots*: key j has ``offsets[j]..offsets[j+1]-1``; the
    first is the state before the tick, the others the key's distinct times in order
    (`slot_time`; the base slot's time is the int64 minimum). `rows` holds the value
    columns (and ``__r``) of the state entries followed by the delta rows; an *item* is a
    distinct row, `item_row` one row of each item. Events (sorted by item, then slot)
    say that item `ev_item` of key `ev_key` goes from count `ev_old` to `ev_new` at
    global slot `ev_slot`. `run` is the delta consolidated per item (the new run).
    """

    key_table: pa.Table
    offsets: np.ndarray
    slot_time: np.ndarray
    rows: pa.Table
    item_row: np.ndarray
    item_key: np.ndarray
    ev_item: np.ndarray
    ev_key: np.ndarray
    ev_slot: np.ndarray
    ev_old: np.ndarray
    ev_new: np.ndarray
    run: pa.Table

    @property
    def n_slots(self) -> np.ndarray:
        """Slots per key (1 + the key's distinct times in the tick)."""
        return np.diff(self.offsets)

    @property
    def total(self) -> int:
        """Global slots in all."""
        return int(self.offsets[-1])

    @property
    def slot_key(self) -> np.ndarray:
        """The key of every global slot."""
        return np.repeat(np.arange(len(self.offsets) - 1, dtype=np.int64), self.n_slots)

    def base_slots(self) -> np.ndarray:
        """Mask of the global slots that are a key's slot 0 (its state before the tick)."""
        mask = np.zeros(self.total, dtype=bool)
        mask[self.offsets[:-1]] = True
        return mask

    def segments(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(event, lo, hi, count)``: item ``ev_item[event]`` has count `count` > 0 during
        global slots ``lo <= s < hi`` (maximal constant-count pieces, never overlapping
        for one item)."""
        n = len(self.ev_item)
        hi = self.offsets[self.ev_key + 1]
        if n > 1:
            same = self.ev_item[1:] == self.ev_item[:-1]
            hi[:-1] = np.where(same, self.ev_slot[1:], hi[:-1])
        keep = np.flatnonzero(self.ev_new > 0)
        return keep, self.ev_slot[keep], hi[keep], self.ev_new[keep]

    def running(self, x: np.ndarray) -> np.ndarray:
        """Per global slot, the running sum over the key's slots of per-event `x` (int64,
        wrapping): the value of an additive aggregate at every slot."""
        per = np.zeros(self.total, dtype=np.int64)
        np.add.at(per, self.ev_slot, x)
        return segmented_cumsum(per, self.base_slots())

    def running_int128(self, x: Int128) -> tuple[Int128, np.ndarray]:
        """`running` for exact 128-bit contributions; also, per slot, whether the true
        running sum is known exactly (False only past about 2**127)."""
        total = self.total
        order = np.argsort(self.ev_slot, kind="stable")
        g = self.ev_slot[order]
        lo = np.zeros(total, dtype=np.uint64)
        hi = np.zeros(total, dtype=np.int64)
        bad = np.zeros(total, dtype=np.int64)
        if len(g):
            starts = np.ones(len(g), dtype=bool)
            starts[1:] = g[1:] != g[:-1]
            sums, ok = x.take(order).segment_sum_checked(starts)
            at = g[starts]
            lo[at], hi[at], bad[at] = sums.lo, sums.hi, ~ok
        base = self.base_slots()
        run, exact = Int128(lo, hi).segment_cumsum_checked(base)
        # A slot total that already wrapped taints the key's later running sums (the
        # cumsum's own check only sees the residues).
        return run, exact & (segmented_cumsum(bad, base) == 0)

    def value_segments(
        self, ranks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(key, lo, hi, rank)`` with `lo`, `hi` slot numbers of the key: the value of rank
        `rank` (one per row of `rows`; -1 = null, ignored) is present in the key, i.e. held
        by a present item, during ``lo <= slot < hi``."""
        vr = ranks[self.item_row[self.ev_item]]
        change = (self.ev_new > 0).astype(np.int64) - (self.ev_old > 0)
        keep = (change != 0) & (vr >= 0)
        key, vr, g, up = self.ev_key[keep], vr[keep], self.ev_slot[keep], change[keep] > 0
        if not len(key):
            return key, g, g, vr
        key, vr, g, up = _sorted_columns([key, vr, g, up.astype(np.int64)])
        change = 2 * up - 1
        group = np.ones(len(key), dtype=bool)
        group[1:] = (key[1:] != key[:-1]) | (vr[1:] != vr[:-1])
        step = group.copy()
        step[1:] |= g[1:] != g[:-1]
        first = np.flatnonzero(step)
        present = segmented_cumsum(np.add.reduceat(change, first), group[first])
        key, vr, g = key[first], vr[first], g[first]
        hi = self.offsets[key + 1]
        if len(g) > 1:
            hi[:-1] = np.where(group[first][1:], hi[:-1], g[1:])
        keep = present > 0
        base = self.offsets[key]
        return key[keep], (g - base)[keep], (hi - base)[keep], vr[keep]


def _check_columns(delta: pa.Table, keys: Sequence[str], values: Sequence[str]) -> None:
    if set(keys) & set(values):
        raise PlanError(f"value columns must not be key columns: {sorted(set(keys) & set(values))}")
    if len(set(values)) != len(values):
        raise PlanError(f"duplicate value columns: {list(values)}")
    missing = [
        c for c in (HASH, *keys, *values, ROW_HASH, TIME, DIFF) if c not in delta.column_names
    ]
    if missing:
        raise SchemaError(f"delta lacks columns {missing}")


def timeline(
    delta: pa.Table,
    keys: Sequence[str],
    values: Sequence[str],
    lookup: Callable[[pa.Table], object | None],
) -> Timeline:
    """Lay out one partition's tick (see `Timeline`): group the delta by key and time, look
    up the touched keys' entries, and find every item's count changes.

    >>> d = pa.table({"__h": [4, 4], "k": [1, 1], "x": [7, 7], "__r": [0, 0],
    ...               "_time": [9, 8], "_diff": [1, 1]})
    >>> tl = timeline(d, ["k"], ["x"], lambda q: None)
    >>> tl.slot_time[1:].tolist(), tl.ev_slot.tolist(), tl.ev_new.tolist()
    ([8, 9], [1, 2], [1, 2])
    """
    keys, values = list(keys), list(values)
    _check_columns(delta, keys, values)
    n = delta.num_rows
    times = int64s(delta.column(TIME))
    diffs = int64s(delta.column(DIFF))

    # -- keys and slots: sort the delta by (key, time); one slot per distinct (key, time)
    korder, kstarts = exact_groups(delta, keys, then=times)
    kid_sorted = segment_ids(kstarts)
    t_sorted = times[korder]
    sstarts = kstarts.copy()
    sstarts[1:] |= t_sorted[1:] != t_sorted[:-1]
    pair = segment_ids(sstarts)  # index of the distinct (key, time) pair
    nkey = int(kstarts.sum())
    n_times = np.diff(np.append(pair[kstarts], pair[-1] + 1 if n else 0))
    offsets = np.zeros(nkey + 1, dtype=np.int64)
    np.cumsum(n_times + 1, out=offsets[1:])
    # Every key before pair p's key, and that key itself, adds one base slot.
    gslot_sorted = pair + kid_sorted + 1
    slot_time = np.full(int(offsets[-1]), np.iinfo(np.int64).min, dtype=np.int64)
    slot_time[gslot_sorted] = t_sorted
    d_kid = np.empty(n, dtype=np.int64)
    d_kid[korder] = kid_sorted
    d_slot = np.empty(n, dtype=np.int64)
    d_slot[korder] = gslot_sorted
    key_table = delta.select([HASH, *keys]).take(pa.array(korder[kstarts], pa.int64()))

    # -- the touched keys' state: entries at their key's base slot
    cols = [*values, ROW_HASH]
    delta_rows = delta.select(cols)
    found = lookup(key_table) if nkey else None
    if found is not None and len(found.query):
        entries = found.entries
        e_kid = np.asarray(found.query, dtype=np.int64)
        e_rows = entries.select(cols).cast(delta_rows.schema)
        rows = pa.concat_tables([e_rows, delta_rows]).combine_chunks()
        row_kid = np.concatenate([e_kid, d_kid])
        row_slot = np.concatenate([offsets[e_kid], d_slot])
        row_diff = np.concatenate([int64s(entries.column(ROW_CNT)), diffs])
    else:
        rows = delta_rows.combine_chunks()
        row_kid, row_slot, row_diff = d_kid, d_slot, diffs
    n_state = len(row_kid) - n

    # -- items: equal (key, values), by the mixed hash verified on the values
    with np.errstate(over="ignore"):
        mixed = row_kid * MIX + int64s(rows.column(ROW_HASH))
    probe = pa.table({"__m": mixed, "__kid": row_kid, **{c: rows.column(c) for c in values}})
    order, istarts = exact_groups(probe, ["__kid", *values], then=row_slot, hash_column="__m")
    item_first = np.flatnonzero(istarts)
    item_row = order[item_first]
    item_key = row_kid[item_row]

    # -- events: an item's total change at one slot, and its count after it
    g = row_slot[order]
    estarts = istarts.copy()
    estarts[1:] |= g[1:] != g[:-1]
    ef = np.flatnonzero(estarts)
    ev_diff = np.add.reduceat(row_diff[order], ef) if len(ef) else row_diff[:0]
    ev_new = segmented_cumsum(ev_diff, istarts[ef])
    live = ev_diff != 0  # a change that nets to zero at its slot changes nothing
    ev_item = segment_ids(istarts)[ef][live]
    ev_new, ev_diff = ev_new[live], ev_diff[live]

    # -- the new run: the delta per item, times collapsed (state rows sort first)
    if len(item_first):
        dsum = np.add.reduceat(np.where(order >= n_state, row_diff[order], 0), item_first)
        rep = np.maximum.reduceat(order, item_first) - n_state  # a delta row of the item
        keep = dsum != 0
        run = delta.select([HASH, *keys, *values, ROW_HASH]).take(pa.array(rep[keep], pa.int64()))
        run = run.append_column(ROW_CNT, pa.array(dsum[keep], pa.int64()))
        hh = int64s(run.column(HASH))
        run = run.take(pa.array(np.argsort(hh, kind="stable"), pa.int64()))
    else:
        run = run_schema(keys, values, delta.schema).empty_table()

    # Named fields: alike to other keyword calls in form only.
    return Timeline(
        key_table=key_table,
        offsets=offsets,
        slot_time=slot_time,
        rows=rows,
        item_row=item_row,
        item_key=item_key,
        ev_item=ev_item,
        ev_key=item_key[ev_item],
        ev_slot=g[ef][live],
        ev_old=ev_new - ev_diff,
        ev_new=ev_new,
        run=run.cast(run_schema(keys, values, delta.schema)),
    )


# ---------------------------------------------------------------------------- columns


class _Dense:
    """One output column's value at every global slot, with exact equality."""

    def same(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def take(self, idx: np.ndarray) -> pa.Array:
        raise NotImplementedError


class _IntCol(_Dense):
    def __init__(self, values: np.ndarray, valid: np.ndarray | None = None) -> None:
        self.values, self.valid = values, valid

    def same(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        eq = self.values[a] == self.values[b]
        if self.valid is None:
            return eq
        va, vb = self.valid[a], self.valid[b]
        return (va == vb) & (eq | ~va)

    def take(self, idx: np.ndarray) -> pa.Array:
        mask = None if self.valid is None else ~self.valid[idx]
        return pa.array(self.values[idx], pa.int64(), mask=mask)


class _DecCol(_Dense):
    def __init__(self, values: Int128, valid: np.ndarray, type: pa.DataType) -> None:
        self.values, self.type = values, type
        self.valid = valid & (values < _DEC_BOUND) & (values > -_DEC_BOUND)

    def same(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        va, vb = self.valid[a], self.valid[b]
        return (va == vb) & ((self.values.take(a) == self.values.take(b)) | ~va)

    def take(self, idx: np.ndarray) -> pa.Array:
        return self.values.take(idx).to_decimal(self.type, self.valid[idx])


class _RankCol(_Dense):
    """A value given by its rank (-1 = null) in a source column."""

    def __init__(self, ranks: np.ndarray, source: pa.Array, source_ranks: np.ndarray) -> None:
        self.ranks, self.source = ranks, source
        valid = np.flatnonzero(source_ranks >= 0)
        self.pos = np.zeros(int(source_ranks.max(initial=-1)) + 1, dtype=np.int64)
        self.pos[source_ranks[valid]] = valid  # a row holding each rank's value

    def same(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return self.ranks[a] == self.ranks[b]

    def take(self, idx: np.ndarray) -> pa.Array:
        r = self.ranks[idx]
        none = r < 0
        at = self.pos[np.where(none, 0, r)] if len(self.pos) else np.zeros(len(r), np.int64)
        return self.source.take(pa.array(at, pa.int64(), mask=none))


def _dec_running(tl: Timeline, col: pa.Array, dpos: np.ndarray) -> tuple[Int128, np.ndarray]:
    """Exact running sums of ``value * dpos`` per slot and whether each is known exactly.

    A product of a 128-bit value and a 64-bit count needs up to 190 bits, so the value is
    split as ``hi * 2**64 + lo``: both partial products fit 128 bits exactly, are summed
    separately (checked), and recombined with an exact test that the total fits 128 bits.
    """
    x, _ = Int128.from_decimal(col)
    x = x.take(tl.item_row[tl.ev_item])
    zero = np.zeros(len(x), dtype=np.int64)
    sa, ok_a = tl.running_int128(Int128(x.lo, zero).mul_int64(dpos))
    sp, ok_p = tl.running_int128(Int128.from_int64(x.hi).mul_int64(dpos))
    # total = sa + sp * 2**64 = sa.lo + (sp + sa.hi) * 2**64: it fits 128 bits iff
    # sp + sa.hi fits 64 (no wrap in that addition while |sp| < 2**126).
    high = sp + Int128.from_int64(sa.hi)
    upper = high.lo.view(np.int64)
    small = (sp.hi >= -(2**61)) & (sp.hi < 2**61)
    exact = ok_a & ok_p & small & (high.hi == (upper >> 63))
    return Int128(sa.lo, upper.copy()), exact


def _columns(tl: Timeline, spec: ReduceSpec, schema: pa.Schema) -> tuple[np.ndarray, list]:
    """Group presence and every output column, per global slot."""
    pos_old = np.maximum(tl.ev_old, 0)
    dpos = np.maximum(tl.ev_new, 0) - pos_old  # change of the item's present copies
    count = tl.running(dpos)
    present = count > 0
    n_slots = tl.n_slots
    out: list[tuple[str, pa.DataType, _Dense]] = []
    cache: dict[str, tuple] = {}

    def per_column(c: str) -> tuple:
        if c not in cache:
            col = tl.rows.column(c).combine_chunks()
            valid = validity(col)[tl.item_row[tl.ev_item]]
            cache[c] = (col, valid, np.where(valid, dpos, 0), None, None)
        return cache[c]

    def ranks_of(c: str) -> tuple[np.ndarray, tuple]:
        col, valid, d, ranks, vseg = per_column(c)
        if ranks is None:
            ranks = value_ranks(col)
            vseg = tl.value_segments(ranks)
            cache[c] = (col, valid, d, ranks, vseg)
        return ranks, vseg

    for a in spec.aggs:
        if a.kind is AggregateKind.COUNT:
            out.append((a.name, pa.int64(), _IntCol(count)))
            continue
        col, valid, d, _, _ = per_column(a.column)
        if a.kind.additive:
            nn = tl.running(d)
            if a.repr is ValueRepr.INT:
                x = int64s(col)[tl.item_row[tl.ev_item]]
                with np.errstate(over="ignore"):
                    s = tl.running(x * d)
                total = _IntCol(s, nn > 0)
                stype = pa.int64()
            else:
                stype = pa.decimal128(38, a.scale)
                s128, exact = _dec_running(tl, col, d)
                total = _DecCol(s128, exact & (nn > 0), stype)
            if a.kind is AggregateKind.SUM:
                out.append((a.name, stype, total))
            else:
                out.append((f"__s_{a.name}", stype, total))
                out.append((f"__n_{a.name}", pa.int64(), _IntCol(nn)))
            continue
        ranks, (key, lo, hi, vr) = ranks_of(a.column)
        if a.kind is AggregateKind.COUNT_DISTINCT:
            out.append((a.name, pa.int64(), _IntCol(per_slot_count(n_slots, key, lo, hi))))
            continue
        best = np.full(tl.total, -1, dtype=np.int64)
        rank = vr if a.kind is AggregateKind.MIN else ~vr  # ~ reverses the order without overflow
        top = per_slot_topk(n_slots, key, lo, hi, rank, np.ones(len(key), np.int64), k=1)
        best[tl.offsets[top.group] + top.slot] = (
            top.rank if a.kind is AggregateKind.MIN else ~top.rank
        )
        out.append((a.name, schema.field(a.column).type, _RankCol(best, col, ranks)))
    return present, out


def _check_spec(spec: ReduceSpec) -> None:
    for a in spec.aggs:
        if a.kind not in KINDS:
            raise PlanError(f"unknown aggregate kind {a.kind!r} (one of {KINDS})")
        if a.kind is not AggregateKind.COUNT and a.column not in spec.values:
            raise PlanError(f"aggregate {a.name!r} reads {a.column!r}, not a value column")
        if a.kind.additive and a.repr not in (ValueRepr.INT, ValueRepr.DEC):
            raise PlanError(f"aggregate {a.name!r}: repr must be 'int' or 'dec'")


def output_schema(spec: ReduceSpec, schema: pa.Schema) -> pa.Schema:
    """The output's schema: keys, the aggregates' columns, ``_time``, ``_diff``.

    >>> s = ReduceSpec(("k",), ("x",), (GAgg("n", "count"), GAgg("m", "max", "x")))
    >>> output_schema(s, pa.schema([("k", pa.string()), ("x", pa.float32())])).types[1:3]
    [DataType(int64), DataType(float)]
    """
    fields = [schema.field(k) for k in spec.keys]
    for a in spec.aggs:
        if a.kind in (AggregateKind.COUNT, AggregateKind.COUNT_DISTINCT):
            fields.append(pa.field(a.name, pa.int64()))
        elif a.kind.additive:
            t = pa.int64() if a.repr is ValueRepr.INT else pa.decimal128(38, a.scale)
            if a.kind is AggregateKind.SUM:
                fields.append(pa.field(a.name, t))
            else:
                fields += [pa.field(f"__s_{a.name}", t), pa.field(f"__n_{a.name}", pa.int64())]
        else:
            fields.append(pa.field(a.name, schema.field(a.column).type))
    return updates_schema(fields)


def general_reduce(
    delta: pa.Table,
    spec: ReduceSpec,
    lookup: Callable[[pa.Table], object | None],
) -> tuple[pa.Table, pa.Table]:
    """One partition's step of a general reduce (see the module docstring).

    `delta` has ``__h``, the keys, the value columns, ``__r``, ``_time`` and ``_diff``
    (other columns are ignored); `lookup(queries)` returns the additive arrangement's
    consolidated entries of the queried keys (a `Lookup`) or None. Returns
    ``(output, new_run)``: output rows are keys, aggregate columns, ``_time``, ``_diff``
    (the old row -1 and the new row +1 where a key's row changes); the new run is the
    delta consolidated per distinct row (``__h``, keys, values, ``__r``, ``__cnt``), in
    hash order.

    >>> spec = ReduceSpec(("k",), ("x",), (GAgg("d", "count_distinct", "x"),))
    >>> state = pa.table({"__h": [0], "k": [1], "x": ["p"], "__r": [1], "__cnt": [2]})
    >>> class Found:
    ...     query, entries = np.array([0]), state
    >>> delta = pa.table({"__h": [0, 0], "k": [1, 1], "x": ["q", "p"], "__r": [2, 1],
    ...                   "_time": [5, 6], "_diff": [1, -2]})
    >>> out, run = general_reduce(delta, spec, lambda q: Found)
    >>> out.select(["d", "_time", "_diff"]).to_pylist()  # doctest: +NORMALIZE_WHITESPACE
    [{'d': 1, '_time': 5, '_diff': -1}, {'d': 2, '_time': 6, '_diff': -1},
     {'d': 2, '_time': 5, '_diff': 1}, {'d': 1, '_time': 6, '_diff': 1}]
    """
    _check_spec(spec)
    schema = output_schema(spec, delta.schema)
    tl = timeline(delta, spec.keys, spec.values, lookup)
    if tl.total == 0:
        return schema.empty_table(), tl.run
    present, columns = _columns(tl, spec, delta.schema)

    # Compare every slot after a key's base slot with the slot before it.
    t = np.flatnonzero(~tl.base_slots())
    prev = t - 1
    changed = present[t] != present[prev]
    for _, _, col in columns:
        changed |= ~col.same(t, prev)
    minus = changed & present[prev]
    plus = changed & present[t]
    slot_key = tl.slot_key
    parts = []
    for mask, src, sign in ((minus, prev, -1), (plus, t, 1)):
        if not mask.any():
            continue
        src, at = src[mask], t[mask]
        keys = tl.key_table.take(pa.array(slot_key[src], pa.int64()))
        arrays = [keys.column(k) for k in spec.keys]
        arrays += [col.take(src) for _, _, col in columns]
        arrays += [pa.array(tl.slot_time[at], pa.int64()), pa.array(np.full(len(at), sign))]
        parts.append(pa.Table.from_arrays(arrays, schema=schema))
    output = pa.concat_tables(parts) if parts else schema.empty_table()
    return output, tl.run
