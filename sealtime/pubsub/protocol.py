"""The sealtime pub-sub wire protocol: frames, messages and timestamp encoding.

A connection carries a sequence of **frames**. Every frame is::

    +-------+-------+------------+-------------+-----------------+------------------+
    | "SL"  | 0x00  | 0x00       | header_len  | payload_len     | header | payload |
    | magic | rsv   | rsv        | u32 big end | u32 big endian  | msgpack| bytes   |
    +-------+-------+------------+-------------+-----------------+------------------+

The 12-byte prefix says how long the header and the payload are, so a reader can check
both lengths against its limits *before* reading them, and can skip a payload it does not
want without buffering or decoding it. The header is a msgpack map whose key `"k"` is the
message kind; the payload, when present, is an Arrow IPC *stream* (schema + record
batches), so rows are never serialized one by one in Python.

Messages (publisher → subscriber unless noted):

========================  ==========  ==========================================
message                   kind        header fields (payload)
========================  ==========  ==========================================
`Hello`                   ``hello``   ``v`` version, ``role``, ``name``, ``p``
                                      partition, ``mode``, ``max``, ``resume``
                                      (payload: Arrow schema, server side, if known)
`InitialFrontierSnapshot` ``frontiers`` ``lo`` lower antichain, ``up`` upper antichain
`LowerFrontierUpdate`     ``lower``   ``u`` list of ``[time, diff]``
`DataMessage`             ``data``    ``t`` time, ``p`` partition, ``n`` rows
                                      (payload: the rows)
`ViewSnapshot`            ``vsnap``   ``as`` as-of frontier, ``n`` rows
                                      (payload: rows with an int64 ``_diff``)
`Close`                   ``close``   ``r`` reason (both directions)
========================  ==========  ==========================================

Every frame a publisher sends carries ``s``, a sequence number consecutive per
connection: a subscriber drops duplicated frames and detects gaps (`with_seq`).

In view mode (a publisher with history) the rows of `DataMessage`s are *updates*: they
carry an int64 ``_diff`` column, so Update{time, row, diff} needs no message of its own.
An empty `LowerFrontierUpdate` is a sync marker: "everything before the current lower
frontier has been sent" (used after a view subscriber's history replay).

Times are encoded generically over partial orders: an `int` is a msgpack integer and a
`Product(outer, inner)` is the two-element array ``[outer, inner]`` (recursively, so
nested products work). Anything malformed raises `ProtocolError`, whose message is the
reason sent in the `Close` frame before the connection is dropped.

>>> from sealtime.time import Product
>>> frame = encode_message(LowerFrontierUpdate(((Product(1, 2), 1), (Product(0, 3), -1))))
>>> decoder = FrameDecoder()
>>> decoder.feed(frame)
>>> decoder.next_message()
LowerFrontierUpdate(updates=((Product(1, 2), 1), (Product(0, 3), -1)))
>>> decoder.next_message() is None
True
"""

from __future__ import annotations

import numbers
import reprlib
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgpack
import pyarrow as pa

from sealtime.errors import SealtimeError
from sealtime.time import Antichain, Product

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "DEFAULT_MAX_HEADER_SIZE",
    "MAGIC",
    "PREFIX_SIZE",
    "PROTOCOL_VERSION",
    "Close",
    "DataMessage",
    "FrameDecoder",
    "Hello",
    "InitialFrontierSnapshot",
    "LowerFrontierUpdate",
    "Message",
    "ProtocolError",
    "ViewSnapshot",
    "decode_antichain",
    "decode_time",
    "encode_antichain",
    "encode_data",
    "encode_frame",
    "encode_message",
    "encode_time",
    "normalize_time",
    "table_from_ipc",
    "table_to_ipc",
    "with_seq",
]

#: Version of the message set; a peer speaking another version is closed with a reason.
PROTOCOL_VERSION = 1
#: First two bytes of every frame.
MAGIC = b"SL"
_PREFIX = struct.Struct("!2sBBII")
#: Bytes before the header: magic, two reserved zero bytes, header and payload lengths.
PREFIX_SIZE = _PREFIX.size
#: Default limit of header + payload bytes in one frame (larger tables are split).
DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024
#: Default limit of the msgpack header of one frame.
DEFAULT_MAX_HEADER_SIZE = 1024 * 1024
_MAX_TIME_DEPTH = 32
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1  # what msgpack can carry

Time = Any  # int | Product (nested); kept loose because Product's components are Any


class ProtocolError(SealtimeError):
    """The peer sent something that is not a valid frame or message.

    The message of the exception is the reason the connection is closed with.

    >>> str(ProtocolError("bad magic"))
    'bad magic'
    """


# --------------------------------------------------------------------------- times


def normalize_time(t: Any) -> Time:
    """`t` as a protocol time: int-like values become `int`, `Product`s are normalized.

    Raises `TypeError` for anything that cannot be encoded (bool, float, str, ...).

    >>> import numpy as np
    >>> normalize_time(np.int64(7)), normalize_time(Product(np.int32(1), 2))
    (7, Product(1, 2))
    """
    if type(t) is int:
        return t
    if type(t) is Product:
        outer, inner = normalize_time(t.outer), normalize_time(t.inner)
        if outer is t.outer and inner is t.inner:
            return t
        return Product(outer, inner)
    if isinstance(t, numbers.Integral) and not isinstance(t, bool):
        return int(t)
    raise TypeError(f"unsupported time {t!r} ({type(t).__name__}): use an int or a Product")


def encode_time(t: Time) -> Any:
    """The msgpack-able form of a time: the int itself, or `[outer, inner]` for a Product.

    >>> encode_time(5), encode_time(Product(1, Product(2, 3)))
    (5, [1, [2, 3]])
    """
    if type(t) is int:
        if not _INT_MIN <= t <= _INT_MAX:
            raise TypeError(f"time {t} does not fit in 64 bits")
        return t
    if type(t) is Product:
        return [encode_time(t.outer), encode_time(t.inner)]
    return encode_time(normalize_time(t))


def decode_time(obj: Any, _depth: int = 0) -> Time:
    """Inverse of `encode_time`; raises `ProtocolError` on anything else.

    >>> decode_time([1, [2, 3]])
    Product(1, Product(2, 3))
    >>> decode_time("x")
    Traceback (most recent call last):
    ...
    sealtime.pubsub.protocol.ProtocolError: malformed time 'x'
    """
    if type(obj) is int:
        return obj
    if type(obj) is list and len(obj) == 2 and _depth < _MAX_TIME_DEPTH:
        return Product(decode_time(obj[0], _depth + 1), decode_time(obj[1], _depth + 1))
    raise ProtocolError(f"malformed time {_short(obj)}")


def encode_antichain(frontier: Iterable[Time]) -> list[Any]:
    """An antichain (or any iterable of times) as a list of encoded times.

    >>> encode_antichain(Antichain([Product(0, 1), Product(1, 0)]))
    [[0, 1], [1, 0]]
    """
    return [encode_time(t) for t in frontier]


def decode_antichain(obj: Any) -> Antichain[Time]:
    """Inverse of `encode_antichain`; the elements must be pairwise incomparable.

    >>> decode_antichain([[0, 1], [1, 0]])
    Antichain([Product(0, 1), Product(1, 0)])
    """
    if type(obj) is not list:
        raise ProtocolError(f"malformed antichain {_short(obj)}")
    times = [decode_time(x) for x in obj]
    _check_same_kind(times)
    result: Antichain[Time] = Antichain(times)
    if len(result) != len(times):
        raise ProtocolError(f"antichain elements are not pairwise incomparable: {_short(obj)}")
    return result


def _check_same_kind(times: Sequence[Time]) -> None:
    # ints and Products do not compare; a mix would raise deep inside frontier code.
    if times and len({time_shape(t) for t in times}) > 1:
        raise ProtocolError(f"times of different shapes in one message: {list(times)!r:.200}")


def time_shape(t: Time) -> Any:
    """The nesting of a time: 0 for an int, a pair for a `Product` (times of one stream
    must share it).

    >>> time_shape(3)
    0
    """
    return 0 if type(t) is int else (time_shape(t.outer), time_shape(t.inner))


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 4, 60, 60


def _short(obj: Any) -> str:
    # Bounded repr of untrusted input: depth- and length-limited (no RecursionError).
    text = _REPR.repr(obj)
    return text if len(text) <= 120 else text[:117] + "..."


# --------------------------------------------------------------------------- arrow


def table_to_ipc(table: pa.Table | pa.RecordBatch) -> pa.Buffer:
    """Serialize rows as an Arrow IPC stream (schema + batches).

    >>> t = pa.table({"x": [1, 2]})
    >>> table_from_ipc(table_to_ipc(t)).equals(t)
    True
    """
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        if isinstance(table, pa.RecordBatch):
            writer.write_batch(table)
        else:
            writer.write_table(table)
    return sink.getvalue()


def table_from_ipc(payload: Any) -> pa.Table:
    """Deserialize an Arrow IPC stream; raises `ProtocolError` if it is not one.

    >>> table_from_ipc(b"nonsense")
    Traceback (most recent call last):
    ...
    sealtime.pubsub.protocol.ProtocolError: payload is not an Arrow IPC stream: ...
    """
    try:
        return pa.ipc.open_stream(pa.py_buffer(payload)).read_all()
    except (pa.ArrowException, ValueError, OSError) as exc:
        raise ProtocolError(f"payload is not an Arrow IPC stream: {exc}") from None


def _schema_to_ipc(schema: pa.Schema) -> pa.Buffer:
    return table_to_ipc(schema.empty_table())


# --------------------------------------------------------------------------- messages


@dataclass(frozen=True)
class Hello:
    """Handshake, first frame in both directions.

    The subscriber sends `role="subscriber"` with the `mode` it wants (`"stream"`, or
    `"view"` with an optional `resume` frontier) and the largest frame it accepts
    (`max_frame`); the publisher answers with `role="publisher"`, its stream `name`,
    `partition` and, if known, the Arrow `schema`. A different `version` on either side
    closes the connection with a reason.

    >>> Hello(role="subscriber").version == PROTOCOL_VERSION
    True
    """

    role: str
    name: str = ""
    partition: int = 0
    mode: str = "stream"
    max_frame: int = DEFAULT_MAX_FRAME_SIZE
    resume: Antichain[Time] | None = None
    schema: pa.Schema | None = None
    version: int = PROTOCOL_VERSION


@dataclass(frozen=True)
class InitialFrontierSnapshot:
    """The publisher's frontiers at the moment a subscriber joined (Strymon).

    `lower`: every time not ≥ some element is complete (sealed).
    `upper`: the *maximal* antichain of the times of all data published so far; data at a
    time ≤ some element of `upper` may have been (partly) sent before the subscriber
    joined.

    >>> InitialFrontierSnapshot(Antichain([3]), Antichain([5])).upper
    Antichain([5])
    """

    lower: Antichain[Time]
    upper: Antichain[Time]


@dataclass(frozen=True)
class LowerFrontierUpdate:
    """Changes of the publisher's lower frontier: each left element with -1, new with +1.

    >>> LowerFrontierUpdate(((3, -1), (5, 1))).updates
    ((3, -1), (5, 1))
    """

    updates: tuple[tuple[Time, int], ...]


@dataclass(frozen=True)
class DataMessage:
    """Rows of one time (an epoch may span several data messages).

    >>> DataMessage(3, pa.table({"x": [1]}), partition=2).rows.num_rows
    1
    """

    time: Time
    rows: pa.Table
    partition: int = 0


@dataclass(frozen=True)
class ViewSnapshot:
    """View mode: the consolidated contents as of `as_of` (rows carry an int64 `_diff`).

    >>> ViewSnapshot(Antichain([4]), pa.table({"x": [1], "_diff": [1]})).as_of
    Antichain([4])
    """

    as_of: Antichain[Time]
    rows: pa.Table


@dataclass(frozen=True)
class Close:
    """Last frame of a connection, with the reason; sent in both directions.

    >>> Close("publisher closed").reason
    'publisher closed'
    """

    reason: str


Message = Hello | InitialFrontierSnapshot | LowerFrontierUpdate | DataMessage | ViewSnapshot | Close


# --------------------------------------------------------------------------- encoding


def encode_frame(header: dict[str, Any], payload: Any = b"") -> bytes:
    """One frame: prefix + msgpack `header` + `payload` (any bytes-like object).

    >>> f = encode_frame({"k": "close", "r": "bye"})
    >>> f[:2], len(f) > PREFIX_SIZE
    (b'SL', True)
    """
    head = msgpack.packb(header, use_bin_type=True)
    body = memoryview(payload).cast("B") if not isinstance(payload, bytes) else payload
    return b"".join((_PREFIX.pack(MAGIC, 0, 0, len(head), len(body)), head, body))


def with_seq(frame: bytes, seq: int) -> bytes:
    """`frame` with the sequence number `seq` added to its header (field ``s``).

    A publisher numbers the frames of each connection consecutively, so a subscriber
    drops a duplicated frame (``s`` not above the last one) and detects a gap (``s``
    skipping ahead) — SMILE's duplicate and gap detection at the frame level.

    >>> d = FrameDecoder(); d.feed(with_seq(encode_message(Close("x")), 7)); d.next_message()
    Close(reason='x')
    """
    _, _, _, hlen, plen = _PREFIX.unpack_from(frame)
    header = msgpack.unpackb(frame[PREFIX_SIZE : PREFIX_SIZE + hlen], raw=False)
    header["s"] = seq
    head = msgpack.packb(header, use_bin_type=True)
    with memoryview(frame) as view:
        return b"".join(
            (_PREFIX.pack(MAGIC, 0, 0, len(head), plen), head, view[PREFIX_SIZE + hlen :])
        )


def encode_data(
    time: Time, rows: pa.Table | pa.RecordBatch | pa.Buffer, partition: int = 0
) -> bytes:
    """A `DataMessage` frame; `rows` may already be an IPC buffer (from `table_to_ipc`).

    >>> d = FrameDecoder(); d.feed(encode_data(4, pa.table({"x": [1, 2]})))
    >>> d.next_message().rows.num_rows
    2
    """
    if isinstance(rows, pa.Buffer):
        payload, n = rows, -1
    else:
        payload, n = table_to_ipc(rows), rows.num_rows
    return encode_frame({"k": "data", "t": encode_time(time), "p": partition, "n": n}, payload)


def encode_message(msg: Message) -> bytes:
    """Encode any message as one frame.

    >>> FrameDecoder.decode_one(encode_message(Close("done")))
    Close(reason='done')
    """
    if isinstance(msg, DataMessage):
        return encode_data(msg.time, msg.rows, msg.partition)
    if isinstance(msg, LowerFrontierUpdate):
        return encode_frame({"k": "lower", "u": [[encode_time(t), d] for t, d in msg.updates]})
    if isinstance(msg, InitialFrontierSnapshot):
        return encode_frame(
            {"k": "frontiers", "lo": encode_antichain(msg.lower), "up": encode_antichain(msg.upper)}
        )
    if isinstance(msg, Close):
        return encode_frame({"k": "close", "r": msg.reason})
    if isinstance(msg, Hello):
        header: dict[str, Any] = {
            "k": "hello",
            "v": msg.version,
            "role": msg.role,
            "name": msg.name,
            "p": msg.partition,
            "mode": msg.mode,
            "max": msg.max_frame,
        }
        if msg.resume is not None:
            header["resume"] = encode_antichain(msg.resume)
        payload = _schema_to_ipc(msg.schema) if msg.schema is not None else b""
        return encode_frame(header, payload)
    if isinstance(msg, ViewSnapshot):
        return encode_frame(
            {"k": "vsnap", "as": encode_antichain(msg.as_of), "n": msg.rows.num_rows},
            table_to_ipc(msg.rows),
        )
    raise TypeError(f"not a protocol message: {msg!r}")


# --------------------------------------------------------------------------- decoding


def _field(header: dict[str, Any], key: str, types: type | tuple[type, ...]) -> Any:
    try:
        value = header[key]
    except KeyError:
        raise ProtocolError(f"{header.get('k')!r} message without field {key!r}") from None
    if type(value) not in (types if isinstance(types, tuple) else (types,)):
        raise ProtocolError(f"{header.get('k')!r} message: field {key!r} is {_short(value)}")
    return value


def _no_payload(kind: str, payload: Any) -> None:
    if len(payload):
        raise ProtocolError(f"{kind!r} message with an unexpected payload")


def decode_message(header: dict[str, Any], payload: Any) -> Message:
    """Build the message of a frame from its decoded header and its payload bytes.

    >>> decode_message({"k": "close", "r": "bye"}, b"")
    Close(reason='bye')
    >>> decode_message({"k": "nope"}, b"")
    Traceback (most recent call last):
    ...
    sealtime.pubsub.protocol.ProtocolError: unknown message kind 'nope'
    """
    kind = header.get("k")
    decode = _DECODERS.get(kind) if isinstance(kind, str) else None
    if decode is None:
        raise ProtocolError(f"unknown message kind {_short(kind)}")
    return decode(header, payload)


def _decode_data(header: dict[str, Any], payload: Any) -> Message:
    time = decode_time(header.get("t"))
    partition = _field(header, "p", int)
    return DataMessage(time, table_from_ipc(payload), partition)


def _decode_lower(header: dict[str, Any], payload: Any) -> Message:
    raw = _field(header, "u", list)
    updates = []
    for item in raw:
        if type(item) is not list or len(item) != 2 or type(item[1]) is not int:
            raise ProtocolError(f"malformed frontier update {_short(item)}")
        updates.append((decode_time(item[0]), item[1]))
    _check_same_kind([t for t, _ in updates])
    _no_payload("lower", payload)
    return LowerFrontierUpdate(tuple(updates))


def _decode_frontiers(header: dict[str, Any], payload: Any) -> Message:
    lower = decode_antichain(header.get("lo"))
    upper = decode_antichain(header.get("up"))
    _check_same_kind([*lower.elements(), *upper.elements()])
    _no_payload("frontiers", payload)
    return InitialFrontierSnapshot(lower, upper)


def _decode_close(header: dict[str, Any], payload: Any) -> Message:
    _no_payload("close", payload)
    return Close(_field(header, "r", str))


def _decode_hello(header: dict[str, Any], payload: Any) -> Message:
    version = _field(header, "v", int)
    role = _field(header, "role", str)
    resume = header.get("resume")
    schema = table_from_ipc(payload).schema if len(payload) else None
    return Hello(
        role=role,
        name=_field(header, "name", str),
        partition=_field(header, "p", int),
        mode=_field(header, "mode", str),
        max_frame=_field(header, "max", int),
        resume=None if resume is None else decode_antichain(resume),
        schema=schema,
        version=version,
    )


def _decode_view_snapshot(header: dict[str, Any], payload: Any) -> Message:
    return ViewSnapshot(decode_antichain(header.get("as")), table_from_ipc(payload))


#: the decoder of each message kind (the header's ``k``)
_DECODERS: dict[str, Callable[[dict[str, Any], Any], Message]] = {
    "data": _decode_data,
    "lower": _decode_lower,
    "frontiers": _decode_frontiers,
    "close": _decode_close,
    "hello": _decode_hello,
    "vsnap": _decode_view_snapshot,
}


@dataclass
class FrameDecoder:
    """Incremental (sans-IO) frame decoder with limits and payload skipping.

    `feed(bytes)` appends received bytes; `next_message()` returns the next complete
    message or None. Limits are checked on the prefix, before any header or payload byte
    is buffered. `skip(header)` is asked once per frame, right after its header is
    decoded: if it returns True the payload is discarded as it arrives (never buffered,
    never decoded) and the frame produces no message — this is how a subscriber drops a
    filtered `DataMessage`. Because messages are pulled one at a time, state changed by
    one message (e.g. the upper snapshot) already applies to the next frame's `skip`.
    `check(header)` is asked first, for every frame (with or without payload): True drops
    the frame too (counted in `dropped_frames`; duplicate detection by sequence number),
    and it may raise `ProtocolError` (a gap).

    Any malformed input raises `ProtocolError` and leaves the decoder unusable.

    >>> d = FrameDecoder(skip=lambda h: h["k"] == "data")
    >>> d.feed(encode_data(1, pa.table({"x": [1]})) + encode_message(Close("end")))
    >>> d.next_message(), d.skipped_frames
    (Close(reason='end'), 1)
    >>> d = FrameDecoder(); d.feed(b"GET / HTTP/1.1\\r\\n"); d.next_message()
    Traceback (most recent call last):
    ...
    sealtime.pubsub.protocol.ProtocolError: bad frame magic b'GE' (not a sealtime pub-sub peer?)
    """

    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    max_header_size: int = DEFAULT_MAX_HEADER_SIZE
    skip: Callable[[dict[str, Any]], bool] | None = None
    check: Callable[[dict[str, Any]], bool] | None = None
    skipped_frames: int = 0
    dropped_frames: int = 0
    skipped_bytes: int = 0
    _buf: bytearray = field(default_factory=bytearray, repr=False)
    _header: dict[str, Any] | None = field(default=None, repr=False)
    _header_len: int = field(default=-1, repr=False)
    _payload_len: int = field(default=0, repr=False)
    _skipping: int = field(default=0, repr=False)  # payload bytes still to discard

    @classmethod
    def decode_one(cls, frame: bytes) -> Message:
        """Decode a single complete frame (handy in tests).

        >>> FrameDecoder.decode_one(encode_message(Close("x"))).reason
        'x'
        """
        decoder = cls()
        decoder.feed(frame)
        msg = decoder.next_message()
        if msg is None:
            raise ProtocolError("incomplete frame")
        return msg

    def feed(self, data: Any) -> None:
        """Append received bytes; they are validated when `next_message` reaches them."""
        if self._skipping:
            n = min(self._skipping, len(data))
            self._skipping -= n
            self.skipped_bytes += n
            data = memoryview(data)[n:]
        self._buf += data

    def _read_prefix(self) -> None:
        magic, r1, r2, hlen, plen = _PREFIX.unpack_from(self._buf)
        if magic != MAGIC:
            raise ProtocolError(f"bad frame magic {bytes(magic)!r} (not a sealtime pub-sub peer?)")
        if r1 or r2:
            raise ProtocolError("bad frame prefix: reserved bytes are not zero")
        if hlen == 0 or hlen > self.max_header_size:
            raise ProtocolError(f"frame header of {hlen} bytes (limit {self.max_header_size})")
        if hlen + plen > self.max_frame_size:
            raise ProtocolError(
                f"frame of {hlen + plen} bytes exceeds the limit of {self.max_frame_size} bytes"
            )
        self._header_len, self._payload_len = hlen, plen

    def next_message(self) -> Message | None:
        """The next complete message, or None if more bytes are needed."""
        while True:
            if self._skipping:
                return None
            if self._header_len < 0:
                if len(self._buf) < PREFIX_SIZE:
                    return None
                self._read_prefix()
            buf = self._buf
            hlen, plen = self._header_len, self._payload_len
            if self._header is None:
                if len(buf) < PREFIX_SIZE + hlen:
                    return None
                self._header = _unpack_header(bytes(buf[PREFIX_SIZE : PREFIX_SIZE + hlen]))
                dropped = self.check is not None and self.check(self._header)
                if dropped or (self.skip is not None and plen and self.skip(self._header)):
                    # Drop the payload: what is buffered now, and the rest as it arrives.
                    start = PREFIX_SIZE + hlen
                    have = min(plen, len(buf) - start)
                    del buf[: start + have]
                    self._skipping = plen - have
                    if dropped:
                        self.dropped_frames += 1
                    else:
                        self.skipped_frames += 1
                    self.skipped_bytes += have
                    self._reset()
                    continue
            end = PREFIX_SIZE + hlen + plen
            if len(buf) < end:
                return None
            header = self._header
            start = PREFIX_SIZE + hlen
            if len(buf) - end < plen:
                # Hand the buffer over to the payload (zero copy); keep only the rest.
                self._buf = bytearray(memoryview(buf)[end:])
                payload: Any = memoryview(buf)[start:end]
            else:
                with memoryview(buf) as view:
                    payload = bytes(view[start:end])
                del buf[:end]
            self._reset()
            return decode_message(header, payload)

    def _reset(self) -> None:
        self._header = None
        self._header_len = -1

    @property
    def mid_frame(self) -> bool:
        """True if part of a frame was received (a connection ending now was cut short)."""
        return bool(self._buf) or self._skipping > 0


def _unpack_header(raw: bytes) -> dict[str, Any]:
    try:
        header = msgpack.unpackb(raw, raw=False, strict_map_key=True)
    except Exception as exc:  # msgpack raises several unrelated exception types
        raise ProtocolError(f"frame header is not msgpack: {type(exc).__name__}") from None
    if type(header) is not dict or type(header.get("k")) is not str:
        raise ProtocolError(f"frame header is not a message map: {_short(header)}")
    return header
