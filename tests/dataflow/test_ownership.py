"""Collections and sinks belong to one dataflow (issue 10, bugs 2 and 3)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sealtime as st

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def source(spark, tmp_path, name):
    flow = st.Dataflow(name, data_dir=str(tmp_path / name), spark=spark)
    return flow, flow.source("s", st.sources.Rows(SCHEMA, [(1, {"k": 1, "v": 2})]))


def test_a_join_across_dataflows_is_refused_naming_both(spark, tmp_path):
    _, a = source(spark, tmp_path, "a")
    _, b = source(spark, tmp_path, "b")
    with pytest.raises(ValueError, match=r"join: .*dataflow 'b'.*'a'.*one Dataflow"):
        a.join(b, on="k")


def test_one_sink_object_for_two_dataflows_is_refused(spark, tmp_path):
    _, a = source(spark, tmp_path, "a")
    _, b = source(spark, tmp_path, "b")
    sink = st.sinks.Parquet(str(tmp_path / "out"))
    a.sink(sink)
    with pytest.raises(ValueError, match=r"Parquet object already receives .*dataflow 'a'"):
        b.sink(sink)


def test_one_sink_object_for_two_collections_is_refused(spark, tmp_path):
    _, a = source(spark, tmp_path, "a")
    sink = st.sinks.Parquet(str(tmp_path / "out"))
    a.sink(sink)
    with pytest.raises(ValueError, match="this dataflow"):
        a.filter("v > 0").sink(sink)
