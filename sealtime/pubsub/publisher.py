"""The publisher: an asyncio TCP server in a background thread, fed by synchronous code.

The engine is synchronous Python; it calls `Publisher.send(time, table)` for the rows of an
epoch (as often as it likes while that time is not complete) and `advance_lower` /
`update_lower` when progress seals times. The publisher keeps **no history** in stream
mode: a subscriber that joins receives an `InitialFrontierSnapshot{lower, upper}` and then
every message published after that point, and filters out the epochs it joined in the
middle of (see `sealtime.pubsub.subscriber`).

How messages reach subscribers: `send` encodes a message *once* (Arrow IPC, in the
caller's thread) and appends the frame to a shared in-memory log; every connection has
its own writer task with a cursor into that log, so a slow subscriber never blocks the
others (no head-of-line blocking). The log only holds frames some subscriber has not yet
taken. A subscriber whose backlog exceeds `max_queue` messages or `max_queue_bytes` bytes
is cut off with `Close("fell behind at time t: ...")`; the others are unaffected.

The snapshot and the log position of a new subscriber are taken under the same lock that
`send` / `update_lower` hold while appending, so "everything from that point" is exact.

>>> import pyarrow as pa
>>> from sealtime.pubsub.subscriber import subscribe_stream, Epoch
>>> with Publisher("doc", lower=[0]).start() as pub:
...     with subscribe_stream(pub.address, timeout=10) as sub:
...         pub.send(1, pa.table({"x": [1, 2]}))
...         _ = pub.advance_lower([2])
...         events = [sub.next_event(timeout=10) for _ in range(3)]
>>> [type(e).__name__ for e in events]
['Progress', 'Epoch', 'Progress']
>>> events[1].time, events[1].table.num_rows, events[2].lower
(1, 2, Antichain([2]))
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time as _wallclock
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from sealtime.columns import DIFF
from sealtime.errors import ConfigError, SchemaError, SealtimeError, StateError
from sealtime.progress.capability import DowngradeError
from sealtime.pubsub.frontier import UpperFrontier
from sealtime.pubsub.history import HistoryProvider
from sealtime.pubsub.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    PROTOCOL_VERSION,
    Close,
    FrameDecoder,
    Hello,
    InitialFrontierSnapshot,
    LowerFrontierUpdate,
    ProtocolError,
    ViewSnapshot,
    encode_frame,
    encode_message,
    encode_time,
    normalize_time,
    table_to_ipc,
    time_shape,
    with_seq,
)
from sealtime.time import Antichain, MutableAntichain

__all__ = ["Disconnection", "Publisher"]

_CLIENT_MAX_FRAME = 1024 * 1024  # subscribers only send Hello and Close
_WRITE_BATCH = 1024 * 1024  # bytes a writer takes from the log before awaiting drain
_LINGER = 1.0  # seconds to wait for the peer's EOF after our Close (lingering close)
_HEADER_SLACK = 4096  # room left for the msgpack header when splitting big tables


@dataclass(frozen=True)
class Disconnection:
    """A subscriber connection that ended, with why (kept for monitoring and tests).

    >>> Disconnection(("127.0.0.1", 5000), "subscriber disconnected").reason
    'subscriber disconnected'
    """

    peer: Any
    reason: str
    at: float = field(default_factory=_wallclock.time, compare=False)


class _Refused(SealtimeError):
    """A subscriber's request cannot be served; the message is the Close reason."""


class _Entry:
    __slots__ = ("frame", "time", "is_close")

    def __init__(self, frame: bytes, time: Any, is_close: bool = False) -> None:
        self.frame = frame
        self.time = time
        self.is_close = is_close


class _Sub:
    """One registered subscriber connection (shared between the two threads under lock)."""

    __slots__ = (
        "peer",
        "cursor",
        "bytes_pos",
        "wake",
        "prefix",
        "write_task",
        "reason",
        "send_close",
    )

    def __init__(self, peer: Any, cursor: int, bytes_pos: int, prefix: list[bytes]) -> None:
        self.peer = peer
        self.cursor = cursor  # sequence number of the next log entry to take
        self.bytes_pos = bytes_pos  # cumulative log bytes taken so far
        self.wake = asyncio.Event()
        self.prefix: list[bytes] | None = prefix
        self.write_task: asyncio.Task[None] | None = None
        self.reason: str | None = None
        self.send_close = False

    def set_reason(self, reason: str, send_close: bool) -> None:
        if self.reason is None:
            self.reason, self.send_close = reason, send_close


class Publisher:
    """Publishes one partition of a stream to any number of TCP subscribers.

    * `name`, `partition`: identify the stream partition (sent in the handshake; a group
      subscription checks that its partitions are distinct parts of one stream).
    * `host`, `port`: where to listen; loopback and an ephemeral port by default.
    * `lower`: the initial lower frontier (default `[0]`; use e.g.
      `[Product(0, 0)]` for product times). Times not ≥ it are complete.
    * `schema`: the Arrow schema of the rows; pinned by the first `send` if not given.
    * `max_queue` / `max_queue_bytes`: per-subscriber backlog limits; a subscriber
      exceeding either is disconnected with `Close("fell behind at time t: ...")`.
    * `max_frame_size`: largest frame sent; bigger tables are split into several data
      messages of the same time. Subscribers accepting less are refused at handshake.
    * `hello_timeout`: a connection that does not complete the handshake in time is closed.
    * `close_timeout`: how long a closing connection may take to flush before it is
      aborted (a stalled peer cannot hold resources forever).
    * `history`: a `HistoryProvider` (e.g. `InMemoryHistory()`) enables view-mode
      subscriptions (snapshot, then updates, resumable). The rows are then *updates* and
      must carry an int64 `_diff` column.

    `send`, `update_lower`, `advance_lower` and `close` are thread-safe and never block on
    subscribers. Use `start()` (or a `with` block) before subscribers can connect.

    >>> pub = Publisher("doc").start()
    >>> host, port = pub.address
    >>> host, port > 0, pub.lower, pub.upper
    ('127.0.0.1', True, Antichain([0]), Antichain([]))
    >>> pub.send(3, pa.table({"x": [1]})); pub.upper
    Antichain([3])
    >>> pub.close()
    """

    def __init__(
        self,
        name: str,
        partition: int = 0,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        lower: Iterable[Any] = (0,),
        schema: pa.Schema | None = None,
        max_queue: int = 1024,
        max_queue_bytes: int = 256 * 1024 * 1024,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        hello_timeout: float = 10.0,
        close_timeout: float = 5.0,
        history: HistoryProvider | None = None,
    ) -> None:
        if max_queue < 1 or max_queue_bytes < 1:
            raise ConfigError(
                f"Publisher(max_queue={max_queue}, max_queue_bytes={max_queue_bytes}): both "
                "must be >= 1 (a subscriber may lag by that many messages and bytes)"
            )
        if max_frame_size < 64 * 1024:
            raise ConfigError(
                f"Publisher(max_frame_size={max_frame_size}): too small; use at least 65536"
            )
        self.name = name
        self.partition = int(partition)
        self._host, self._port = host, port
        # Parameters stored as attributes: alike only in form to other constructors.
        self._max_queue = max_queue
        self._max_queue_bytes = max_queue_bytes
        self._max_frame_size = max_frame_size
        self._hello_timeout = hello_timeout
        self._close_timeout = close_timeout
        self._schema = schema
        self._history = history

        initial = [normalize_time(t) for t in lower]
        self._shape = time_shape(initial[0]) if initial else None
        for t in initial:
            self._check_shape(t)
        self._lower: MutableAntichain[Any] = MutableAntichain.from_antichain(Antichain(initial))
        self._upper = UpperFrontier()

        self._lock = threading.Lock()
        self._log: list[_Entry] = []
        self._base = 0  # sequence number of self._log[0]
        self._bytes_total = 0
        self._subs: set[_Sub] = set()
        self._closed = False
        self._close_reason = "publisher closed"
        self._notify_pending = False
        self._disconnections: deque[Disconnection] = deque(maxlen=1000)

        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: asyncio.base_events.Server | None = None
        self._address: tuple[str, int] | None = None
        self._handlers: set[asyncio.Task[None]] = set()
        self._transports: set[asyncio.BaseTransport] = set()
        self._hello_tasks: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Publisher:
        """Bind and start serving in a background thread; returns `self`.

        >>> pub = Publisher("doc").start(); pub.start() is pub; pub.close()
        True
        """
        if self._thread is not None:
            return self
        if self._closed:
            raise StateError(f"publisher {self.name!r} is closed; start a new Publisher")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(
            target=self._run_loop,
            args=(loop,),
            name=f"sealtime-publisher-{self.name}-{self.partition}",
            daemon=True,
        )
        thread.start()
        try:
            server = asyncio.run_coroutine_threadsafe(
                asyncio.start_server(self._handle, self._host, self._port), loop
            ).result(timeout=30)
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            raise
        self._loop, self._thread, self._server = loop, thread, server
        sockname = server.sockets[0].getsockname()
        self._address = (sockname[0], sockname[1])
        return self

    @staticmethod
    def _run_loop(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_forever()
        finally:
            loop.close()

    def close(self, reason: str = "publisher closed") -> None:
        """Send `Close(reason)` after everything already published, then stop serving.

        Waits up to `close_timeout` for subscribers to receive their backlog; connections
        still open after that are aborted. Idempotent.

        >>> pub = Publisher("doc").start(); pub.close(); pub.close()
        """
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_reason = reason
            if self._subs:
                frame = encode_message(Close(reason))
                self._append(_Entry(frame, None, is_close=True))
                self._after_append()
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        # Best effort: the loop is stopped below anyway.
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._shutdown(), loop).result(
                timeout=self._close_timeout + _LINGER + 10
            )
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)

    def __enter__(self) -> Publisher:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ properties

    @property
    def address(self) -> tuple[str, int]:
        """`(host, port)` the server listens on (after `start`)."""
        if self._address is None:
            raise StateError(f"publisher {self.name!r} is not started: call start() first")
        return self._address

    @property
    def lower(self) -> Antichain[Any]:
        """The current lower frontier (a copy)."""
        with self._lock:
            return self._lower.frontier()

    @property
    def upper(self) -> Antichain[Any]:
        """The current upper frontier: maximal times of the data published so far."""
        with self._lock:
            return self._upper.antichain()

    @property
    def subscriber_count(self) -> int:
        """Number of subscribers currently registered (handshake done, not cut off)."""
        with self._lock:
            return len(self._subs)

    @property
    def queue_depths(self) -> dict[str, int]:
        """Per registered subscriber (by peer address): messages published but not yet
        taken by its writer — its backlog against `max_queue` (read-only, for metrics)."""
        with self._lock:
            head = self._base + len(self._log)
            return {str(sub.peer): head - sub.cursor for sub in self._subs}

    @property
    def disconnections(self) -> list[Disconnection]:
        """Recent subscriber connections that ended, oldest first, with their reasons."""
        with self._lock:
            return list(self._disconnections)

    @property
    def schema(self) -> pa.Schema | None:
        """The pinned schema of the published rows, if known yet."""
        return self._schema

    # ------------------------------------------------------------------ publishing

    def send(self, time: Any, table: pa.Table | pa.RecordBatch) -> None:
        """Publish rows at `time` (which must not be complete, i.e. ≥ the lower frontier).

        May be called several times for the same time while it is open; the rows of all
        calls form the epoch. Never blocks on subscribers.

        >>> pub = Publisher("doc", lower=[5])
        >>> pub.send(4, pa.table({"x": [1]}))
        Traceback (most recent call last):
        ...
        sealtime.progress.capability.DowngradeError: cannot send at time 4: it is complete (lower frontier Antichain([5]))
        """
        t = normalize_time(time)
        self._check_shape(t)
        if isinstance(table, pa.RecordBatch):
            table = pa.Table.from_batches([table])
        elif not isinstance(table, pa.Table):
            raise TypeError(f"send() needs a pyarrow Table or RecordBatch, not {type(table)}")
        if self._history is not None and (
            DIFF not in table.column_names or table.schema.field(DIFF).type != pa.int64()
        ):
            raise SchemaError(
                f"a publisher with history publishes updates: add an int64 {DIFF!r} column"
            )
        schema = self._schema
        if schema is None:
            self._schema = schema = table.schema
        elif not table.schema.equals(schema, check_metadata=False):
            raise SchemaError(
                f"schema mismatch for publisher {self.name!r}:\n"
                f"expected {schema}\ngot {table.schema}"
            )
        frames = self._data_frames(t, table) if self._subs else None
        with self._lock:
            if self._closed:
                raise StateError(f"publisher {self.name!r} is closed; start a new Publisher")
            if not self._lower.less_equal(t):
                raise DowngradeError(
                    f"cannot send at time {t!r}: it is complete "
                    f"(lower frontier {self._lower.frontier()!r})"
                )
            self._upper.insert(t)
            if self._history is not None:
                self._history.append(t, table)
            if not self._subs:
                return
            if frames is None:  # a subscriber registered meanwhile
                frames = self._data_frames(t, table)
            for frame in frames:
                self._append(_Entry(frame, t))
            self._after_append()

    def update_lower(self, changes: Iterable[tuple[Any, int]]) -> list[tuple[Any, int]]:
        """Apply `(time, diff)` changes to the lower frontier's counts (capabilities).

        Returns the changes of the frontier itself (what subscribers are sent). The
        frontier may only advance; a change that would move it back raises `DowngradeError` and
        is not applied.

        >>> pub = Publisher("doc", lower=[0])
        >>> pub.update_lower([(3, 1), (0, -1)])
        [(0, -1), (3, 1)]
        >>> pub.update_lower([(1, 1)])
        Traceback (most recent call last):
        ...
        sealtime.progress.capability.DowngradeError: the lower frontier may only advance: Antichain([3]) -> Antichain([1])
        """
        batch = [(normalize_time(t), int(d)) for t, d in changes]
        for t, _ in batch:
            self._check_shape(t)
        with self._lock:
            if self._closed:
                raise StateError(f"publisher {self.name!r} is closed; start a new Publisher")
            old = self._lower.frontier()
            delta = self._lower.update_iter(batch)
            if delta:
                new = self._lower.frontier()
                if not old.less_equal_antichain(new):
                    self._lower.update_iter([(t, -d) for t, d in batch])
                    raise DowngradeError(f"the lower frontier may only advance: {old!r} -> {new!r}")
                self._publish_lower(delta, new)
            return delta

    def advance_lower(self, frontier: Iterable[Any]) -> list[tuple[Any, int]]:
        """Set the lower frontier to `frontier` (must be ≥ the current one).

        An empty frontier means the stream is finished. Returns the frontier changes.

        >>> pub = Publisher("doc", lower=[0])
        >>> pub.advance_lower([4]), pub.advance_lower([4]), pub.advance_lower([])
        ([(0, -1), (4, 1)], [], [(4, -1)])
        """
        new = Antichain(normalize_time(t) for t in frontier)
        for t in new:
            self._check_shape(t)
        with self._lock:
            if self._closed:
                raise StateError(f"publisher {self.name!r} is closed; start a new Publisher")
            old = self._lower.frontier()
            if new == old:
                return []
            if not old.less_equal_antichain(new):
                raise DowngradeError(f"the lower frontier may only advance: {old!r} -> {new!r}")
            changes = [(t, -c) for t, c in self._lower.updates()]
            changes.extend((t, 1) for t in new)
            delta = self._lower.update_iter(changes)
            self._publish_lower(delta, new)
            return delta

    # ------------------------------------------------------------------ internals (any thread)

    def _check_shape(self, t: Any) -> None:
        shape = time_shape(t)
        if self._shape is None:
            self._shape = shape
        elif shape != self._shape:
            raise TypeError(
                f"time {t!r} has another shape than this publisher's times "
                "(ints and Products, or Products of different nesting, cannot be mixed)"
            )

    def _data_frames(self, t: Any, table: pa.Table) -> list[bytes]:
        payload = table_to_ipc(table)
        if len(payload) + _HEADER_SLACK <= self._max_frame_size:
            header = {"k": "data", "t": encode_time(t), "p": self.partition, "n": table.num_rows}
            return [encode_frame(header, payload)]
        if table.num_rows <= 1:
            raise ConfigError(
                f"Publisher(max_frame_size={self._max_frame_size}): a single row of "
                f"{len(payload)} bytes does not fit in a frame; raise max_frame_size"
            )
        half = table.num_rows // 2
        return self._data_frames(t, table.slice(0, half)) + self._data_frames(t, table.slice(half))

    def _publish_lower(self, delta: list[tuple[Any, int]], new: Antichain[Any]) -> None:
        # Called with the lock held.
        if not self._subs:
            return
        elements = new.elements()
        label = elements[0] if len(elements) == 1 else list(elements)
        self._append(_Entry(encode_message(LowerFrontierUpdate(tuple(delta))), label))
        self._after_append()

    def _append(self, entry: _Entry) -> None:
        # Number the frame by its log position: a subscriber's frames are a contiguous
        # range of the log, so their numbers are consecutive (duplicate/gap detection).
        entry.frame = with_seq(entry.frame, self._base + len(self._log))
        self._log.append(entry)
        self._bytes_total += len(entry.frame)

    def _after_append(self) -> None:
        # Called with the lock held: enforce the backlog limits, trim the log, wake writers.
        head = self._base + len(self._log)
        low = head
        cut: list[_Sub] = []
        for sub in self._subs:
            if (
                head - sub.cursor > self._max_queue
                or self._bytes_total - sub.bytes_pos > self._max_queue_bytes
            ):
                cut.append(sub)
            elif sub.cursor < low:
                low = sub.cursor
        for sub in cut:
            self._subs.discard(sub)
            oldest = self._log[sub.cursor - self._base].time
            reason = (
                f"fell behind at time {oldest!r}: {head - sub.cursor} messages "
                f"({self._bytes_total - sub.bytes_pos} bytes) waiting "
                f"(max_queue={self._max_queue}, max_queue_bytes={self._max_queue_bytes})"
            )
            sub.set_reason(reason, send_close=True)
            self._disconnections.append(Disconnection(sub.peer, reason))
            if self._loop is not None:
                self._loop.call_soon_threadsafe(self._cancel_writer, sub)
        drop = low - self._base
        if drop and (drop >= 64 or drop == len(self._log)):
            del self._log[:drop]
            self._base = low
        if self._loop is not None and not self._notify_pending and self._subs:
            self._notify_pending = True
            self._loop.call_soon_threadsafe(self._notify)

    # ------------------------------------------------------------------ loop thread

    def _notify(self) -> None:
        with self._lock:
            self._notify_pending = False
            subs = list(self._subs)
        for sub in subs:
            sub.wake.set()

    @staticmethod
    def _cancel_writer(sub: _Sub) -> None:
        task = sub.write_task
        if task is not None and not task.done():
            task.cancel()

    def _take(self, sub: _Sub) -> tuple[list[bytes], bool] | None:
        with self._lock:
            if sub not in self._subs:
                return None
            log, start = self._log, sub.cursor - self._base
            frames: list[bytes] = []
            size = 0
            last = False
            for i in range(start, len(log)):
                entry = log[i]
                frames.append(entry.frame)
                size += len(entry.frame)
                if entry.is_close:
                    last = True
                    break
                if size >= _WRITE_BATCH:
                    break
            sub.cursor += len(frames)
            sub.bytes_pos += size
            return frames, last

    def _record(self, peer: Any, reason: str) -> None:
        with self._lock:
            self._disconnections.append(Disconnection(peer, reason))

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        transport = writer.transport
        self._transports.add(transport)
        peer = writer.get_extra_info("peername")
        decoder = FrameDecoder(max_frame_size=_CLIENT_MAX_FRAME, max_header_size=_CLIENT_MAX_FRAME)
        sub: _Sub | None = None
        reason, send_close, recorded = "connection ended", False, False
        try:
            hello_task = asyncio.ensure_future(self._read_hello(reader, decoder))
            self._hello_tasks.add(hello_task)
            try:
                done, _ = await asyncio.wait({hello_task}, timeout=self._hello_timeout)
            finally:
                self._hello_tasks.discard(hello_task)
            if not done:
                hello_task.cancel()
                reason, send_close = (
                    f"no hello within {self._hello_timeout:g} s",
                    True,
                )
                return
            if hello_task.cancelled():
                reason, send_close = self._close_reason, True
                return
            exc = hello_task.exception()
            if isinstance(exc, ProtocolError):
                reason, send_close = f"protocol error: {exc}", True
                return
            if exc is not None:
                reason = f"connection lost during handshake: {_describe(exc)}"
                return
            hello = hello_task.result()
            problem = self._check_hello(hello)
            if problem is not None:
                reason, send_close = problem, True
                return
            try:
                sub = self._register(peer, hello)
            except _Refused as refused:
                reason, send_close = str(refused), True
                return
            except Exception as exc:  # e.g. a history provider failing: refuse, keep serving
                reason, send_close = f"cannot serve this subscriber: {_describe(exc)}", True
                return
            if sub is None:
                reason, send_close = self._close_reason, True
                return
            read_task = asyncio.ensure_future(self._read_loop(reader, decoder, sub))
            write_task = asyncio.ensure_future(self._write_loop(sub, writer))
            sub.write_task = write_task
            await asyncio.wait({read_task, write_task}, return_when=asyncio.FIRST_COMPLETED)
            for t in (read_task, write_task):
                if not t.done():
                    t.cancel()
            await asyncio.gather(read_task, write_task, return_exceptions=True)
            for t in (write_task, read_task):
                if t.cancelled():
                    continue
                exc = t.exception()
                if isinstance(exc, ProtocolError):
                    sub.set_reason(f"protocol error: {exc}", send_close=True)
                elif exc is not None:
                    sub.set_reason(f"connection lost: {_describe(exc)}", send_close=False)
            sub.set_reason("connection ended", send_close=False)
            reason, send_close = sub.reason or reason, sub.send_close
            recorded = reason.startswith("fell behind")  # recorded when it was cut
        finally:
            if sub is not None:
                with self._lock:
                    self._subs.discard(sub)
            if not recorded:
                self._record(peer, reason)
            try:
                await self._finish(reader, writer, reason if send_close else None)
            finally:
                self._transports.discard(transport)
                self._handlers.discard(task)

    async def _read_hello(self, reader: asyncio.StreamReader, decoder: FrameDecoder) -> Hello:
        while True:
            msg = decoder.next_message()
            if msg is not None:
                if isinstance(msg, Hello):
                    return msg
                if isinstance(msg, Close):
                    raise EOFError(f"subscriber closed before the handshake: {msg.reason}")
                raise ProtocolError(f"expected a hello, got {type(msg).__name__}")
            data = await reader.read(65536)
            if not data:
                raise EOFError("subscriber disconnected")
            decoder.feed(data)

    def _check_hello(self, hello: Hello) -> str | None:
        if hello.version != PROTOCOL_VERSION:
            return (
                f"protocol version mismatch: publisher speaks version {PROTOCOL_VERSION}, "
                f"subscriber version {hello.version}"
            )
        if hello.role != "subscriber":
            return f"protocol error: expected a subscriber hello, got role {hello.role!r}"
        if hello.mode == "view" and self._history is None:
            return "mode 'view' is not served by this publisher (it keeps no history)"
        if hello.mode not in ("stream", "view"):
            return f"mode {hello.mode!r} is not served by this publisher"
        if (
            hello.resume is not None
            and self._shape is not None  # None: a finished stream that never had a time
            and any(time_shape(t) != self._shape for t in hello.resume)
        ):
            return f"resume frontier {hello.resume!r} does not match this stream's times"
        if hello.max_frame < self._max_frame_size:
            return (
                f"subscriber accepts frames up to {hello.max_frame} bytes but this publisher "
                f"sends frames up to max_frame_size={self._max_frame_size}"
            )
        return None

    def _register(self, peer: Any, hello: Hello) -> _Sub | None:
        """Snapshot + log position of a new subscriber, atomically w.r.t. publishing."""
        with self._lock:
            if self._closed:
                return None
            server_hello = Hello(
                role="publisher",
                name=self.name,
                partition=self.partition,
                mode=hello.mode,
                max_frame=self._max_frame_size,
                schema=self._schema,
            )
            lower = self._lower.frontier()
            snapshot = InitialFrontierSnapshot(lower, self._upper.antichain())
            prefix = [encode_message(server_hello), encode_message(snapshot)]
            if hello.mode == "view":
                prefix.extend(self._view_prefix(lower, hello.resume))
            head = self._base + len(self._log)
            # The prefix takes the numbers just below the log position where this
            # subscriber starts, so its whole connection is numbered consecutively.
            prefix = [with_seq(f, head - len(prefix) + i) for i, f in enumerate(prefix)]
            sub = _Sub(peer, head, self._bytes_total, prefix)
            self._subs.add(sub)
            return sub

    def _view_prefix(self, lower: Antichain[Any], resume: Antichain[Any] | None) -> list[bytes]:
        # Called with the lock held. Snapshot as of the lower frontier (or nothing when
        # resuming), then every recorded update at a time ≥ the start frontier; what is
        # published from now on follows through the log.
        history = self._history
        assert history is not None
        since = history.since()
        frames = []
        if resume is None:
            start = lower
            rows = history.snapshot(lower)
            if rows.num_rows == 0 and self._schema is not None:
                rows = self._schema.empty_table()
            frames.append(encode_message(ViewSnapshot(lower, rows)))
        else:
            if since is not None and not since.less_equal_antichain(resume):
                raise _Refused(
                    f"cannot resume from {resume!r}: history is compacted up to since {since!r}"
                )
            if not resume.less_equal_antichain(lower):
                raise _Refused(
                    f"cannot resume from {resume!r}: beyond the lower frontier {lower!r}"
                )
            start = resume
        for t, table in history.updates_from(start):
            frames.extend(self._data_frames(t, table))
        frames.append(encode_message(LowerFrontierUpdate(())))  # sync: replay complete
        return frames

    async def _read_loop(
        self, reader: asyncio.StreamReader, decoder: FrameDecoder, sub: _Sub
    ) -> None:
        while True:
            msg = decoder.next_message()
            if msg is not None:
                if isinstance(msg, Close):
                    sub.set_reason(f"subscriber closed: {msg.reason}", send_close=False)
                    return
                raise ProtocolError(f"unexpected {type(msg).__name__} after the handshake")
            data = await reader.read(65536)
            if not data:
                sub.set_reason("subscriber disconnected", send_close=False)
                return
            decoder.feed(data)

    async def _write_loop(self, sub: _Sub, writer: asyncio.StreamWriter) -> None:
        if sub.prefix:
            writer.writelines(sub.prefix)
            sub.prefix = None
            await writer.drain()
        while True:
            sub.wake.clear()
            taken = self._take(sub)
            if taken is None:
                return  # cut off: the reason is set
            frames, last = taken
            if frames:
                # One write (one syscall) per batch: fewer GIL round trips for this thread.
                writer.write(frames[0] if len(frames) == 1 else b"".join(frames))
                await writer.drain()
                if last:
                    sub.set_reason(self._close_reason, send_close=False)
                    return
            else:
                await sub.wake.wait()

    async def _finish(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, close_reason: str | None
    ) -> None:
        """Close a connection: optional Close frame, lingering close, abort on timeout."""
        transport = writer.transport
        try:
            if close_reason is not None and not transport.is_closing():
                transport.write(encode_message(Close(close_reason)))
                if transport.can_write_eof():
                    transport.write_eof()
                # Lingering close: closing with unread input would send a RST that can
                # destroy our Close frame before the peer reads it.
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(_discard_until_eof(reader), _LINGER)
            transport.close()
            await asyncio.wait_for(writer.wait_closed(), self._close_timeout)
        except Exception:  # timeouts, resets: the connection goes anyway
            transport.abort()

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._hello_tasks):
            task.cancel()
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            sub.wake.set()
        handlers = set(self._handlers)
        if handlers:
            await asyncio.wait(handlers, timeout=self._close_timeout + _LINGER)
        for transport in list(self._transports):
            transport.abort()
        handlers = {t for t in self._handlers if not t.done()}
        if handlers:
            await asyncio.wait(handlers, timeout=2)
        for task in self._handlers:
            task.cancel()


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def _discard_until_eof(reader: asyncio.StreamReader) -> None:
    while await reader.read(65536):
        pass
