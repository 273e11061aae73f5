"""`Timeout`: a row when a key has had no update for a span of logical time.

>>> Timeout.kind
'timeout'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .node import PlanNode

__all__ = ["LAST_UPDATE", "TIMED_OUT_AT", "Timeout"]

#: the output's columns besides the key: the key's last update time, and when it fired
LAST_UPDATE = "last_update"
TIMED_OUT_AT = "timed_out_at"


@dataclass(frozen=True, eq=False, kw_only=True)
class Timeout(PlanNode):
    """For every key of `by` quiet for `after` ms after an update at ``t``: the row
    ``(by..., last_update=t, timed_out_at=t + after)`` at time ``t + after``
    (append-only)."""

    by: tuple[str, ...]
    after: int

    kind: ClassVar[str] = "timeout"

    @cached_property
    def monotonic(self) -> bool:
        return True
