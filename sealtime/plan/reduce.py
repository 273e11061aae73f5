"""Reductions: per-key aggregates and top-k, at every time or per window.

| node | output |
|---|---|
| `Reduce` | ``aggregate(by=..., n=st.count(), ...)`` at every time its group changes |
| `Distinct` | each present row once |
| `TopK` | the first ``k`` rows per group in an order, at every time |
| `WindowedReduce` | an `Aggregation` or `TopKOrder` per tumbling/sliding window, once, when sealed |
| `SessionReduce` | the same per session window of each key |

A windowed reduction emits each window at ``window_end - 1`` in the tick whose frontier
passes ``window_end``: its output is append-only (monotonic) and bounded by
``window_end``.

>>> from sealtime.plan.aggregates import count
>>> Aggregation({"n": count()}).what, TopKOrder((), 3).what
('aggregate', 'top_k')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .aggregates import Aggregate
from .node import WINDOW_END, PlanNode, window_bound
from .order import OrderKey
from .windows import Session, WindowSpec

__all__ = [
    "Aggregation",
    "Distinct",
    "Reduce",
    "SessionReduce",
    "TopK",
    "TopKOrder",
    "WindowedReduce",
]


@dataclass(frozen=True)
class Aggregation:
    """Named aggregates of a group (``name -> st.sum(...)``)."""

    aggregates: Mapping[str, Aggregate]

    what: ClassVar[str] = "aggregate"


@dataclass(frozen=True)
class TopKOrder:
    """The first `k` rows of a group by `order_by` (ties: priority column, then the other
    columns, so the result never depends on arrival order)."""

    order_by: tuple[OrderKey, ...]
    k: int

    what: ClassVar[str] = "top_k"


def _keyed_bound(node: PlanNode, keys: tuple[str, ...]) -> str | None:
    """`WINDOW_END` when the node groups by it and its input is bounded by it: every
    output time is the time of some input update of the same key, below its end."""
    if WINDOW_END not in keys:
        return None
    return window_bound(node)


@dataclass(frozen=True, eq=False, kw_only=True)
class Reduce(PlanNode):
    """Aggregates per group of `by`, updated (retract, insert) at every time the group
    changes."""

    by: tuple[str, ...]
    aggregates: Mapping[str, Aggregate]

    kind: ClassVar[str] = "reduce"

    @cached_property
    def bounded_by(self) -> str | None:
        return _keyed_bound(self, self.by)


@dataclass(frozen=True, eq=False, kw_only=True)
class Distinct(PlanNode):
    """Set semantics: each row with a positive multiplicity, once."""

    kind: ClassVar[str] = "distinct"

    @cached_property
    def bounded_by(self) -> str | None:
        return window_bound(self)


@dataclass(frozen=True, eq=False, kw_only=True)
class TopK(PlanNode):
    """The first `k` rows per group of `by` in `order_by`, at every time."""

    by: tuple[str, ...]
    order_by: tuple[OrderKey, ...]
    k: int

    kind: ClassVar[str] = "top_k"

    @cached_property
    def priority_column(self) -> str | None:
        return self.inputs[0].priority_column

    @cached_property
    def bounded_by(self) -> str | None:
        return _keyed_bound(self, self.by)


@dataclass(frozen=True, eq=False, kw_only=True)
class _PerWindow(PlanNode):
    """A reduction per window of its input's window spec, emitted once when sealed."""

    by: tuple[str, ...]
    reduction: Aggregation | TopKOrder

    @property
    def spec(self) -> WindowSpec:
        """The window spec of the input."""
        spec = self.inputs[0].window
        assert spec is not None
        return spec

    @cached_property
    def monotonic(self) -> bool:
        return True

    @cached_property
    def priority_column(self) -> str | None:
        if isinstance(self.reduction, TopKOrder):
            return self.inputs[0].priority_column
        return None

    @cached_property
    def bounded_by(self) -> str | None:
        return WINDOW_END if WINDOW_END in self.columns else None


@dataclass(frozen=True, eq=False, kw_only=True)
class WindowedReduce(_PerWindow):
    """Per tumbling or sliding window (``window_start``, ``window_end`` join the key)."""

    kind: ClassVar[str] = "windowed_reduce"


@dataclass(frozen=True, eq=False, kw_only=True)
class SessionReduce(_PerWindow):
    """Per session window of each key of `by` (`Session`)."""

    kind: ClassVar[str] = "session_reduce"

    @property
    def gap(self) -> int:
        """The session gap (ms)."""
        spec = self.spec
        assert isinstance(spec, Session)
        return spec.gap
