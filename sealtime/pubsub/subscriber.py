"""The subscriber client: a blocking iterator of events over one or more partitions.

Needs only the standard library, pyarrow, msgpack and `sealtime.time` — no Spark, no
Java, no event loop. `subscribe_stream(address)` follows one publisher partition;
`subscribe_group([addresses])` follows several partitions of one stream as one stream.

**Stream mode, epoch atomicity (Strymon).** The publisher keeps no history. On joining,
the subscriber receives the publisher's `InitialFrontierSnapshot{lower, upper}`, where
`upper` is the maximal antichain of the times of all data sent before it joined. With
`filter=True` (the default) the subscriber **drops every data message at a time t with
t ≤ some element of upper** — those epochs may have been partly sent before it joined —
and delivers every other time completely, because all of that time's rows are sent after
the snapshot. The payload of a dropped message is skipped unread (only its header is
decoded). A group subscription merges the partitions' snapshots: the upper frontiers as
the maximal antichain of their union, the lower frontiers as the minimal antichain of
their union (maintained as a `MutableAntichain` over the partitions' frontier changes).

**Delivery.** With `atomic=True` (the default) rows are buffered per time and a time is
delivered as one `Epoch(time, table)` — all of its rows, from every partition — as soon
as the (merged) lower frontier passes it, followed by `Progress(lower)`. Epochs released
together come in an order compatible with the partial order. With `atomic=False` every
data message is yielded as it arrives as `Data(time, table, partition)` (still filtered);
the caller then decides completeness from `Progress` events. The first event is always
`Progress(initial lower)`; the last is `Closed(reason)`.

>>> import pyarrow as pa
>>> from sealtime.pubsub.publisher import Publisher
>>> with Publisher("doc", lower=[0]).start() as pub:
...     pub.send(1, pa.table({"x": [1]}))          # sent before the subscriber joins
...     with subscribe_stream(pub.address, timeout=10) as sub:
...         pub.send(1, pa.table({"x": [2]}))      # epoch 1 is partial for sub: dropped
...         pub.send(2, pa.table({"x": [3]}))
...         _ = pub.advance_lower([3])
...         events = [sub.next_event(timeout=10) for _ in range(3)]
>>> sub.initial_upper, [type(e).__name__ for e in events]
(Antichain([1]), ['Progress', 'Epoch', 'Progress'])
>>> events[1].time, events[1].table.column("x").to_pylist(), sub.filtered_messages
(2, [3], 1)
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import time as _wallclock
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sealtime.errors import ConfigError, NotFoundError, SealtimeError
from sealtime.net import Address, parse_address
from sealtime.pubsub.frontier import covered_by, merge_uppers
from sealtime.pubsub.protocol import (
    DEFAULT_MAX_FRAME_SIZE,
    PROTOCOL_VERSION,
    Close,
    DataMessage,
    FrameDecoder,
    Hello,
    InitialFrontierSnapshot,
    LowerFrontierUpdate,
    Message,
    ProtocolError,
    ViewSnapshot,
    decode_time,
    encode_message,
    normalize_time,
)
from sealtime.time import Antichain, MutableAntichain, describe_frontier, sorted_times

__all__ = [
    "Closed",
    "Data",
    "Epoch",
    "Event",
    "Progress",
    "Snapshot",
    "SubscribeError",
    "Subscription",
    "subscribe",
    "subscribe_group",
    "subscribe_stream",
    "subscribe_view",
]

_RECV_SIZE = 1024 * 1024


# The events a subscription yields. `Snapshot` and `Closed` have the shape of the wire's
# `ViewSnapshot` and `Close` on purpose: events are the user's types, messages the
# protocol's, and each may change without the other.


@dataclass(frozen=True)
class Data:
    """Rows of one data message (only with `atomic=False`): maybe part of an epoch.

    >>> Data(3, pa.table({"x": [1]})).partition
    0
    """

    time: Any
    table: pa.Table
    partition: int = 0


@dataclass(frozen=True)
class Epoch:
    """All rows of one complete time, from every partition (`atomic=True`).

    >>> Epoch(3, pa.table({"x": [1, 2]})).table.num_rows
    2
    """

    time: Any
    table: pa.Table


@dataclass(frozen=True)
class Progress:
    """The (merged) lower frontier advanced: times not ≥ `lower` are complete.

    >>> Progress(Antichain([4])).lower.less_equal(3)
    False
    >>> from sealtime.time import MIN_TIME
    >>> Progress(Antichain([MIN_TIME])), Progress(Antichain())
    (Progress(no time sealed yet), Progress(all times sealed))
    """

    lower: Antichain[Any]

    def __repr__(self) -> str:
        # The initial lower frontier is the internal minimum time: say it in words.
        return f"Progress({describe_frontier(self.lower)})"


@dataclass(frozen=True)
class Snapshot:
    """View mode: the accumulated contents (rows with `_diff`) of all times not ≥ `as_of`.

    >>> Snapshot(Antichain([5]), pa.Table.from_arrays([pa.array([1])], names=["_diff"])).as_of
    Antichain([5])
    """

    as_of: Antichain[Any]
    table: pa.Table


@dataclass(frozen=True)
class Closed:
    """The subscription ended (always the last event).

    >>> Closed("publisher closed").reason
    'publisher closed'
    """

    reason: str


Event = Data | Epoch | Progress | Snapshot | Closed


class SubscribeError(SealtimeError, ConnectionError):
    """Connecting or the handshake failed (refused, timed out, version mismatch, ...).

    >>> isinstance(SubscribeError("x"), ConnectionError)
    True
    """


class _Conn:
    __slots__ = (
        "sock",
        "addr",
        "decoder",
        "hello",
        "snapshot",
        "view",
        "lower",
        "done",
        "label",
        "seq",
        "duplicates",
    )

    def __init__(self, sock: socket.socket, addr: tuple[str, int], decoder: FrameDecoder) -> None:
        self.sock = sock
        self.addr = addr
        self.decoder = decoder
        self.seq: int | None = None  # sequence number of the last frame taken
        self.duplicates = 0
        self.hello: Hello | None = None
        self.snapshot: InitialFrontierSnapshot | None = None
        self.view: ViewSnapshot | None = None
        self.lower: MutableAntichain[Any] = MutableAntichain()
        self.done = False
        self.label = f"{addr[0]}:{addr[1]}"


class Subscription:
    """A live subscription to one or more partitions of a published stream.

    Created by `subscribe_stream` / `subscribe_group` (which connect and complete the
    handshake before returning). Iterate it — or call `next_event(timeout)` — to receive
    events; iteration ends after `Closed`. Use it as a context manager or call `close()`.

    Attributes after construction: `name`, `partitions`, `schema` (if the publisher knew
    it), `initial_lower` and `initial_upper` (the merged snapshot), `lower` (the merged
    lower frontier of the last `Progress` event returned), `filtered_messages` /
    `filtered_bytes`.
    """

    def __init__(
        self,
        addresses: Sequence[Address],
        *,
        filter: bool = True,
        atomic: bool = True,
        timeout: float | None = 10.0,
        idle_timeout: float | None = None,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        mode: str = "stream",
        resume: Iterable[Any] | None = None,
    ) -> None:
        if not addresses:
            raise ConfigError("subscribe to at least one address (none were given)")
        if mode not in ("stream", "view"):
            raise ConfigError(f"mode must be 'stream' or 'view', not {mode!r}")
        if mode == "view":
            if len(addresses) != 1:
                raise ConfigError("view subscriptions are per partition (one address)")
            filter, atomic = False, True  # history makes every epoch whole
        elif resume is not None:
            raise ConfigError("resuming is for view subscriptions (stream mode keeps no history)")
        self._mode = mode
        self._resume = None if resume is None else Antichain(normalize_time(t) for t in resume)
        self._awaiting_sync = mode == "view"  # first Progress after the history replay
        self._filter = filter
        self._atomic = atomic
        self._idle_timeout = idle_timeout
        self._events: deque[Event] = deque()
        self._pending: dict[Any, list[pa.Table]] = {}
        self._closed = False
        self._delivered_closed = False
        self.reason: str | None = None
        self._selector = selectors.DefaultSelector()
        self._conns: list[_Conn] = []
        self._buf = bytearray(_RECV_SIZE)
        deadline = None if timeout is None else _wallclock.monotonic() + timeout
        try:
            for address in addresses:
                self._conns.append(self._connect(parse_address(address), deadline, max_frame_size))
            for conn in self._conns:
                self._handshake(conn, deadline)
            self._check_group()
        except BaseException:
            self._close_sockets()
            raise
        snaps = [c.snapshot for c in self._conns if c.snapshot is not None]
        self.initial_upper: Antichain[Any] = merge_uppers(s.upper for s in snaps)
        self._upper_elements = list(self.initial_upper.elements())
        self._merged: MutableAntichain[Any] = MutableAntichain()
        for conn, snap in zip(self._conns, snaps):
            conn.lower.update_iter((t, 1) for t in snap.lower)
            self._merged.update_iter((t, 1) for t in snap.lower)
        self.initial_lower: Antichain[Any] = self._merged.frontier()
        self.lower: Antichain[Any] = self.initial_lower
        first = self._conns[0].hello
        assert first is not None
        self.name: str = first.name
        self.partitions: list[int] = [c.hello.partition for c in self._conns if c.hello]
        self.schema: pa.Schema | None = next(
            (c.hello.schema for c in self._conns if c.hello and c.hello.schema is not None), None
        )
        self._filtering = self._filter
        for conn in self._conns:
            conn.sock.setblocking(False)
            self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        view = self._conns[0].view
        if view is not None:
            self._events.append(Snapshot(view.as_of, view.rows))
        if not self._awaiting_sync:
            self._events.append(Progress(self.lower))
        for conn in self._conns:  # frames received together with the snapshot
            self._drain(conn)

    # ------------------------------------------------------------------ connecting

    @staticmethod
    def _remaining(deadline: float | None) -> float | None:
        if deadline is None:
            return None
        left = deadline - _wallclock.monotonic()
        if left <= 0:
            raise SubscribeError("timed out connecting to the publisher")
        return left

    def _connect(self, addr: tuple[str, int], deadline: float | None, max_frame: int) -> _Conn:
        try:
            sock = socket.create_connection(addr, timeout=self._remaining(deadline))
        except OSError as exc:
            raise SubscribeError(f"cannot connect to {addr[0]}:{addr[1]}: {exc}") from exc
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Conn(sock, addr, FrameDecoder(max_frame_size=max_frame))
        conn.decoder.check = lambda header: self._check_seq(conn, header)
        conn.decoder.skip = self._skip
        try:
            hello = Hello(
                role="subscriber", max_frame=max_frame, mode=self._mode, resume=self._resume
            )
            sock.sendall(encode_message(hello))
        except OSError as exc:
            sock.close()
            raise SubscribeError(f"cannot send hello to {conn.label}: {exc}") from exc
        return conn

    def _handshake(self, conn: _Conn, deadline: float | None) -> None:
        """Read the publisher's Hello and InitialFrontierSnapshot (+ ViewSnapshot), no more."""
        want_view = self._mode == "view" and self._resume is None
        while conn.snapshot is None or (want_view and conn.view is None):
            try:
                msg = conn.decoder.next_message()
            except ProtocolError as exc:
                raise SubscribeError(f"{conn.label}: protocol error: {exc}") from None
            if msg is None:
                conn.sock.settimeout(self._remaining(deadline))
                try:
                    data = conn.sock.recv(65536)
                except TimeoutError:
                    raise SubscribeError(
                        f"{conn.label}: timed out waiting for the handshake"
                    ) from None
                except OSError as exc:
                    raise SubscribeError(f"{conn.label}: connection lost: {exc}") from None
                if not data:
                    raise SubscribeError(f"{conn.label}: publisher closed the connection")
                try:
                    conn.decoder.feed(data)
                except ProtocolError as exc:
                    raise SubscribeError(f"{conn.label}: protocol error: {exc}") from None
            elif isinstance(msg, Close):
                raise SubscribeError(f"{conn.label}: publisher refused: {msg.reason}")
            elif conn.hello is None:
                if not isinstance(msg, Hello) or msg.role != "publisher":
                    raise SubscribeError(
                        f"{conn.label}: expected a publisher hello, got {msg!r:.100}"
                    )
                if msg.version != PROTOCOL_VERSION:
                    raise SubscribeError(
                        f"{conn.label}: protocol version mismatch: publisher speaks "
                        f"{msg.version}, this subscriber {PROTOCOL_VERSION}"
                    )
                conn.hello = msg
            elif isinstance(msg, InitialFrontierSnapshot) and conn.snapshot is None:
                conn.snapshot = msg
            elif isinstance(msg, ViewSnapshot) and want_view and conn.snapshot is not None:
                conn.view = msg
            else:
                raise SubscribeError(
                    f"{conn.label}: expected the frontier snapshot, got {msg!r:.100}"
                )

    def _check_group(self) -> None:
        if len(self._conns) < 2:
            return
        hellos = [c.hello for c in self._conns if c.hello is not None]
        names = {h.name for h in hellos}
        if len(names) > 1:
            raise ConfigError(
                f"a group subscription needs partitions of one stream, got {sorted(names)}"
            )
        parts = [h.partition for h in hellos]
        if len(set(parts)) != len(parts):
            raise ConfigError(f"duplicate partitions in a group subscription: {parts}")

    # ------------------------------------------------------------------ receiving

    @staticmethod
    def _check_seq(conn: _Conn, header: dict[str, Any]) -> bool:
        # Frames are numbered consecutively per connection: drop duplicates, refuse gaps.
        seq = header.get("s")
        if type(seq) is int:
            if conn.seq is not None:
                if seq <= conn.seq:
                    conn.duplicates += 1
                    return True
                if seq != conn.seq + 1:
                    raise ProtocolError(
                        f"gap in the frame sequence: frame {seq} after frame {conn.seq}"
                    )
            conn.seq = seq
        return False

    def _skip(self, header: dict[str, Any]) -> bool:
        # Strymon's filter: drop data at t ≤ some element of the (merged) upper snapshot.
        if not getattr(self, "_filtering", False) or header["k"] != "data":
            return False
        if not self._upper_elements:
            return False
        return covered_by(self._upper_elements, decode_time(header.get("t")))

    @property
    def filtered_messages(self) -> int:
        """Data messages dropped by the upper-snapshot filter (payloads never decoded)."""
        return sum(c.decoder.skipped_frames for c in self._conns)

    @property
    def duplicate_frames(self) -> int:
        """Frames received twice (same sequence number) and dropped."""
        return sum(c.duplicates for c in self._conns)

    @property
    def filtered_bytes(self) -> int:
        """Payload bytes skipped by the filter."""
        return sum(c.decoder.skipped_bytes for c in self._conns)

    @property
    def closed(self) -> bool:
        """True once the subscription ended (`Closed` queued or `close()` called)."""
        return self._closed

    def next_event(self, timeout: float | None = None) -> Event | None:
        """The next event, waiting up to `timeout` seconds (None: forever).

        Returns None on timeout, and after the `Closed` event has been returned.
        """
        deadline = None if timeout is None else _wallclock.monotonic() + timeout
        while not self._events:
            if self._closed:
                return None
            left = None if deadline is None else max(0.0, deadline - _wallclock.monotonic())
            self._poll(left)
            if not self._events and deadline is not None and _wallclock.monotonic() >= deadline:
                return None
        event = self._events.popleft()
        if isinstance(event, Progress):
            self.lower = event.lower
        elif isinstance(event, Closed):
            self._delivered_closed = True
        return event

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        if self._delivered_closed or (self._closed and not self._events):
            raise StopIteration
        event = self.next_event(self._idle_timeout)
        if event is None:
            if self._closed:
                raise StopIteration
            raise TimeoutError(f"no event within idle_timeout={self._idle_timeout} s")
        return event

    def _poll(self, timeout: float | None) -> None:
        for key, _ in self._selector.select(timeout):
            conn: _Conn = key.data
            if conn.done or self._closed:
                continue
            try:
                n = conn.sock.recv_into(self._buf)
            except (BlockingIOError, InterruptedError):
                continue
            except OSError as exc:
                self._lost(conn, f"connection lost: {exc}")
                continue
            if n == 0:
                cut = " in the middle of a frame" if conn.decoder.mid_frame else ""
                self._lost(conn, f"publisher disconnected without a reason{cut}")
                continue
            try:
                with memoryview(self._buf) as view:
                    conn.decoder.feed(view[:n])
            except ProtocolError as exc:
                self._fail(conn, f"protocol error: {exc}")
                continue
            self._drain(conn)

    def _drain(self, conn: _Conn) -> None:
        while not conn.done and not self._closed:
            try:
                msg = conn.decoder.next_message()
                if msg is None:
                    return
                self._on_message(conn, msg)
            except ProtocolError as exc:
                self._fail(conn, f"protocol error: {exc}")

    def _on_message(self, conn: _Conn, msg: Message) -> None:
        if isinstance(msg, DataMessage):
            t = msg.time
            if not conn.lower.less_equal(t) and not self._awaiting_sync:
                raise ProtocolError(f"data at time {t!r}, which the publisher already completed")
            if self._filter and covered_by(self._upper_elements, t):
                return  # normally skipped unread by the decoder already
            if self._atomic:
                self._pending.setdefault(t, []).append(msg.rows)
            else:
                self._events.append(Data(t, msg.rows, conn.hello.partition if conn.hello else 0))
        elif isinstance(msg, LowerFrontierUpdate):
            conn.lower.update_iter(msg.updates)
            if self._merged.update_iter(msg.updates) or self._awaiting_sync:
                self._awaiting_sync = False
                self._advance(self._merged.frontier())
        elif isinstance(msg, Close):
            self._lost(conn, msg.reason)
        else:
            raise ProtocolError(f"unexpected {type(msg).__name__} after the handshake")

    def _advance(self, lower: Antichain[Any]) -> None:
        if self._pending:
            ready = [t for t in self._pending if not lower.less_equal(t)]
            for t in sorted_times(ready):
                tables = self._pending.pop(t)
                table = tables[0] if len(tables) == 1 else _concat(tables)
                self._events.append(Epoch(t, table))
        self._events.append(Progress(lower))

    def _lost(self, conn: _Conn, reason: str) -> None:
        """A partition's connection ended (Close frame or EOF)."""
        if conn.lower.is_empty():
            # The partition finished: everything it will ever send was received.
            conn.done = True
            self._unregister(conn)
            if all(c.done for c in self._conns):
                self._end(reason)
            return
        self._fail(conn, reason)

    def _fail(self, conn: _Conn, reason: str) -> None:
        if len(self._conns) > 1:
            partition = conn.hello.partition if conn.hello else "?"
            reason = f"partition {partition} ({conn.label}): {reason}"
        self._pending.clear()  # incomplete epochs are never delivered
        self._say_goodbye(reason)
        self._end(reason)

    def _say_goodbye(self, reason: str) -> None:
        # Best effort, never blocking: tell the publishers why we leave.
        frame = encode_message(Close(reason))
        for conn in self._conns:
            if not conn.done:
                with contextlib.suppress(OSError):
                    conn.sock.send(frame)

    def _end(self, reason: str) -> None:
        if self._closed:
            return
        self.reason = reason
        self._events.append(Closed(reason))
        self._closed = True
        self._close_sockets()

    def _unregister(self, conn: _Conn) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(conn.sock)
        with contextlib.suppress(OSError):
            conn.sock.close()

    def _close_sockets(self) -> None:
        for conn in self._conns:
            conn.done = True
            self._unregister(conn)
        with contextlib.suppress(Exception):
            self._selector.close()

    def close(self, reason: str = "subscriber closed") -> None:
        """Leave: tell the publishers (best effort) and close the connections.

        Events not yet read are discarded.
        """
        if not self._closed:
            self._say_goodbye(reason)
            self._closed = True
            self.reason = reason
            self._close_sockets()
        self._events.clear()
        self._pending.clear()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = f"closed: {self.reason}" if self._closed else f"lower={self.lower!r}"
        return f"<Subscription {self.name!r} partitions={self.partitions} {state}>"


def _concat(tables: list[pa.Table]) -> pa.Table:
    try:
        return pa.concat_tables(tables)
    except pa.ArrowInvalid:
        return pa.concat_tables(tables, promote_options="default")


# subscribe_stream, subscribe_group and subscribe_view repeat Subscription's options on
# purpose: each is a documented entry point with an explicit signature.


def subscribe_stream(
    address: Address,
    filter: bool = True,
    *,
    atomic: bool = True,
    timeout: float | None = 10.0,
    idle_timeout: float | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> Subscription:
    """Subscribe to one publisher partition in stream mode.

    * `filter`: drop epochs that were partly sent before joining (Strymon); with False,
      every data message after joining is kept, so the first epochs may be partial.
    * `atomic`: deliver whole `Epoch`s when the lower frontier passes them (default), or
      raw `Data` messages as they arrive.
    * `timeout`: for connecting and the handshake (raises `SubscribeError`).
    * `idle_timeout`: iteration raises `TimeoutError` after this long without an event.

    >>> subscribe_stream("127.0.0.1:1", timeout=2)
    Traceback (most recent call last):
    ...
    sealtime.pubsub.subscriber.SubscribeError: cannot connect to 127.0.0.1:1: ...
    """
    return Subscription(
        [address],
        filter=filter,
        atomic=atomic,
        timeout=timeout,
        idle_timeout=idle_timeout,
        max_frame_size=max_frame_size,
    )


# Its parameters repeat Subscription's on purpose: each public entry point keeps an
# explicit, documented signature.
def subscribe_group(
    addresses: Iterable[Address],
    filter: bool = True,
    *,
    atomic: bool = True,
    timeout: float | None = 10.0,
    idle_timeout: float | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> Subscription:
    """Subscribe to several partitions of one stream as one stream.

    The snapshots are merged (upper: maximal antichain of the union; lower: minimal
    antichain of the union) and an epoch is delivered only when it is complete in every
    partition. A partition that closes before finishing (its lower frontier is not empty)
    ends the whole subscription with a `Closed` naming the partition.

    >>> from sealtime.pubsub.publisher import Publisher
    >>> pubs = [Publisher("g", partition=p).start() for p in range(3)]
    >>> sub = subscribe_group([p.address for p in pubs], timeout=10)
    >>> for p in pubs:
    ...     p.send(0, pa.table({"p": [p.partition]}))
    ...     _ = p.advance_lower([1])
    >>> [type(sub.next_event(timeout=10)).__name__ for _ in range(3)]
    ['Progress', 'Epoch', 'Progress']
    >>> sub.close(); [p.close() for p in pubs] and None
    """
    return Subscription(
        list(addresses),
        filter=filter,
        atomic=atomic,
        timeout=timeout,
        idle_timeout=idle_timeout,
        max_frame_size=max_frame_size,
    )


def subscribe_view(
    address: Address,
    resume_from: Iterable[Any] | None = None,
    *,
    timeout: float | None = 10.0,
    idle_timeout: float | None = None,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
) -> Subscription:
    """Subscribe to a view (a publisher with history): snapshot, then updates, resumable.

    Without `resume_from` the first event is `Snapshot(as_of, table)`: the accumulated
    updates (rows with `_diff`) of every time not ≥ `as_of` (the publisher's lower
    frontier). Then, for each time as it completes, `Epoch(time, updates)` and
    `Progress(lower)`. To continue after a disconnection with no gap and no duplicate,
    pass the `lower` of the last `Progress` received as `resume_from`: the publisher
    replays every update at a time ≥ it (no snapshot), then goes on live.

    >>> from sealtime.pubsub.publisher import Publisher
    >>> from sealtime.pubsub.history import InMemoryHistory
    >>> upd = lambda k, d: pa.Table.from_arrays([pa.array([k]), pa.array([d])], names=["k", "_diff"])
    >>> pub = Publisher("v", history=InMemoryHistory()).start()
    >>> pub.send(0, upd("a", 1)); _ = pub.advance_lower([1])
    >>> sub = subscribe_view(pub.address)
    >>> [type(sub.next_event(timeout=10)).__name__ for _ in range(2)]
    ['Snapshot', 'Progress']
    >>> pub.send(1, upd("a", -1)); _ = pub.advance_lower([2]); sub.close()
    >>> again = subscribe_view(pub.address, resume_from=[1])
    >>> [(type(e).__name__, getattr(e, "time", None)) for e in (again.next_event(timeout=10) for _ in range(2))]
    [('Epoch', 1), ('Progress', None)]
    >>> again.close(); pub.close()
    """
    return Subscription(
        [address],
        mode="view",
        resume=resume_from,
        timeout=timeout,
        idle_timeout=idle_timeout,
        max_frame_size=max_frame_size,
    )


def resolve_addresses(topic: Any, catalog: Any) -> list[Address]:
    if catalog is None:
        if isinstance(topic, tuple) or (isinstance(topic, str) and ":" in topic):
            return [topic]
        if isinstance(topic, list | tuple) and topic:
            return list(topic)
        raise ConfigError(
            f"cannot resolve {topic!r}: pass a catalog, or an address 'host:port' "
            "or a list of partition addresses"
        )
    if not isinstance(catalog, dict) and not hasattr(catalog, "lookup"):
        # A data dir / SQLite file, "host:port" or postgresql:// URL (imported here:
        # the catalog module builds on this one).
        from sealtime.pubsub.catalog import open_catalog

        catalog = open_catalog(catalog)
    lookup = getattr(catalog, "lookup", None)
    if lookup is not None:
        found = lookup(topic)
    elif isinstance(catalog, dict):
        if topic not in catalog:
            raise NotFoundError(f"topic {topic!r} is not in the catalog (known: {sorted(catalog)})")
        found = catalog[topic]
    else:  # pragma: no cover - open_catalog returns one of the above
        raise TypeError(f"catalog {catalog!r} has no lookup(topic)")
    return [found] if isinstance(found, str | tuple) else list(found)


def subscribe(
    topic: Any,
    catalog: Any = None,
    mode: str = "stream",
    *,
    filter: bool = True,
    atomic: bool = True,
    resume_from: Iterable[Any] | None = None,
    timeout: float | None = 10.0,
    idle_timeout: float | None = None,
) -> Subscription:
    """`st.subscribe`: subscribe to a published stream or view by name or address.

    * `topic`: a name looked up in `catalog`, or directly an address (`"host:port"` or
      `(host, port)`) or a list of partition addresses (a group subscription).
    * `catalog`: where names are looked up: the publishing dataflow's data dir (its
      SQLite metadata store, read with the standard library), its catalog server's
      ``"host:port"``, a ``postgresql://`` metadata store URL, a mapping
      `name -> address(es)` or any object with `lookup(name)` returning them
      (`sealtime.pubsub.catalog.open_catalog`). A name with several partitions gives a
      group subscription in stream mode.
    * `mode`: `"stream"` (`subscribe_stream` / `subscribe_group`) or `"view"`
      (`subscribe_view`, one partition, optional `resume_from`).

    >>> subscribe("prices", catalog={"prices": "127.0.0.1:1"}, timeout=2)
    Traceback (most recent call last):
    ...
    sealtime.pubsub.subscriber.SubscribeError: cannot connect to 127.0.0.1:1: ...
    >>> subscribe("prices", catalog={})
    Traceback (most recent call last):
    ...
    sealtime.errors.NotFoundError: topic 'prices' is not in the catalog (known: [])
    """
    # Options passed on by name: alike only in form to other keyword-argument calls.
    return Subscription(
        resolve_addresses(topic, catalog),
        filter=filter,
        atomic=atomic,
        timeout=timeout,
        idle_timeout=idle_timeout,
        mode=mode,
        resume=resume_from,
    )
