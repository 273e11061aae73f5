"""`TemporalFilter`: rows visible only during an interval of logical time (``mz_now()``).

A row whose update has time ``t`` is visible at the times ``τ`` with ``τ >= t``,
``τ >= since`` and ``τ < until`` (`since`/`until`: columns of the row, ms; NULL:
unbounded). The node emits the insertion at ``max(t, since)`` and the retraction at
``until``: output times may lie beyond its input frontier (`delays`), and the engine
holds such updates back at each consumer until its frontier passes them — the frontier,
not a clock, retracts the row (docs/time.md, "Temporal filters").

>>> TemporalFilter.kind, TemporalFilter.delays
('temporal_filter', True)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .node import PlanNode

__all__ = ["TemporalFilter"]


@dataclass(frozen=True, eq=False, kw_only=True)
class TemporalFilter(PlanNode):
    """The input's rows while ``since <= time < until`` (see the module docstring);
    `since`/`until` name long columns of the input (ms) or are None."""

    since: str | None
    until: str | None

    kind: ClassVar[str] = "temporal_filter"
    delays: ClassVar[bool] = True
