"""`Join`: an inner equi-join at every time (a left join is built from it).

>>> Join.kind
'join'
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

from .node import WINDOW_END, PlanNode, window_bound

__all__ = ["Join"]


# One frozen dataclass per node, its facts declared: alike to other nodes in form only.
@dataclass(frozen=True, eq=False, kw_only=True)
class Join(PlanNode):
    """Inner join of its two inputs on the columns `on` (output: keys, left's other
    columns, right's other columns)."""

    on: tuple[str, ...]

    kind: ClassVar[str] = "join"

    @cached_property
    def monotonic(self) -> bool:
        return all(i.monotonic for i in self.inputs)

    @cached_property
    def bounded_by(self) -> str | None:
        return window_bound(self) if WINDOW_END in self.on else None
