"""Bad peers: garbage, oversized and malformed frames, wrong versions, silent peers.

The publisher must close such a connection with a reason (a `Close` frame when it can)
and keep serving everybody else; the subscriber must end with `Closed(reason)` (or raise
`SubscribeError` during the handshake), never crash or hang.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time

import msgpack
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealtime.pubsub import Closed, Epoch, Progress, SubscribeError, subscribe_stream
from sealtime.pubsub.protocol import (
    Close,
    FrameDecoder,
    Hello,
    InitialFrontierSnapshot,
    encode_data,
    encode_frame,
    encode_message,
)
from sealtime.time import Antichain
from tests.conftest import examples
from tests.pubsub.conftest import ids_table, read_all, start


def raw_exchange(address, data: bytes, timeout: float = 5.0) -> tuple[list, bool]:
    """Send raw bytes, then read until EOF: (decoded messages, saw EOF)."""
    sock = socket.create_connection(address, timeout=timeout)
    decoder = FrameDecoder()
    messages: list = []
    eof = False
    try:
        with contextlib.suppress(OSError):  # the publisher may already have closed on us
            sock.sendall(data)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            except OSError:
                eof = True
                break
            if not chunk:
                eof = True
                break
            decoder.feed(chunk)
            while (msg := decoder.next_message()) is not None:
                messages.append(msg)
    finally:
        sock.close()
    return messages, eof


def close_reason(messages: list) -> str:
    closes = [m for m in messages if isinstance(m, Close)]
    assert len(closes) == 1 and messages[-1] is closes[0], messages
    return closes[0].reason


PREFIX = struct.Struct("!2sBBII")


def frame_raw(header: bytes, payload: bytes = b"", hlen=None, plen=None) -> bytes:
    hlen = len(header) if hlen is None else hlen
    plen = len(payload) if plen is None else plen
    return PREFIX.pack(b"SL", 0, 0, hlen, plen) + header + payload


HELLO = encode_message(Hello(role="subscriber"))


@pytest.fixture
def served(publishers):
    """A publisher with a healthy subscriber attached, checked after the test."""
    pub = start(publishers, "robust", hello_timeout=0.5, close_timeout=2)
    sub = subscribe_stream(pub.address, timeout=10)
    yield pub
    # The publisher still serves the old subscriber and accepts new ones.
    late = subscribe_stream(pub.address, timeout=10)
    pub.send(7, ids_table([1, 2]))
    pub.advance_lower([8])
    for s in (sub, late):
        events = []
        while not any(isinstance(e, Epoch) for e in events):
            event = s.next_event(timeout=5)
            assert event is not None and not isinstance(event, Closed), (events, event)
            events.append(event)
        s.close()


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "protocol error: bad frame magic b'GE'"),
        (b"SL\x01\x00" + b"\x00" * 8, "protocol error: bad frame prefix: reserved bytes"),
        (frame_raw(b"\x80", plen=2**31), "exceeds the limit"),
        (frame_raw(b"", hlen=2**30), "protocol error: frame header of 1073741824 bytes"),
        (frame_raw(b"\xc1"), "protocol error: frame header is not msgpack"),
        (frame_raw(msgpack.packb([1, 2])), "protocol error: frame header is not a message map"),
        (frame_raw(msgpack.packb({"k": "bogus"})), "protocol error: unknown message kind 'bogus'"),
        (frame_raw(msgpack.packb({"k": "hello", "v": 1})), "without field 'role'"),
        (encode_data(1, ids_table([1])), "protocol error: expected a hello, got DataMessage"),
        (encode_frame({"k": "data", "t": 1, "p": 0, "n": 1}, b"junk"), "not an Arrow IPC stream"),
        (encode_message(Hello(role="subscriber", version=99)), "protocol version mismatch"),
        (encode_message(Hello(role="publisher")), "expected a subscriber hello"),
        (encode_message(Hello(role="subscriber", mode="view")), "mode 'view' is not served"),
        (encode_message(Hello(role="subscriber", max_frame=1000)), "accepts frames up to 1000"),
        (b"", "no hello within 0.5 s"),
        (HELLO[:-3], "no hello within 0.5 s"),  # a truncated frame, then silence
    ],
)
def test_publisher_closes_bad_connections_with_a_reason(served, data, reason):
    messages, eof = raw_exchange(served.address, data)
    assert eof, "the publisher must close the connection"
    assert reason in close_reason(messages)
    assert any(reason in d.reason for d in served.disconnections)


@pytest.mark.parametrize(
    "data, reason",
    [
        (b"garbage after the handshake", "protocol error: bad frame magic b'ga'"),
        (HELLO, "protocol error: unexpected Hello after the handshake"),
        (frame_raw(b"\x80", plen=2**20), "protocol error: frame of 1048577 bytes exceeds"),
    ],
)
def test_garbage_after_the_handshake(served, data, reason):
    sock = socket.create_connection(served.address, timeout=5)
    decoder = FrameDecoder()
    messages: list = []
    with sock:
        sock.sendall(HELLO)
        while len(messages) < 2:
            decoder.feed(sock.recv(65536))
            while (msg := decoder.next_message()) is not None:
                messages.append(msg)
        assert [type(m) for m in messages] == [Hello, InitialFrontierSnapshot]
        sock.sendall(data)
        while chunk := sock.recv(65536):
            decoder.feed(chunk)
    while (msg := decoder.next_message()) is not None:
        messages.append(msg)
    assert reason in close_reason(messages)


def test_subscriber_leaving_politely_or_abruptly(served):
    before = served.subscriber_count
    messages, eof = raw_exchange(served.address, HELLO + encode_message(Close("bye")))
    assert eof and [type(m) for m in messages] == [Hello, InitialFrontierSnapshot]
    deadline = time.monotonic() + 5
    while served.subscriber_count != before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert served.subscriber_count == before
    assert any(d.reason == "subscriber closed: bye" for d in served.disconnections)


@pytest.fixture(scope="module")
def fuzz_target():
    from sealtime.pubsub import Publisher

    pub = Publisher("fuzz", hello_timeout=0.1, close_timeout=1).start()
    yield pub
    pub.close()


@settings(
    max_examples=examples(ci=30, dev=10),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.one_of(st.binary(max_size=300), st.binary(max_size=40).map(lambda b: b"SL\0\0" + b)))
def test_random_bytes_never_hurt_the_publisher(fuzz_target, data):
    messages, eof = raw_exchange(fuzz_target.address, data)
    assert eof
    assert all(isinstance(m, Close | Hello | InitialFrontierSnapshot) for m in messages)
    assert isinstance(messages[-1], Close)


def test_publisher_survives_fuzzing(fuzz_target):
    sub = subscribe_stream(fuzz_target.address, timeout=10)
    assert sub.next_event(timeout=5) == Progress(Antichain([0]))
    sub.close()


# --------------------------------------------------------------------------- fake publishers


class FakePublisher:
    """Accepts one connection, reads the subscriber's hello, then sends `script` bytes."""

    def __init__(self, script: bytes, linger: float = 0.05) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(10)
        self.address = self.server.getsockname()
        self.thread = threading.Thread(target=self._run, args=(script, linger), daemon=True)
        self.thread.start()

    def _run(self, script: bytes, linger: float) -> None:
        try:
            conn, _ = self.server.accept()
        except OSError:
            return
        with conn:
            conn.settimeout(5)
            decoder = FrameDecoder()
            try:
                while decoder.next_message() is None:
                    decoder.feed(conn.recv(65536))
                conn.sendall(script)
                time.sleep(linger)
            except OSError:
                pass
        self.server.close()

    def join(self) -> None:
        self.thread.join(timeout=10)


SERVER_HELLO = encode_message(Hello(role="publisher", name="fake"))
SNAPSHOT = encode_message(InitialFrontierSnapshot(Antichain([5]), Antichain()))


@pytest.mark.parametrize(
    "script, message",
    [
        (b"HTTP/1.1 400 Bad Request\r\n\r\n", "protocol error: bad frame magic"),
        (encode_message(Close("go away")), "publisher refused: go away"),
        (encode_message(Hello(role="publisher", version=2)), "protocol version mismatch"),
        (SERVER_HELLO + encode_data(1, ids_table([1])), "expected the frontier snapshot"),
        (SERVER_HELLO[:5], "publisher closed the connection"),
    ],
)
def test_subscriber_handshake_failures_raise(script, message):
    fake = FakePublisher(script, linger=0)
    with pytest.raises(SubscribeError, match=message):
        subscribe_stream(fake.address, timeout=5)
    fake.join()


@pytest.mark.parametrize(
    "tail, reason",
    [
        (b"\x00garbage, long enough for a prefix", "protocol error: bad frame magic"),
        (b"\x00garbage", "publisher disconnected without a reason in the middle of a frame"),
        (frame_raw(b"\x80", plen=2**31), "protocol error: frame of 2147483649 bytes exceeds"),
        (encode_data(4, ids_table([1])), "protocol error: data at time 4, which the publisher"),
        (frame_raw(msgpack.packb({"k": "lower", "u": [[1]]})), "malformed frontier update"),
        (frame_raw(msgpack.packb({"k": "data", "t": "x", "p": 0})), "malformed time 'x'"),
        (SNAPSHOT, "unexpected InitialFrontierSnapshot after the handshake"),
        (b"", "publisher disconnected without a reason"),
        (encode_message(Close("maintenance")), "maintenance"),
    ],
)
def test_subscriber_ends_with_a_reason_on_bad_input(tail, reason):
    fake = FakePublisher(SERVER_HELLO + SNAPSHOT + encode_data(6, ids_table([1])) + tail)
    sub = subscribe_stream(fake.address, timeout=5)
    events = read_all(sub, timeout=10)
    assert events[0] == Progress(Antichain([5]))
    assert not any(isinstance(e, Epoch) for e in events)  # time 6 never completed
    assert isinstance(events[-1], Closed) and reason in events[-1].reason, events[-1]
    assert list(sub) == []  # iteration is over
    fake.join()
