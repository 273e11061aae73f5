"""SQLSTATE codes: the one table from errors to PostgreSQL's error codes.

An error is given a code, first found first:

1. its own ``sqlstate`` attribute, for the errors whose code depends on the instance:
   a `SqlError` (the construct it refuses: syntax 42601, unknown column 42703,
   unsupported 0A000, ...) and a `QueryError` (the code Spark gave);
2. ``getSqlState()`` of the error or of one it was raised from (Spark's errors carry
   PostgreSQL-style codes: 22012 for a division by zero);
3. the first class of `BY_CLASS` it is an instance of: sealtime's errors, the service's
   (`sealtime.serve.backend`) and the wire layer's own (below);
4. XX000 internal_error.

The message is ``str(error)``: the same text ``sealtime sql`` prints (docs/sql.md).

>>> from sealtime.errors import NotFoundError
>>> from sealtime.serve.backend import DependentObjectsError, ObjectExistsError
>>> sqlstate_of(NotFoundError("no view named 'v'")), sqlstate_of(ZeroDivisionError())
('42P01', '22012')
>>> sqlstate_of(ObjectExistsError("v exists")), sqlstate_of(DependentObjectsError("w reads v"))
('42710', '2BP01')
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
    SealtimeError,
    StateError,
)
from ...sql.errors import SqlError
from ..backend import (
    DependentObjectsError,
    LimitExceededError,
    ObjectExistsError,
    QueryCanceledError,
)
from .params import ParameterError
from .protocol import ProtocolViolation

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
    "invalid_sql_statement_name": "26000",
    "invalid_password": "28P01",
    "invalid_authorization_specification": "28000",
    "dependent_objects_still_exist": "2BP01",
    "invalid_cursor_name": "34000",
    "invalid_catalog_name": "3D000",
    "syntax_error_or_access_rule_violation": "42000",
    "syntax_error": "42601",
    "datatype_mismatch": "42804",
    "undefined_table": "42P01",
    "undefined_object": "42704",
    "duplicate_object": "42710",
    "duplicate_cursor": "42P03",
    "duplicate_prepared_statement": "42P05",
    "too_many_connections": "53300",
    "program_limit_exceeded": "54000",
    "object_not_in_prerequisite_state": "55000",
    "query_canceled": "57014",
    "admin_shutdown": "57P01",
    "idle_session_timeout": "57P05",
    "connection_failure": "08006",
    "protocol_violation": "08P01",
    "internal_error": "XX000",
}


# ---------------------------------------------------------------------- the wire's own
# Refusals of the wire layer itself (transactions, cursors, prepared statements); the
# server raises them, the table below gives their codes.


class _InFailedTransaction(SealtimeError):
    def __init__(self) -> None:
        super().__init__(
            "current transaction is aborted, commands ignored until end of transaction block "
            "(ROLLBACK)"
        )


class _NoTransaction(SealtimeError):
    """A statement that needs a transaction block outside one (DECLARE)."""


class _Unsupported(SealtimeError):
    """A form the wire layer does not take (an encoding, COPY of a command)."""


class _DuplicateStatement(SealtimeError):
    """Parse of a prepared statement name in use."""


class _UndefinedStatement(SealtimeError):
    """Bind or Describe of a prepared statement that is not there."""


class _DuplicateCursor(SealtimeError):
    def __init__(self, name: str) -> None:
        super().__init__(f'cursor "{name}" already exists')


class _UndefinedCursor(SealtimeError):
    def __init__(self, name: str) -> None:
        super().__init__(f'cursor "{name}" does not exist')


#: errors by class, the first match wins (subclasses before their bases)
BY_CLASS: tuple[tuple[type[BaseException], str], ...] = (
    # the service's refusals (sealtime.serve.backend)
    (ObjectExistsError, CODES["duplicate_object"]),
    (DependentObjectsError, CODES["dependent_objects_still_exist"]),
    (LimitExceededError, CODES["program_limit_exceeded"]),
    (QueryCanceledError, CODES["query_canceled"]),
    # the wire layer's
    (ProtocolViolation, CODES["protocol_violation"]),
    (ParameterError, CODES["invalid_text_representation"]),
    (_InFailedTransaction, CODES["in_failed_sql_transaction"]),
    (_NoTransaction, CODES["no_active_sql_transaction"]),
    (_Unsupported, CODES["feature_not_supported"]),
    (_DuplicateStatement, CODES["duplicate_prepared_statement"]),
    (_UndefinedStatement, CODES["invalid_sql_statement_name"]),
    (_DuplicateCursor, CODES["duplicate_cursor"]),
    (_UndefinedCursor, CODES["invalid_cursor_name"]),
    # sealtime's (sealtime.errors)
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
        return CODES["syntax_error"]  # (a SqlError without its own code)
    for cls, code in BY_CLASS:
        if isinstance(error, cls):
            return code
    return CODES["internal_error"]
