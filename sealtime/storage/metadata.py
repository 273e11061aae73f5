"""The metadata store: the one transactional home of sealtime's control-plane state.

Shards' `upper`/`since` and batch manifests, and (in later layers) the catalog, remap
bindings and checkpoints all live here. Data never does: rows live in Parquet files,
the store only says which files make up which shard.

Two backends share one code path:

* **SQLite** (the default): a file in the data dir, WAL journal, ``synchronous=FULL``,
  a busy timeout. Safe for one writing process plus any number of readers (readers never
  block; writers queue on SQLite's write lock).
* **PostgreSQL** (``postgresql://...``) through psycopg 3 for shared deployments.
  Write transactions run at READ COMMITTED and take row locks (``SELECT ... FOR UPDATE``)
  on the rows they check; read-only transactions run at REPEATABLE READ, so every read
  transaction sees one consistent snapshot on both backends.

The dialect layer is deliberately tiny: SQL is written with ``?`` placeholders and
portable syntax (``INSERT ... ON CONFLICT ... DO UPDATE`` works on both), DDL uses the
portable types ``BIGINT``, ``INTEGER``, ``TEXT``, ``DOUBLE PRECISION``. Where a layer
truly needs something dialect-specific it branches on ``tx.dialect.name``.

Every state change is one transaction (`MetadataStore.transaction`). Transactions nest
by *joining*: an inner ``with store.transaction()`` on the same thread reuses the outer
transaction, so a caller can make e.g. a shard append and a binding write atomic.

A store may carry a **fence** (`MetadataStore.fence`, set by the data dir's owner,
`sealtime.storage.ownership`): it runs first in every write transaction and fails the
transaction when a newer owner took over, so every write of a fenced process fails —
bindings, checkpoints, log truncation marks, sink commits — with no check in the callers.

>>> import tempfile, os
>>> with tempfile.TemporaryDirectory() as d:
...     store = MetadataStore.open(os.path.join(d, "meta.db"))
...     store.kv_put("demo", "answer", {"value": 42})
...     with store.transaction() as tx:
...         tx.query_one("SELECT COUNT(*) FROM sealtime_kv")
...     store.kv_get("demo", "answer")
...     store.close()
(1,)
{'value': 42}
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from ..errors import MetadataStoreError
from ..locations import DEFAULT_SQLITE_FILENAME, existing_sqlite_path, sqlite_path

__all__ = [
    "DEFAULT_SQLITE_FILENAME",
    "Dialect",
    "MetadataStore",
    "MetadataStoreError",
    "Migration",
    "Transaction",
    "existing_sqlite_path",
    "redact_url",
    "sqlite_path",
]

#: A migration step: portable SQL text, or a callable run inside the migration transaction.
Migration = str | Callable[["Transaction"], None]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

#: PostgreSQL ends a session left idle inside a transaction this long (a process stopped
#: mid-transaction, e.g. SIGSTOP), so its row locks cannot block the next owner forever.
IDLE_IN_TRANSACTION_TIMEOUT_S = 60


@dataclass(frozen=True)
class Dialect:
    """The few things that differ between SQLite and PostgreSQL.

    >>> Dialect.sqlite().sql("SELECT * FROM t WHERE a = ?")
    'SELECT * FROM t WHERE a = ?'
    >>> Dialect.postgresql().sql("SELECT * FROM t WHERE a = ? AND b LIKE '%x'")
    "SELECT * FROM t WHERE a = %s AND b LIKE '%%x'"
    """

    name: str
    begin_write: str
    begin_read: str
    for_update: str
    blob_type: str
    #: a shared row lock (PostgreSQL ``FOR SHARE``): readers of a row that must not change
    #: before they commit (the owner's epoch under a fenced write)
    for_share: str = ""

    # The two dialects are parallel on purpose: the same fields, each backend's SQL.
    @staticmethod
    def sqlite() -> Dialect:
        return Dialect(
            name="sqlite",
            begin_write="BEGIN IMMEDIATE",
            begin_read="BEGIN",
            for_update="",
            blob_type="BLOB",
        )

    @staticmethod
    def postgresql() -> Dialect:
        return Dialect(
            name="postgresql",
            begin_write="BEGIN ISOLATION LEVEL READ COMMITTED",
            begin_read="BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
            for_update=" FOR UPDATE",
            blob_type="BYTEA",
            for_share=" FOR SHARE",
        )

    def sql(self, text: str) -> str:
        """Translate portable SQL (``?`` placeholders) into this dialect's paramstyle."""
        if self.name == "postgresql":
            return text.replace("%", "%%").replace("?", "%s")
        return text


class Transaction:
    """One open transaction of a `MetadataStore` (obtained from `MetadataStore.transaction`).

    SQL uses ``?`` placeholders on both backends.
    """

    def __init__(self, store: MetadataStore, conn: Any, readonly: bool) -> None:
        self.store = store
        self.dialect = store.dialect
        self.readonly = readonly
        self._conn = conn
        self._rollback_only = False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement; return the number of rows it changed (-1 if unknown)."""
        cur = self._conn.execute(self.dialect.sql(sql), tuple(params))
        return cur.rowcount

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run a query and return all rows as tuples."""
        cur = self._conn.execute(self.dialect.sql(sql), tuple(params))
        return [tuple(r) for r in cur.fetchall()]

    def query_one(self, sql: str, params: Sequence[Any] = ()) -> tuple[Any, ...] | None:
        """Run a query and return its first row, or None."""
        cur = self._conn.execute(self.dialect.sql(sql), tuple(params))
        row = cur.fetchone()
        return None if row is None else tuple(row)

    def upsert(self, table: str, key: dict[str, Any], values: dict[str, Any]) -> None:
        """Insert a row or update the non-key columns of the row with the same key."""
        for ident in [table, *key, *values]:
            _check_ident(ident)
        cols = [*key, *values]
        placeholders = ", ".join("?" for _ in cols)
        if values:
            sets = ", ".join(f"{c} = excluded.{c}" for c in values)
            action = f"DO UPDATE SET {sets}"
        else:
            action = "DO NOTHING"
        self.execute(
            f"INSERT INTO {table} ({', '.join(cols)}) VALUES ({placeholders}) "
            f"ON CONFLICT ({', '.join(key)}) {action}",
            [*key.values(), *values.values()],
        )


def _check_ident(ident: str) -> None:
    if not _IDENT.match(ident):
        raise MetadataStoreError(f"not a plain SQL identifier: {ident!r}")


def redact_url(url: str) -> str:
    """Hide the password of a database URL for error messages.

    >>> redact_url("postgresql://user:secret@db:5432/x")
    'postgresql://user:***@db:5432/x'
    >>> redact_url("postgresql://root@127.0.0.1/test")
    'postgresql://root@127.0.0.1/test'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


_STORAGE_MIGRATIONS: list[Migration] = [
    """CREATE TABLE IF NOT EXISTS sealtime_shards (
        name TEXT PRIMARY KEY,
        lower BIGINT NOT NULL,
        upper BIGINT,
        since BIGINT,
        arrow_schema TEXT NOT NULL,
        next_seq BIGINT NOT NULL,
        created_at DOUBLE PRECISION NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS sealtime_shard_batches (
        shard TEXT NOT NULL,
        seq BIGINT NOT NULL,
        lower BIGINT NOT NULL,
        upper BIGINT,
        files TEXT NOT NULL,
        row_count BIGINT NOT NULL,
        compacted_to BIGINT,
        created_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (shard, seq)
    )""",
    "CREATE INDEX IF NOT EXISTS sealtime_shard_batches_lower "
    "ON sealtime_shard_batches (shard, lower)",
    """CREATE TABLE IF NOT EXISTS sealtime_shard_retired (
        shard TEXT NOT NULL,
        path TEXT NOT NULL,
        retired_at DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (shard, path)
    )""",
    """CREATE TABLE IF NOT EXISTS sealtime_kv (
        namespace TEXT NOT NULL,
        key TEXT NOT NULL,
        value TEXT NOT NULL,
        PRIMARY KEY (namespace, key)
    )""",
]


class MetadataStore:
    """A transactional metadata store on SQLite or PostgreSQL.

    Open with `MetadataStore.open`. One store object may be used from several threads:
    each thread gets its own connection. Close with `close()` (or use ``with``).
    """

    def __init__(
        self,
        dialect: Dialect,
        connect: Callable[[], Any],
        url: str,
        setup: Callable[[Any], None] | None = None,
    ) -> None:
        self.dialect = dialect
        self.url = url
        self._connect = connect
        self._setup = setup
        self._local = threading.local()
        self._lock = threading.Lock()
        self._conns: list[Any] = []
        self._closed = False
        self._timeout = 30.0
        #: called as ``fence(tx)`` first in every write transaction (unless
        #: ``transaction(fenced=False)``); raises to refuse the write. Set by the data dir's
        #: owner (`sealtime.storage.ownership.Lease`); None: no fence.
        self.fence: Callable[[Transaction], None] | None = None

    # ---------------------------------------------------------------- opening
    @classmethod
    def open(
        cls,
        url_or_path: str | os.PathLike[str],
        *,
        schema: str | None = None,
        timeout: float = 30.0,
    ) -> MetadataStore:
        """Open (creating if needed) the metadata store named by `url_or_path`.

        * a filesystem path or ``sqlite:///relative/path`` / ``sqlite:////absolute/path``:
          an SQLite file (parent directories are created; an existing directory means
          ``<dir>/metadata.sqlite``);
        * ``postgresql://user[:password]@host[:port]/db[?schema=name]``: PostgreSQL.
          `schema` (or ``?schema=`` in the URL) puts sealtime's tables into that schema,
          created if missing, so several deployments or test runs can share a database.

        `timeout` bounds how long to wait for a lock (SQLite busy timeout) or a
        connection (PostgreSQL ``connect_timeout``) in seconds.

        >>> MetadataStore.open("mysql://localhost/x")
        Traceback (most recent call last):
        ...
        sealtime.errors.MetadataStoreError: metadata='mysql://localhost/x' is not a supported metadata store: ...
        """
        text = os.fspath(url_or_path)
        lowered = text.lower()
        if lowered.startswith(("postgresql://", "postgres://")):
            store = cls._open_postgresql(text, schema=schema, timeout=timeout)
        elif lowered.startswith("sqlite:"):
            if not lowered.startswith("sqlite:///"):
                raise MetadataStoreError(
                    f"metadata={text!r} is not a valid SQLite URL: write sqlite:///relative/path "
                    "or sqlite:////absolute/path (in-memory databases are not supported)"
                )
            store = cls._open_sqlite(text[len("sqlite:///") :], url=text, timeout=timeout)
        elif "://" in text:
            raise MetadataStoreError(
                f"metadata={text!r} is not a supported metadata store: use a file path or "
                "sqlite:///path for SQLite (the default), or postgresql://user@host:port/db"
            )
        else:
            store = cls._open_sqlite(text, url=text, timeout=timeout)
        store.migrate("storage", _STORAGE_MIGRATIONS)
        return store

    @classmethod
    def _open_sqlite(cls, path: str, *, url: str, timeout: float) -> MetadataStore:
        if path in ("", ":memory:") or path.startswith("file::memory:"):
            raise MetadataStoreError(
                f"metadata={url!r}: in-memory SQLite is not supported (each thread needs its "
                "own connection to the same database) — give a file path instead"
            )
        path = sqlite_path(path)
        parent = os.path.dirname(os.path.abspath(path))
        try:
            os.makedirs(parent, exist_ok=True)
        except OSError as exc:
            raise MetadataStoreError(
                f"metadata={url!r}: cannot create directory {parent!r}: {exc} — "
                "choose a writable data_dir or metadata path"
            ) from exc
        abspath = os.path.abspath(path)

        def connect() -> sqlite3.Connection:
            conn = sqlite3.connect(
                abspath, timeout=timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            return conn

        store = cls(Dialect.sqlite(), connect, url=url)
        store._timeout = timeout
        try:
            store._conn()
        except sqlite3.Error as exc:
            raise MetadataStoreError(
                f"metadata={url!r}: cannot open SQLite database {abspath!r}: {exc} — "
                "check the path is a writable file"
            ) from exc
        return store

    @classmethod
    def _open_postgresql(cls, url: str, *, schema: str | None, timeout: float) -> MetadataStore:
        shown = redact_url(url)
        try:
            import psycopg
        except ImportError as exc:  # pragma: no cover - psycopg is a test dependency
            raise MetadataStoreError(
                f"metadata={shown!r} needs psycopg 3: pip install 'sealtime[postgres]' "
                "or use the default SQLite store"
            ) from exc
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        url_schema = [v for k, v in query if k == "schema"]
        query = [(k, v) for k, v in query if k != "schema"]
        if url_schema:
            if schema is not None and schema != url_schema[-1]:
                raise MetadataStoreError(
                    f"metadata={shown!r} names schema {url_schema[-1]!r} but "
                    f"schema={schema!r} was also given — give only one"
                )
            schema = url_schema[-1]
        if schema is not None and not _IDENT.match(schema):
            raise MetadataStoreError(
                f"metadata={shown!r}: schema={schema!r} is not a plain identifier "
                "(letters, digits, underscore)"
            )
        conninfo = urlunsplit(parts._replace(query=urlencode(query)))
        kwargs: dict[str, Any] = {"autocommit": True}
        if not any(k == "connect_timeout" for k, _ in query):
            kwargs["connect_timeout"] = max(1, int(timeout))

        schema_ready = threading.Event()

        def connect() -> Any:
            conn = psycopg.connect(conninfo, **kwargs)
            if schema is not None:
                if not schema_ready.is_set():
                    # Concurrent CREATE SCHEMA IF NOT EXISTS can still collide; harmless.
                    with contextlib.suppress(psycopg.errors.UniqueViolation):
                        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
                    schema_ready.set()
                conn.execute(f'SET search_path TO "{schema}"')
            conn.execute(
                f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION_TIMEOUT_S}s'"
            )
            return conn

        store = cls(Dialect.postgresql(), connect, url=shown)
        store._timeout = timeout
        try:
            store._conn()
        except psycopg.Error as exc:
            detail = " ".join(str(exc).split())
            raise MetadataStoreError(
                f"metadata={shown!r} could not connect: {detail} — check the server is "
                "running and the URL (user, host, port, database) is right, or use the "
                "default SQLite store"
            ) from exc
        return store

    # ------------------------------------------------------------ connections
    def _conn(self) -> Any:
        if self._closed:
            raise MetadataStoreError(f"metadata store {self.url!r} is closed")
        conn = getattr(self._local, "conn", None)
        if conn is not None and self.dialect.name == "postgresql" and (conn.closed or conn.broken):
            with self._lock:
                if conn in self._conns:
                    self._conns.remove(conn)
            conn = None
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
            with self._lock:
                self._conns.append(conn)
        return conn

    def close(self) -> None:
        """Close every connection this store opened (in any thread)."""
        with self._lock:
            conns, self._conns = self._conns, []
            self._closed = True
        for conn in conns:
            with contextlib.suppress(Exception):
                conn.close()

    @property
    def closed(self) -> bool:
        """Has `close()` been called?"""
        return self._closed

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MetadataStore({self.url!r}, dialect={self.dialect.name!r})"

    # ----------------------------------------------------------- transactions
    @contextlib.contextmanager
    def transaction(self, *, readonly: bool = False, fenced: bool = True) -> Iterator[Transaction]:
        """Run a block as one transaction: committed if it returns, rolled back if it raises.

        Write transactions are serialized against other writers where they touch the same
        rows (SQLite: the database write lock, taken at ``BEGIN IMMEDIATE``; PostgreSQL:
        row locks taken with ``SELECT ... FOR UPDATE`` via ``tx.dialect.for_update``).
        A `readonly` transaction reads one consistent snapshot and never blocks writers.

        Nested calls on the same thread join the outermost transaction (no savepoints);
        if an exception escapes a nested block the whole transaction is rolled back at the
        end even if an outer block swallowed the exception.

        A write transaction first runs the store's `fence` (if any); `fenced=False` skips
        it — only for the owner's own record, which checks its epoch itself.
        """
        current: Transaction | None = getattr(self._local, "tx", None)
        if current is not None:
            if current.readonly and not readonly:
                raise MetadataStoreError(
                    "a write transaction cannot be nested inside a read-only transaction"
                )
            try:
                yield current
            except BaseException:
                current._rollback_only = True
                raise
            return
        conn = self._conn()
        tx = Transaction(self, conn, readonly)
        self._begin(conn, readonly)
        self._local.tx = tx
        try:
            if not readonly and fenced and self.fence is not None:
                self.fence(tx)
            yield tx
        except BaseException:
            self._local.tx = None
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise
        self._local.tx = None
        if tx._rollback_only:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise MetadataStoreError(
                "transaction rolled back: an exception escaped a nested transaction block"
            )
        try:
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise

    def _begin(self, conn: Any, readonly: bool) -> None:
        try:
            conn.execute(self.dialect.begin_read if readonly else self.dialect.begin_write)
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            raise MetadataStoreError(
                f"metadata store {self.url!r}: no write lock within {self._timeout:g} s ({exc}) "
                "— another process holds SQLite's write lock; a stopped process (SIGSTOP, a "
                "debugger) holds it until it resumes or dies: resume or kill it"
            ) from exc

    def in_transaction(self) -> bool:
        """Whether the calling thread has an open transaction on this store."""
        return getattr(self._local, "tx", None) is not None

    def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in its own transaction (or the caller's open one)."""
        with self.transaction() as tx:
            return tx.execute(sql, params)

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one query in a read-only transaction (or the caller's open one)."""
        with self.transaction(readonly=not self.in_transaction()) as tx:
            return tx.query(sql, params)

    # ------------------------------------------------------------- migrations
    def migrate(self, component: str, migrations: Sequence[Migration]) -> int:
        """Apply the not-yet-applied steps of `component`'s versioned migration list.

        Step *i* (0-based) brings `component` to version *i + 1*; the applied version is
        kept in ``sealtime_migrations``. Steps are portable SQL strings or callables taking
        the `Transaction`. All pending steps run in one transaction; concurrent migrators
        are serialized. Append new steps to the end of a list, never edit applied ones.
        Returns the component's version after migrating. Not fenced: a schema is no
        state, and readers of a data dir another process took over still open it.

        >>> import tempfile, os
        >>> with tempfile.TemporaryDirectory() as d:
        ...     store = MetadataStore.open(d)
        ...     store.migrate("demo", ["CREATE TABLE demo_t (k TEXT PRIMARY KEY, v BIGINT)"])
        ...     store.migrate("demo", ["CREATE TABLE demo_t (k TEXT PRIMARY KEY, v BIGINT)",
        ...                            "ALTER TABLE demo_t ADD COLUMN w TEXT"])
        ...     store.close()
        1
        2
        """
        with self.transaction(fenced=False) as tx:
            tx.execute(
                "CREATE TABLE IF NOT EXISTS sealtime_migrations ("
                "component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
            )
            if tx.dialect.name == "postgresql":
                # Serialize concurrent migrators (CREATE TABLE IF NOT EXISTS can race).
                tx.query_one("SELECT pg_advisory_xact_lock(?)", (_lock_key(component),))
            row = tx.query_one(
                "SELECT version FROM sealtime_migrations WHERE component = ?"
                + tx.dialect.for_update,
                (component,),
            )
            version = 0 if row is None else int(row[0])
            if version > len(migrations):
                raise MetadataStoreError(
                    f"metadata store {self.url!r} has {component!r} at version {version}, newer "
                    f"than this sealtime knows ({len(migrations)}) — upgrade sealtime"
                )
            for step in migrations[version:]:
                if callable(step):
                    step(tx)
                else:
                    tx.execute(step)
            if len(migrations) != version:
                tx.upsert(
                    "sealtime_migrations", {"component": component}, {"version": len(migrations)}
                )
            return len(migrations)

    def ensure_table(self, ddl: str) -> None:
        """Run an idempotent DDL statement (``CREATE TABLE IF NOT EXISTS ...``) in one transaction."""
        with self.transaction() as tx:
            tx.execute(ddl)

    # -------------------------------------------------------- key/value table
    def kv_put(self, namespace: str, key: str, value: Any) -> None:
        """Store a JSON-able `value` under (`namespace`, `key`), replacing any old value."""
        with self.transaction() as tx:
            tx.upsert(
                "sealtime_kv",
                {"namespace": namespace, "key": key},
                {"value": json.dumps(value, sort_keys=True)},
            )

    def kv_get(self, namespace: str, key: str, default: Any = None) -> Any:
        """The value stored under (`namespace`, `key`), or `default`."""
        rows = self.query(
            "SELECT value FROM sealtime_kv WHERE namespace = ? AND key = ?", (namespace, key)
        )
        return default if not rows else json.loads(rows[0][0])

    def kv_delete(self, namespace: str, key: str) -> bool:
        """Delete (`namespace`, `key`); return whether it existed."""
        return (
            self.execute(
                "DELETE FROM sealtime_kv WHERE namespace = ? AND key = ?", (namespace, key)
            )
            > 0
        )

    def kv_items(self, namespace: str) -> dict[str, Any]:
        """All keys and values of `namespace`."""
        rows = self.query(
            "SELECT key, value FROM sealtime_kv WHERE namespace = ? ORDER BY key", (namespace,)
        )
        return {k: json.loads(v) for k, v in rows}


def _lock_key(component: str) -> int:
    """A stable signed 63-bit advisory-lock key for a component name."""
    return uuid.uuid5(uuid.NAMESPACE_OID, "sealtime-migrate:" + component).int & ((1 << 62) - 1)
