"""The interface between the PostgreSQL wire front end and the service behind it.

The wire layer (`sealtime.serve.pgwire`) speaks the protocol; a `Backend` runs
statements. The service (`sealtime serve`) implements `Backend`; `sealtime.serve.fake`
implements it over in-memory Arrow tables for tests and examples. Everything here is
plain data, so the two sides meet at a small typed surface:

* `Backend.open_session(user, database)` -> `Session` (one per connection);
* `Session.describe(sql)` -> the `Column`s a statement will return, without running it
  (None: it returns no rows), for the extended protocol's Describe;
* `Session.execute(sql)` -> a `Result`: `Command` (a tag), `Rows` (columns and Arrow
  batches, streamed) or `Subscription` (columns and an `EventStream` of `Update` and
  `Progress` items);
* errors are `sealtime.errors.SealtimeError`s (`SqlError` included); the wire layer maps
  them to SQLSTATE codes in one table (`sealtime.serve.pgwire.sqlstate`), the errors
  below included. Only errors whose code depends on the instance carry their own
  ``sqlstate`` attribute (`QueryError`, a `SqlError`).

Rows stay Arrow from the backend to the socket: the wire layer encodes whole batches
(`sealtime.serve.pgwire.encode`), never a Python object per value.

>>> import pyarrow as pa
>>> pg_type(pa.int64()), pg_type(pa.timestamp("us", tz="UTC")), PgType.NUMERIC.oid
(<PgType.INT8: 20>, <PgType.TIMESTAMPTZ: 1184>, 1700)
>>> subscription_columns([Column("k", PgType.TEXT)], progress=True)
[Column(name='mz_timestamp', type=<PgType.NUMERIC: 1700>), Column(name='mz_progressed', type=<PgType.BOOL: 16>), Column(name='mz_diff', type=<PgType.INT8: 20>), Column(name='k', type=<PgType.TEXT: 25>)]
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import pyarrow as pa

from ..errors import ConfigError, PlanError, SchemaError, SealtimeError, StateError

__all__ = [
    "Backend",
    "Column",
    "Command",
    "DependentObjectsError",
    "EventStream",
    "LimitExceededError",
    "ObjectExistsError",
    "PgType",
    "Progress",
    "QueryCanceledError",
    "QueryError",
    "Result",
    "Rows",
    "Session",
    "Subscription",
    "Update",
    "columns_of",
    "pg_type",
    "subscription_columns",
]


class PgType(enum.IntEnum):
    """The PostgreSQL types results are sent as; the value is the type's OID (what
    ``pg_type.oid`` says in PostgreSQL, and what drivers decode by)."""

    BOOL = 16
    BYTEA = 17
    INT8 = 20
    INT2 = 21
    INT4 = 23
    TEXT = 25
    FLOAT4 = 700
    FLOAT8 = 701
    UNKNOWN = 705
    DATE = 1082
    TIMESTAMP = 1114
    TIMESTAMPTZ = 1184
    NUMERIC = 1700

    @property
    def oid(self) -> int:
        return int(self.value)

    @property
    def size(self) -> int:
        """``pg_type.typlen``: the fixed width in bytes, -1 for variable-length types."""
        return _SIZES.get(self, -1)


_SIZES = {
    PgType.BOOL: 1,
    PgType.INT2: 2,
    PgType.INT4: 4,
    PgType.INT8: 8,
    PgType.FLOAT4: 4,
    PgType.FLOAT8: 8,
    PgType.DATE: 4,
    PgType.TIMESTAMP: 8,
    PgType.TIMESTAMPTZ: 8,
}


def pg_type(arrow_type: pa.DataType) -> PgType:
    """The PostgreSQL type an Arrow column is sent as.

    Integers keep their width (unsigned ones take the next wider signed type; uint64
    becomes numeric), decimals are numeric, timestamps with a time zone timestamptz (sent
    in UTC), dates date, strings text, binaries bytea. Types PostgreSQL has no builtin
    for (lists, structs, maps, durations) are refused: cast them in the query.

    >>> [pg_type(t).name for t in (pa.int32(), pa.uint32(), pa.float64(), pa.decimal128(10, 2))]
    ['INT4', 'INT8', 'FLOAT8', 'NUMERIC']
    >>> [pg_type(t).name for t in (pa.string(), pa.bool_(), pa.date32(), pa.timestamp("ms"))]
    ['TEXT', 'BOOL', 'DATE', 'TIMESTAMP']
    >>> pg_type(pa.list_(pa.int64()))
    Traceback (most recent call last):
    ...
    sealtime.errors.SchemaError: a column of Arrow type list<item: int64> has no PostgreSQL type here; cast it in the query (e.g. CAST(c AS STRING))
    """
    t = arrow_type
    if pa.types.is_boolean(t):
        return PgType.BOOL
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_uint8(t):
        return PgType.INT2
    if pa.types.is_int32(t) or pa.types.is_uint16(t):
        return PgType.INT4
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return PgType.INT8
    if pa.types.is_uint64(t) or pa.types.is_decimal(t):
        return PgType.NUMERIC
    if pa.types.is_float16(t) or pa.types.is_float32(t):
        return PgType.FLOAT4
    if pa.types.is_float64(t):
        return PgType.FLOAT8
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_null(t):
        return PgType.TEXT
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return PgType.BYTEA
    if pa.types.is_date(t):
        return PgType.DATE
    if pa.types.is_timestamp(t):
        return PgType.TIMESTAMPTZ if t.tz is not None else PgType.TIMESTAMP
    raise SchemaError(
        f"a column of Arrow type {t} has no PostgreSQL type here; cast it in the query "
        "(e.g. CAST(c AS STRING))"
    )


@dataclass(frozen=True)
class Column:
    """A result column: its name and the PostgreSQL type it is sent as."""

    name: str
    type: PgType


def columns_of(schema: pa.Schema) -> list[Column]:
    """The `Column`s of an Arrow schema (`pg_type` of each field).

    >>> columns_of(pa.schema([("a", pa.int64()), ("b", pa.string())]))
    [Column(name='a', type=<PgType.INT8: 20>), Column(name='b', type=<PgType.TEXT: 25>)]
    """
    return [Column(f.name, pg_type(f.type)) for f in schema]


#: Materialize's SUBSCRIBE columns, before the view's own
MZ_TIMESTAMP = "mz_timestamp"
MZ_PROGRESSED = "mz_progressed"
MZ_DIFF = "mz_diff"


def subscription_columns(view: list[Column], *, progress: bool) -> list[Column]:
    """The columns of ``SUBSCRIBE view``: ``mz_timestamp`` (numeric), ``mz_progressed``
    (bool, only ``WITH (PROGRESS)``), ``mz_diff`` (int8), then the view's."""
    head = [Column(MZ_TIMESTAMP, PgType.NUMERIC)]
    if progress:
        head.append(Column(MZ_PROGRESSED, PgType.BOOL))
    return head + [Column(MZ_DIFF, PgType.INT8)] + list(view)


# ---------------------------------------------------------------------- results


@dataclass(frozen=True)
class Command:
    """A statement that returns no rows: `tag` is its CommandComplete tag (``CREATE
    VIEW``, ``DROP VIEW``, ``SET``), as psql prints it."""

    tag: str


@dataclass(frozen=True)
class Rows:
    """A statement's rows (SELECT, SHOW, EXPLAIN): `columns` and the Arrow record
    batches, in order, with the columns' names and order. `batches` is consumed once
    and lazily, so a large result is never held whole by the wire layer; `tag` is the
    CommandComplete word (``SELECT n``, ``SHOW``)."""

    columns: list[Column]
    batches: Iterable[pa.RecordBatch]
    tag: str = "SELECT"


@dataclass(frozen=True)
class Update:
    """Updates of a subscribed view: `batch` holds the view's columns plus ``_time`` and
    ``_diff`` (int64, `sealtime.columns.TIME`/`DIFF`), in the order they are sent (by
    time, retractions first). Every time in it is at or after the last `Progress`."""

    batch: pa.RecordBatch | pa.Table


@dataclass(frozen=True)
class Progress:
    """Every update at a time before `time` has been sent: the subscription's frontier."""

    time: int


Event = Update | Progress


@runtime_checkable
class EventStream(Protocol):
    """A subscription's events, read by one consumer thread.

    ``next()`` blocks until an event is there and raises ``StopIteration`` when the
    subscription ends (the view's frontier is empty, or it was closed). ``close()`` may
    be called from any thread, also while another thread is blocked in ``next()``: that
    ``next()`` then returns promptly (StopIteration) and the service frees what it held
    for the subscriber. The wire layer closes it when the client goes away, the cursor is
    closed, the statement is canceled, or the subscriber falls behind.
    """

    def __iter__(self) -> Iterator[Event]: ...

    def __next__(self) -> Event: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Subscription:
    """``SUBSCRIBE view``: `columns` are the subscription's own
    (`subscription_columns`), `events` the snapshot (as `Update`s at the snapshot's time)
    then updates and progress, `progress` whether ``WITH (PROGRESS)`` was asked (whether
    progress rows are sent; `Progress` events are delivered either way)."""

    columns: list[Column]
    events: EventStream
    progress: bool = False


Result = Command | Rows | Subscription


class Session(Protocol):
    """One client connection's view of the service. Calls come from a thread pool, one
    at a time per session; `execute` may take long (it must not block other sessions)."""

    def describe(self, sql: str) -> list[Column] | None:
        """The columns `sql` would return, without running it; None: no rows."""
        ...

    def execute(self, sql: str) -> Result:
        """Run one statement (its text, parameters already substituted)."""
        ...

    def close(self) -> None:
        """The connection ended: release what the session holds."""
        ...


class Backend(Protocol):
    """The service behind the wire front end."""

    def open_session(self, user: str, database: str) -> Session:
        """A session for an authenticated `user` connected to `database`."""
        ...


# ---------------------------------------------------------------------- errors
# The service raises these where no sealtime error says it; their SQLSTATEs are in
# `sealtime.serve.pgwire.sqlstate.BY_CLASS`.


class ObjectExistsError(PlanError):
    """CREATE of a name that is taken (42710 duplicate_object, as Materialize)."""


class DependentObjectsError(PlanError):
    """DROP of an object others depend on without CASCADE (2BP01
    dependent_objects_still_exist); the message names the dependents."""


class LimitExceededError(ConfigError):
    """A bound of `ServerLimits` was reached (54000 program_limit_exceeded); the message
    names the setting and how to stay within it."""


class QueryCanceledError(StateError):
    """The statement was canceled by the client (57014 query_canceled)."""


class QueryError(SealtimeError):
    """A statement failed while running (an error of Spark's, a bad value): `sqlstate`
    is the code the engine gave it (Spark's errors carry PostgreSQL-style SQLSTATEs:
    22012 division_by_zero, 22018 invalid cast...), XX000 when it gave none.

    >>> QueryError("division by zero", "22012").sqlstate
    '22012'
    """

    def __init__(self, message: str, sqlstate: str = "XX000") -> None:
        super().__init__(message)
        self.sqlstate = sqlstate
