"""The timestamper without I/O: admission decisions against the brute-force definition
(record i is late iff its event time < max event time of the records before it -
lateness), independence from where tick boundaries fall, idleness, the reported
frontier, null or unparsable event times, and bounded event time (`max_future`: a record
beyond the binding time + max_future is refused and moves nothing)."""

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
from sealtime.errors import SchemaError
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
        a = ts.admit(np.array(batch, np.int64), into)
        late += a.late.tolist()
        stamped += a.times.tolist()
        ts.note_read(bool(batch), into)
        ts.advance(into_time=into)
    return late, stamped


@settings(max_examples=examples(300))
@given(times=times_lists, lateness=st.integers(0, 50_000), cuts=st.lists(st.integers(0, 100)))
def test_admission_matches_brute_force_whatever_the_batches(times, lateness, cuts):
    ts = Timestamper("s", time_column="t", lateness=lateness)
    batches = _split(times, cuts)
    late, stamped = _admit_all(ts, batches)
    assert late == brute_force_late(times, lateness)
    # A late record is stamped at its tick's binding time (the batch's index here); the
    # others at their own time.
    into = [k for k, batch in enumerate(batches) for _ in batch]
    assert stamped == [into[i] if late[i] else t for i, t in enumerate(times)]
    # The frontier is the largest time seen minus lateness, never lower than before.
    assert ts.frontier == (max(times) - lateness if times else MIN_TIME)
    assert ts.max_seen == (max(times) if times else None)


@settings(max_examples=examples(200))
@given(times=times_lists, lateness=st.integers(0, 10_000), a=st.lists(st.integers(0, 100)))
def test_two_splittings_decide_alike(times, lateness, a):
    one, at_one = _admit_all(Timestamper("s", time_column="t", lateness=lateness), [times])
    many, at_many = _admit_all(
        Timestamper("s", time_column="t", lateness=lateness), _split(times, a)
    )
    # The same records late; the others at the same times (a late record's time is the
    # binding time of the tick it arrived in: that one follows the ticks).
    assert one == many
    on_time = [not x for x in one]
    assert np.array(at_one)[on_time].tolist() == np.array(at_many)[on_time].tolist()


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
    ts.admit(np.array(times, np.int64), 0)
    ts.advance(into_time=0)
    clock = max(times) + quiet + timeout  # a quiet source: no record for `quiet + timeout`
    ts.note_read(False, clock)
    ts.advance(into_time=clock)
    target = clock - lateness
    assert ts.frontier == max(max(times) - lateness, target)
    assert (ts.idle_floor == target) == (target > max(times) - lateness)
    t = target - late_by - 1
    a = ts.admit(np.array([t], np.int64), clock + 1)
    floor = max(max(times) - lateness, ts.idle_floor or MIN_TIME)
    assert bool(a.late[0]) == (t < floor)
    if a.late[0] and ts.idle_floor is not None and max(times) - lateness < ts.idle_floor:
        assert "idle_timeout advanced" in a.reason[0].as_py()


def test_reported_frontier_is_the_bound_without_lateness():
    ts = Timestamper("s", explicit=True)
    ts.admit(np.array([10, 20], np.int64), 0)
    ts.advance(into_time=0, event_frontier=15)
    a = ts.admit(np.array([14, 16], np.int64), 1)
    assert a.late.tolist() == [True, False] and a.times.tolist() == [1, 16]
    assert "source's event-time frontier 15 ms" in a.reason[0].as_py()
    ts.advance(into_time=1, event_frontier=12)  # never moves back
    assert ts.frontier == 15


def test_late_reason_names_the_admission_bound():
    ts = Timestamper("s", time_column="t", lateness=10)
    a = ts.admit(np.array([100, 80], np.int64), 0)
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


@pytest.mark.parametrize("kind", ["ingestion", "event", "explicit"])
def test_side_outputs_are_stamped_at_the_binding_time(kind):
    """Late, errors and health rows of every kind of source: at the tick's binding time,
    whatever the event-time frontier (one stuck in year 9999 held them back for ever)."""
    ts = Timestamper("s", time_column="t" if kind == "event" else None, explicit=kind == "explicit")
    assert ts.side_time(10_000) == 10_000
    if kind != "ingestion":
        ts.admit(np.array([253402300799000], np.int64), 10_000)  # year 9999, no bound
        ts.advance(into_time=10_000)
        assert ts.frontier == 253402300799000
        a = ts.admit(np.array([50], np.int64), 20_000)
        assert a.late.tolist() == [True] and a.times.tolist() == [20_000]
    assert ts.side_time(20_000) == 20_000


def test_event_times_from_timestamps_and_ints():
    ts = Timestamper("s", time_column="t")
    col = pa.array([1_500_000, None], pa.timestamp("us", tz="UTC"))
    assert ts.event_times(pa.table({"t": col}).slice(0, 1)).tolist() == [1_500]
    assert ts.event_times(pa.table({"t": pa.array([7], pa.int32())})).tolist() == [7]


def test_unparsable_event_time_type_is_refused():
    ts = Timestamper("src", time_column="t")
    with pytest.raises(SchemaError, match="time='t' has type string"):
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


# --------------------------------------------------------------------------- max_future


def brute_force_refused(
    times: list[int | None], into: list[int], lateness: int, max_future: int
) -> tuple[list[bool], list[bool]]:
    """The definition, one record at a time: record *i* is refused iff its time is null
    or beyond its binding time + max_future; of the others, late iff below the largest
    time of the records before it that were not refused, minus lateness."""
    refused, late, seen = [], [], None
    for t, now in zip(times, into, strict=True):
        out = t is None or t > now + max_future
        refused.append(out)
        late.append(not out and seen is not None and t < seen - lateness)
        if not out:
            seen = t if seen is None else max(seen, t)
    return refused, late


def _run(ts: Timestamper, batches: list[list[int | None]], into: list[int]):
    """Refuse, admit and advance batch by batch; (refused, late) per record in log order."""
    refused: list[bool] = []
    late: list[bool] = []
    for batch, now in zip(batches, into, strict=True):
        data = pa.table({"k": list(range(len(batch))), "t": pa.array(batch, pa.int64())})
        kept, errors = ts.refuse(data, now)
        gone = set(errors.column("raw").to_pylist()) if errors is not None else set()
        keys = [f'{{"k": {k}, "t": {"null" if t is None else t}}}' for k, t in enumerate(batch)]
        refused += [key in gone for key in keys]
        a = ts.admit(ts.event_times(kept), now)
        flags = iter(a.late.tolist())
        late += [False if key in gone else next(flags) for key in keys]
        ts.note_read(bool(batch), now)
        ts.advance(into_time=now)
    return refused, late


@settings(max_examples=examples(300))
@given(
    times=st.lists(st.one_of(st.none(), st.integers(0, 10**15)), max_size=40),
    cuts=st.lists(st.integers(0, 100)),
    steps=st.lists(st.integers(0, 10**9), min_size=40, max_size=40),
    lateness=st.integers(0, 10**6),
    max_future=st.integers(0, 10**9),
)
def test_refusal_matches_brute_force_and_moves_nothing(times, cuts, steps, lateness, max_future):
    """A refused record (null or far-future time) is in `errors` only: admission and the
    frontier are those of the log without it, whatever the batches."""
    batches = _split(times, cuts)
    into = list(np.cumsum(steps[: len(batches)]) + 10**12)  # binding times, increasing
    ts = Timestamper("s", time_column="t", lateness=lateness, max_future=max_future)
    refused, late = _run(ts, batches, into)
    per_record = [now for batch, now in zip(batches, into, strict=True) for _ in batch]
    assert (refused, late) == brute_force_refused(times, per_record, lateness, max_future)
    kept = [t for t, r in zip(times, refused, strict=True) if not r]
    assert ts.max_seen == (max(kept) if kept else None)
    assert ts.frontier == (max(kept) - lateness if kept else MIN_TIME)


def test_one_far_future_record_neither_moves_the_frontier_nor_makes_later_ones_late():
    """Issue 32, item 2: a record of year 9999 among good ones."""
    day = 86_400_000
    now = 1_700_000_000_000
    ts = Timestamper("s", time_column="t", lateness=0, max_future=3_600_000)
    refused, late = _run(
        ts,
        [[now - day, now - day + 5], [253402300799000], [now - day + 9]],
        [now, now + 1, now + 2],
    )
    assert refused == [False, False, True, False] and late == [False] * 4
    assert ts.frontier == now - day + 9 and ts.max_seen == now - day + 9
    kept, errors = ts.refuse(pa.table({"t": [253402300799000]}), now)
    (reason,) = errors.column("reason").to_pylist()
    assert "9999-12-31T23:59:59Z" in reason and "max_future=3600000" in reason
    assert "raise max_future" in reason and kept.num_rows == 0


def test_without_max_future_only_null_times_are_refused():
    ts = Timestamper("s", time_column="t")
    kept, errors = ts.refuse(pa.table({"t": [253402300799000, None]}), 0)
    assert kept.column("t").to_pylist() == [253402300799000]
    assert errors.column("reason").to_pylist() == ["event time column 't' is null"]


def test_explicit_times_are_bounded_too():
    ts = Timestamper("s", explicit=True, max_future=10)
    kept, errors = ts.refuse(pa.table({"x": [1, 2], "_time": [100, 111]}), 100)
    assert kept.column("x").to_pylist() == [1]
    assert "event time 111 ms" in errors.column("reason")[0].as_py()
