"""`col.publish`: a subscriber receives every sealed epoch whole, matching updates()."""

from __future__ import annotations

import threading

import sealtime as st
from sealtime.pubsub import Epoch, Progress, subscribe_stream
from sealtime.sources.rows import Rows


def test_subscriber_sees_whole_epochs_matching_updates(make_flow):
    flow = make_flow()
    rows = [(t, {"k": "ab"[t % 2], "v": t}) for t in range(6)] + [(4, {"k": "a", "v": 0}, -1)]
    agg = flow.source("s", Rows({"k": "string", "v": "long"}, rows, times_per_tick=2)).aggregate(
        by="k", n=st.count(), total=st.sum("v")
    )
    agg.publish("totals")
    address = flow.publications["totals"].address
    sub = subscribe_stream(address, timeout=60)
    got: dict[int, list] = {}
    finished = threading.Event()

    def consume():
        for event in sub:
            if isinstance(event, Epoch):
                got.setdefault(event.time, []).extend(event.table.to_pylist())
            elif isinstance(event, Progress) and event.lower.is_empty():
                finished.set()
                return

    reader = threading.Thread(target=consume, daemon=True)
    reader.start()
    flow.run()
    assert finished.wait(60), "the subscriber never saw the final progress"
    want: dict[int, list] = {}
    for r in agg.updates().to_pylist():
        t = r.pop("_time")
        want.setdefault(t, []).append(r)
    key = lambda r: repr(sorted(r.items()))  # noqa: E731
    assert {t: sorted(v, key=key) for t, v in got.items()} == {
        t: sorted(v, key=key) for t, v in want.items()
    }
    flow.publications["totals"].close()
