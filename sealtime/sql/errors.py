"""`SqlError`: the one error a SQL view definition raises.

Every refusal names the construct, where it is in the query text (line and column,
both 1-based) and, where one exists, the Python API that does the same. A query that
sealtime cannot run with Spark SQL's meaning is refused; it is never answered
differently.

>>> e = SqlError("ORDER BY", "a view has no order", line=2, col=1, hint="Collection.top_k")
>>> print(e)
ORDER BY at line 2, column 1: a view has no order (Python API: Collection.top_k)
>>> isinstance(e, ValueError), e.construct, e.line, e.col
(True, 'ORDER BY', 2, 1)
"""

from __future__ import annotations

from ..errors import PlanError

__all__ = ["SqlError"]


class SqlError(PlanError):
    """A SQL text sealtime cannot turn into a view.

    Attributes: `construct` (e.g. ``"RIGHT JOIN"``), `line` and `col` (1-based, None
    when unknown), `hint` (the Python API that does the same, or None) and `reason`.
    """

    def __init__(
        self,
        construct: str,
        reason: str,
        *,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.construct = construct
        self.reason = reason
        self.line = line
        self.col = col
        self.hint = hint
        where = f" at line {line}, column {col}" if line is not None else ""
        text = f"{construct}{where}: {reason}"
        if hint:
            text += f" (Python API: {hint})"
        super().__init__(text)
