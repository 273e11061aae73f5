"""`PgServer`: the PostgreSQL wire front end (docs/pgwire.md).

An asyncio server in a thread of its own: it never runs on the service's tick thread,
and every call into the `Backend` (which may take long: Spark) runs in a thread pool,
so a slow statement holds up only its own connection. Each subscription has a pump
thread that reads its `EventStream` and hands Arrow tables to the loop; the loop encodes
whole batches (`encode`) and writes them, waiting for the socket to drain.

>>> import pyarrow as pa, psycopg
>>> from sealtime.serve.fake import FakeBackend
>>> with PgServer(FakeBackend({"t": pa.table({"a": [1, 2]})}), port=0) as server:
...     with psycopg.connect(server.dsn()) as conn:
...         conn.execute("SELECT a FROM t WHERE a > 1").fetchall()
[(2,)]
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
import struct
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa

from ...durations import parse_duration
from ...errors import ConfigError, NotFoundError, SealtimeError
from ...sql.errors import SqlError
from ...sql.statements import split
from ..backend import (
    Backend,
    Column,
    Command,
    LimitExceededError,
    PgType,
    QueryCanceledError,
    Rows,
    Session,
    Subscription,
)
from . import commands as cmd
from . import protocol as proto
from .auth import AUTH_METHODS, SCRAM, ScramExchange, load_password_file, md5_check
from .encode import copy_rows, data_rows
from .feed import Feed
from .limits import ServerLimits, check_exposure
from .params import (
    ParameterError,
    decode_binary,
    infer_types,
    placeholders,
    substitute,
    type_of_oid,
)
from .sqlstate import (
    CODES,
    _DuplicateCursor,
    _DuplicateStatement,
    _InFailedTransaction,
    _NoTransaction,
    _UndefinedCursor,
    _UndefinedStatement,
    _Unsupported,
    sqlstate_of,
)

__all__ = ["PgServer", "serve_pgwire"]

log = logging.getLogger(__name__)

SERVER_VERSION = "14.0"


class _Closed(Exception):
    """The client went away (EOF, reset): the connection ends quietly."""


class _Fatal(Exception):
    """End the connection after sending a FATAL error with `code`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


# ---------------------------------------------------------------------- per connection


@dataclass
class _Prepared:
    sql: str
    oids: list[int]
    types: list[PgType | None] | None = None  # of the parameters, once known


@dataclass
class _Portal:
    sql: str
    result_formats: list[int]
    columns: list[Column] | None = None
    described: bool = False
    rows: _RowSource | None = None
    tag: str = "SELECT"
    sent: int = 0


@dataclass
class _Cursor:
    name: str
    columns: list[Column]
    hold: bool
    rows: _RowSource | None = None
    feed: Feed | None = None


class _RowSource:
    """Rows of a `Rows` result taken a few at a time (Execute with a row limit, FETCH
    of a SELECT cursor); batches are pulled from the backend's iterator in the pool."""

    def __init__(self, batches: Any) -> None:
        self.it: Iterator[pa.RecordBatch] = iter(batches)
        self.head: pa.RecordBatch | None = None
        self.done = False

    async def more(self, loop: asyncio.AbstractEventLoop, pool: ThreadPoolExecutor) -> bool:
        """Are there rows left (pulling the next batch to know)?"""
        while self.head is None or self.head.num_rows == 0:
            if self.done:
                return False
            batch = await loop.run_in_executor(pool, next, self.it, None)
            if batch is None:
                self.done = True
                return False
            self.head = _as_batch(batch)
        return True

    async def take(
        self, loop: asyncio.AbstractEventLoop, pool: ThreadPoolExecutor, n: int | None, chunk: int
    ) -> pa.RecordBatch | None:
        """At most `n` rows (None: at most `chunk`), or None at the end."""
        if not await self.more(loop, pool):
            return None
        assert self.head is not None
        want = chunk if n is None else min(n, chunk)
        out = self.head.slice(0, want)
        self.head = self.head.slice(want) if self.head.num_rows > want else None
        return out


def _as_batch(batch: pa.RecordBatch | pa.Table) -> pa.RecordBatch:
    if isinstance(batch, pa.Table):
        if batch.num_rows == 0:
            return pa.RecordBatch.from_pylist([], schema=batch.schema)
        return batch.combine_chunks().to_batches()[0]
    return batch


def _formats(codes: list[int], n: int) -> list[int]:
    if not codes:
        return [0] * n
    if len(codes) == 1:
        return codes * n
    if len(codes) != n:
        raise proto.ProtocolViolation(f"{len(codes)} result format codes for {n} columns")
    return codes


class _Connection:
    def __init__(
        self, server: PgServer, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        self.server = server
        self.limits = server.limits
        self.loop = server._loop
        self.pool = server._pool
        self.reader = reader
        self.writer = writer
        self.pid = secrets.randbelow(1 << 31)
        self.secret = secrets.randbelow(1 << 31) - (1 << 30)
        self.session: Session | None = None
        self.params: dict[str, str] = {}
        self.status = "I"
        self.statements: dict[str, _Prepared] = {}
        self.portals: dict[str, _Portal] = {}
        self.cursors: dict[str, _Cursor] = {}
        self.skip_to_sync = False
        self.inbox: asyncio.Queue[tuple[bytes, bytes] | None] = asyncio.Queue(maxsize=4)
        self.gone = asyncio.Event()
        self.running: asyncio.Task | None = None
        self.cancel_requested = False
        self.user = ""

    # ------------------------------------------------------------------ io
    def send(self, data: bytes) -> None:
        if data:
            self.writer.write(data)

    async def flush(self) -> None:
        if self.gone.is_set() and self.writer.transport.is_closing():
            raise _Closed()
        try:
            await self.writer.drain()
        except (ConnectionError, OSError) as e:
            raise _Closed() from e

    async def _read_exact(self, n: int) -> bytes:
        try:
            return await self.reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as e:
            raise _Closed() from e

    async def _read_message(self) -> tuple[bytes, bytes]:
        head = await self._read_exact(5)
        tag, length = head[:1], struct.unpack("!i", head[1:])[0]
        if length < 4:
            raise _Fatal(CODES["protocol_violation"], f"invalid message length {length}")
        if length - 4 > self.limits.max_statement_bytes + 1024:
            raise _Fatal(
                CODES["program_limit_exceeded"],
                f"a message of {length} bytes exceeds max_statement_bytes="
                f"{self.limits.max_statement_bytes}; send smaller statements (or raise the limit)",
            )
        return tag, await self._read_exact(length - 4)

    async def _pump_inbox(self) -> None:
        try:
            while True:
                msg = await self._read_message()
                await self.inbox.put(msg)
                if msg[0] == proto.TERMINATE:
                    break
        except _Closed:
            pass
        except _Fatal as e:
            self.send(proto.error_response(e.code, str(e), severity="FATAL"))
        finally:
            self.gone.set()
            if self.running is not None and not self.running.done():
                self.running.cancel()  # a client that vanished costs nothing more
            await self.inbox.put(None)

    # ------------------------------------------------------------------ lifecycle
    async def run(self) -> None:
        server = self.server
        try:
            try:
                ok = await asyncio.wait_for(self.startup(), self.limits.handshake_timeout)
            except asyncio.TimeoutError:
                raise _Fatal(
                    CODES["connection_failure"],
                    f"no login within handshake_timeout={self.limits.handshake_timeout}s",
                ) from None
            if not ok:
                return
            server._sessions[self.pid] = self
            pump = asyncio.ensure_future(self._pump_inbox())
            try:
                await self.loop_messages()
            finally:
                pump.cancel()
        except _Fatal as e:
            self.send(proto.error_response(e.code, str(e), severity="FATAL"))
        except (_Closed, ConnectionError):
            pass
        except Exception:
            log.exception("pgwire connection failed")
        finally:
            server._sessions.pop(self.pid, None)
            for c in list(self.cursors.values()):
                if c.feed is not None:
                    c.feed.close()
            self.cursors.clear()
            if self.session is not None:
                session, self.session = self.session, None
                server._counts["connections"] -= 1
                try:
                    await self.loop.run_in_executor(self.pool, session.close)
                except RuntimeError:  # the pool is shut down (server closing): close here
                    session.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.writer.drain(), 1.0)
            self.writer.close()

    async def startup(self) -> bool:
        """The startup packet (SSL refused with 'N'), authentication, the session."""
        while True:
            length = struct.unpack("!i", await self._read_exact(4))[0]
            if not 8 <= length <= 10_000:
                raise _Fatal(CODES["protocol_violation"], f"invalid startup packet length {length}")
            body = await self._read_exact(length - 4)
            code = struct.unpack("!i", body[:4])[0]
            if code in (proto.SSL_REQUEST, proto.GSSENC_REQUEST):
                self.send(b"N")  # no TLS: go on in plain text (loopback, or a tunnel)
                await self.flush()
                continue
            if code == proto.CANCEL_REQUEST and len(body) == 12:
                pid, secret = struct.unpack("!ii", body[4:12])
                self.server._cancel(pid, secret)
                return False
            if code != proto.PROTOCOL_3:
                raise _Fatal(
                    CODES["protocol_violation"],
                    f"unsupported protocol version {code >> 16}.{code & 0xFFFF}",
                )
            break
        fields = body[4:].split(b"\x00")
        params = {
            fields[i].decode(): fields[i + 1].decode()
            for i in range(0, len(fields) - 1, 2)
            if fields[i]
        }
        self.user = params.get("user", "")
        if not self.user:
            raise _Fatal(
                CODES["invalid_authorization_specification"], "no user name in the startup packet"
            )
        database = params.get("database", self.user)
        if self.server._counts["connections"] >= self.limits.max_connections:
            raise _Fatal(
                CODES["too_many_connections"],
                f"sorry, too many clients already (max_connections={self.limits.max_connections})",
            )
        await self.authenticate()
        self.server._counts["connections"] += 1
        try:
            self.session = await self.loop.run_in_executor(
                self.pool, self.server.backend.open_session, self.user, database
            )
        except Exception as e:
            self.server._counts["connections"] -= 1
            code = CODES["invalid_catalog_name"] if isinstance(e, NotFoundError) else sqlstate_of(e)
            raise _Fatal(code, str(e)) from e
        self.params = {
            "application_name": params.get("application_name", ""),
            "client_encoding": "UTF8",
            "DateStyle": "ISO, MDY",
            "integer_datetimes": "on",
            "IntervalStyle": "postgres",
            "is_superuser": "off",
            "server_encoding": "UTF8",
            "server_version": SERVER_VERSION,
            "session_authorization": self.user,
            "standard_conforming_strings": "on",
            "TimeZone": "UTC",
        }
        out = [proto.AUTH_OK]
        out += [proto.parameter_status(k, v) for k, v in self.params.items()]
        out += [proto.backend_key_data(self.pid, self.secret), proto.ready_for_query("I")]
        self.send(b"".join(out))
        await self.flush()
        return True

    async def authenticate(self) -> None:
        creds = self.server.credentials
        if creds is None:
            return  # trust: loopback only (checked when the server started)
        cred = creds.get(self.user)
        method = (cred.method if cred is not None else None) or self.server.auth_method
        if method == "md5":
            salt = os.urandom(4)
            self.send(proto.auth_request(5, salt))
            await self.flush()
            answer = proto.Reader(await self._password_message()).cstring()
            if not md5_check(cred, self.user, salt, answer):
                raise self._auth_failed()
            return
        self.send(proto.auth_request(10, SCRAM.encode() + b"\x00\x00"))
        await self.flush()
        r = proto.Reader(await self._password_message())
        mechanism = r.cstring()
        if mechanism != SCRAM:
            raise _Fatal(
                CODES["invalid_authorization_specification"],
                f"SASL mechanism {mechanism!r} is not supported; use {SCRAM}",
            )
        first = r.bytes(r.int32()).decode()
        exchange = ScramExchange(cred)
        try:
            self.send(proto.auth_request(11, exchange.server_first(first).encode()))
        except ConfigError as e:
            raise _Fatal(CODES["invalid_authorization_specification"], str(e)) from e
        await self.flush()
        final = exchange.client_final((await self._password_message()).decode())
        if final is None or cred is None:
            raise self._auth_failed()
        self.send(proto.auth_request(12, final.encode()))

    async def _password_message(self) -> bytes:
        """The payload of the client's next PasswordMessage (or SASL response); any
        other message fails the login."""
        tag, payload = await self._read_message()
        if tag != proto.PASSWORD_MESSAGE:
            raise self._auth_failed()
        return payload

    def _auth_failed(self) -> _Fatal:
        """The one answer to a wrong password, an unknown user or a broken exchange."""
        return _Fatal(
            CODES["invalid_password"], f'password authentication failed for user "{self.user}"'
        )

    # ------------------------------------------------------------------ messages
    async def _next(self) -> tuple[bytes, bytes] | None:
        timeout = self.limits.idle_timeout if not self.cursors else None
        try:
            return await asyncio.wait_for(self.inbox.get(), timeout)
        except asyncio.TimeoutError:
            raise _Fatal(
                CODES["idle_session_timeout"], f"idle for longer than idle_timeout={timeout}s"
            ) from None

    async def loop_messages(self) -> None:
        """Answer the client's messages, each by its route (`_ROUTES`), until it
        terminates or goes away."""
        while (msg := await self._next()) is not None:
            tag, payload = msg
            route = _ROUTES.get(tag)
            if route is None:
                self.error(proto.ProtocolViolation(f"unexpected message type {tag!r}"))
                continue
            if self.skip_to_sync and not route.after_error:
                continue  # (an error in the extended protocol: up to Sync, nothing runs)
            handler = getattr(self, route.handler)
            if route.statement:
                await self._guarded(handler(payload), extended=route.extended)
            else:
                await handler(payload)
            if route.ready_after:
                self.send(proto.ready_for_query(self.status))
                await self.flush()

    async def sync(self, payload: bytes) -> None:
        """Sync: the end of an extended-protocol exchange (and of skipping after an
        error)."""
        self.skip_to_sync = False

    async def flush_message(self, payload: bytes) -> None:
        await self.flush()

    async def terminate(self, payload: bytes) -> None:
        raise _Closed()

    async def _guarded(self, coro: Any, *, extended: bool) -> None:
        """Run one message's work as the cancellable statement; an error is sent (and
        in the extended protocol, messages up to Sync are skipped)."""
        self.cancel_requested = False
        self.running = asyncio.ensure_future(coro)
        try:
            await asyncio.shield(self.running)
        except asyncio.CancelledError:
            if self.gone.is_set():
                raise _Closed() from None
            if not self.running.done():
                self.running.cancel()
            if not self.cancel_requested:
                raise
            self.error(QueryCanceledError("canceling statement due to user request"))
            if extended:
                self.skip_to_sync = True
        except _Closed:
            raise
        except _Fatal:
            raise
        except Exception as e:
            self.error(e)
            if extended:
                self.skip_to_sync = True
        finally:
            self.running = None

    def error(self, e: BaseException, offset: int = 0) -> None:
        if not isinstance(e, SealtimeError):
            log.debug("statement failed", exc_info=e)
        code = sqlstate_of(e)
        position = None
        if isinstance(e, SqlError) and e.line is not None and e.col is not None:
            position = offset + e.col  # of the first line; good enough for psql's caret
        hint = getattr(e, "hint", None) if not isinstance(e, SqlError) else None
        self.send(
            proto.error_response(
                code, str(e), position=position if position and e.line == 1 else None, hint=hint
            )
        )
        if self.status == "T":
            self.status = "E"

    async def call(self, fn: Any, *args: Any) -> Any:
        """A backend call in the pool; if the statement is canceled meanwhile, a
        subscription it returns is closed when it arrives."""
        fut = self.loop.run_in_executor(self.pool, fn, *args)
        try:
            return await asyncio.shield(fut)
        except asyncio.CancelledError:

            def close_late(f: Any) -> None:
                if (
                    not f.cancelled()
                    and f.exception() is None
                    and isinstance(f.result(), Subscription)
                ):
                    f.result().events.close()

            fut.add_done_callback(close_late)
            raise

    # ------------------------------------------------------------------ simple query
    async def simple_query(self, payload: bytes) -> None:
        text = proto.Reader(payload).cstring()
        if len(text.encode()) > self.limits.max_statement_bytes:
            raise LimitExceededError(
                f"a statement of {len(text.encode())} bytes exceeds max_statement_bytes={self.limits.max_statement_bytes}"
            )
        statements = _split(text)
        if not statements:
            self.send(proto.EMPTY_QUERY)
            return
        for sql, offset in statements:
            try:
                await self.run_statement(sql, formats=None, describe=True, max_rows=0, portal=None)
            except asyncio.CancelledError:
                raise
            except (_Closed, _Fatal):
                raise
            except Exception as e:
                self.error(e, offset)
                return
            await self.flush()

    # ------------------------------------------------------------------ statements
    async def run_statement(
        self,
        sql: str,
        *,
        formats: list[int] | None,
        describe: bool,
        max_rows: int,
        portal: _Portal | None,
    ) -> None:
        """Run one statement: `formats` None is text for every column; `describe`
        sends RowDescription first (simple protocol)."""
        if self.status == "E" and not isinstance(cmd.classify(sql), cmd.Commit):
            raise _InFailedTransaction()
        command = cmd.classify(sql)
        if command is not None:
            await self.run_command(command, formats, describe)
            return
        result = await self.call(self.session.execute, sql)  # type: ignore[union-attr]
        if isinstance(result, Command):
            self.send(proto.command_complete(result.tag))
        elif isinstance(result, Rows):
            fmts = formats if formats is not None else [0] * len(result.columns)
            fmts = _formats(fmts, len(result.columns))
            if describe:
                self.send(proto.row_description(result.columns, fmts))
            source = _RowSource(result.batches)
            if portal is not None and max_rows > 0:
                portal.rows, portal.columns, portal.tag = source, result.columns, result.tag
                await self.continue_portal(portal, max_rows)
                return
            n = await self.send_rows(source, result.columns, fmts, None)
            self.send(proto.command_complete(_tag(result.tag, n)))
        elif isinstance(result, Subscription):
            fmts = _formats(formats if formats is not None else [], len(result.columns))
            if describe:
                self.send(proto.row_description(result.columns, fmts))
            n = await self.stream(result, fmts, copy=False)
            self.send(proto.command_complete(f"SUBSCRIBE {n}"))
        else:
            raise TypeError(f"Session.execute returned {type(result).__name__}, not a Result")

    async def send_rows(
        self, source: _RowSource, columns: list[Column], fmts: list[int], limit: int | None
    ) -> int:
        """DataRows of up to `limit` rows (None: all), encoded a chunk at a time in the
        pool, bounded by max_result_bytes."""
        sent = 0
        budget = self.limits.max_result_bytes
        while limit is None or sent < limit:
            want = None if limit is None else limit - sent
            batch = await source.take(self.loop, self.pool, want, self.limits.batch_rows)
            if batch is None:
                break
            data = await self.loop.run_in_executor(self.pool, data_rows, batch, columns, fmts)
            budget -= len(data)
            if budget < 0:
                raise LimitExceededError(
                    f"the result is larger than max_result_bytes={self.limits.max_result_bytes} "
                    f"(after {sent} rows); narrow the query (a WHERE clause, fewer columns, an "
                    "aggregate) or raise the limit"
                )
            self.send(data)
            sent += batch.num_rows
            await self.flush()
        return sent

    async def continue_portal(self, portal: _Portal, max_rows: int) -> None:
        assert portal.rows is not None and portal.columns is not None
        n = await self.send_rows(
            portal.rows,
            portal.columns,
            _formats(portal.result_formats, len(portal.columns)),
            max_rows if max_rows > 0 else None,
        )
        portal.sent += n
        if max_rows > 0 and n == max_rows and await portal.rows.more(self.loop, self.pool):
            self.send(proto.PORTAL_SUSPENDED)
        else:
            self.send(proto.command_complete(_tag(portal.tag, portal.sent)))
            portal.rows = None

    async def stream(self, sub: Subscription, fmts: list[int], *, copy: bool) -> int:
        """Send a subscription's rows as they come (CopyData or DataRow) until it ends,
        the statement is canceled or the client goes away; returns the rows sent."""
        feed = Feed(self.loop, sub, self.limits.subscription_buffer_bytes, self.server._counts)
        sent = 0
        try:
            while True:
                await feed.wait(None)
                tables = feed.take(None)
                for table in tables:
                    for batch in table.to_batches(max_chunksize=self.limits.batch_rows):
                        if copy:
                            data = copy_rows(batch, sub.columns)
                        else:
                            data = data_rows(batch, sub.columns, fmts)
                        self.send(data)
                        sent += batch.num_rows
                        await self.flush()
                if feed.ended:
                    if feed.failure is not None:
                        raise feed.failure
                    return sent
        except LimitExceededError:
            # fell behind: the client may not be reading, so say it and hang up
            self.error(feed.failure or LimitExceededError("fell behind"))
            transport = self.writer.transport
            self.loop.call_later(self.limits.handshake_timeout, transport.abort)
            raise _Closed() from None
        finally:
            feed.close()

    # ------------------------------------------------------------------ wire commands
    async def run_command(
        self, command: cmd.Command, formats: list[int] | None, describe: bool
    ) -> None:
        if isinstance(command, cmd.Begin):
            if self.status == "I":
                self.status = "T"
            self.send(proto.command_complete("BEGIN"))
        elif isinstance(command, cmd.Commit):
            tag = "ROLLBACK" if command.rollback or self.status == "E" else "COMMIT"
            self.status = "I"
            for name in [n for n, c in self.cursors.items() if not c.hold]:
                self._close_cursor(name)
            self.send(proto.command_complete(tag))
        elif isinstance(command, cmd.SetParam):
            self.set_param(command.name, command.value)
            self.send(proto.command_complete("SET"))
        elif isinstance(command, cmd.ResetParam):
            self.send(proto.command_complete("RESET"))
        elif isinstance(command, cmd.ShowParam):
            columns, rows = self.show(command.name)
            fmts = _formats(formats or [], len(columns))
            if describe:
                self.send(proto.row_description(columns, fmts))
            batch = pa.record_batch(
                [pa.array([r[i] for r in rows], pa.string()) for i in range(len(columns))],
                names=[c.name for c in columns],
            )
            self.send(data_rows(batch, columns, fmts))
            self.send(proto.command_complete("SHOW"))
        elif isinstance(command, cmd.Declare):
            await self.declare(command)
            self.send(proto.command_complete("DECLARE CURSOR"))
        elif isinstance(command, cmd.Fetch):
            await self.fetch(command, formats, describe)
        elif isinstance(command, cmd.CloseCursor):
            if command.name is None:
                for name in list(self.cursors):
                    self._close_cursor(name)
            elif command.name not in self.cursors:
                raise _UndefinedCursor(command.name)
            else:
                self._close_cursor(command.name)
            self.send(proto.command_complete("CLOSE CURSOR"))
        elif isinstance(command, cmd.Copy):
            result = await self.call(self.session.execute, command.query)  # type: ignore[union-attr]
            if not isinstance(result, (Rows, Subscription)):
                raise _Unsupported("COPY (...) TO STDOUT takes a SELECT or a SUBSCRIBE")
            self.send(proto.copy_out_response(len(result.columns)))
            if isinstance(result, Subscription):
                n = await self.stream(result, [], copy=True)
            else:
                n = 0
                source = _RowSource(result.batches)
                while (
                    batch := await source.take(self.loop, self.pool, None, self.limits.batch_rows)
                ) is not None:
                    self.send(
                        await self.loop.run_in_executor(self.pool, copy_rows, batch, result.columns)
                    )
                    n += batch.num_rows
                    await self.flush()
            self.send(proto.COPY_DONE + proto.command_complete(f"COPY {n}"))

    def set_param(self, name: str, value: str) -> None:
        canonical = {
            "datestyle": "DateStyle",
            "timezone": "TimeZone",
            "intervalstyle": "IntervalStyle",
        }.get(name, name)
        if name == "client_encoding" and value.upper().replace("-", "") not in ("UTF8", "UNICODE"):
            raise _Unsupported(
                f"client_encoding {value!r}: only UTF8 is supported; SET client_encoding TO 'UTF8'"
            )
        if name == "datestyle" and not value.upper().startswith("ISO"):
            raise _Unsupported(f"DateStyle {value!r}: only ISO is supported")
        self.params[canonical] = value
        if canonical in (
            "application_name",
            "DateStyle",
            "TimeZone",
            "IntervalStyle",
            "client_encoding",
        ):
            self.send(
                proto.parameter_status(canonical, "UTF8" if name == "client_encoding" else value)
            )

    def show(self, name: str | None) -> tuple[list[Column], list[tuple[str, str]]]:
        lower = {k.lower(): v for k, v in self.params.items()}
        defaults = {
            "extra_float_digits": "1",
            "search_path": "public",
            "statement_timeout": "0",
            "server_version_num": "140000",
            "transaction_isolation": "serializable",
            "default_transaction_isolation": "serializable",
            "lock_timeout": "0",
        }
        if name is None:
            rows = sorted({**defaults, **lower}.items())
            return [Column("name", PgType.TEXT), Column("setting", PgType.TEXT)], rows
        value = lower.get(name, defaults.get(name, ""))
        return [Column(name, PgType.TEXT)], [(value,)]  # type: ignore[list-item]

    async def declare(self, command: cmd.Declare) -> None:
        if self.status != "T":
            raise _NoTransaction(
                "DECLARE CURSOR can only be used in transaction blocks (BEGIN first)"
            )
        if command.name in self.cursors:
            raise _DuplicateCursor(command.name)
        if len(self.cursors) >= self.limits.max_cursors:
            raise LimitExceededError(
                f"max_cursors={self.limits.max_cursors} cursors are open on this connection; CLOSE one first"
            )
        result = await self.call(self.session.execute, command.query)  # type: ignore[union-attr]
        if isinstance(result, Subscription):
            feed = Feed(
                self.loop, result, self.limits.subscription_buffer_bytes, self.server._counts
            )
            self.cursors[command.name] = _Cursor(
                command.name, result.columns, command.hold, feed=feed
            )
        elif isinstance(result, Rows):
            self.cursors[command.name] = _Cursor(
                command.name, result.columns, command.hold, rows=_RowSource(result.batches)
            )
        else:
            raise _Unsupported("DECLARE ... CURSOR FOR takes a SELECT or a SUBSCRIBE")

    def _close_cursor(self, name: str) -> None:
        cursor = self.cursors.pop(name)
        if cursor.feed is not None:
            cursor.feed.close()

    async def fetch(self, command: cmd.Fetch, formats: list[int] | None, describe: bool) -> None:
        cursor = self.cursors.get(command.name)
        if cursor is None:
            raise _UndefinedCursor(command.name)
        fmts = _formats(formats or [], len(cursor.columns))
        if describe:
            self.send(proto.row_description(cursor.columns, fmts))
        if cursor.rows is not None:
            n = await self.send_rows(cursor.rows, cursor.columns, fmts, command.count)
            self.send(proto.command_complete(f"FETCH {n}"))
            return
        feed = cursor.feed
        assert feed is not None
        timeout = (
            None
            if command.timeout is None
            else parse_duration(command.timeout, "FETCH ... WITH (timeout)") / 1000
        )
        await feed.wait(timeout)
        n = 0
        for table in feed.take(command.count):
            for batch in table.to_batches(max_chunksize=self.limits.batch_rows):
                self.send(
                    await self.loop.run_in_executor(
                        self.pool, data_rows, batch, cursor.columns, fmts
                    )
                )
                n += batch.num_rows
                await self.flush()
        self.send(proto.command_complete(f"FETCH {n}"))

    # ------------------------------------------------------------------ extended protocol
    async def parse(self, payload: bytes) -> None:
        r = proto.Reader(payload)
        name, sql = r.cstring(), r.cstring()
        oids = [r.int32() for _ in range(r.int16())]
        if len(_split(sql)) > 1:
            raise SqlError("syntax", "cannot insert multiple commands into a prepared statement")
        if name and name in self.statements:
            raise _DuplicateStatement(f'prepared statement "{name}" already exists')
        self.statements[name] = _Prepared(sql, oids)
        self.send(proto.PARSE_COMPLETE)

    async def _param_types(self, stmt: _Prepared) -> list[PgType | None]:
        if stmt.types is None:
            count = max((n for _, _, n in placeholders(stmt.sql)), default=0)
            count = max(count, len(stmt.oids))
            declared = [type_of_oid(o) for o in stmt.oids] + [None] * (count - len(stmt.oids))
            if any(t is None for t in declared) and count:
                inferred = await self.call(infer_types, stmt.sql, count, self.session.describe)  # type: ignore[union-attr]
                declared = [d or i for d, i in zip(declared, inferred)]
            stmt.types = [t or PgType.TEXT for t in declared]
        return stmt.types

    async def bind(self, payload: bytes) -> None:
        r = proto.Reader(payload)
        portal_name, stmt_name = r.cstring(), r.cstring()
        stmt = self.statements.get(stmt_name)
        if stmt is None:
            raise _UndefinedStatement(f'prepared statement "{stmt_name}" does not exist')
        param_formats = [r.int16() for _ in range(r.int16())]
        raw: list[bytes | None] = []
        for _ in range(r.int16()):
            n = r.int32()
            raw.append(None if n < 0 else r.bytes(n))
        result_formats = [r.int16() for _ in range(r.int16())]
        types = await self._param_types(stmt) if raw else []
        pf = _formats(param_formats, len(raw)) if raw else []
        values: list[str | None] = []
        for i, data in enumerate(raw):
            t = types[i] if i < len(types) else PgType.TEXT
            if data is None:
                values.append(None)
            elif pf[i] == 1:
                values.append(decode_binary(data, t, i + 1))
            else:
                try:
                    values.append(data.decode("utf-8"))
                except UnicodeDecodeError as e:
                    raise ParameterError(f"parameter ${i + 1} is not UTF-8") from e
        sql = substitute(stmt.sql, types, values) if raw or placeholders(stmt.sql) else stmt.sql
        if portal_name and portal_name in self.portals:
            raise _DuplicateCursor(portal_name)
        self.portals[portal_name] = _Portal(sql, result_formats)
        self.send(proto.BIND_COMPLETE)

    async def _columns(self, sql: str) -> list[Column] | None:
        command = cmd.classify(sql)
        if command is None:
            return await self.call(self.session.describe, sql)  # type: ignore[union-attr]
        if isinstance(command, cmd.Fetch):
            cursor = self.cursors.get(command.name)
            if cursor is None:
                raise _UndefinedCursor(command.name)
            return cursor.columns
        if isinstance(command, cmd.ShowParam):
            return self.show(command.name)[0]
        return None

    async def describe(self, payload: bytes) -> None:
        r = proto.Reader(payload)
        target, name = r.byte(), r.cstring()
        describe = {
            proto.PREPARED_STATEMENT: self._describe_statement,
            proto.PORTAL: self._describe_portal,
        }.get(target)
        if describe is None:
            raise proto.ProtocolViolation(f"Describe of {target!r}: expected 'S' or 'P'")
        await describe(name)

    async def _describe_statement(self, name: str) -> None:
        stmt = self.statements.get(name)
        if stmt is None:
            raise _UndefinedStatement(f'prepared statement "{name}" does not exist')
        types = await self._param_types(stmt)
        self.send(proto.parameter_description([t.oid for t in types]))
        probe = substitute(stmt.sql, types, [None] * len(types)) if types else stmt.sql
        columns = await self._columns(probe)
        self.send(proto.row_description(columns, [0] * len(columns)) if columns else proto.NO_DATA)

    async def _describe_portal(self, name: str) -> None:
        portal = self.portals.get(name)
        if portal is None and name in self.cursors:  # a cursor is a portal too
            cols = self.cursors[name].columns
            self.send(proto.row_description(cols, [0] * len(cols)))
            return
        if portal is None:
            raise _UndefinedCursor(name)
        if portal.columns is None:
            portal.columns = await self._columns(portal.sql)
        portal.described = True
        cols = portal.columns
        self.send(
            proto.row_description(cols, _formats(portal.result_formats, len(cols)))
            if cols
            else proto.NO_DATA
        )

    # Reads its message alike in form to bind(): each protocol message has its own fields.
    async def execute(self, payload: bytes) -> None:
        r = proto.Reader(payload)
        name, max_rows = r.cstring(), r.int32()
        portal = self.portals.get(name)
        if portal is None:
            raise _UndefinedCursor(name)
        if portal.rows is not None:
            await self.continue_portal(portal, max_rows)
            return
        if not portal.sql.strip():
            self.send(proto.EMPTY_QUERY)
            return
        await self.run_statement(
            portal.sql,
            formats=portal.result_formats,
            describe=False,
            max_rows=max_rows,
            portal=portal,
        )

    async def close_message(self, payload: bytes) -> None:
        r = proto.Reader(payload)
        target, name = r.byte(), r.cstring()
        named: dict[str, Any] | None = {
            proto.PREPARED_STATEMENT: self.statements,
            proto.PORTAL: self.portals,
        }.get(target)
        if named is None:
            raise proto.ProtocolViolation(f"Close of {target!r}: expected 'S' or 'P'")
        named.pop(name, None)
        self.send(proto.CLOSE_COMPLETE)


class _Route(NamedTuple):
    """How the connection answers one frontend message type."""

    handler: str  # the `_Connection` method, given the message's payload
    statement: bool = True  # runs as the cancellable statement; its error is sent
    extended: bool = True  # part of the extended protocol: an error skips up to Sync
    after_error: bool = False  # runs while the extended protocol skips up to Sync
    ready_after: bool = False  # ReadyForQuery follows it


#: the frontend messages after startup, by their type byte
_ROUTES = {
    proto.QUERY: _Route("simple_query", extended=False, ready_after=True),
    proto.PARSE: _Route("parse"),
    proto.BIND: _Route("bind"),
    proto.DESCRIBE: _Route("describe"),
    proto.EXECUTE: _Route("execute"),
    proto.CLOSE: _Route("close_message"),
    proto.SYNC: _Route("sync", statement=False, after_error=True, ready_after=True),
    proto.FLUSH: _Route("flush_message", statement=False),
    proto.TERMINATE: _Route("terminate", statement=False, after_error=True),
}


def _tag(tag: str, n: int) -> str:
    return f"SELECT {n}" if tag.split()[0] == "SELECT" else tag


def _split(text: str) -> list[tuple[str, int]]:
    """The statements of a query string and where each starts (sqlglot's tokenizer,
    as the shell splits)."""
    if not text.strip():
        return []
    try:
        return [(s.source_text, s.start) for s in split(text)]
    except SqlError:
        return [(text, 0)]  # an unterminated string: the backend says where


# ---------------------------------------------------------------------- the server


class PgServer:
    """The wire front end over `backend`, on `host`:`port` (0: any free port).

    Loopback by default; any other `host` needs a `password_file` (see
    `sealtime.serve.pgwire.auth`), else a `ConfigError` naming ``--host`` and
    ``--password-file``. With a password file every client authenticates by
    `auth_method` (``scram-sha-256`` or ``md5``); without one (loopback), trust.
    `start()` listens (and returns self); `close()` ends every connection; a ``with``
    block does both.
    """

    def __init__(
        self,
        backend: Backend,
        *,
        host: str = "127.0.0.1",
        port: int = 6875,
        password_file: str | None = None,
        auth_method: str = "scram-sha-256",
        limits: ServerLimits | None = None,
    ) -> None:
        check_exposure(host, password_file)
        if auth_method not in AUTH_METHODS:
            raise ConfigError(f"auth_method={auth_method!r}: use one of {', '.join(AUTH_METHODS)}")
        self.backend = backend
        self.host = host
        self.port = port
        self.auth_method = auth_method
        self.limits = limits or ServerLimits()
        self.credentials = load_password_file(password_file) if password_file else None
        self._sessions: dict[int, _Connection] = {}
        self._counts: dict[str, int] = {"connections": 0, "subscriptions": 0, "buffered_bytes": 0}
        self._sockets = 0
        self._loop: asyncio.AbstractEventLoop = asyncio.new_event_loop()
        self._pool = ThreadPoolExecutor(
            self.limits.max_connections + 4, thread_name_prefix="pgwire"
        )
        self._thread: threading.Thread | None = None
        self._server: asyncio.AbstractServer | None = None
        self._tasks: set[asyncio.Task] = set()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> PgServer:
        """Listen (in the server's thread); errors binding the port are raised here."""
        ready = threading.Event()
        failure: list[BaseException] = []

        def main() -> None:
            asyncio.set_event_loop(self._loop)
            try:
                self._server = self._loop.run_until_complete(
                    asyncio.start_server(self._accept, self.host, self.port, limit=1 << 16)
                )
                self.port = self._server.sockets[0].getsockname()[1]
            except BaseException as e:
                failure.append(e)
                ready.set()
                return
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=main, name="pgwire-server", daemon=True)
        self._thread.start()
        ready.wait()
        if failure:
            raise ConfigError(
                f"--port {self.port} on --host {self.host}: cannot listen ({failure[0]})"
            ) from failure[0]
        return self

    def close(self) -> None:
        """Stop listening, end every connection (their subscriptions are closed)."""
        if self._thread is None:
            return

        async def stop() -> None:
            if self._server is not None:
                self._server.close()
            for task in list(self._tasks):
                task.cancel()
            if self._tasks:
                await asyncio.wait(list(self._tasks), timeout=5)

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._thread = None
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> PgServer:
        return self.start() if self._thread is None else self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def dsn(self, user: str = "sealtime", database: str = "sealtime", **extra: Any) -> str:
        """A libpq connection string for this server."""
        host = self.host if self.host not in ("0.0.0.0", "::") else "127.0.0.1"
        parts = [f"host={host}", f"port={self.port}", f"user={user}", f"dbname={database}"]
        parts += [f"{k}={v}" for k, v in extra.items()]
        return " ".join(parts)

    def stats(self) -> dict[str, int]:
        """Connections, open subscriptions, and bytes of subscription rows waiting."""
        return dict(self._counts)

    # ------------------------------------------------------------------ internals
    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._sockets >= 2 * self.limits.max_connections:
            writer.close()  # a flood of connections (most still in their handshake): drop
            return
        sock = writer.get_extra_info("socket")
        if sock is not None:  # small messages (a progress row) go out at once
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        self._sockets += 1
        conn = _Connection(self, reader, writer)
        try:
            await conn.run()
        except asyncio.CancelledError:
            pass
        finally:
            self._sockets -= 1
            self._tasks.discard(task)

    def _cancel(self, pid: int, secret: int) -> None:
        """A CancelRequest: stop the running statement of the session it names."""
        conn = self._sessions.get(pid)
        if conn is None or conn.secret != secret:
            return  # PostgreSQL says nothing either way
        if conn.running is not None and not conn.running.done():
            conn.cancel_requested = True
            conn.running.cancel()


def serve_pgwire(backend: Backend, **settings: Any) -> PgServer:
    """Start a `PgServer` over `backend` (settings as `PgServer`'s) and return it."""
    return PgServer(backend, **settings).start()
