"""System column names of the data plane, defined once, and `consolidate`, the one
operation that gives ``_diff`` its meaning.

A collection is a set of updates ``(columns..., _time, _diff)`` (DESIGN.md §4); an
arrangement keeps rows with their accumulated multiplicity ``_cnt``. The ingest log adds
``_late`` (the late reason, null for admitted rows) and ``_offset`` (the row's position
in the source's log: the last part of its event id); the rows of a source with several
outputs carry ``_subsource``. A collection's columns may not take the names in
`SYSTEM_COLUMNS`.

>>> TIME, DIFF, SYSTEM_COLUMNS
('_time', '_diff', ('_time', '_diff', '_cnt'))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import SchemaError

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["CNT", "DIFF", "LATE", "OFFSET", "SUBSOURCE", "SYSTEM_COLUMNS", "TIME", "consolidate"]

#: the update's logical time (int64, milliseconds by default)
TIME = "_time"
#: the update's multiplicity (int64; negative = retraction)
DIFF = "_diff"
#: an arrangement row's accumulated multiplicity (int64, > 0 once consolidated)
CNT = "_cnt"
#: the ingest log's late reason (null: admitted)
LATE = "_late"
#: the ingest log's row position per source
OFFSET = "_offset"
#: which output of a multi-output source a row belongs to
SUBSOURCE = "_subsource"
#: the columns a collection carries besides the user's: no user column may take these names
SYSTEM_COLUMNS = (TIME, DIFF, CNT)


def consolidate(updates: pa.Table, as_of: int | None = None) -> pa.Table:
    """Sum ``_diff`` over equal rows (equal in every other column, ``_time`` included when
    there is one) and drop the rows whose sum is zero: differential consolidation of an
    Arrow table. Row order is unspecified; the schema is kept.

    With `as_of`, every ``_time`` is first advanced to `as_of`, so all updates land at
    one time: the accumulated collection at `as_of`, as a snapshot returns it. Rows are
    compared as Arrow group keys, so their columns must be hashable types (not lists,
    structs or maps).

    >>> import pyarrow as pa
    >>> t = pa.table({"k": ["a", "a", "b"], "_time": [1, 2, 2], "_diff": [1, -1, 3]})
    >>> consolidate(t).sort_by("k").to_pylist()
    [{'k': 'a', '_time': 1, '_diff': 1}, {'k': 'a', '_time': 2, '_diff': -1}, {'k': 'b', '_time': 2, '_diff': 3}]
    >>> consolidate(t, as_of=5).to_pylist()
    [{'k': 'b', '_time': 5, '_diff': 3}]
    >>> consolidate(t.drop_columns(["_time"])).sort_by("k").to_pylist()  # times already collapsed
    [{'k': 'b', '_diff': 3}]
    """
    import pyarrow as pa  # (here, not above: the column names need no pyarrow)
    import pyarrow.compute as pc

    names = updates.column_names
    if DIFF not in names or (as_of is not None and TIME not in names):
        need = [DIFF] if as_of is None else [TIME, DIFF]
        raise SchemaError(f"consolidate needs the columns {need}, got {names}")
    if updates.num_rows == 0:
        return updates
    table = updates.drop_columns([TIME]) if as_of is not None else updates
    keys = [n for n in table.column_names if n != DIFF]
    summed = table.group_by(keys, use_threads=False).aggregate([(DIFF, "sum")])
    summed = summed.rename_columns([DIFF if c == f"{DIFF}_sum" else c for c in summed.column_names])
    summed = summed.filter(pc.not_equal(summed[DIFF], 0))
    if as_of is not None:
        summed = summed.append_column(TIME, pa.array([as_of] * summed.num_rows, pa.int64()))
    return summed.select(names).cast(updates.schema)
