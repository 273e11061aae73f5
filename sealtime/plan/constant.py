"""`Constant`: fixed rows, present at every time.

SQL needs a collection that holds a row before any input arrives: Spark answers an
aggregate without ``GROUP BY`` with one row even over no input (``COUNT(*) = 0``), so a
view of it is ``reduce ∪ (default − reduce's default)``, as Materialize lowers it. The
rows enter at the earliest time, in the first range the node seals; its one input only
gives it a frontier (the clock of the view it belongs to).

>>> Constant.kind, Constant.per_row
('constant', False)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from .node import PlanNode

__all__ = ["Constant"]


@dataclass(frozen=True, eq=False, kw_only=True)
class Constant(PlanNode):
    """`rows` (tuples in the order of the schema's columns), each once, from the
    earliest time on; the input is read for its frontier only."""

    rows: tuple[tuple[Any, ...], ...]

    kind: ClassVar[str] = "constant"
