"""Aggregate functions for `Collection.aggregate`: `sum`, `count`, `min`, `max`, `avg`,
`count_distinct`.

Every aggregate is computed from the group's accumulated multiset (rows with their
multiplicity), so it is correct under retractions: `min`/`max` see the values still
present, not a running extreme. Floating-point sums are added in ``decimal(38, 12)`` so
that the result does not depend on how Spark partitions the rows (float addition is
not associative, decimal addition is).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SchemaError

__all__ = ["Aggregate", "avg", "count", "count_distinct", "max", "min", "sum"]

_KINDS = ("sum", "count", "min", "max", "avg", "count_distinct")


@dataclass(frozen=True)
class Aggregate:
    """One aggregate: its kind and the column it reads (None for `count()`).

    >>> sum("price")
    Aggregate(kind='sum', column='price')
    """

    kind: str
    column: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"unknown aggregate {self.kind!r}; use one of {_KINDS}")
        if self.kind != "count" and not isinstance(self.column, str):
            raise ValueError(f"st.{self.kind}(column) needs a column name, got {self.column!r}")

    def check(self, name: str, schema) -> None:
        """Refuse, when the graph is built, an aggregate its input column cannot take:
        a missing column, ``sum``/``avg`` of a non-numeric column (Spark would return
        nulls), ``min``/``max``/``count_distinct`` of a map, array or struct.

        >>> from pyspark.sql import types as T
        >>> s = T.StructType([T.StructField("name", T.StringType())])
        >>> sum("name").check("total", s)
        Traceback (most recent call last):
        ...
        sealtime.errors.SchemaError: aggregate(total=st.sum('name')): column 'name' is string; ...
        """
        from pyspark.sql import types as T

        if self.column is None:
            return
        call = f"aggregate({name}=st.{self.kind}({self.column!r}))"
        fields = {f.name: f.dataType for f in schema.fields}
        if self.column not in fields:
            raise SchemaError(f"{call}: no column {self.column!r}; the input has {sorted(fields)}")
        dtype = fields[self.column]
        if self.kind in ("sum", "avg") and not isinstance(dtype, T.NumericType):
            raise SchemaError(
                f"{call}: column {self.column!r} is {dtype.simpleString()}; {self.kind} needs "
                "a numeric column: cast it first, e.g. "
                f"with_columns({self.column}=F.col({self.column!r}).cast('double'))"
            )
        if isinstance(dtype, (T.MapType, T.ArrayType, T.StructType)):
            raise SchemaError(
                f"{call}: column {self.column!r} is {dtype.simpleString()}; {self.kind} needs "
                "a column of an orderable, comparable type (numbers, strings, dates, "
                "timestamps, booleans)"
            )

    @property
    def decomposable(self) -> bool:
        """Can partial results be merged (for append-only input)? Not count_distinct."""
        return self.kind != "count_distinct"


def sum(column: str) -> Aggregate:  # noqa: A001 - the field's name for it
    """Sum of `column` (nulls ignored).

    >>> sum("x").kind
    'sum'
    """
    return Aggregate("sum", column)


def count() -> Aggregate:
    """Number of rows (with multiplicity).

    >>> count()
    Aggregate(kind='count', column=None)
    """
    return Aggregate("count", None)


def min(column: str) -> Aggregate:  # noqa: A001
    """Smallest value of `column` among rows present (correct under retractions).

    >>> min("x").column
    'x'
    """
    return Aggregate("min", column)


def max(column: str) -> Aggregate:  # noqa: A001
    """Largest value of `column` among rows present (correct under retractions).

    >>> max("x").kind
    'max'
    """
    return Aggregate("max", column)


def avg(column: str) -> Aggregate:
    """Mean of `column` over non-null values, as a double.

    >>> avg("x").kind
    'avg'
    """
    return Aggregate("avg", column)


def count_distinct(column: str) -> Aggregate:
    """Number of distinct non-null values of `column` among rows present.

    >>> count_distinct("x").kind
    'count_distinct'
    """
    return Aggregate("count_distinct", column)
