"""Idle advancement: ``flow.source(..., idle_timeout=...)`` moves an idle event-time
source's frontier to the ticker's clock minus lateness, recorded in the binding.

The clock is injected (one second per tick), so nothing here is timed. The NATS test
needs JetStream on 127.0.0.1:4222 and fails, naming the server, when it is not there.
"""

from __future__ import annotations

import json
import socket
import uuid

import pytest

import sealtime as st
from tests.sources.conftest import NATS_HOST, NATS_PORT, NATS_URL, NatsStream

BASE = 1_700_000_000_000  # ms, a multiple of the 5 s window
WINDOW = 5_000
LATENESS = 2_000
IDLE = 5_000
TICK = 1_000
SCHEMA = {"id": "long", "ts": "long"}


class Clock:
    """The ticker's clock, moved by the test: seconds, like `time.time`."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


@pytest.fixture
def jetstream() -> NatsStream:
    try:
        with socket.create_connection((NATS_HOST, NATS_PORT), timeout=2.0):
            pass
    except OSError as exc:
        pytest.fail(
            f"NATS JetStream on {NATS_HOST}:{NATS_PORT} not reachable: {exc} "
            "(start nats-server -js on that port)",
            pytrace=False,
        )
    stream = NatsStream()
    stream.create()
    yield stream
    stream.delete()


def build(spark, data_dir, stream: NatsStream, durable: str, clock: Clock):
    flow = st.Dataflow("idle", data_dir=str(data_dir), spark=spark, clock=clock, truncate_log=False)
    src = st.sources.NatsJetStream(
        stream.subject, stream=stream.name, url=NATS_URL, durable=durable, schema=SCHEMA
    )
    events = flow.source("events", src, time="ts", lateness="2s", idle_timeout="5s")
    counts = events.window(st.Tumbling("5s")).aggregate(n=st.count())
    counts.sink(st.sinks.Persist("counts"))
    events.late.sink(st.sinks.Persist("late"))
    return flow, events, counts


def commits(flow) -> list[tuple]:
    out = []
    for _, sink in flow.sinks:
        shard = sink.shard
        for b in shard.batches():
            table = shard.read_files(b.files)
            rows = sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())
            out.append((sink.name, b.lower, b.upper, rows))
    return out


def tick(flow, clock: Clock) -> None:
    clock.ms += TICK
    flow.run(ticks=1)


def test_idle_nats_source_seals_the_last_window_routes_late_and_replays(spark, tmp_path, jetstream):
    durable = f"idle_{uuid.uuid4().hex[:8]}"
    clock = Clock(BASE + 8_000)
    flow, events, counts = build(spark, tmp_path / "a", jetstream, durable, clock)
    jetstream.publish([json.dumps({"id": i, "ts": BASE + i * 400}).encode() for i in range(20)])
    # Read everything (NATS delivers asynchronously: a few ticks at most).
    for _ in range(10):
        tick(flow, clock)
        if flow.metrics()["sources"]["events"]["rows"] == 20:
            break
    assert flow.metrics()["sources"]["events"]["rows"] == 20
    last_active = clock.ms
    # The data alone seals up to the largest event time minus lateness: the first window.
    assert events.frontier == BASE + 19 * 400 - LATENESS
    assert [r["n"] for r in counts.updates().to_pylist()] == [13]
    # Quiet: the second window [BASE+5 s, BASE+10 s) closes by idleness, within
    # idle_timeout plus one tick of the last tick that read a record — not before.
    emitted_at = None
    for _ in range(IDLE // TICK + 1):
        tick(flow, clock)
        if len(counts.updates()) == 2:
            emitted_at = clock.ms
            break
        assert clock.ms - last_active < IDLE, "idleness did not advance the frontier"
    assert emitted_at is not None and emitted_at - last_active <= IDLE + TICK
    assert events.frontier == emitted_at - LATENESS
    assert counts.updates().to_pylist()[-1]["n"] == 7
    assert flow.bindings[-1]["sources"]["events"]["state"]["idle_floor"] == emitted_at - LATENESS
    # A record below the advanced frontier (but within lateness of the largest event time
    # seen, so only idleness makes it late) goes to `late`, with the reason.
    jetstream.publish([json.dumps({"id": 99, "ts": BASE + 9_000}).encode()])
    for _ in range(10):
        tick(flow, clock)
        if flow.metrics()["sources"]["events"]["rows"] == 21:
            read_at = flow.bindings[-1]["into_time"]
            break
    assert flow.metrics()["sources"]["events"]["late"] == 1
    # It is stamped at the binding time of the tick that read it, and released with
    # that tick (a side output follows the binding times, whatever the event time does).
    late = events.late.updates().to_pylist()
    assert [r["id"] for r in late] == [99]
    assert "idle_timeout advanced" in late[0]["reason"]
    assert f"at clock time {emitted_at} ms" in late[0]["reason"]
    assert late[0]["_time"] == read_at
    assert len(counts.updates()) == 2  # the closed window did not change
    original = commits(flow)
    assert {c[0] for c in original} == {"counts", "late"}
    flow.close()
    # A replay over the recorded log and bindings (no NATS read, another clock) gives
    # the same commits, idle advancement included.
    replayed, _, _ = build(spark, tmp_path / "b", jetstream, durable, Clock(0))
    replayed.replay(tmp_path / "a", name="idle")
    assert commits(replayed) == original
    replayed.close()


def test_idle_timeout_settings_are_checked(make_flow):
    flow = make_flow()
    rows = st.sources.Rows(SCHEMA, [(1, {"id": 1, "ts": 1})])
    files = st.sources.Files("/nonexistent-dir", format="jsonl", schema=SCHEMA, finite=True)
    with pytest.raises(ValueError, match=r"idle_timeout='soon' is not a duration"):
        flow.source("a", files, time="ts", idle_timeout="soon")
    with pytest.raises(ValueError, match=r"idle_timeout=-5 is negative"):
        flow.source("b", files, time="ts", idle_timeout=-5)
    with pytest.raises(ValueError, match=r"idle_timeout=0 must be > 0, e.g. idle_timeout='5s'"):
        flow.source("c", files, time="ts", idle_timeout=0)
    with pytest.raises(ValueError, match=r"needs event time \(time='<event time column>'\)"):
        flow.source("d", files, idle_timeout="5s")
    # explicit times (Rows) are event time: allowed
    flow.source("e", rows, idle_timeout="5s")


def test_run_after_a_finished_replay_says_why_it_cannot(spark, tmp_path):
    def build(d):
        flow = st.Dataflow("rp", data_dir=str(d), spark=spark, truncate_log=False)
        rows = st.sources.Rows(SCHEMA, [(1, {"id": 1, "ts": 1}), (2, {"id": 2, "ts": 2})])
        flow.source("s", rows).sink(st.sinks.Persist("out"))
        return flow

    original = build(tmp_path / "a")
    original.run()
    original.close()
    replayed = build(tmp_path / "b")
    reports = replayed.replay(tmp_path / "a")
    assert len(reports) == 2
    with pytest.raises(RuntimeError, match=r"the replay is finished — all 2 recorded ticks ran"):
        replayed.run(ticks=1)
    assert replayed.run() == []  # until finished: nothing left to do
    replayed.close()
