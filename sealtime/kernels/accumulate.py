"""The accumulable-aggregate kernel: running aggregates per key, at every time.

An aggregate is *accumulable* when its state is a small vector that updates add to:
``count``, ``sum`` and ``avg`` (a sum and a count of non-null values), and ``min`` /
``max`` over append-only input (a running extreme). Materialize calls these
accumulable and monotonic reductions; they are the common case of running
aggregates and the cheap one.

One partition of one tick: the delta rows ``(key, _time, _diff, value columns)`` are
sorted by (key, time); per (key, time) slot the contributions are summed; a running
sum per key over its slots, started from the key's state before the tick (found in the
arrangement), gives the state *at every time* of the tick. That is the per-time
semantics of differential dataflow at O(n log n) for n delta rows — it never joins the
state with the times. Where a slot changes the aggregate the kernel emits the old row
with ``-1`` and the new one with ``+1``; a slot that leaves the output as it was emits
nothing. The last slot of every key is the key's new state (an upsert run).

Sums of integers are int64 (wrapping like Spark's non-ANSI ``sum``); sums of floats and
decimals are exact decimal(38, s) sums (`sealtime.kernels.int128`), so results never
depend on how rows were split among ticks or partitions. Min and max compare values
through their ranks (pyarrow's sort order: numbers, strings by bytes, NaN last), so
they work for any orderable type.

>>> import pyarrow as pa
>>> spec = AccumulateSpec(keys=("k",), aggs=(Agg("n", "count"), Agg("s", "sum", "int")))
>>> delta = pa.table({"__h": [1, 1, 1], "k": ["a", "a", "a"], "_time": [5, 5, 7],
...                   "_diff": [1, 1, 1], "__x_s": [10, 20, 30]})
>>> out, run = accumulate(delta, spec, lambda q: None)
>>> sorted(zip(out["_time"].to_pylist(), out["_diff"].to_pylist(), out["__rows"].to_pylist()))
[(5, 1, 2), (7, -1, 2), (7, 1, 3)]
>>> run.select(["k", "__rows", "__s_s"]).to_pylist()
[{'k': 'a', '__rows': 3, '__s_s': 60}]
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..columns import DIFF, TIME
from ..plan.aggregates import AggregateKind
from .aggregates import CheckedAggregate, ValueRepr
from .keyed import HASH, exact_groups, int64s, segment_ids, segmented_cumsum, validity

__all__ = ["Agg", "AccumulateSpec", "accumulate", "empty_state", "state_schema"]

ROWS = "__rows"
_NO_RANK = np.int64(2**62)  # the rank of "no value" (null): after every real value


@dataclass(frozen=True)
class Agg(CheckedAggregate):
    """One accumulable aggregate.

    `kind` is count, sum, avg, min or max; `repr` how its sum is kept: ``"int"``
    (int64) or ``"dec"`` (exact decimal(38, `scale`)); min and max keep the value of
    the input column's type (`repr` ``"value"``).
    """

    name: str
    kind: AggregateKind
    repr: ValueRepr = ValueRepr.INT
    scale: int = 0

    # One property per column name: deliberately parallel.
    @property
    def input(self) -> str:
        """The kernel input column with this aggregate's prepared values."""
        return f"__x_{self.name}"

    @property
    def sum_column(self) -> str:
        return f"__s_{self.name}"

    @property
    def count_column(self) -> str:
        return f"__n_{self.name}"

    @property
    def value_column(self) -> str:
        return f"__m_{self.name}"

    def state_columns(self) -> list[str]:
        if self.kind is AggregateKind.COUNT:
            return []
        if self.kind.additive:
            return [self.sum_column, self.count_column]
        return [self.value_column, self.count_column]


@dataclass(frozen=True)
class AccumulateSpec:
    """The key columns and the aggregates of an accumulable reduce."""

    keys: tuple[str, ...]
    aggs: tuple[Agg, ...]

    def state_columns(self) -> list[str]:
        cols = [ROWS]
        for a in self.aggs:
            cols += a.state_columns()
        return cols


def state_schema(spec: AccumulateSpec, input_schema: pa.Schema) -> pa.Schema:
    """Schema of the state (upsert run rows): ``__h``, keys, ``__rows``, accumulators."""
    fields = [pa.field(HASH, pa.int64())]
    fields += [input_schema.field(k) for k in spec.keys]
    fields.append(pa.field(ROWS, pa.int64()))
    for a in spec.aggs:
        if a.kind.additive:
            t = pa.int64() if a.repr is ValueRepr.INT else pa.decimal128(38, a.scale)
            fields += [pa.field(a.sum_column, t), pa.field(a.count_column, pa.int64())]
        elif a.kind.extremum:
            fields += [
                pa.field(a.value_column, input_schema.field(a.input).type),
                pa.field(a.count_column, pa.int64()),
            ]
    return pa.schema(fields)


def empty_state(spec: AccumulateSpec) -> Callable[[pa.Table], np.ndarray]:
    """The predicate of rows holding no state (every accumulator zero): such rows only
    shadow older runs and are dropped when merged into the oldest run."""

    def empty(table: pa.Table) -> np.ndarray:
        out = np.asarray(table.column(ROWS).to_numpy(), dtype=np.int64) == 0
        for a in spec.aggs:
            if a.kind is AggregateKind.COUNT:
                continue
            out &= np.asarray(table.column(a.count_column).to_numpy(), dtype=np.int64) == 0
            if a.kind.additive:
                col = table.column(a.sum_column)
                if a.repr is ValueRepr.INT:
                    out &= np.asarray(pc.fill_null(col, 0).to_numpy(), dtype=np.int64) == 0
                else:
                    from .int128 import Int128

                    out &= Int128.from_decimal(col)[0].is_zero()
        return out

    return empty


def _seg_cummin(rank: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Running minimum restarting where `starts` is True (ranks are >= 0)."""
    if not len(rank):
        return rank
    seg = segment_ids(starts)
    nseg = int(seg[-1]) + 1
    span = np.int64(_NO_RANK + 1)
    # Earlier segments get larger offsets, so a running minimum never crosses into a
    # later segment; ranks fit (rank < 2**62, offsets stay within int64 for < 2 segs).
    if nseg > 1:
        ranks, inv = np.unique(rank, return_inverse=True)
        span = np.int64(len(ranks) + 1)
        dense = inv.astype(np.int64)
        shifted = dense + (nseg - 1 - seg) * span
        run = np.minimum.accumulate(shifted) - (nseg - 1 - seg) * span
        return ranks[run]
    return np.minimum.accumulate(rank)


class _Column:
    """One accumulator column over a set of rows: int64, exact decimal, or ranks."""

    def __init__(self, repr: ValueRepr, values, valid: np.ndarray | None = None) -> None:
        self.repr = repr  # (VALUE: ranks of the input column's values)
        self.values = values
        self.valid = valid


def accumulate(
    delta: pa.Table,
    spec: AccumulateSpec,
    lookup: Callable[[pa.Table], object | None],
) -> tuple[pa.Table, pa.Table]:
    """One partition's step. `delta` has ``__h``, the keys, ``_time``, ``_diff`` and the
    aggregates' input columns; `lookup(keys_table)` returns a `Lookup` (or None when
    there is no state) of upsert-state rows. Returns ``(output, new_run)``: output rows
    are keys, ``__rows``, accumulators, ``_time``, ``_diff`` (±1); the new run holds the
    touched keys' state after the tick, in hash order."""
    keys = list(spec.keys)
    in_schema = delta.schema
    schema = state_schema(spec, in_schema)
    out_schema = (
        pa.schema([f for f in schema if f.name != HASH])
        .append(pa.field(TIME, pa.int64()))
        .append(pa.field(DIFF, pa.int64()))
    )
    if delta.num_rows == 0:
        return out_schema.empty_table(), schema.empty_table()
    times = int64s(delta.column(TIME))
    diffs = int64s(delta.column(DIFF))
    order, kstarts = exact_groups(delta, keys, then=times)
    t_sorted = times[order]
    sstarts = kstarts.copy()
    sstarts[1:] |= t_sorted[1:] != t_sorted[:-1]
    slot_first = np.flatnonzero(sstarts)  # positions (in `order`) where slots start
    nslot = len(slot_first)
    key_of_row = segment_ids(kstarts)
    key_of_slot = key_of_row[slot_first]
    slot_time = t_sorted[slot_first]
    kslot_starts = np.ones(nslot, dtype=bool)  # slot that starts a key
    kslot_starts[1:] = key_of_slot[1:] != key_of_slot[:-1]
    key_rows = order[kstarts]
    key_table = delta.select([HASH, *keys]).take(pa.array(key_rows, pa.int64()))
    nkey = key_table.num_rows
    d_sorted = diffs[order]

    found = lookup(key_table)
    base_q = np.zeros(0, np.int64) if found is None else found.query
    base_tab = None if found is None else found.entries
    # index into [missing, found entries...] per key, for take-based alignment
    base_idx = np.zeros(nkey, np.int64)
    base_idx[base_q] = np.arange(1, len(base_q) + 1)

    def base_int(column: str) -> np.ndarray:
        out = np.zeros(nkey, np.int64)
        if base_tab is not None and len(base_q):
            out[base_q] = int64s(base_tab.column(column))
        return out

    def running_int(contrib_sorted: np.ndarray, base: np.ndarray) -> np.ndarray:
        per_slot = np.add.reduceat(contrib_sorted, slot_first)
        return segmented_cumsum(per_slot, kslot_starts) + base[key_of_slot]

    # ---- rows (the multiplicity of the group): presence
    new_cols: dict[str, _Column] = {}
    base_cols: dict[str, _Column] = {}
    base_rows = base_int(ROWS)
    new_cols[ROWS] = _Column(ValueRepr.INT, running_int(d_sorted, base_rows))
    base_cols[ROWS] = _Column(ValueRepr.INT, base_rows)

    for a in spec.aggs:
        if a.kind is AggregateKind.COUNT:
            continue
        col = delta.column(a.input)
        valid = validity(col)
        nn = np.where(valid, diffs, 0)[order]
        base_nn = base_int(a.count_column)
        new_cols[a.count_column] = _Column(ValueRepr.INT, running_int(nn, base_nn))
        base_cols[a.count_column] = _Column(ValueRepr.INT, base_nn)
        if a.kind.additive:
            if a.repr is ValueRepr.INT:
                contrib = (int64s(col) * diffs)[order]
                base_s = base_int(a.sum_column)
                new_cols[a.sum_column] = _Column(ValueRepr.INT, running_int(contrib, base_s))
                base_cols[a.sum_column] = _Column(ValueRepr.INT, base_s)
            else:
                from .int128 import Int128

                x, _ = Int128.from_decimal(col)
                contrib = x.mul_int64(diffs).take(order)
                per_slot = contrib.segment_sum(sstarts)
                run = per_slot.segment_cumsum(kslot_starts)
                zero = Int128.from_int64(np.zeros(1, np.int64))
                if base_tab is not None and len(base_q):
                    stored, _ = Int128.from_decimal(base_tab.column(a.sum_column))
                    base_s = Int128.concat([zero, stored]).take(base_idx)
                else:
                    base_s = Int128.from_int64(np.zeros(nkey, np.int64))
                new_cols[a.sum_column] = _Column(ValueRepr.DEC, run + base_s.take(key_of_slot))
                base_cols[a.sum_column] = _Column(ValueRepr.DEC, base_s)
        else:  # min / max over append-only input: running extreme through ranks
            if base_tab is not None and len(base_q):
                base_vals = pa.concat_arrays(
                    [pa.nulls(1, col.type), base_tab.column(a.value_column).combine_chunks()]
                ).take(pa.array(base_idx, pa.int64()))
            else:
                base_vals = pa.nulls(nkey, col.type)
            both = pa.concat_arrays([base_vals, col.combine_chunks()])
            order_kind = "ascending" if a.kind is AggregateKind.MIN else "descending"
            rank = np.asarray(pc.rank(both, sort_keys=order_kind, tiebreaker="dense")).astype(
                np.int64
            )
            rank[~validity(both)] = _NO_RANK
            base_rank, row_rank = rank[:nkey], rank[nkey:][order]
            per_slot = np.minimum.reduceat(row_rank, slot_first)
            running = np.minimum(_seg_cummin(per_slot, kslot_starts), base_rank[key_of_slot])
            # rank -> a position holding that value in `both`
            pos = np.full(int(rank[rank < _NO_RANK].max(initial=0)) + 2, -1, np.int64)
            real = np.flatnonzero(rank < _NO_RANK)
            pos[rank[real]] = real
            new_cols[a.value_column] = _Column(ValueRepr.VALUE, running, both)
            base_cols[a.value_column] = _Column(ValueRepr.VALUE, base_rank, both)
            new_cols[a.value_column].pos = pos  # type: ignore[attr-defined]
            base_cols[a.value_column].pos = pos  # type: ignore[attr-defined]

    # ---- old state per slot: the previous slot's, or the base at a key's first slot
    prev = np.arange(nslot, dtype=np.int64) - 1
    first_of_key = kslot_starts

    def old_of(name: str) -> _Column:
        new, base = new_cols[name], base_cols[name]
        if new.repr is ValueRepr.DEC:
            from .int128 import Int128

            both = Int128.concat([base.values, new.values])
            idx = np.where(first_of_key, key_of_slot, nkey + prev)
            out = _Column(ValueRepr.DEC, both.take(idx))
        else:
            vals = np.where(first_of_key, base.values[key_of_slot], new.values[np.maximum(prev, 0)])
            out = _Column(new.repr, vals, new.valid)
        if hasattr(new, "pos"):
            out.pos = new.pos  # type: ignore[attr-defined]
        return out

    old_cols = {name: old_of(name) for name in new_cols}
    new_p = new_cols[ROWS].values > 0
    old_p = old_cols[ROWS].values > 0
    same = np.ones(nslot, dtype=bool)
    for a in spec.aggs:
        if a.kind is AggregateKind.COUNT:
            same &= new_cols[ROWS].values == old_cols[ROWS].values
            continue
        nn_new, nn_old = new_cols[a.count_column].values, old_cols[a.count_column].values
        if a.kind is AggregateKind.AVG:
            same &= nn_new == nn_old
        else:
            same &= (nn_new > 0) == (nn_old > 0)
        if a.kind.additive:
            s_new, s_old = new_cols[a.sum_column].values, old_cols[a.sum_column].values
            same &= (s_new == s_old) if a.repr is ValueRepr.INT else np.asarray(s_new == s_old)
        else:
            same &= new_cols[a.value_column].values == old_cols[a.value_column].values
    unchanged = new_p & old_p & same
    minus = old_p & ~unchanged
    plus = new_p & ~unchanged

    def materialise(cols: dict[str, _Column], mask: np.ndarray | None, rows: np.ndarray) -> list:
        arrays = []
        for f in schema:
            if f.name == HASH:
                continue
            if f.name in keys:
                arrays.append(key_table.column(f.name).take(pa.array(rows, pa.int64())))
                continue
            c = cols[f.name]
            sel = slice(None) if mask is None else mask
            if c.repr is ValueRepr.INT:
                arrays.append(pa.array(c.values[sel], pa.int64()))
            elif c.repr is ValueRepr.DEC:
                idx = np.arange(len(c.values)) if mask is None else np.flatnonzero(mask)
                arrays.append(c.values.take(idx).to_decimal(f.type))
            else:
                r = c.values[sel]
                p = np.where(r < _NO_RANK, c.pos[np.minimum(r, len(c.pos) - 1)], -1)
                arrays.append(
                    c.valid.take(pa.array(np.where(p < 0, 0, p), pa.int64())).cast(f.type)
                    if len(p)
                    else pa.array([], f.type)
                )
                if len(p) and (p < 0).any():
                    arrays[-1] = pc.if_else(pa.array(p < 0), pa.nulls(len(p), f.type), arrays[-1])
        return arrays

    parts = []
    for mask, sign in ((minus, -1), (plus, 1)):
        n = int(mask.sum())
        if not n:
            continue
        cols = old_cols if sign < 0 else new_cols
        arrays = materialise(cols, mask, key_of_slot[mask])
        arrays.append(pa.array(slot_time[mask], pa.int64()))
        arrays.append(pa.array(np.full(n, sign, np.int64)))
        parts.append(pa.Table.from_arrays(arrays, schema=out_schema))
    output = pa.concat_tables(parts) if parts else out_schema.empty_table()

    last = np.empty(nslot, dtype=bool)
    last[:-1] = kslot_starts[1:]
    last[-1] = True
    arrays = [key_table.column(HASH).combine_chunks()]
    arrays += materialise(new_cols, last, key_of_slot[last])
    new_run = pa.Table.from_arrays(arrays, schema=schema)
    return output, new_run
