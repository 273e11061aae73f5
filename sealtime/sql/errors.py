"""`SqlError`: the one error a SQL view definition raises.

Every refusal names the construct, where it is in the query text (line and column,
both 1-based) and, where one exists, the Python API that does the same. A query that
sealtime cannot run with Spark SQL's meaning is refused; it is never answered
differently. `sqlstate` is the PostgreSQL SQLSTATE a client sees (the wire front end
sends it): ``42601`` syntax, ``42P01`` unknown table, ``42703`` unknown column,
``42702`` ambiguous column, ``42803`` a column neither grouped nor aggregated,
``42883`` unknown function, ``42804`` a type mismatch, ``0A000`` a construct sealtime
does not support, ``42000`` anything else the query got wrong.

>>> e = SqlError("ORDER BY", "a view has no order", line=2, col=1, hint="Collection.top_k")
>>> print(e)
ORDER BY at line 2, column 1: a view has no order (Python API: Collection.top_k)
>>> isinstance(e, ValueError), e.construct, e.line, e.col, e.sqlstate
(True, 'ORDER BY', 2, 1, '0A000')
>>> SqlError("unknown table", "no table 'x'").sqlstate
'42P01'
"""

from __future__ import annotations

from ..errors import PlanError

__all__ = ["SYNTAX", "SqlError", "sqlstate_of"]

SYNTAX = "42601"
#: SQLSTATE by the construct a refusal names (the rest: `UNSUPPORTED`, or `INVALID`
#: for the constructs listed in `_INVALID`)
_BY_CONSTRUCT = {
    "syntax": SYNTAX,
    "unknown table": "42P01",
    "unknown column": "42703",
    "ambiguous column": "42702",
    "column not grouped": "42803",
    "unknown function": "42883",
    "type mismatch": "42804",
    "join key types": "42804",
}
UNSUPPORTED = "0A000"
INVALID = "42000"
_INVALID = (
    "duplicate column",
    "reserved column",
    "GROUP BY ordinal",
    "expression",
    "row number condition",
    "statement list",
    "nested aggregate",
    "aggregate in GROUP BY",
    "recursive CTE",
    "AS OF",
    "UNION",
    "INTERSECT",
    "EXCEPT",
)


def sqlstate_of(construct: str) -> str:
    """The SQLSTATE of a refusal of `construct` (see the module docstring).

    >>> sqlstate_of("CREATE VIEW v: syntax"), sqlstate_of("RIGHT JOIN")
    ('42601', '0A000')
    """
    last = construct.rsplit(": ", 1)[-1]
    if last in _BY_CONSTRUCT:
        return _BY_CONSTRUCT[last]
    if any(last.startswith(c) for c in _INVALID):
        return INVALID
    return UNSUPPORTED


class SqlError(PlanError):
    """A SQL text sealtime cannot turn into a view.

    Attributes: `construct` (e.g. ``"RIGHT JOIN"``), `line` and `col` (1-based, None
    when unknown), `hint` (the Python API that does the same, or None), `reason` and
    `sqlstate` (derived from the construct unless given).
    """

    # Parameters stored as attributes: alike only in form to other constructors.
    def __init__(
        self,
        construct: str,
        reason: str,
        *,
        line: int | None = None,
        col: int | None = None,
        hint: str | None = None,
        sqlstate: str | None = None,
    ) -> None:
        self.construct = construct
        self.reason = reason
        self.line = line
        self.col = col
        self.hint = hint
        self.sqlstate = sqlstate or sqlstate_of(construct)
        where = f" at line {line}, column {col}" if line is not None else ""
        text = f"{construct}{where}: {reason}"
        if hint:
            text += f" (Python API: {hint})"
        super().__init__(text)
