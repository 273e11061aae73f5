"""PostgreSQL protocol 3.0 messages: builders of the backend's, readers of the
frontend's (https://www.postgresql.org/docs/current/protocol-message-formats.html).

>>> ready_for_query("I")
b'Z\\x00\\x00\\x00\\x05I'
>>> command_complete("SELECT 2")
b'C\\x00\\x00\\x00\\rSELECT 2\\x00'
>>> Reader(b"portal\\x00\\x00\\x01").cstring(), Reader(b"\\x00\\x07").int16()
('portal', 7)
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from ...errors import SealtimeError
from ..backend import Column

__all__ = [
    "PROTOCOL_3",
    "ProtocolViolation",
    "Reader",
    "error_response",
    "message",
    "row_description",
]

PROTOCOL_3 = 196608
SSL_REQUEST = 80877103
GSSENC_REQUEST = 80877104
CANCEL_REQUEST = 80877102

# Frontend messages after startup, by their type byte (the protocol's names).
QUERY = b"Q"
PARSE = b"P"
BIND = b"B"
DESCRIBE = b"D"
EXECUTE = b"E"
CLOSE = b"C"
SYNC = b"S"
FLUSH = b"H"
TERMINATE = b"X"
PASSWORD_MESSAGE = b"p"  # (also SASLInitialResponse and SASLResponse)
#: the target byte of Describe and Close
PREPARED_STATEMENT = "S"
PORTAL = "P"


class ProtocolViolation(SealtimeError):
    """A client sent something that is not the protocol (08P01)."""


def message(kind: bytes, payload: bytes = b"") -> bytes:
    """One backend message: its type byte, its length, its payload."""
    return kind + struct.pack("!i", len(payload) + 4) + payload


def _cstr(text: str) -> bytes:
    return text.encode("utf-8") + b"\x00"


def ready_for_query(status: str) -> bytes:
    return message(b"Z", status.encode())


def command_complete(tag: str) -> bytes:
    return message(b"C", _cstr(tag))


def parameter_status(name: str, value: str) -> bytes:
    return message(b"S", _cstr(name) + _cstr(value))


def backend_key_data(pid: int, secret: int) -> bytes:
    return message(b"K", struct.pack("!ii", pid, secret))


def auth_request(code: int, data: bytes = b"") -> bytes:
    """AuthenticationOk (0), MD5Password (5, salt), SASL (10), SASLContinue (11),
    SASLFinal (12)."""
    return message(b"R", struct.pack("!i", code) + data)


def row_description(columns: Sequence[Column], formats: Sequence[int]) -> bytes:
    parts = [struct.pack("!h", len(columns))]
    for col, fmt in zip(columns, formats):
        parts.append(_cstr(col.name))
        parts.append(struct.pack("!ihihih", 0, 0, col.type.oid, col.type.size, -1, fmt))
    return message(b"T", b"".join(parts))


def parameter_description(oids: Sequence[int]) -> bytes:
    return message(b"t", struct.pack(f"!h{len(oids)}i", len(oids), *oids))


def copy_out_response(ncols: int) -> bytes:
    return message(b"H", struct.pack(f"!bh{ncols}h", 0, ncols, *([0] * ncols)))


def error_response(
    code: str,
    text: str,
    *,
    severity: str = "ERROR",
    position: int | None = None,
    hint: str | None = None,
) -> bytes:
    """ErrorResponse (or a NoticeResponse's fields): severity, SQLSTATE, message."""
    fields = b"S" + _cstr(severity) + b"V" + _cstr(severity) + b"C" + _cstr(code)
    fields += b"M" + _cstr(text)
    if position is not None:
        fields += b"P" + _cstr(str(position))
    if hint:
        fields += b"H" + _cstr(hint)
    return message(b"E", fields + b"\x00")


EMPTY_QUERY = message(b"I")
PARSE_COMPLETE = message(b"1")
BIND_COMPLETE = message(b"2")
CLOSE_COMPLETE = message(b"3")
NO_DATA = message(b"n")
PORTAL_SUSPENDED = message(b"s")
COPY_DONE = message(b"c")
AUTH_OK = auth_request(0)


class Reader:
    """Reads a frontend message's payload; a short or malformed one is a
    `ProtocolViolation`."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ProtocolViolation("message too short for its fields")
        out = self.data[self.pos : self.pos + n]
        self.pos += n
        return out

    def int16(self) -> int:
        return struct.unpack("!h", self._take(2))[0]

    def int32(self) -> int:
        return struct.unpack("!i", self._take(4))[0]

    def byte(self) -> str:
        return self._take(1).decode("latin-1")

    def bytes(self, n: int) -> bytes:
        return self._take(n)

    def cstring(self) -> str:
        end = self.data.find(b"\x00", self.pos)
        if end < 0:
            raise ProtocolViolation("a string without its terminating zero byte")
        text = self.data[self.pos : end]
        self.pos = end + 1
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ProtocolViolation("a string that is not UTF-8 (client_encoding is UTF8)") from e
