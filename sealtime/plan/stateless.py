"""Stateless operators: each tick's output is a function of the tick's input alone.

| node | what it does | per-row |
|---|---|---|
| `Filter` | keeps rows satisfying a condition | yes |
| `Project` | a new list of columns (``select``, ``with_columns``, ``flat_map``) | yes |
| `Map` | a user's per-row DataFrame function (``map``) | yes |
| `AssignWindows` | adds ``window_start``/``window_end`` from ``_time`` | yes |
| `Negate` | negates multiplicities | yes |
| `Consolidate` | sums multiplicities per (row, time), drops zeros | no (recomputable) |
| `Union` | the inputs together, in priority order | no |
| `Inspect` | a debugging tap; passes its input through | no |
| `AdvanceTime` | rounds times up to a multiple (differential's ``delay``) | no (delays) |

>>> AdvanceTime.delays, Filter.per_row, Consolidate.recomputable, Union.per_row
(True, True, True, False)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from .node import NOT_FINGERPRINTED, WINDOW_END, WINDOW_START, PlanNode, window_bound
from .windows import Session, WindowSpec

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from ..progress.summary import PathSummary

__all__ = [
    "AdvanceTime",
    "AssignWindows",
    "Consolidate",
    "Filter",
    "Inspect",
    "Map",
    "Negate",
    "Project",
    "Union",
]


@dataclass(frozen=True, eq=False, kw_only=True)
class _RowWise(PlanNode):
    """A per-row operator over one input: it keeps the input's monotonicity, and its
    window and priority column while it keeps their columns."""

    per_row: ClassVar[bool] = True
    recomputable: ClassVar[bool] = True

    @property
    def input(self) -> PlanNode:
        """The one input."""
        return self.inputs[0]

    @cached_property
    def monotonic(self) -> bool:
        return self.input.monotonic

    @cached_property
    def window(self) -> WindowSpec | None:
        spec = self.input.window
        if spec is None:
            return None
        keeps = isinstance(spec, Session) or {WINDOW_START, WINDOW_END} <= set(self.columns)
        return spec if keeps else None

    @cached_property
    def priority_column(self) -> str | None:
        column = self.input.priority_column
        return column if column in self.columns else None

    @cached_property
    def bounded_by(self) -> str | None:
        return window_bound(self)


@dataclass(frozen=True, eq=False, kw_only=True)
class Filter(_RowWise):
    """Keep the updates whose row satisfies `condition` (a Spark Column)."""

    condition: Column

    kind: ClassVar[str] = "filter"


@dataclass(frozen=True, eq=False, kw_only=True)
class Project(_RowWise):
    """Replace each row by the values of `columns` (names or Spark Columns, each named;
    a generator such as ``explode`` gives a row per element)."""

    projection: tuple[Column | str, ...]

    kind: ClassVar[str] = "project"


@dataclass(frozen=True, eq=False, kw_only=True)
class Map(_RowWise):
    """A user's per-row function of the delta DataFrame (it keeps ``_time``/``_diff``
    and looks at no other row). `expressions` is the logical plan it builds over an
    empty frame of the input's schema, ids removed: what the fingerprint compares."""

    fn: Callable[[DataFrame], DataFrame] = field(metadata=NOT_FINGERPRINTED)
    expressions: str

    kind: ClassVar[str] = "map"


@dataclass(frozen=True, eq=False, kw_only=True)
class AssignWindows(_RowWise):
    """Add ``window_start``/``window_end`` of `spec` (sessions pass rows through: the
    aggregate that follows forms them per key)."""

    spec: WindowSpec

    kind: ClassVar[str] = "window"

    @cached_property
    def window(self) -> WindowSpec | None:
        return self.spec

    @cached_property
    def bounded_by(self) -> str | None:
        if isinstance(self.spec, Session) or WINDOW_END not in self.columns:
            return None
        return WINDOW_END


@dataclass(frozen=True, eq=False, kw_only=True)
class Negate(_RowWise):
    """The same updates with negated multiplicities (never monotonic)."""

    kind: ClassVar[str] = "negate"

    @cached_property
    def monotonic(self) -> bool:
        return False

    @cached_property
    def priority_column(self) -> str | None:
        return None


@dataclass(frozen=True, eq=False, kw_only=True)
class Consolidate(_RowWise):
    """One update per distinct (row, time), multiplicities summed, zeros dropped."""

    per_row: ClassVar[bool] = False
    kind: ClassVar[str] = "consolidate"


@dataclass(frozen=True, eq=False, kw_only=True)
class Inspect(_RowWise):
    """Call ``fn(updates, lower, upper)`` with each sealed range's updates (a tap)."""

    fn: Callable[..., Any]

    per_row: ClassVar[bool] = False
    recomputable: ClassVar[bool] = False
    shareable: ClassVar[bool] = False  # (the tap is a side effect)
    kind: ClassVar[str] = "inspect"


@dataclass(frozen=True, eq=False, kw_only=True)
class Union(PlanNode):
    """The inputs' updates together (``names``: the columns, in the first input's
    order); with `priority_column`, each row carries its input's index there."""

    priority: str | None
    names: tuple[str, ...]

    kind: ClassVar[str] = "union"

    @cached_property
    def monotonic(self) -> bool:
        return all(i.monotonic for i in self.inputs)

    @cached_property
    def window(self) -> WindowSpec | None:
        specs = {i.window for i in self.inputs}
        return specs.pop() if len(specs) == 1 else None

    @cached_property
    def priority_column(self) -> str | None:
        return self.priority

    @cached_property
    def bounded_by(self) -> str | None:
        return window_bound(self)


@dataclass(frozen=True, eq=False, kw_only=True)
class AdvanceTime(PlanNode):
    """Every update's time advanced to the next multiple of `granularity` (ms); the
    output frontier is the input's rounded up (`RoundUp`)."""

    granularity: int

    kind: ClassVar[str] = "advance_time"
    delays: ClassVar[bool] = True

    def summary(self) -> PathSummary | None:
        from ..progress.summary import RoundUp

        return RoundUp(self.granularity)

    @cached_property
    def monotonic(self) -> bool:
        return self.inputs[0].monotonic

    @cached_property
    def priority_column(self) -> str | None:
        return self.inputs[0].priority_column
