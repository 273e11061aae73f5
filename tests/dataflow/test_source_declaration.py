"""Mistakes in declaring a source fail when the graph is built, naming the setting
(issue 10, bug 5), and the side outputs stay readable after a run."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sealtime as st
from sealtime.sources.generator import Generator

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_time_naming_a_missing_column_is_refused_when_added(spark, tmp_path):
    flow = st.Dataflow("decl", data_dir=str(tmp_path / "d"), spark=spark)
    with pytest.raises(ValueError, match=r"time='ts' is not a column .*\['event_id'"):
        flow.source("bids", Generator(limit=10), time="ts", lateness="1s")
    assert flow.source("bids", Generator(limit=10), time="date_time", lateness="1s")


def test_late_and_errors_are_readable_after_the_first_run(spark, tmp_path):
    flow = st.Dataflow("after", data_dir=str(tmp_path / "d"), spark=spark)
    gen = Generator(seed=1, limit=3000, rate=1000, late_fraction=0.02, late_by="30s")
    bids = flow.source("bids", gen, time="date_time", lateness="2s", max_rows_per_tick=500)
    flow.run()
    late = bids.late.updates()  # first read after the run: only a read, no new node
    assert late.num_rows == gen.injected_late(3000) > 0
    assert bids.errors.updates().num_rows == 0
    assert bids.late is bids.late  # the same collection each time
