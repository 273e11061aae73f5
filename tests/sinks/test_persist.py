"""`Persist` keeps columns of every Spark type, timestamps included."""

from __future__ import annotations

import datetime as dt

import sealtime as st


def test_persist_sink_keeps_a_timestamp_column(make_flow):
    # Regression: the shard's schema was made without a time zone, so a timestamp
    # column failed the first commit (pyspark's to_arrow_schema asserts on it).
    flow = make_flow()
    ts = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
    src = flow.source(
        "s", st.sources.Rows({"k": "string", "at": "timestamp"}, [(1, {"k": "a", "at": ts})])
    )
    sink = st.sinks.Persist("stamped")
    src.sink(sink)
    flow.run()
    table = sink.read_arrow()
    assert table.column("k").to_pylist() == ["a"]
    assert table.column("at").to_pylist()[0].timestamp() == ts.timestamp()
    assert table.column("_diff").to_pylist() == [1]
