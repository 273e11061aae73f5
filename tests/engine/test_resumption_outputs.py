"""The resumption frontier per output: a stream with late rows keeps acknowledging
(issue 32).

A late row goes to the source's ``late`` output stamped at its tick's binding time — the
ticker's clock, far ahead of the event times the main output's sinks make durable.
Compared with one upper for all rows, that one row would hold every later
acknowledgement back for good (the NATS ack floor, Redis XACK, the Files consumed
marker). Each output is compared with the sinks downstream of *it*: here the main
output feeds a Persist sink and nothing exactly-once reads ``late``.

Needs JetStream on 127.0.0.1:4222 (fails naming the server under CI, else skips).
"""

from __future__ import annotations

import json
import uuid

import sealtime as st
from tests.sources.conftest import NATS_URL, NatsStream

BASE = 1_700_000_000_000  # ms
TOTAL = 60
LATE = 10  # this message is a minute late: routed to `late`
PER_TICK = 10


def message(i: int) -> bytes:
    ts = BASE - 60_000 if i == LATE else BASE + i * 100
    return json.dumps({"i": i, "ts": ts}).encode()


def test_late_rows_do_not_hold_the_acknowledgement_back(spark, nats_stream: NatsStream, tmp_path):
    seqs = nats_stream.publish([message(i) for i in range(TOTAL)])
    assert seqs == list(range(1, TOTAL + 1))  # message i is stream sequence i + 1
    durable = f"d_{uuid.uuid4().hex[:8]}"
    flow = st.Dataflow("lateack", data_dir=str(tmp_path), spark=spark, record=False)
    src = st.sources.NatsJetStream(
        nats_stream.subject,
        stream=nats_stream.name,
        url=NATS_URL,
        durable=durable,
        schema={"i": "long", "ts": "long"},
        max_per_read=PER_TICK,
    )
    s = flow.source("s", src, time="ts", lateness="700ms")
    sink = st.sinks.Persist("rows")
    s.sink(sink)
    for _ in range(TOTAL // PER_TICK + 1):
        flow.run(ticks=1)
    assert flow.metrics()["sources"]["s"]["late"] == 1
    floor = nats_stream.consumer_info(durable).ack_floor.stream_seq
    resume = flow.resumption_frontier()["s"]
    # Acknowledged well past the late message, exactly to the resumption frontier ...
    assert floor == resume and floor > LATE + 1 + 2 * PER_TICK, (floor, resume)
    # ... and never past what the sink holds: every message up to the floor (but the
    # late one, which is in `late`) is committed.
    committed = set(sink.read_arrow().column("i").to_pylist())
    assert set(range(floor)) - {LATE} <= committed
    flow.close()
