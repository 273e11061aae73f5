"""`st.sources.Subscription` reader (no Spark): explicit times, frontier = publisher lower,
position = frontier, resumes a view without gap or duplicate."""

from __future__ import annotations

import pyarrow as pa

import sealtime as st
from sealtime.pubsub import InMemoryHistory, Publisher

SCHEMA = pa.schema([("k", pa.string()), ("_diff", pa.int64())])


def _upd(keys, diff=1):
    return pa.Table.from_arrays(
        [pa.array(keys), pa.array([diff] * len(keys), pa.int64())], names=["k", "_diff"]
    )


def _drain(reader, want_frontier):
    import time

    rows, deadline = [], time.monotonic() + 10
    while time.monotonic() < deadline:
        batch = reader.read()
        rows += batch.data.to_pylist()
        if batch.event_frontier == want_frontier or batch.exhausted:
            return rows, batch
        time.sleep(0.01)
    raise AssertionError("no progress")


def test_subscription_source_resumes_view_from_its_position():
    pub = Publisher("v", history=InMemoryHistory(), schema=SCHEMA).start()
    try:
        source = st.sources.Subscription("v", {"v": pub.address}, mode="view", schema=SCHEMA)
        assert source.time_column == "_time" and source.schema.names == ["k"]
        reader = source.open()
        pub.send(5, _upd(["a", "b"]))
        pub.advance_lower([6])
        rows, batch = _drain(reader, 6)
        assert rows == [{"k": "a", "_time": 5, "_diff": 1}, {"k": "b", "_time": 5, "_diff": 1}]
        assert batch.position == [6]
        reader.close()
        pub.send(7, _upd(["a"], -1))
        pub.advance_lower([8])
        again = source.open(batch.position)  # a restarted dataflow
        rows, batch = _drain(again, 8)
        assert rows == [{"k": "a", "_time": 7, "_diff": -1}]
        pub.advance_lower([])
        rows, batch = _drain(again, None)
        assert rows == [] and batch.exhausted and batch.position == []
        again.close()
    finally:
        pub.close()
