"""SQLSTATE codes: the one table from errors to PostgreSQL's error codes.

An error is given a code, first found first:

1. its own ``sqlstate`` attribute (the errors of `sealtime.serve.backend` have one, and
   the service may set one on any error);
2. ``getSqlState()`` of the error or of one it was raised from (Spark's errors carry
   PostgreSQL-style codes: 22012 for a division by zero);
3. the first class of `BY_CLASS` it is an instance of (a `SqlError` about syntax is
   42601);
4. XX000 internal_error.

The message is ``str(error)``: the same text ``sealtime sql`` prints (docs/sql.md).

>>> from sealtime.errors import NotFoundError
>>> from sealtime.sql.errors import SqlError
>>> sqlstate_of(NotFoundError("no view named 'v'")), sqlstate_of(ZeroDivisionError())
('42P01', '22012')
>>> sqlstate_of(SqlError("SELECT: syntax", "unexpected token")), sqlstate_of(RuntimeError("x"))
('42601', 'XX000')
"""

from __future__ import annotations

from ...errors import (
    ConfigError,
    InternalError,
    NotFoundError,
    PlanError,
    ReadBelowSinceError,
    SchemaError,
    StateError,
)
from ...sql.errors import SqlError

__all__ = ["BY_CLASS", "CODES", "sqlstate_of"]

#: the codes the wire layer sends, by name (PostgreSQL's appendix A)
CODES = {
    "successful_completion": "00000",
    "feature_not_supported": "0A000",
    "invalid_parameter_value": "22023",
    "invalid_text_representation": "22P02",
    "division_by_zero": "22012",
    "invalid_transaction_state": "25000",
    "no_active_sql_transaction": "25P01",
    "in_failed_sql_transaction": "25P02",
    "invalid_password": "28P01",
    "invalid_authorization_specification": "28000",
    "dependent_objects_still_exist": "2BP01",
    "invalid_cursor_name": "34000",
    "syntax_error_or_access_rule_violation": "42000",
    "syntax_error": "42601",
    "datatype_mismatch": "42804",
    "undefined_table": "42P01",
    "undefined_object": "42704",
    "duplicate_table": "42P07",
    "duplicate_cursor": "42P03",
    "too_many_connections": "53300",
    "program_limit_exceeded": "54000",
    "object_not_in_prerequisite_state": "55000",
    "query_canceled": "57014",
    "admin_shutdown": "57P01",
    "protocol_violation": "08P01",
    "internal_error": "XX000",
}

#: errors without a code of their own, by class (the first match wins: subclasses first)
BY_CLASS: tuple[tuple[type[BaseException], str], ...] = (
    (NotFoundError, CODES["undefined_table"]),
    (ReadBelowSinceError, CODES["object_not_in_prerequisite_state"]),
    (SqlError, CODES["syntax_error_or_access_rule_violation"]),
    (SchemaError, CODES["datatype_mismatch"]),
    (PlanError, CODES["syntax_error_or_access_rule_violation"]),
    (ConfigError, CODES["invalid_parameter_value"]),
    (StateError, CODES["object_not_in_prerequisite_state"]),
    (InternalError, CODES["internal_error"]),
    (ZeroDivisionError, CODES["division_by_zero"]),
)


def sqlstate_of(error: BaseException) -> str:
    """The SQLSTATE of `error` (see the module docstring for the order)."""
    code = getattr(error, "sqlstate", None)
    if isinstance(code, str) and len(code) == 5:
        return code
    cause: BaseException | None = error
    seen = 0
    while cause is not None and seen < 8:  # the chain of errors it was raised from
        get = getattr(cause, "getSqlState", None)
        if callable(get):
            try:
                spark_code = get()
            except Exception:  # a failing accessor must not hide the original error
                spark_code = None
            if isinstance(spark_code, str) and len(spark_code) == 5:
                return spark_code
        cause = cause.__cause__ or cause.__context__
        seen += 1
    if isinstance(error, SqlError) and error.construct.lower().endswith("syntax"):
        return CODES["syntax_error"]
    for cls, code in BY_CLASS:
        if isinstance(error, cls):
            return code
    return CODES["internal_error"]
