"""Aggregate functions for `Collection.aggregate`: `sum`, `count`, `min`, `max`, `avg`,
`count_distinct`.

Every aggregate is computed from the group's accumulated multiset (rows with their
multiplicity), so it is correct under retractions: `min`/`max` see the values still
present, not a running extreme. Floating-point sums are added in ``decimal(38, 12)`` so
that the result does not depend on how Spark partitions the rows (float addition is
not associative, decimal addition is).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ..errors import ConfigError, SchemaError

__all__ = ["Aggregate", "AggregateKind", "avg", "count", "count_distinct", "max", "min", "sum"]


class AggregateKind(str, enum.Enum):
    """What an `Aggregate` computes; its value is the user-facing name (``st.<value>``).

    >>> AggregateKind("sum").additive, AggregateKind.MIN.additive
    (True, False)
    """

    SUM = "sum"
    COUNT = "count"
    MIN = "min"
    MAX = "max"
    AVG = "avg"
    COUNT_DISTINCT = "count_distinct"

    @property
    def additive(self) -> bool:
        """Is the value a sum over the rows (``sum``, ``avg``'s sum and count)?"""
        return self in (AggregateKind.SUM, AggregateKind.AVG)

    @property
    def extremum(self) -> bool:
        """Is it the least or the largest value (``min``, ``max``)?"""
        return self in (AggregateKind.MIN, AggregateKind.MAX)


@dataclass(frozen=True)
class Aggregate:
    """One aggregate: its kind and the column it reads (None for `count()`).

    >>> sum("price")
    st.sum('price')
    >>> Aggregate("median", "x")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: unknown aggregate 'median'; use one of sum, count, min, max, avg, count_distinct
    """

    kind: AggregateKind
    column: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.kind, AggregateKind):
            try:
                object.__setattr__(self, "kind", AggregateKind(self.kind))
            except ValueError:
                names = ", ".join(k.value for k in AggregateKind)
                raise ConfigError(f"unknown aggregate {self.kind!r}; use one of {names}") from None
        if self.kind is not AggregateKind.COUNT and not isinstance(self.column, str):
            raise ConfigError(
                f"st.{self.kind.value}(column) needs a column name, got {self.column!r}"
            )

    def __repr__(self) -> str:
        arg = "" if self.column is None else repr(self.column)
        return f"st.{self.kind.value}({arg})"

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
        call = f"aggregate({name}={self!r})"
        fields = {f.name: f.dataType for f in schema.fields}
        if self.column not in fields:
            raise SchemaError(f"{call}: no column {self.column!r}; the input has {sorted(fields)}")
        dtype = fields[self.column]
        if self.kind.additive and not isinstance(dtype, T.NumericType):
            raise SchemaError(
                f"{call}: column {self.column!r} is {dtype.simpleString()}; {self.kind.value} needs "
                "a numeric column: cast it first, e.g. "
                f"with_columns({self.column}=F.col({self.column!r}).cast('double'))"
            )
        if isinstance(dtype, (T.MapType, T.ArrayType, T.StructType)):
            raise SchemaError(
                f"{call}: column {self.column!r} is {dtype.simpleString()}; {self.kind.value} needs "
                "a column of an orderable, comparable type (numbers, strings, dates, "
                "timestamps, booleans)"
            )

    @property
    def decomposable(self) -> bool:
        """Can partial results be merged (for append-only input)? Not count_distinct."""
        return self.kind is not AggregateKind.COUNT_DISTINCT


def sum(column: str) -> Aggregate:  # noqa: A001 - the field's name for it
    """Sum of `column` (nulls ignored).

    >>> sum("x").kind
    <AggregateKind.SUM: 'sum'>
    """
    return Aggregate(AggregateKind.SUM, column)


def count() -> Aggregate:
    """Number of rows (with multiplicity).

    >>> count()
    st.count()
    """
    return Aggregate(AggregateKind.COUNT, None)


def min(column: str) -> Aggregate:  # noqa: A001
    """Smallest value of `column` among rows present (correct under retractions).

    >>> min("x").column
    'x'
    """
    return Aggregate(AggregateKind.MIN, column)


def max(column: str) -> Aggregate:  # noqa: A001
    """Largest value of `column` among rows present (correct under retractions).

    >>> max("x").kind.value
    'max'
    """
    return Aggregate(AggregateKind.MAX, column)


def avg(column: str) -> Aggregate:
    """Mean of `column` over non-null values, as a double.

    >>> avg("x").kind.value
    'avg'
    """
    return Aggregate(AggregateKind.AVG, column)


def count_distinct(column: str) -> Aggregate:
    """Number of distinct non-null values of `column` among rows present.

    >>> count_distinct("x")
    st.count_distinct('x')
    """
    return Aggregate(AggregateKind.COUNT_DISTINCT, column)
