"""How a kernel keeps an aggregate's running value (`ValueRepr`).

Aggregate kinds come from the plan (`sealtime.plan.AggregateKind`); a kernel adds how
the value is held: an int64 sum, an exact decimal sum, or the input column's own
values (min and max, kept as ranks of those values).

>>> ValueRepr("dec") is ValueRepr.DEC
True
"""

from __future__ import annotations

import enum

from ..errors import PlanError
from ..plan.aggregates import AggregateKind

__all__ = ["CheckedAggregate", "ValueRepr", "checked_spec"]


class ValueRepr(str, enum.Enum):
    """The representation of an aggregate's state (a str enum: kernel specs travel to
    Spark tasks pickled, and tests spell them as strings)."""

    #: an int64 sum (wrapping, like Spark's long sum)
    INT = "int"
    #: an exact decimal128(38, scale) sum
    DEC = "dec"
    #: values of the input column (min, max)
    VALUE = "value"


def checked_spec(name: str, kind: str, repr: str) -> tuple[AggregateKind, ValueRepr]:
    """A kernel aggregate's kind and representation, from their enums or names.

    >>> checked_spec("s", "sum", "dec")
    (<AggregateKind.SUM: 'sum'>, <ValueRepr.DEC: 'dec'>)
    >>> checked_spec("m", "median", "int")
    Traceback (most recent call last):
    ...
    sealtime.errors.PlanError: unknown aggregate kind 'median' (one of sum, count, min, max, avg, count_distinct)
    """
    try:
        checked_kind = AggregateKind(kind)
    except ValueError:
        kinds = ", ".join(k.value for k in AggregateKind)
        raise PlanError(f"unknown aggregate kind {kind!r} (one of {kinds})") from None
    try:
        return checked_kind, ValueRepr(repr)
    except ValueError:
        raise PlanError(f"aggregate {name!r}: repr must be 'int' or 'dec'") from None


class CheckedAggregate:
    """Base of a kernel's frozen aggregate dataclass (`accumulate.Agg`,
    `general_reduce.GAgg`): after init, `kind` and `repr` are their enums, whether they
    were given as enums or names (`checked_spec`).

    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class A(CheckedAggregate):
    ...     name: str
    ...     kind: AggregateKind
    ...     repr: ValueRepr = ValueRepr.INT
    >>> A("n", "count").kind, A("s", "sum", "dec").repr
    (<AggregateKind.COUNT: 'count'>, <ValueRepr.DEC: 'dec'>)
    """

    name: str
    kind: AggregateKind
    repr: ValueRepr

    def __post_init__(self) -> None:
        kind, repr = checked_spec(self.name, self.kind, self.repr)
        # (frozen dataclasses: the checked values replace the given ones)
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "repr", repr)
