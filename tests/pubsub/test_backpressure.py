"""Slow subscribers: a stalled one is cut off with a reason, the others keep their latency."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa

from sealtime.pubsub import Closed, Epoch, subscribe_stream
from tests.pubsub.conftest import read_all, start

ROWS = 5_000  # 40 KB per epoch
LIMIT = 4 * 1024 * 1024  # ~100 epochs of backlog before a subscriber is cut off


def test_stalled_subscriber_is_disconnected_others_keep_low_latency(publishers):
    pub = start(publishers, "bp", max_queue_bytes=LIMIT, close_timeout=20)
    stalled = subscribe_stream(pub.address, timeout=10)  # never reads until cut off
    good = subscribe_stream(pub.address, timeout=10)
    sealed_at: dict[int, float] = {}
    latencies: list[float] = []
    received: list[int] = []
    n_epochs = 500
    stop = threading.Event()

    def read_good() -> None:
        deadline = time.monotonic() + 60
        while not stop.is_set() and time.monotonic() < deadline:
            event = good.next_event(timeout=0.5)
            if isinstance(event, Epoch):
                latencies.append(time.monotonic() - sealed_at[event.time])
                received.append(event.time)
                if event.time == n_epochs - 1:
                    return
            elif isinstance(event, Closed):
                return

    reader = threading.Thread(target=read_good, daemon=True)
    reader.start()
    table = pa.Table.from_arrays([pa.array(np.arange(ROWS, dtype=np.int64))], names=["x"])
    cut_after = None
    for t in range(n_epochs):
        pub.send(t, table)
        sealed_at[t] = time.monotonic()
        pub.advance_lower([t + 1])
        if cut_after is None and any("fell behind" in d.reason for d in pub.disconnections):
            cut_after = t
        time.sleep(0.003)
    reader.join(timeout=30)
    stop.set()
    assert not reader.is_alive()

    # The stalled subscriber was cut off (and only it) while the stream went on.
    assert cut_after is not None and cut_after < n_epochs - 1
    reasons = [d.reason for d in pub.disconnections]
    assert len(reasons) == 1 and reasons[0].startswith("fell behind at time "), reasons
    assert pub.subscriber_count == 1

    # The good subscriber got every epoch, promptly.
    assert received == list(range(n_epochs))
    p50, p99 = np.percentile(latencies, [50, 99])
    print(f"cut after epoch {cut_after}; latency p50={p50:.4f}s p99={p99:.4f}s")
    assert p99 < 0.5, f"delivery latency p50={p50:.4f}s p99={p99:.4f}s"

    # When the stalled subscriber finally reads, it finds the reason after its backlog.
    events = read_all(stalled, timeout=20)
    assert isinstance(events[-1], Closed)
    assert events[-1].reason.startswith("fell behind at time "), events[-1]
    assert f"max_queue_bytes={LIMIT}" in events[-1].reason
    epochs = [e.time for e in events if isinstance(e, Epoch)]
    assert epochs == list(range(len(epochs)))  # a prefix of whole epochs, then the reason
    good.close()


def test_slow_but_reading_subscriber_within_limits_gets_everything(publishers):
    pub = start(publishers, "bp2", max_queue=10_000)
    sub = subscribe_stream(pub.address, timeout=10)
    table = pa.Table.from_arrays([pa.array(np.arange(1000, dtype=np.int64))], names=["x"])
    for t in range(200):
        pub.send(t, table)
        pub.advance_lower([t + 1])
    pub.advance_lower([])
    pub.close()
    events = read_all(sub)
    assert [e.time for e in events if isinstance(e, Epoch)] == list(range(200))
    assert events[-1] == Closed("publisher closed")
