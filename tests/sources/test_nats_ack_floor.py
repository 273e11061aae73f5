"""The NATS JetStream ack floor across restarts of a dataflow (issue 11, bug 3).

A *restart* is a new `Dataflow` object on the same data_dir (the previous one is
abandoned without ``close()``, like a process that died after its last tick). Some
restarts also happen right after the reader fetched messages the dataflow never logged
(delivered by the durable consumer, lost with the process).

Checked after every tick and right after every restart:

* the server's ack floor (``consumer_info().ack_floor.stream_seq``) never decreases;
* it is never ahead of the committed upper: every message at or below it is in the
  exactly-once sink's committed output;
* it equals the dataflow's resumption frontier (acks go message by message to the exact
  position, not to the end of a fetched chunk);
* the durable consumer is never deleted (its delivery sequence only grows);
* the sink's content at the end equals an uninterrupted run's (no loss, no duplicate):
  every message whose event time the final frontier sealed, exactly once. (That output
  is a function of the messages alone, so it is computed here rather than by a second
  Spark run, which would double the test's time.)

Needs JetStream on 127.0.0.1:4222 (fails naming the server under CI, else skips).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import sealtime as st
from tests.sources.conftest import NATS_URL, NatsStream

BASE = 1_700_000_000_000  # ms
TOTAL = 160  # messages
LATENESS = 700  # ms
PER_TICK = 15  # messages one tick reads
SCHEMA = {"i": "long", "ts": "long"}


def message(i: int) -> bytes:
    return json.dumps({"i": i, "ts": BASE + i * 100}).encode()


def build(spark, data_dir, stream: NatsStream, durable: str):
    flow = st.Dataflow("natsack", data_dir=str(data_dir), spark=spark, record=False)
    src = st.sources.NatsJetStream(
        stream.subject,
        stream=stream.name,
        url=NATS_URL,
        durable=durable,
        schema=SCHEMA,
        fetch_batch=8,  # several fetched chunks per read: acks must not snap to chunk ends
        max_per_read=PER_TICK,
    )
    # Lateness keeps the resumption frontier well behind the read position.
    s = flow.source("s", src, time="ts", lateness=f"{LATENESS}ms")
    s.sink(st.sinks.Persist("rows"))
    return flow


def committed(flow) -> list[int]:
    """The message numbers in the sink's committed output (with repetitions)."""
    ((_, sink),) = flow.sinks
    return sorted(sink.read_arrow().column("i").to_pylist())


def uninterrupted(total: int) -> list[int]:
    """What a run that read all `total` messages commits: each message whose event time
    is below the frontier (largest event time minus lateness), once."""
    frontier = BASE + (total - 1) * 100 - LATENESS
    return [i for i in range(total) if BASE + i * 100 < frontier]


def reader_of(flow) -> Any:
    (runtime,) = flow.engine.sources.values()
    return runtime.reader


def run_until_read(flow, n: int, limit: int = 40) -> None:
    flow.engine  # noqa: B018 - builds the engine, so metrics() has the source
    for _ in range(limit):
        if flow.metrics()["sources"]["s"]["rows"] >= n:
            return
        flow.run(ticks=1)
    raise AssertionError(f"read {flow.metrics()['sources']['s']['rows']} of {n} rows")


def test_ack_floor_never_decreases_and_never_passes_the_committed_upper(
    spark, nats_stream: NatsStream, tmp_path
):
    seqs = nats_stream.publish([message(i) for i in range(TOTAL)])
    assert seqs == list(range(1, TOTAL + 1))  # message i is stream sequence i + 1
    durable = f"d_{uuid.uuid4().hex[:8]}"
    floors: list[int] = []  # every floor observed, in order
    restart_floors: list[tuple[int, int, int]] = []  # (floor, resumption, position) at restart
    delivered_seq = 0

    def observe(flow, where: str) -> int:
        nonlocal delivered_seq
        info = nats_stream.consumer_info(durable)
        floor = info.ack_floor.stream_seq
        if floors:
            assert floor >= floors[-1], f"{where}: ack floor fell from {floors[-1]} to {floor}"
        floors.append(floor)
        # Never ahead of the committed upper: messages 1..floor are all committed.
        missing = set(range(floor)) - set(committed(flow))
        assert not missing, f"{where}: floor {floor} acks uncommitted messages {sorted(missing)}"
        # The durable is kept: its delivery sequence never goes back (a recreated
        # consumer would start again at 1).
        assert info.delivered.consumer_seq >= delivered_seq, f"{where}: durable recreated"
        delivered_seq = info.delivered.consumer_seq
        return floor

    runs = [2, 1, 2, 1, 2, 1]  # ticks per run: the first run and 5 restarts
    for k, ticks in enumerate(runs):
        flow = build(spark, tmp_path, nats_stream, durable)
        if k:
            assert flow.engine.recovered_from["ticks"] > 0
        reader = reader_of(flow)
        resume = flow.resumption_frontier().get("s") or 0
        floor = observe(flow, f"restart {k}")
        restart_floors.append((floor, resume, reader.position))
        for t in range(ticks):
            flow.run(ticks=1)
            floor = observe(flow, f"run {k} tick {t}")
            resume = flow.resumption_frontier().get("s")
            if resume:
                # Message by message: exactly the resumption frontier, not a chunk end.
                assert floor == resume, f"run {k} tick {t}: floor {floor} != frontier {resume}"
        if k % 2 == 1:
            # Fetched from the durable but never logged: lost with the process, so the
            # next run must read these again (the durable will not redeliver them).
            lost = sum(reader.read(7).data.num_rows for _ in range(3))
            assert lost > 0
        # abandoned without close(): like a process that died after its last tick
    flow = build(spark, tmp_path, nats_stream, durable)
    observe(flow, "final restart")
    run_until_read(flow, TOTAL)
    flow.run(ticks=1)
    observe(flow, "end")
    assert committed(flow) == uninterrupted(TOTAL)
    final = flow.resumption_frontier()["s"]
    assert floors[-1] == final
    flow.close()
    print(f"\nack floors seen (stream seq): {floors}")
    print(f"at each restart (floor, resumption frontier, read position): {restart_floors}")
    # The floor moved on between restarts (not stuck at 0) and after a restart it
    # stands at the resumption frontier from the first tick on.
    assert restart_floors[-1][0] > 0
    assert all(f == r for f, r, _ in restart_floors[1:]), restart_floors
    assert any(p > r for _, r, p in restart_floors[1:]), "the frontier never lagged"
    # Every run read a full tick's worth after its restart (the catch-up over logged
    # messages costs no rows): positions at the restarts grow by ticks * PER_TICK.
    positions = [p for _, _, p in restart_floors]
    assert positions == [sum(runs[:k]) * PER_TICK for k in range(len(runs))], positions
