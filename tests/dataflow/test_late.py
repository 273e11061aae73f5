"""Late data: records behind the sealed frontier go to `late` with a reason, counted
exactly, and the decision does not depend on tick boundaries."""

from __future__ import annotations

import re

import pytest

import sealtime as st
from sealtime.sources.generator import Generator


def _flow(make_flow, max_rows, events=20_000, lateness="4s"):
    gen = Generator(
        seed=7, limit=events, rate=1000, out_of_order="2s", late_fraction=0.01, late_by="30s"
    )
    flow = make_flow()
    bids = flow.source("bids", gen, time="date_time", lateness=lateness, max_rows_per_tick=max_rows)
    per_window = bids.window(st.Tumbling("10s")).aggregate(n=st.count(), hi=st.max("price"))
    return gen, flow, bids, per_window


@pytest.mark.parametrize("max_rows", [20_000, 3_000])
def test_late_counts_match_injected(make_flow, max_rows):
    events = 20_000
    gen, flow, bids, per_window = _flow(make_flow, max_rows, events)
    late = bids.late
    flow.run()
    late_rows = late.updates()
    injected = gen.injected_late(events)
    assert injected > 50
    assert late_rows.num_rows == injected
    assert flow.metrics()["sources"]["bids"]["late"] == injected
    ids = late_rows.column("event_id").to_numpy()
    assert gen.is_injected_late(ids).all()
    # The reason names the bound the row missed and where the bound comes from; the row
    # is at the binding time of the tick that read it.
    binding_times = {b["into_time"] for b in flow.bindings}
    for row in late_rows.to_pylist():
        found = re.search(r"admission bound (-?\d+) ms", row["reason"])
        assert found, row["reason"]
        bound = int(found.group(1))
        assert row["reason"] == (
            f"event time {round(row['date_time'].timestamp() * 1000)} ms is below the admission "
            f"bound {bound} ms (largest event time seen before it {bound + 4000} ms minus "
            "lateness 4000 ms)"
        )
        assert row["_time"] in binding_times
    # Nothing lost: every event is either in a window or late.
    counted = sum(per_window.updates().column("n").to_pylist())
    assert counted + injected == events


def test_late_decision_independent_of_tick_size(make_flow):
    outs = []
    for max_rows in (20_000, 1_700):
        _, flow, bids, per_window = _flow(make_flow, max_rows)
        late = bids.late
        flow.run()
        outs.append(
            (
                per_window.updates().to_pylist(),
                sorted(late.updates().column("event_id").to_pylist()),
            )
        )
    assert outs[0] == outs[1]
