"""`Over` (window functions) and `Collect` (list aggregates): per-key recomputations.

| node | output |
|---|---|
| `Over` | every input row with the values of window functions over its partition (``by``) in an order (``LAG``, ``RANK``, ``SUM(x) OVER (...)``), updated at every time the partition changes |
| `Collect` | per group of `by`, lists of a column's values (``collect_list``, ``collect_set``), updated at every time the group changes |

Both are differential: the output accumulated to t is the function of the input
accumulated to t. Their kernels recompute a partition touched by a tick
(`sealtime.kernels.over`).

>>> OverFunction("r", "rank").kind, Over.kind, Collect.kind
(<WindowKind.RANK: 'rank'>, 'over', 'collect')
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .node import PlanNode, window_bound

__all__ = ["Collect", "CollectList", "ListKind", "Over", "OverFunction", "OverOrder", "WindowKind"]


# A plain str enum: alike to other enums in form only.
class WindowKind(str, enum.Enum):
    """The window functions (and the aggregates allowed over a frame)."""

    ROW_NUMBER = "row_number"
    RANK = "rank"
    DENSE_RANK = "dense_rank"
    PERCENT_RANK = "percent_rank"
    CUME_DIST = "cume_dist"
    NTILE = "ntile"
    LAG = "lag"
    LEAD = "lead"
    FIRST_VALUE = "first_value"
    LAST_VALUE = "last_value"
    COUNT = "count"
    SUM = "sum"
    AVG = "avg"
    MIN = "min"
    MAX = "max"


class ListKind(str, enum.Enum):
    """A list aggregate: every non-null value with repeats (``collect_list``), or each
    value once (``collect_set``)."""

    LIST = "list"
    SET = "set"


@dataclass(frozen=True)
class OverOrder:
    """One ORDER BY key of a window: a column, ascending or not (nulls first ascending,
    last descending, as Spark's default)."""

    column: str
    ascending: bool = True


@dataclass(frozen=True)
class OverFunction:
    """A window function: output column `name`, `kind` (``row_number``, ``rank``,
    ``dense_rank``, ``percent_rank``, ``cume_dist``, ``ntile``, ``lag``, ``lead``,
    ``first_value``, ``last_value``, ``count``, ``sum``, ``avg``, ``min``, ``max``), the
    value column it reads, `offset` (lag/lead's offset, ntile's buckets), `default`
    (lag/lead's value outside the partition) and `frame` ``(unit, start, end)``: unit
    ``"rows"`` or ``"range"``, bounds None (unbounded) or an offset from the current row
    (negative: preceding; 0: the current row, or its peers for ``"range"``)."""

    name: str
    kind: WindowKind
    column: str | None = None
    offset: int = 1
    default: object = None
    frame: tuple[str, int | None, int | None] = ("range", None, 0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", WindowKind(self.kind))  # (from its SQL name too)


@dataclass(frozen=True, eq=False, kw_only=True)
class Over(PlanNode):
    """Every row of the input with `functions` over its partition of `by`, ordered by
    `order_by` (ties broken by the other columns, so never by arrival order)."""

    by: tuple[str, ...]
    order_by: tuple[OverOrder, ...]
    functions: tuple[OverFunction, ...]

    kind: ClassVar[str] = "over"

    @cached_property
    def bounded_by(self) -> str | None:
        return window_bound(self) if "window_end" in self.by else None


@dataclass(frozen=True)
class CollectList:
    """One list aggregate: output column `name`, ``"list"`` (every non-null value, with
    repeats) or ``"set"`` (each value once) of `column`, in ascending order."""

    name: str
    kind: ListKind
    column: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ListKind(self.kind))


@dataclass(frozen=True, eq=False, kw_only=True)
class Collect(PlanNode):
    """Per group of `by`: the lists of `lists`, at every time the group changes."""

    by: tuple[str, ...]
    lists: tuple[CollectList, ...]

    kind: ClassVar[str] = "collect"
