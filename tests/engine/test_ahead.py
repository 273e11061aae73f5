"""Arrow sinks of per-row collections collect each log entry once, ahead of the frontier
(`sealtime.engine.ahead`): every sealed range must hold exactly the updates the plain
tick-by-tick plan gives it, whatever the tick size, partitions, restarts or memory cap."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as hs

import sealtime as st
from sealtime.engine.ahead import AheadCollector, split_at
from sealtime.engine.ingest_log import IngestLogReader
from sealtime.sinks.base import Sink
from sealtime.sinks.publish import Publish
from sealtime.sources.generator import Generator
from tests.engine.test_ingest_log import bids_files

GEN = {"seed": 5, "rate": 1000, "out_of_order": "2s", "late_fraction": 0.01, "late_by": "30s"}


# ---------------------------------------------------------------- the collector alone
@hs.composite
def _runs(draw):
    """Ticks of (entries logged: lists of times, new frontier), frontiers ascending."""
    ticks, frontier = [], 0
    for _ in range(draw(hs.integers(1, 8))):
        times = hs.lists(hs.integers(frontier, frontier + 30), max_size=6)
        entries = draw(hs.lists(times, max_size=3))
        frontier += draw(hs.integers(0, 12))
        ticks.append((entries, frontier))
    return ticks


def _log_reader(log: dict, reads: list, running: bool = False):
    """A collector's ``read`` over `log` (entry key -> times), recording the entries each
    read collects; `running`: it returns a callable, as a collection still running."""

    def read(lo, skip):
        keys = [k for k, ts in log.items() if any(t >= lo for t in ts)]
        new = [k for k in keys if k not in skip]
        reads.append(set(new))
        times = [t for k in new for t in log[k] if t >= lo]
        table = pa.table({"_time": pa.array(times, pa.int64())}) if new else None
        return ((lambda: table) if running else table), keys

    return read


@given(_runs(), hs.sampled_from([0, 10**9]), hs.lists(hs.booleans(), min_size=8, max_size=8))
def test_collector_equals_brute_force(ticks, max_bytes, skipped):
    """Each taken range holds every logged row in it, once; held rows dropped for the
    memory cap, and ranges not taken (a gap), are read from the log again."""
    log: dict[tuple[str, int], list[int]] = {}
    reads: list[set] = []
    read = _log_reader(log, reads)
    c = AheadCollector(max_bytes=max_bytes)
    lo = 0
    for i, (entries, hi) in enumerate(ticks):
        for j, times in enumerate(entries):
            log[(f"f{i}", j)] = times
        if lo == hi:
            continue
        if skipped[i] and i < len(ticks) - 1:
            lo = hi  # the range is not taken: the next one starts after a gap
            continue
        last = i == len(ticks) - 1
        got = c.take(lo, None if last else hi, read)
        want = sorted(t for ts in log.values() for t in ts if t >= lo and (last or t < hi))
        assert sorted(got["_time"].to_pylist() if got is not None else []) == want
        lo = hi
    if max_bytes and not any(skipped):  # nothing dropped: every entry read once
        keys = [k for r in reads for k in r]
        assert len(keys) == len(set(keys))


def _batch(times: list[int]) -> pa.RecordBatch:
    i = pa.array(range(len(times)), pa.int64())
    return pa.record_batch({"_time": pa.array(times, pa.int64()), "i": i})


@given(hs.lists(hs.lists(hs.integers(-5, 20), max_size=5), max_size=5), hs.integers(-3, 18))
def test_split_at_equals_a_filter(batches, hi):
    table = pa.Table.from_batches(
        [_batch(b) for b in batches],
        pa.schema([("_time", pa.int64()), ("i", pa.int64())]),
    )
    below, above = split_at(table, hi)
    rows = table.to_pylist()
    assert below.to_pylist() == [r for r in rows if r["_time"] < hi]
    assert above.to_pylist() == [r for r in rows if r["_time"] >= hi]
    assert below.schema == above.schema == table.schema


def test_a_range_after_a_gap_reads_the_log_again():
    rows = {("a", 0): [1, 5, 9, 14]}

    def read(lo, skip):
        new = [k for k in rows if k not in skip]
        times = [t for k in new for t in rows[k] if t >= lo]
        return (pa.table({"_time": pa.array(times, pa.int64())}) if new else None), list(rows)

    c = AheadCollector()
    assert c.take(0, 6, read)["_time"].to_pylist() == [1, 5]
    assert c.held_rows == 2
    # (a range from 10: the engine's last range ended at 6, so what is held is stale)
    assert c.take(10, 20, read)["_time"].to_pylist() == [14]


# ---------------------------------------------------------------- in the engine
def _write_parquet(directory, files=4, rows=1500, row_group=400):
    os.makedirs(directory, exist_ok=True)
    gen = Generator(**GEN)
    for i in range(files):
        pq.write_table(
            gen.generate(i * rows, rows),
            os.path.join(directory, f"ev-{i:03d}.parquet"),
            row_group_size=row_group,
        )
    return gen


class _Ranges(st.sinks.Callback):
    """A callback sink recording each range's rows (sorted) as given."""

    def __init__(self, plain: bool) -> None:
        self.ranges: list[tuple] = []
        self.takes_arrow = not plain  # (plain: the engine hands it DataFrames)
        super().__init__(self._take, skip_empty=False)

    def _take(self, table, lo, hi):
        rows = [] if table is None else sorted(tuple(r.values()) for r in table.to_pylist())
        self.ranges.append((lo, hi, rows))


def _build(flow, directory, plain, max_rows=None):
    src = bids_files(directory, max_rows or 1_000_000)
    bids = flow.source("bids", src, time="date_time", lateness="4s", max_rows_per_tick=max_rows)
    sinks = {
        "source": _Ranges(plain),
        "filtered": _Ranges(plain),
        "windowed": _Ranges(plain),
    }
    bids.sink(sinks["source"])
    bids.filter("price < 500").select("auction", "price", "date_time").sink(sinks["filtered"])
    bids.window(st.Sliding("4s", "2s")).select("auction", "window_start").sink(sinks["windowed"])
    return flow, sinks


def _entry_reads(monkeypatch) -> list[list[tuple[str, int]]]:
    """Records the log entries each ``main`` frame reads (file name, first row)."""
    reads: list[list[tuple[str, int]]] = []
    frame = IngestLogReader.frame

    def recording(self, spark, output, lo, hi, data, skip=()):
        if output == "main":
            entries = self.entries_for(output, lo, hi, skip)
            reads.append([(os.path.basename(e.path), e.first) for e in entries])
        return frame(self, spark, output, lo, hi, data, skip)

    monkeypatch.setattr(IngestLogReader, "frame", recording)
    return reads


@pytest.mark.parametrize("max_rows, partitions", [(None, 1), (700, 3), (2000, 8)])
def test_ranges_equal_the_plain_plan(make_flow, tmp_path, monkeypatch, max_rows, partitions):
    d = str(tmp_path / "in")
    _write_parquet(d)
    reads = _entry_reads(monkeypatch)
    kw = {"record": False, "shuffle_partitions": partitions}
    flow, plain = _build(make_flow(**kw), d, plain=True, max_rows=max_rows)
    flow.run()
    plain_reads = list(reads)
    reads.clear()
    flow, fast = _build(make_flow(**kw), d, plain=False, max_rows=max_rows)
    reports = flow.run()
    engine = flow.engine
    # (the source is not planned, but its tick reports still count the rows it read)
    src = engine.snapshot().source("bids").node
    assert sum(r.operators[src].rows_in for r in reports) == 6000
    assert len(engine.sinks.ahead) == 3
    # No plan of the source or the filter is built: only the Arrow sinks read them.
    unread = {o.name for o in engine.snapshot().operators if o.id in engine.dataplane.unread}
    assert unread >= {"bids"}
    for name in fast:
        assert fast[name].ranges == plain[name].ranges, name
        assert sum(len(r) for _, _, r in fast[name].ranges) > 0
    assert sum(len(r) for _, _, r in fast["source"].ranges) + flow_late(flow) == 6000
    # Each log entry is read by one plan per sink; the plain plan (one per tick, which
    # every sink runs) reads entries with unsealed tails again in later ticks.
    per_sink = [k for r in reads for k in r]
    assert len(per_sink) == 3 * len({*per_sink})
    if max_rows is not None:
        again = [k for k in {*per_sink} if sum(k in r for r in plain_reads) > 1]
        assert again


def flow_late(flow) -> int:
    (source,) = flow.engine.snapshot().sources
    return source.late


def test_a_small_memory_cap_reads_the_log_again(make_flow, tmp_path):
    d = str(tmp_path / "in")
    _write_parquet(d)
    flow, plain = _build(make_flow(record=False), d, plain=True, max_rows=700)
    flow.run()
    no_room = st.DataPathTuning(ahead_max_bytes=0)
    flow, fast = _build(make_flow(record=False, tuning=no_room), d, plain=False, max_rows=700)
    flow.run()
    assert all(c.dropped > 0 for c in flow.engine.sinks.ahead.values())
    for name in fast:
        assert fast[name].ranges == plain[name].ranges, name


def test_a_restart_holds_nothing_and_reads_the_log(spark, tmp_path):
    """A restarted engine starts with nothing held: the ranges after the restart are
    those of a plain run restarted at the same tick."""
    d = str(tmp_path / "in")
    _write_parquet(d)
    out = {}
    for plain in (True, False):
        data_dir = str(tmp_path / f"data-{plain}")

        def flow_on(data_dir=data_dir):
            return st.Dataflow("t", data_dir=data_dir, spark=spark, record=False)

        flow, first = _build(flow_on(), d, plain, max_rows=700)
        flow.run(ticks=4)
        assert plain or any(c.held_rows for c in flow.engine.sinks.ahead.values())
        flow.close()
        flow, second = _build(flow_on(), d, plain, max_rows=700)
        flow.run()
        flow.close()
        out[plain] = {n: first[n].ranges + second[n].ranges for n in first}
    assert out[True] == out[False]
    assert sum(len(r) for _, _, r in out[True]["source"]) > 0


class _DataFrameSink(Sink):
    """A sink that takes DataFrames (it writes nothing): never collected ahead."""

    def commit(self, delta, lo, hi, context):
        return False


def test_only_arrow_sinks_of_per_row_collections_collect_ahead(make_flow, tmp_path):
    d = str(tmp_path / "in")
    _write_parquet(d, files=1)
    flow = make_flow(record=False)
    src = bids_files(d)
    bids = flow.source("bids", src, time="date_time", lateness="4s")
    bids.sink(_DataFrameSink())  # takes DataFrames
    bids.consolidate().sink(st.sinks.Callback(lambda *a: None))  # not per row
    bids.aggregate(by="auction", n=st.count()).sink(st.sinks.Callback(lambda *a: None))
    bids.late.sink(st.sinks.Callback(lambda *a: None))  # a side output
    bids.sink(st.sinks.Callback(lambda *a: None))  # the one that does
    flow.run(ticks=1)
    assert list(flow.engine.sinks.ahead) == [4]


def test_publish_with_partitions_collects_ahead_alike(make_flow, tmp_path, monkeypatch):
    """`Publish` adds its partition hash on Spark (`arrow_plan`) before the rows are
    collected ahead: every partition gets the rows the plain plan gives it."""
    d = str(tmp_path / "in")
    _write_parquet(d, files=2)
    seen: list[tuple] = []
    commit_arrow = Publish.commit_arrow

    def recording(self, table, lo, hi, context):
        rows = [] if table is None else sorted(tuple(r.values()) for r in table.to_pylist())
        seen.append((lo, hi, rows))
        return commit_arrow(self, table, lo, hi, context)

    monkeypatch.setattr(Publish, "commit_arrow", recording)
    out = {}
    for plain in (True, False):
        monkeypatch.setattr(Publish, "takes_arrow", not plain)
        flow = make_flow(record=False)
        src = bids_files(d)
        bids = flow.source("bids", src, time="date_time", lateness="4s", max_rows_per_tick=500)
        bids.select("auction", "price").publish("p", partitions=3, by="auction")
        flow.run()
        assert bool(flow.engine.sinks.ahead) is not plain
        flow.close()
        out[plain], seen[:] = list(seen), []
    assert out[True] == out[False]
    parts = {r[-1] for _, _, rows in out[True] for r in rows}
    assert parts == {0, 1, 2}


@given(
    _runs(),
    hs.sampled_from([0, 10**9]),
    hs.lists(hs.booleans(), min_size=8, max_size=8),
    hs.lists(hs.booleans(), min_size=8, max_size=8),
)
def test_collector_reading_ahead_equals_brute_force(ticks, max_bytes, ahead_at, skipped):
    """The engine's split take: `begin` a range, log the next tick's entries and
    `begin_next` their reads (the binding minted early), then `take`. Each range holds
    every logged row in it, once, and no entry is read twice while nothing is dropped,
    whichever ticks read ahead and whichever ranges are not taken."""
    log: dict[tuple[str, int], list[int]] = {}
    reads: list[set] = []
    read = _log_reader(log, reads, running=True)

    def log_tick(i):
        for j, times in enumerate(ticks[i][0]):
            log[(f"f{i}", j)] = times

    c = AheadCollector(max_bytes=max_bytes)
    lo, logged = 0, 0
    for i, (_, hi) in enumerate(ticks):
        if logged <= i:
            log_tick(i)
            logged = i + 1
        if lo == hi:
            continue
        last = i == len(ticks) - 1
        if skipped[i] and not last:
            lo = hi  # the range is not taken: the next one starts after a gap
            continue
        c.begin(lo, read)
        if ahead_at[i] and not last:
            log_tick(i + 1)  # the next binding, minted while this tick collects
            logged = i + 2
            c.begin_next(lo, hi, read)
        got = c.take(lo, None if last else hi)
        want = sorted(t for ts in log.values() for t in ts if t >= lo and (last or t < hi))
        assert sorted(got["_time"].to_pylist() if got is not None else []) == want
        lo = hi
    if max_bytes and not any(skipped):
        keys = [k for r in reads for k in r]
        assert len(keys) == len(set(keys))


def test_take_without_begin_is_an_error():
    with pytest.raises(RuntimeError, match="never began"):
        AheadCollector().take(0, 5)


class _Watching(_Ranges):
    """Also records, at each commit, the tick and the number of bindings stored."""

    def __init__(self, plain: bool, flow) -> None:
        super().__init__(plain)
        self.flow, self.stored = flow, []

    def _take(self, table, lo, hi):
        engine = self.flow.engine
        self.stored.append((engine.tick_no, len(engine.log.load())))
        super()._take(table, lo, hi)


def test_ticks_read_ahead_while_they_collect(make_flow, tmp_path):
    """While a tick's Arrow sink collects, the next tick's binding is already durable
    (when another tick follows); the last tick of `run(ticks=N)` does not read ahead,
    so N ticks leave N bindings, and every range is the plain plan's."""
    d = str(tmp_path / "in")
    _write_parquet(d)
    out = {}
    for plain in (True, False):
        flow = make_flow(record=False)
        sink = _Watching(plain, flow)
        src = bids_files(d, 700)
        bids = flow.source("bids", src, time="date_time", lateness="4s", max_rows_per_tick=700)
        bids.filter("price < 500").sink(sink)
        flow.run(ticks=5)
        assert len(flow.bindings) == len(flow.engine.log.load()) == 5
        ahead = [stored - tick for tick, stored in sink.stored]
        # ticks 1-4 read ahead (their commit sees the next binding), tick 5 does not
        assert ahead == ([0] * 5 if plain else [1, 1, 1, 1, 0])
        flow.run()
        out[plain] = sink.ranges
    assert out[True] == out[False]
    assert sum(len(r) for _, _, r in out[True]) > 0


def test_collections_keep_the_job_group(make_flow, tmp_path, spark):
    """Collections run in background threads; their jobs keep the Spark local
    properties of the thread that runs the dataflow (job group, description)."""
    d = str(tmp_path / "in")
    _write_parquet(d, files=2)
    flow = make_flow(record=False)
    src = bids_files(d, 1000)
    bids = flow.source("bids", src, time="date_time", lateness="4s", max_rows_per_tick=1000)
    bids.filter("price < 500").sink(st.sinks.Callback(lambda *a: None))
    bids.aggregate(by="auction", n=st.count()).sink(st.sinks.Callback(lambda *a: None))
    sc = spark.sparkContext
    group = f"sealtime-test-{os.getpid()}"
    sc.setJobGroup(group, "a dataflow's collections")
    try:
        reports = flow.run()
    finally:
        sc.setLocalProperty("spark.jobGroup.id", None)
        sc.setLocalProperty("spark.job.description", None)
    jobs = sc.statusTracker().getJobIdsForGroup(group)
    # every tick ran at least its two sinks' collections in the group
    assert len(jobs) >= 2 * len(reports)
