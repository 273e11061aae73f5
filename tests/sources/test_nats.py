"""Tests of `NatsJetStream` against a real JetStream server on 127.0.0.1:4222."""

from __future__ import annotations

import json
import uuid

import pytest

from sealtime.sources.nats import NatsJetStream
from tests.sources.conftest import NATS_URL, NatsStream

SCHEMA = {"i": "long", "s": "string"}


def payloads(lo: int, hi: int) -> list[bytes]:
    return [json.dumps({"i": i, "s": f"m{i}"}).encode() for i in range(lo, hi)]


def source(stream: NatsStream, **kw) -> NatsJetStream:
    kw.setdefault("durable", f"d_{uuid.uuid4().hex[:8]}")
    return NatsJetStream(stream.subject, stream=stream.name, url=NATS_URL, schema=SCHEMA, **kw)


def read_until(reader, n: int, max_rows: int | None = None, tries: int = 50):
    """Read until `n` rows arrived (bounded); returns (values, batches)."""
    got: list[int] = []
    batches = []
    for _ in range(tries):
        b = reader.read(max_rows)
        batches.append(b)
        got.extend(b.data.column("i").to_pylist())
        if len(got) >= n:
            break
    return got, batches


def floor(stream: NatsStream, src: NatsJetStream) -> int:
    return stream.consumer_info(src.durable).ack_floor.stream_seq


def test_reads_everything_once(nats_stream: NatsStream):
    seqs = nats_stream.publish(payloads(0, 250))
    src = source(nats_stream, fetch_batch=64)
    r = src.open()
    try:
        got, batches = read_until(r, 250, max_rows=100)
        assert got == list(range(250))
        assert batches[-1].position == seqs[-1]
        assert json.loads(json.dumps(batches[-1].position)) == seqs[-1]
        assert batches[-1].data.column("s").to_pylist()[-1] == "m249"
        more = r.read()
        assert more.data.num_rows == 0 and more.position == seqs[-1]
        assert r.health() == "running"
    finally:
        r.close()


def test_resume_after_restart_no_loss_no_duplicate(nats_stream: NatsStream):
    nats_stream.publish(payloads(0, 200))
    src = source(nats_stream, fetch_batch=32)
    r = src.open()
    first, batches = read_until(r, 60, max_rows=60)
    pos = batches[-1].position
    r.acknowledge(pos)
    read_until(r, 70, max_rows=70)  # read beyond the position, never acknowledged
    r.close()  # "crash": the durable has delivered more than `pos`
    r = src.open(pos)
    try:
        nats_stream.publish(payloads(200, 230))
        rest, batches = read_until(r, 170, max_rows=50)
        assert first + rest == list(range(230))
        assert floor(nats_stream, src) <= pos
        end = batches[-1].position
        r.acknowledge(end)
    finally:
        r.close()
    # a clean restart (the consumer stands exactly at the position) reuses the consumer
    r = src.open(end)
    try:
        assert r._expected_cseq > 1  # continues the consumer's delivery sequence
        nats_stream.publish(payloads(230, 231))
        got, _ = read_until(r, 1)
        assert got == [230]
        assert floor(nats_stream, src) == end
    finally:
        r.close()


def test_acknowledgement_never_passes_the_position(nats_stream: NatsStream):
    seqs = nats_stream.publish(payloads(0, 100))
    src = source(nats_stream, fetch_batch=10)
    r = src.open()
    try:
        b1 = r.read(30)
        b2 = r.read(30)
        assert b1.position == seqs[29] and b2.position == seqs[59]
        assert floor(nats_stream, src) == 0  # nothing acknowledged yet
        r.acknowledge(b1.position)
        assert floor(nats_stream, src) == b1.position
        r.acknowledge(seqs[44])  # inside a fetched chunk: exactly there, message by message
        assert floor(nats_stream, src) == seqs[44]
        r.acknowledge(b1.position)  # older: ignored (monotone)
        assert floor(nats_stream, src) <= seqs[44]
        r.acknowledge(b2.position)
        r.acknowledge(b2.position)  # idempotent
        assert floor(nats_stream, src) == b2.position
        read_until(r, 40)  # read the rest without acknowledging it
        info = nats_stream.consumer_info(src.durable)
        assert info.ack_floor.stream_seq == b2.position
        assert info.delivered.stream_seq == seqs[-1]
    finally:
        r.close()


def test_malformed_messages_go_to_errors(nats_stream: NatsStream):
    msgs = payloads(0, 3) + [b"{oops", b"", b'{"i": "x"}', b"[1]", b'{"i": 1} {"i": 2}']
    msgs += [b'{\n  "i": 7,\n  "s": "pretty"\n}'] + payloads(8, 10)
    nats_stream.publish(msgs)
    r = source(nats_stream).open()
    try:
        b = r.read()
        assert b.data.column("i").to_pylist() == [0, 1, 2, 7, 8, 9]
        errs = b.errors.to_pylist()
        assert [e["raw"] for e in errs] == ["{oops", "", '{"i": "x"}', "[1]", '{"i": 1} {"i": 2}']
        assert all(e["reason"].startswith(nats_stream.name) for e in errs)
        assert "empty message" in errs[1]["reason"]
        assert "expected exactly one JSON object" in errs[4]["reason"]
    finally:
        r.close()


def test_gap_in_deliveries_is_repaired(nats_stream: NatsStream):
    nats_stream.publish(payloads(0, 60))
    src = source(nats_stream, fetch_batch=10)
    r = src.open()
    try:
        b = r.read(20)
        r.acknowledge(b.position)
        got = b.data.column("i").to_pylist()
        got += r.read(15).data.column("i").to_pylist()
        r._expected_cseq = 10_000  # pretend a delivery went missing (lost in a reconnect)
        more, _ = read_until(r, 25)
        got += more
        assert got == list(range(60))
        assert floor(nats_stream, src) <= b.position
    finally:
        r.close()


def test_interest_stream_keeps_unacknowledged_messages(nats_interest_stream: NatsStream):
    s = nats_interest_stream
    src = source(s, fetch_batch=10)
    r = src.open()  # creates the durable, so the stream retains what follows
    s.publish(payloads(0, 50))
    b = r.read(20)
    r.acknowledge(b.position)
    read_until(r, 30)  # read more, never acknowledged
    r.close()
    r = src.open(b.position)  # the durable is kept: it holds the unacknowledged ones
    try:
        rest, _ = read_until(r, 30)
        assert rest == list(range(20, 50))
    finally:
        r.close()


def test_missing_stream_fails_with_a_clear_message():
    src = NatsJetStream(
        "nope.x", stream=f"NOPE_{uuid.uuid4().hex[:6]}", url=NATS_URL, schema=SCHEMA
    )
    from tests.sources.conftest import _check_jetstream

    _check_jetstream()
    r = src.open()
    try:
        assert r.health().startswith("failed: stream")
        with pytest.raises(RuntimeError, match="not found.*create it"):
            r.read()
    finally:
        r.close()


def test_unreachable_server_is_stalled_not_an_exception():
    src = NatsJetStream(
        "x", stream="S", url="nats://127.0.0.1:1", schema=SCHEMA, connect_timeout=0.3
    )
    r = src.open(5)
    try:
        assert r.health() == "stalled"
        b = r.read()
        assert b.data.num_rows == 0 and b.position == 5
        assert r.health() == "stalled"
    finally:
        r.close()


def test_bad_position():
    src = NatsJetStream("x", stream="S", schema=SCHEMA)
    with pytest.raises(ValueError, match="stream sequence number"):
        src.open("12")


def test_outage_is_stalled_then_recovers_without_loss(tmp_path):
    """A private nats-server on a free loopback port is stopped and started again."""
    import asyncio
    import shutil
    import socket
    import subprocess
    import time

    import nats
    from nats.js.api import StreamConfig

    binary = shutil.which("nats-server")
    if binary is None:
        pytest.skip("nats-server binary not installed (needed to simulate an outage)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"nats://127.0.0.1:{port}"

    def start() -> subprocess.Popen:
        proc = subprocess.Popen(
            [binary, "-js", "-a", "127.0.0.1", "-p", str(port), "-sd", str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(100):  # wait (bounded) until it listens
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                return proc
            except OSError:
                time.sleep(0.05)
        proc.kill()
        pytest.fail("private nats-server did not start")

    async def publish(lo: int, hi: int, create: bool = False) -> None:
        nc = await nats.connect(url, connect_timeout=2, max_reconnect_attempts=0)
        js = nc.jetstream()
        if create:
            await js.add_stream(StreamConfig(name="OUT", subjects=["out"]))
        for p in payloads(lo, hi):
            await js.publish("out", p)
        await nc.close()

    server = start()
    r = None
    try:
        asyncio.run(asyncio.wait_for(publish(0, 40, create=True), 20))
        src = NatsJetStream("out", stream="OUT", url=url, schema=SCHEMA, retry_interval=0.2)
        r = src.open()
        b = r.read(20)
        got = b.data.column("i").to_pylist()
        r.acknowledge(b.position)
        server.terminate()
        server.wait(10)
        time.sleep(0.2)
        b = r.read()
        assert b.data.num_rows == 0 and r.health() == "stalled"
        server = start()
        asyncio.run(asyncio.wait_for(publish(40, 50), 20))
        for _ in range(100):
            got += r.read().data.column("i").to_pylist()
            if len(got) >= 50:
                break
            time.sleep(0.05)
        assert got == list(range(50))
        assert r.health() == "running"
    finally:
        if r is not None:
            r.close()
        server.terminate()
        server.wait(10)


def test_resume_keeps_the_durable_and_acks_the_exact_resumption_position(
    nats_stream: NatsStream,
):
    """resume(position, acknowledged) after a "crash" that read past the position: the
    durable is not recreated, its floor moves to `acknowledged` (not back to 0), the
    messages read but never logged are read again, and acks stay exact afterwards."""
    seqs = nats_stream.publish(payloads(0, 100))
    src = source(nats_stream, fetch_batch=16)
    r = src.open()
    read_until(r, 60, max_rows=60)  # "logged" up to seqs[59]
    r.acknowledge(seqs[29])
    read_until(r, 20, max_rows=20)  # read up to seqs[79], never logged
    r.close()
    before = nats_stream.consumer_info(src.durable)
    assert before.ack_floor.stream_seq == seqs[29] and before.delivered.stream_seq == seqs[79]
    r = src.resume(seqs[59], seqs[44])
    try:
        assert r.catching_up and r.position == seqs[59]
        assert floor(nats_stream, src) == seqs[29]  # never below the old floor
        got, _ = read_until(r, 40, max_rows=25)
        assert got == list(range(60, 100))  # no loss, no duplicate
        assert not r.catching_up
        assert floor(nats_stream, src) == seqs[44]  # the resumption position, exactly
        info = nats_stream.consumer_info(src.durable)
        assert info.created == before.created  # the same consumer
        assert info.delivered.consumer_seq > before.delivered.consumer_seq
        r.acknowledge(seqs[70])  # delivered before the restart: handle from the catch-up
        assert floor(nats_stream, src) == seqs[70]
        r.acknowledge(seqs[91])  # delivered after it
        assert floor(nats_stream, src) == seqs[91]
    finally:
        r.close()
    # Nothing read past the position: the catch-up only finds the ack handles.
    r = src.resume(seqs[-1], seqs[95])
    try:
        assert r.catching_up
        (new,) = nats_stream.publish(payloads(100, 101))
        got, _ = read_until(r, 1)
        assert got == [100]
        assert floor(nats_stream, src) == seqs[95]
        r.acknowledge(new)
    finally:
        r.close()
    # Everything acknowledged: straight on from the durable.
    r = src.resume(new, new)
    try:
        assert not r.catching_up and r._expected_cseq > 1
        nats_stream.publish(payloads(101, 102))
        got, _ = read_until(r, 1)
        assert got == [101]
    finally:
        r.close()


def test_floor_ahead_of_the_position_never_moves_back(nats_stream: NatsStream):
    """Reading from the start with a durable that acknowledged more before (e.g. a new
    data_dir): everything is read again and the server's floor stays where it was."""
    seqs = nats_stream.publish(payloads(0, 50))
    src = source(nats_stream, fetch_batch=16)
    r = src.open()
    read_until(r, 40, max_rows=40)
    r.acknowledge(seqs[29])
    r.close()
    r = src.open()
    try:
        got, _ = read_until(r, 50, max_rows=20)
        assert got == list(range(50))
        r.acknowledge(seqs[9])
        assert floor(nats_stream, src) == seqs[29]
        r.acknowledge(seqs[35])
        assert floor(nats_stream, src) == seqs[35]
    finally:
        r.close()


def test_catch_up_over_deleted_messages_ends(nats_stream: NatsStream):
    """Messages delivered before a restart and then deleted from the stream (limits,
    purges) do not hold up the catch-up."""
    seqs = nats_stream.publish(payloads(0, 50))
    src = source(nats_stream, fetch_batch=16)
    r = src.open()
    read_until(r, 40, max_rows=40)
    r.acknowledge(seqs[9])
    r.close()

    async def delete(js) -> None:
        for seq in seqs[34:40]:
            await js.delete_msg(nats_stream.name, seq)

    nats_stream._run(delete)
    r = src.resume(seqs[19], seqs[9])
    try:
        got, _ = read_until(r, 24, max_rows=10)
        assert got == list(range(20, 34)) + list(range(40, 50))
        assert not r.catching_up
        r.acknowledge(seqs[-1])
        assert floor(nats_stream, src) == seqs[-1]
    finally:
        r.close()
