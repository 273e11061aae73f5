"""Windowed state: partial aggregates (or rows) of open windows, merged when sealed.

A windowed aggregate emits each window once, when the frontier passes its end. Its
state is only the open windows, so it is kept per window: a *bucket* per
``window_end`` in each partition, to which every tick appends the part of its updates
that falls in windows still open. When a window is sealed, its bucket is read once,
merged with the tick's own updates for it, and emitted; a tick therefore costs
O(its updates + the windows it seals), not O(open windows).

Two contents:

* **partials** (append-only input, decomposable aggregates): one row per (window, key)
  and tick with partial aggregates (counts and sums add, min and max combine); Spark
  has already combined the tick's rows map-side.
* **rows** (retractions, or count-distinct / top-k): the rows with their multiplicity,
  consolidated when sealed; Spark's reducer then runs over the sealed rows.

>>> import pyarrow as pa
>>> a = pa.table({"window_end": [10, 10], "k": ["x", "y"], "__c_n": [2, 1], "__m_hi": [5, 7]})
>>> b = pa.table({"window_end": [10], "k": ["x"], "__c_n": [3], "__m_hi": [9]})
>>> merge_partials([a, b], ["window_end", "k"], [("__c_n", "sum"), ("__m_hi", "max")]).to_pylist()
[{'window_end': 10, 'k': 'x', '__c_n': 5, '__m_hi': 9}, {'window_end': 10, 'k': 'y', '__c_n': 1, '__m_hi': 7}]
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from ..errors import InternalError

__all__ = ["merge_partials", "split_sealed"]


def merge_partials(
    tables: Sequence[pa.Table], group: Sequence[str], merge: Sequence[tuple[str, str]]
) -> pa.Table:
    """Combine partial aggregates of equal groups (``sum``, ``min`` or ``max`` per
    column); the output is sorted by the group columns (deterministic order)."""
    tables = [t for t in tables if t.num_rows] or list(tables[:1])
    if not tables:
        raise InternalError("merge_partials needs at least one table")
    schema = tables[0].schema
    table = pa.concat_tables([t.select(schema.names).cast(schema) for t in tables])
    merged = table.group_by(list(group), use_threads=False).aggregate(
        [(c, how) for c, how in merge]
    )
    # pyarrow names an aggregate "<column>_<function>": back to the column's name
    merged = merged.rename_columns(
        [n if n in group else n.rsplit("_", 1)[0] for n in merged.column_names]
    )
    return merged.select(schema.names).cast(schema).sort_by([(g, "ascending") for g in group])


def split_sealed(table: pa.Table, hi: int | None) -> tuple[pa.Table, pa.Table]:
    """``(sealed, open)``: rows of windows ending at or before `hi` (every row when the
    input is finished, ``hi`` None) and the others."""
    import pyarrow.compute as pc

    if hi is None:
        return table, table.schema.empty_table()
    sealed = pc.less_equal(table.column("window_end"), hi)
    return table.filter(sealed), table.filter(pc.invert(sealed))
