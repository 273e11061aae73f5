"""The timestamper without I/O: admission decisions against the brute-force definition
(record i is late iff its event time < max event time of the records before it -
lateness), independence from where tick boundaries fall, idleness, the reported
frontier, and null or unparsable event times."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.engine.timestamper import (
    Timestamper,
    brute_force_late,
    split_null_times,
)
from sealtime.time.order import MIN_TIME
from tests.conftest import examples

times_lists = st.lists(st.integers(-1_000_000, 1_000_000), max_size=60)


def _split(times: list[int], cuts: list[int]) -> list[list[int]]:
    """`times` cut into consecutive batches at the (sorted, deduplicated) `cuts`."""
    bounds = sorted({c % (len(times) + 1) for c in cuts})
    out, prev = [], 0
    for b in [*bounds, len(times)]:
        out.append(times[prev:b])
        prev = b
    return out


def _admit_all(ts: Timestamper, batches: list[list[int]]) -> tuple[list[bool], list[int]]:
    late: list[bool] = []
    stamped: list[int] = []
    for into, batch in enumerate(batches):
        a = ts.admit(np.array(batch, np.int64))
        late += a.late.tolist()
        stamped += a.times.tolist()
        ts.note_read(bool(batch), into)
        ts.advance(into_time=into)
    return late, stamped


@settings(max_examples=examples(300))
@given(times=times_lists, lateness=st.integers(0, 50_000), cuts=st.lists(st.integers(0, 100)))
def test_admission_matches_brute_force_whatever_the_batches(times, lateness, cuts):
    ts = Timestamper("s", time_column="t", lateness=lateness)
    late, stamped = _admit_all(ts, _split(times, cuts))
    assert late == brute_force_late(times, lateness)
    # A late record is stamped at the bound it missed; the others at their own time.
    for i, t in enumerate(times):
        bound = max(times[:i]) - lateness if i else None
        assert stamped[i] == (bound if late[i] else t)
    # The frontier is the largest time seen minus lateness, never lower than before.
    assert ts.frontier == (max(times) - lateness if times else MIN_TIME)
    assert ts.max_seen == (max(times) if times else None)


@settings(max_examples=examples(200))
@given(times=times_lists, lateness=st.integers(0, 10_000), a=st.lists(st.integers(0, 100)))
def test_two_splittings_decide_alike(times, lateness, a):
    one = _admit_all(Timestamper("s", time_column="t", lateness=lateness), [times])
    many = _admit_all(Timestamper("s", time_column="t", lateness=lateness), _split(times, a))
    assert one == many


@settings(max_examples=examples(200))
@given(
    times=st.lists(st.integers(0, 100_000), min_size=1, max_size=30),
    lateness=st.integers(0, 5_000),
    quiet=st.integers(0, 20_000),
    late_by=st.integers(0, 20_000),
)
def test_idleness_moves_the_frontier_and_later_records_below_it_are_late(
    times, lateness, quiet, late_by
):
    timeout = 1_000
    ts = Timestamper("s", time_column="t", lateness=lateness, idle_timeout=timeout)
    ts.note_read(True, 0)
    ts.admit(np.array(times, np.int64))
    ts.advance(into_time=0)
    clock = max(times) + quiet + timeout  # a quiet source: no record for `quiet + timeout`
    ts.note_read(False, clock)
    ts.advance(into_time=clock)
    target = clock - lateness
    assert ts.frontier == max(max(times) - lateness, target)
    assert (ts.idle_floor == target) == (target > max(times) - lateness)
    t = target - late_by - 1
    a = ts.admit(np.array([t], np.int64))
    floor = max(max(times) - lateness, ts.idle_floor or MIN_TIME)
    assert bool(a.late[0]) == (t < floor)
    if a.late[0] and ts.idle_floor is not None and max(times) - lateness < ts.idle_floor:
        assert "idle_timeout advanced" in a.reason[0].as_py()


def test_reported_frontier_is_the_bound_without_lateness():
    ts = Timestamper("s", explicit=True)
    ts.admit(np.array([10, 20], np.int64))
    ts.advance(into_time=0, event_frontier=15)
    a = ts.admit(np.array([14, 16], np.int64))
    assert a.late.tolist() == [True, False] and a.times.tolist() == [15, 16]
    assert "source's event-time frontier 15 ms" in a.reason[0].as_py()
    ts.advance(into_time=1, event_frontier=12)  # never moves back
    assert ts.frontier == 15


def test_late_reason_names_the_admission_bound():
    ts = Timestamper("s", time_column="t", lateness=10)
    a = ts.admit(np.array([100, 80], np.int64))
    assert a.reason[0].as_py() is None
    assert a.reason[1].as_py() == (
        "event time 80 ms is below the admission bound 90 ms (largest event time seen "
        "before it 100 ms minus lateness 10 ms)"
    )


def test_ingestion_time_and_exhaustion():
    ts = Timestamper("s")
    assert ts.side_time(500) == 500
    ts.advance(into_time=500)
    assert ts.frontier == 501
    ts.advance(into_time=600, exhausted=True)
    assert ts.frontier is None and ts.exhausted


def test_side_outputs_are_stamped_at_the_frontier_before_the_batch():
    ts = Timestamper("s", time_column="t", lateness=0)
    assert ts.side_time(10_000) == MIN_TIME
    ts.admit(np.array([50], np.int64))
    ts.advance(into_time=10_000)
    assert ts.side_time(20_000) == 50


def test_event_times_from_timestamps_and_ints():
    ts = Timestamper("s", time_column="t")
    col = pa.array([1_500_000, None], pa.timestamp("us", tz="UTC"))
    assert ts.event_times(pa.table({"t": col}).slice(0, 1)).tolist() == [1_500]
    assert ts.event_times(pa.table({"t": pa.array([7], pa.int32())})).tolist() == [7]


def test_unparsable_event_time_type_is_refused():
    ts = Timestamper("src", time_column="t")
    with pytest.raises(ValueError, match="time='t' has type string"):
        ts.event_times(pa.table({"t": ["noon"]}))


def test_null_event_times_go_to_errors():
    t = pa.table({"k": [1, 2, 3], "t": [5, None, 6]})
    ok, errors = split_null_times(t, "t")
    assert ok.column("k").to_pylist() == [1, 3]
    assert errors.to_pylist() == [
        {"raw": '{"k": 2, "t": null}', "reason": "event time column 't' is null"}
    ]
    same, none = split_null_times(ok, "t")
    assert same is ok and none is None
