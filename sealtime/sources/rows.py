"""`Rows`: an in-memory source with explicit times (and optional retractions), for tests.

``Rows(schema, [(time, row_dict), (time, row_dict, diff), ...], times_per_tick=1)``.
Each tick releases the rows of the next `times_per_tick` distinct times and advances the
source frontier to the next time present, so tests can seal one time per tick or many.
The order of the list inside one time does not matter: rows at one time form a set.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..columns import DIFF, TIME
from ..errors import ConfigError, SchemaError
from .base import ReadBatch, Source, SourceReader

__all__ = ["Rows", "to_arrow_schema"]

_TYPE_NAMES = {
    "long": pa.int64(),
    "bigint": pa.int64(),
    "int64": pa.int64(),
    "int": pa.int32(),
    "integer": pa.int32(),
    "int32": pa.int32(),
    "double": pa.float64(),
    "float64": pa.float64(),
    "float": pa.float32(),
    "string": pa.string(),
    "str": pa.string(),
    "bool": pa.bool_(),
    "boolean": pa.bool_(),
    "timestamp": pa.timestamp("ms", tz="UTC"),
    "date": pa.date32(),
}


def to_arrow_schema(schema: Any) -> pa.Schema:
    """Accept a pyarrow Schema, a Spark StructType, a ``{"name": "type"}`` mapping or a
    ``"a long, b string"`` string, and return a pyarrow Schema.

    >>> to_arrow_schema({"k": "string", "v": "long"})
    k: string
    v: int64
    >>> to_arrow_schema("k string, v double").names
    ['k', 'v']
    """
    if isinstance(schema, pa.Schema):
        return schema
    if isinstance(schema, str):
        pairs = []
        for part in schema.split(","):
            bits = part.split()
            if len(bits) != 2:
                raise SchemaError(f"schema {schema!r}: write 'name type, name type'")
            pairs.append((bits[0], bits[1]))
        schema = dict(pairs)
    if isinstance(schema, Mapping):
        fields = []
        for name, typ in schema.items():
            if isinstance(typ, pa.DataType):
                fields.append(pa.field(name, typ))
            elif isinstance(typ, str) and typ.lower() in _TYPE_NAMES:
                fields.append(pa.field(name, _TYPE_NAMES[typ.lower()]))
            else:
                raise SchemaError(
                    f"schema: column {name!r} has unknown type {typ!r}; use one of {sorted(_TYPE_NAMES)}"
                )
        return pa.schema(fields)
    try:  # a Spark StructType
        from pyspark.sql.pandas.types import to_arrow_schema as spark_to_arrow

        return spark_to_arrow(schema)
    except Exception as exc:  # pragma: no cover - message path
        raise SchemaError(
            f"schema {schema!r}: pass a pyarrow Schema, a Spark StructType or a dict"
        ) from exc


def _column(name: str, values: list[Any], typ: pa.DataType) -> pa.Array:
    """The column as Arrow; a value of the wrong type is an error naming the column,
    the item and the value (pyarrow's own message names none of them)."""
    try:
        return pa.array(values, type=typ)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError) as exc:
        for i, value in enumerate(values):  # (the error path only: find the culprit)
            try:
                pa.array([value], type=typ)
            except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
                raise SchemaError(
                    f"Rows: item {i} has {name}={value!r} ({type(value).__name__}), which "
                    f"is not a {typ}; give a value of that type or change the schema"
                ) from exc
        raise


class Rows(Source):
    """Rows with explicit logical times and multiplicities.

    >>> src = Rows({"k": "string"}, [(2, {"k": "b"}), (1, {"k": "a"}), (2, {"k": "a"}, -1)])
    >>> r = src.open()
    >>> b = r.read()
    >>> b.data.to_pydict(), b.event_frontier, b.exhausted
    ({'k': ['a'], '_time': [1], '_diff': [1]}, 2, False)
    >>> r.read().data.num_rows, r.read().exhausted
    (2, True)
    """

    time_column = TIME
    diff_column = DIFF

    def __init__(self, schema: Any, rows: Iterable[Sequence[Any]], times_per_tick: int = 1) -> None:
        self.schema = to_arrow_schema(schema)
        if times_per_tick < 1:
            raise ConfigError(f"Rows(times_per_tick={times_per_tick}) must be >= 1")
        self.times_per_tick = times_per_tick
        times: list[int] = []
        diffs: list[int] = []
        cols: dict[str, list[Any]] = {f.name: [] for f in self.schema}
        for i, item in enumerate(rows):
            if len(item) not in (2, 3):
                raise ConfigError(
                    f"Rows: item {i} must be (time, row) or (time, row, diff), got {item!r}"
                )
            t, row = item[0], item[1]
            diff = item[2] if len(item) == 3 else 1
            if not isinstance(t, (int, np.integer)) or isinstance(t, bool):
                raise ConfigError(f"Rows: item {i} has time {t!r}; times are ints (ms)")
            unknown = set(row) - set(cols)
            if unknown:
                raise SchemaError(
                    f"Rows: item {i} has columns {sorted(unknown)} not in the schema {list(cols)}"
                )
            times.append(int(t))
            diffs.append(int(diff))
            for name in cols:
                cols[name].append(row.get(name))
        arrays = {n: _column(n, v, self.schema.field(n).type) for n, v in cols.items()}
        table = pa.table(arrays, schema=self.schema)
        table = table.append_column(TIME, pa.array(times, pa.int64()))
        table = table.append_column(DIFF, pa.array(diffs, pa.int64()))
        order = np.argsort(np.asarray(times, dtype=np.int64), kind="stable")
        self.table = table.take(pa.array(order, pa.int64()))
        self.times = sorted(set(times))

    @property
    def insert_only(self) -> bool:
        """True when no row has a negative multiplicity.

        >>> Rows({"k": "string"}, [(1, {"k": "a"}, -1)]).insert_only
        False
        """
        return bool(np.all(self.table.column(DIFF).to_numpy() > 0))

    def open(self, position: Any = None) -> SourceReader:
        return _RowsReader(self, int(position or 0))


class _RowsReader(SourceReader):
    def __init__(self, source: Rows, next_index: int) -> None:
        self.source = source
        self.next = next_index  # index into the sorted distinct times

    def read(self, max_rows: int | None = None) -> ReadBatch:
        times = self.source.times
        chunk = times[self.next : self.next + self.source.times_per_tick]
        self.next += len(chunk)
        t_col = self.source.table.column(TIME).to_numpy()
        if chunk:
            lo = np.searchsorted(t_col, chunk[0], side="left")
            hi = np.searchsorted(t_col, chunk[-1], side="right")
            data = self.source.table.slice(lo, hi - lo)
        else:
            data = self.source.table.slice(0, 0)
        done = self.next >= len(times)
        frontier = None if done else times[self.next]
        return ReadBatch(data, position=self.next, exhausted=done, event_frontier=frontier)
