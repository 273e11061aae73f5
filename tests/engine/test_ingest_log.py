"""The zero-copy ingest log: immutable Parquet source files are hard-linked into the log
and the log entry records the row range, the event times come from the time column and
the late rows are listed in a sidecar. Everything must equal the copying log."""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import shutil
from dataclasses import asdict

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sealtime as st
from sealtime.engine.ingest import LogFile, SourceRuntime, unreferenced_paths
from sealtime.sources.files import Files, LinkedBatch
from sealtime.sources.generator import Generator
from sealtime.time.order import MIN_TIME

GEN = {"seed": 3, "rate": 1000, "out_of_order": "2s", "late_fraction": 0.01, "late_by": "30s"}


def _write_parquet(directory, files=4, rows=1500, row_group=400, start=0):
    os.makedirs(directory, exist_ok=True)
    gen = Generator(**GEN)
    for i in range(files):
        table = gen.generate(start + i * rows, rows)
        pq.write_table(
            table, os.path.join(directory, f"ev-{i:03d}.parquet"), row_group_size=row_group
        )
    return gen


def _write_jsonl(directory, files=4, rows=1500):
    os.makedirs(directory, exist_ok=True)
    gen = Generator(**GEN)
    for i in range(files):
        table = gen.generate(i * rows, rows)
        d = table.to_pydict()
        with open(os.path.join(directory, f"ev-{i:03d}.jsonl"), "w") as fh:
            for r in range(rows):
                row = {k: d[k][r] for k in d}
                row["date_time"] = row["date_time"].strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
                fh.write(json.dumps(row) + "\n")


def bids_files(directory, max_per_read=1_000_000, fmt="parquet") -> Files:
    """A finite `Files` source over `directory`'s generated bids."""
    return Files(
        directory,
        format=fmt,
        schema=Generator().schema,
        finite=True,
        settle=0,
        max_per_read=max_per_read,
    )


def _run(
    make_flow, directory, fmt="parquet", max_rows=None, copy=False, monkeypatch=None, tuning=None
):
    if copy:
        assert monkeypatch is not None
        monkeypatch.setattr(
            SourceRuntime, "_read_batch", lambda self, _into_time: self.reader.read(self.max_rows)
        )
    src = bids_files(directory, max_rows or 1_000_000, fmt)
    # A fixed ticker's clock: the binding times are NOW, NOW + 1, ... in every run, so the
    # late rows (stamped at their tick's binding time) compare equal across runs.
    flow = make_flow(clock=lambda: NOW / 1000, tuning=tuning)
    bids = flow.source("bids", src, time="date_time", lateness="4s", max_rows_per_tick=max_rows)
    per_window = bids.window(st.Tumbling("10s")).aggregate(n=st.count(), hi=st.max("price"))
    late = bids.late
    flow.run()
    if copy:
        monkeypatch.undo()
    runtime = next(iter(flow.engine.sources.values()))
    return flow, runtime, bids, per_window, late


def _rows(table: pa.Table) -> list:
    return sorted(tuple(sorted(r.items())) for r in table.to_pylist())


def _results(bids, per_window, late):
    """Source updates, windows and late rows; a late row without its `_time`, which is
    the binding time of the tick that read it (runs that read in other ticks differ)."""
    late_rows = late.updates().drop_columns(["_time"])
    return _rows(bids.updates()), _rows(per_window.updates()), _rows(late_rows)


def _late_at_binding_times(flow, late) -> bool:
    """Is every late row stamped at a binding time of the run?"""
    binding_times = {b["into_time"] for b in flow.bindings}
    return set(late.updates().column("_time").to_pylist()) <= binding_times


# (the costliest case, 700 rows linked without pushdown, 33 s on the CI machine, is the
# full tier's; the default tier keeps 700 linked with pushdown and 700 copied without)
@pytest.mark.parametrize(
    "max_rows, parts, pushdown",
    [
        pytest.param(m, p, d, marks=pytest.mark.full if (m, p, d) == (700, "linked", False) else ())
        for d in (False, True)
        for m, p in [(None, "linked"), (700, "linked"), (700, "copied"), (2000, "default")]
    ],
)
def test_linked_equals_copied(make_flow, tmp_path, monkeypatch, max_rows, parts, pushdown):
    # (pushdown: event-time range filters with literal bounds, which Parquet skips row
    # groups by, as for large files; else run-time bounds, as for these small ones.
    # parts: a tick's part of a file is linked, or copied into the log)
    tuning = st.DataPathTuning(pushdown_rows=-1 if pushdown else 10**12)
    if parts != "default":
        factor = 1e18 if parts == "linked" else 0.0
        tuning = dataclasses.replace(tuning, copy_part_factor=factor)
    d = str(tmp_path / "in")
    _write_parquet(d)
    linked_flow, linked_rt, *linked = _run(make_flow, d, max_rows=max_rows, tuning=tuning)
    _, copied_rt, *copied = _run(
        make_flow, d, max_rows=max_rows, copy=True, monkeypatch=monkeypatch, tuning=tuning
    )
    assert linked_rt.files and not any(f.linked for f in copied_rt.files)
    whole = [f for f in linked_rt.files if f.linked and f.first == 0 and f.end == f.file_rows]
    if parts == "linked":
        assert all(f.linked for f in linked_rt.files)
    elif parts == "copied":  # only whole files are linked; every part of one is a copy
        assert [f for f in linked_rt.files if f.linked] == whole
        assert len(whole) < len(linked_rt.files)
    else:  # (2000 rows a tick: a whole file and a small part of the next, then the rest)
        assert whole and any(not f.linked for f in linked_rt.files)
        assert any(f.linked and f.first > 0 for f in linked_rt.files)
    assert sum(f.rows for f in linked_rt.files) == 6000
    a, b = _results(*linked), _results(*copied)
    assert a[0] == b[0] and len(a[0]) > 0  # source updates
    assert a[1] == b[1]  # windows
    assert a[2] == b[2] and len(a[2]) > 10  # late rows: same rows and reasons
    # ... and times: both runs read in the same ticks, at the same binding times
    assert _rows(linked[2].updates()) == _rows(copied[2].updates())
    assert _late_at_binding_times(linked_flow, linked[2])
    assert linked_rt.late_count == copied_rt.late_count == len(a[2])
    # The log stays inside the writer's log dir; sidecars only where there are late rows.
    for f in linked_rt.files:
        assert os.path.dirname(f.path) == linked_rt.writer.log_dir
        assert (f.late_path != "") == (f.linked and f.late > 0)
        if f.late_path:
            assert os.path.dirname(f.late_path) == linked_rt.writer.log_dir
    if max_rows is not None and parts == "linked":  # ranges of one file over several ticks
        paths = [f.path for f in linked_rt.files]
        assert len(set(paths)) < len(paths)
        assert any(f.first > 0 for f in linked_rt.files)
        assert len(set(paths)) == 4  # each source file linked once


def test_offsets_and_log_entries(make_flow, tmp_path):
    d = str(tmp_path / "in")
    _write_parquet(d, files=3, rows=1000)
    _, rt, *_ = _run(make_flow, d, max_rows=600)
    expected = 0
    assert any(f.linked for f in rt.files) and not all(f.linked for f in rt.files)
    for f in rt.files:
        assert f.offset == expected
        if f.linked:
            assert f.rows == f.end - f.first
        else:  # a tick's part of a file, copied (`ingest_log.copies_range`)
            offsets = pq.read_table(f.path, columns=["_offset"]).column(0).to_pylist()
            assert offsets == list(range(expected, expected + f.rows))
        expected += f.rows
        assert LogFile(**json.loads(json.dumps(asdict(f)))) == f  # JSON-able primitives
    assert expected == 3000 == rt.offset


def test_non_parquet_falls_back_to_copy(make_flow, tmp_path):
    pq_dir, js_dir = str(tmp_path / "pq"), str(tmp_path / "js")
    _write_parquet(pq_dir, files=3, rows=1000, row_group=1000)
    _write_jsonl(js_dir, files=3, rows=1000)
    _, rt_pq, *linked = _run(make_flow, pq_dir)
    _, rt_js, *copied = _run(make_flow, js_dir, fmt="jsonl")
    assert all(f.linked for f in rt_pq.files)
    assert rt_js.files and not any(f.linked for f in rt_js.files)
    assert _results(*linked) == _results(*copied)


def test_unlinkable_file_is_copied(make_flow, tmp_path, monkeypatch):
    d = str(tmp_path / "in")
    _write_parquet(d, files=3, rows=1000)
    # The middle file stores `price` as int32: readable (conformed) but not linkable.
    mid = os.path.join(d, "ev-001.parquet")
    t = pq.read_table(mid)
    t = t.set_column(t.schema.get_field_index("price"), "price", t.column("price").cast(pa.int32()))
    pq.write_table(t, mid)
    _, rt, *mixed = _run(make_flow, d)
    assert [f.linked for f in rt.files] == [True, False, True]
    _, _, *copied = _run(make_flow, d, copy=True, monkeypatch=monkeypatch)
    assert _results(*mixed) == _results(*copied)


def test_source_deleted_after_ingest_replays_from_log(make_flow, tmp_path):
    d = str(tmp_path / "in")
    _write_parquet(d, files=3, rows=1000)
    _, rt, *outs = _run(make_flow, d, max_rows=800)
    before = _results(*outs)
    shutil.rmtree(d)
    assert all(os.path.exists(f.path) for f in rt.files)
    assert _results(*outs) == before  # the traces re-read the log, not the sources
    # A fresh read of the whole log from its entries alone (what a restart does).
    bids = outs[0]
    data = [f.name for f in bids.node.schema.fields]
    main = rt.frame(bids.flow.spark, "main", -(2**62), None, data)
    late = rt.frame(bids.flow.spark, "late", -(2**62), None, data)
    assert main.count() + late.count() == 3000
    assert late.count() == rt.late_count > 0


def test_link_falls_back_to_copy_across_filesystems(make_flow, tmp_path, monkeypatch):
    d = str(tmp_path / "in")
    _write_parquet(d, files=2, rows=1000)
    _, _, *linked = _run(make_flow, d)

    def no_link(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "link", no_link)
    _, rt, *copied = _run(make_flow, d)
    for f in rt.files:
        assert f.linked
        src = os.path.join(d, os.path.basename(f.path)[len("src-") :])
        assert not os.path.samefile(f.path, src)
    assert _results(*linked) == _results(*copied)


def test_read_linked_batches(tmp_path):
    d = str(tmp_path / "in")
    _write_parquet(d, files=2, rows=1000, row_group=300)
    src = bids_files(d)
    plain, linked = src.open(), src.open()
    for n in (700, 700, 700):
        a = plain.read(n)
        b = linked.read_linked(n, ["date_time"])
        assert isinstance(b, LinkedBatch)
        assert b.data.column_names == ["date_time"]
        assert b.data.column("date_time") == a.data.column("date_time")
        assert b.position == a.position and b.exhausted == a.exhausted
        assert sum(end - first for _, first, end, _ in b.links) == a.data.num_rows
    assert b.exhausted
    # jsonl: read_linked is read
    _write_jsonl(str(tmp_path / "js"), files=1, rows=10)
    js = Files(str(tmp_path / "js"), format="jsonl", schema=Generator().schema, finite=True)
    b = js.open().read_linked(None, ["date_time"])
    assert not isinstance(b, LinkedBatch) and b.data.num_rows == 10


def test_unreferenced_paths():
    a = LogFile("/l/src-a", 0, 1, 1, time_column="t", late_path="/l/late-1")
    b = LogFile("/l/src-a", 2, 3, 1, time_column="t")
    c = LogFile("/l/part-3", 4, 5, 1)
    assert unreferenced_paths([a], [b, c]) == ["/l/late-1"]
    assert unreferenced_paths([a, b], [c]) == ["/l/src-a", "/l/late-1"]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_null_event_time_goes_to_errors(make_flow, tmp_path, fmt):
    """A row with a null event time is an `errors` row naming the column; the flow goes
    on, the other rows of the same file are admitted (a linked file is copied instead)."""
    d = tmp_path / "in"
    d.mkdir()
    schema = pa.schema([("k", pa.int64()), ("ts", pa.timestamp("ms", tz="UTC"))])
    first = pa.table({"k": [1, 2, 3], "ts": [1_000, None, 2_000]}, schema=schema)
    second = pa.table({"k": [4, 5], "ts": [3_000, 4_000]}, schema=schema)
    if fmt == "parquet":
        pq.write_table(first, d / "a.parquet")
        pq.write_table(second, d / "b.parquet")
    else:
        for name, t in (("a", first), ("b", second)):
            with open(d / f"{name}.jsonl", "w") as fh:
                for r in t.to_pylist():
                    ts = r["ts"]
                    r["ts"] = None if ts is None else ts.isoformat().replace("+00:00", "Z")
                    fh.write(json.dumps(r) + "\n")
    flow = make_flow()
    src = Files(str(d), format=fmt, schema=schema, finite=True, settle=0, max_per_read=10)
    events = flow.source("ev", src, time="ts", lateness="0s", max_rows_per_tick=10)
    count = events.aggregate(n=st.count())
    flow.run()
    assert sorted(r["k"] for r in events.updates().to_pylist()) == [1, 3, 4, 5]
    (err,) = events.errors.updates().to_pylist()
    assert err["reason"] == "event time column 'ts' is null"
    assert json.loads(err["raw"])["k"] == 2
    final = count.to_spark().collect()
    assert [r["n"] for r in final] == [4]
    runtime = next(iter(flow.engine.sources.values()))
    assert runtime.error_count == 1


@pytest.mark.parametrize("linked", ["whole files", "parts of a file"])
def test_ingestion_time_ticks_reuse_generated_code(
    codegen, make_flow, tmp_path, monkeypatch, linked
):
    """Every tick of an ingestion-time source stamps a new binding time (and, reading
    linked parts of one file, a new row range); the plans of later ticks must still be
    the same Java source, which Spark compiles only once."""
    import sealtime.spark.frames as frames
    from tests.spark.test_plans import generated_code

    directory = str(tmp_path / "in")
    tuning = None
    if linked == "whole files":
        _write_parquet(directory, files=3, rows=300)
    else:
        _write_parquet(directory, files=1, rows=900, row_group=300)
        tuning = st.DataPathTuning(copy_part_factor_ingestion=1e18)
    codes = []
    to_arrow = frames.to_arrow

    def recording(df):
        codes.append(generated_code(df))
        return to_arrow(df)

    monkeypatch.setattr(frames, "to_arrow", recording)
    src = bids_files(directory, 300)
    # (record=False: recording would compute each tick ahead of the sink)
    flow = make_flow(record=False, tuning=tuning)
    bids = flow.source("bids", src, max_rows_per_tick=300)
    totals = bids.aggregate(by="auction", n=st.count())
    got = []
    totals.sink(st.sinks.Callback(lambda t, lo, hi: got.append((lo, hi))))
    flow.run()
    assert len(got) == 3 and len({hi for _, hi in got}) == 3  # three binding times
    assert len(codes) == 3 and codes[0]
    assert codes[0] == codes[1] == codes[2]
    runtime = next(iter(flow.engine.sources.values()))
    firsts = [0, 0, 0] if linked == "whole files" else [0, 300, 600]
    assert [f.first for f in runtime.files] == firsts and all(f.linked for f in runtime.files)


@pytest.mark.parametrize("parts", ["linked", "copied"])
def test_ingestion_time_parts_of_a_large_file(make_flow, tmp_path, parts):
    """Small ingestion-time ticks over one large file: by default each tick's part is
    copied into the log (`copies_range`); linked ranges give the same updates at the
    same binding times, and a copy's ``_offset`` continues the log's numbering."""
    d = str(tmp_path / "in")
    _write_parquet(d, files=1, rows=4000, row_group=1000)
    linking = st.DataPathTuning(copy_part_factor_ingestion=1e18)

    def run(tuning):
        src = bids_files(d)
        flow = make_flow(tuning=tuning)
        bids = flow.source("bids", src, max_rows_per_tick=500)
        totals = bids.aggregate(by="auction", n=st.count(), hi=st.max("price"))
        flow.run()
        rt = next(iter(flow.engine.sources.values()))
        return rt, _by_tick(bids.updates()), _by_tick(totals.updates())

    def _by_tick(updates: pa.Table) -> list:
        # (binding times come from the clock: compare them by their rank, the tick)
        times = sorted(set(updates.column("_time").to_pylist()))
        rank = pa.array([times.index(x) for x in updates.column("_time").to_pylist()])
        return _rows(updates.set_column(updates.schema.get_field_index("_time"), "_time", rank))

    rt, updates, totals = run(linking if parts == "linked" else None)
    assert len(rt.files) == 8 and sum(f.rows for f in rt.files) == 4000
    assert all(f.linked for f in rt.files) == (parts == "linked")
    assert any(f.linked for f in rt.files) == (parts == "linked")
    assert [f.offset for f in rt.files] == list(range(0, 4000, 500))
    _, linked_updates, linked_totals = run(linking)
    assert updates == linked_updates and len(updates) == 4000
    assert totals == linked_totals and totals


def _event_time_ticks(make_flow, directory, monkeypatch, tuning=None) -> tuple[list, list]:
    """The generated code of each tick's sink read, and what the sink got, of a
    stateless event-time flow over `directory`'s files (one file per tick)."""
    import sealtime.spark.frames as frames
    from tests.spark.test_plans import generated_code

    codes: list = []
    to_arrow = frames.to_arrow

    def recording(df):
        codes.append(generated_code(df))
        return to_arrow(df)

    monkeypatch.setattr(frames, "to_arrow", recording)
    src = bids_files(directory)
    flow = make_flow(record=False, tuning=tuning)
    bids = flow.source("bids", src, time="date_time", lateness="2s", max_rows_per_tick=600)
    got: list = []
    sink = st.sinks.Callback(lambda t, lo, hi: got.append(t))
    # (the tick-by-tick plan, as for a sink that takes DataFrames: an Arrow sink's rows
    # are collected ahead of the frontier, from each log entry once; tests/engine/test_ahead.py)
    sink.takes_arrow = False
    bids.filter("price > 0").sink(sink)
    flow.run()
    monkeypatch.setattr(frames, "to_arrow", to_arrow)
    return codes, _rows(pa.concat_tables(got))


def test_event_time_ticks_reuse_generated_code(codegen, make_flow, tmp_path, monkeypatch):
    """Each event-time tick seals a new range and reads the previous file again for the
    rows that the previous tick left unsealed. Unless skipping row groups pays
    (`DataPathTuning.pushdown_rows`), the range's bounds are run-time values, so the middle ticks'
    plans are the same Java source, which Spark compiles once; with literal bounds they
    differ, and both give the same rows."""
    d = str(tmp_path / "in")
    os.makedirs(d)
    gen = Generator(seed=5, rate=100)  # 6 s of event time per file, in order: no late rows
    for i in range(4):
        pq.write_table(gen.generate(i * 600, 600), os.path.join(d, f"ev-{i}.parquet"))
    codes, rows = _event_time_ticks(make_flow, d, monkeypatch)
    middle = codes[1:-1]  # (the first tick reads one file, the last has no upper bound)
    assert len(middle) >= 2 and middle[0]
    assert all(c == middle[0] for c in middle)
    literal = st.DataPathTuning(pushdown_rows=-1)
    literal_codes, literal_rows = _event_time_ticks(make_flow, d, monkeypatch, literal)
    assert literal_codes[1] != literal_codes[2]
    assert rows == literal_rows and len(rows) == 2400


# --------------------------------------------------------------------------- two time domains

T = 1_436_918_400_000  # event times: 2015-07-15
NOW = 1_790_000_000_000  # the tick's binding time: 2026
YEAR_9999 = 253402300799000


def _ingest_one_tick(tmp_path, fmt: str, times: list[int | None]) -> SourceRuntime:
    """One tick of a source over one file with these event times (lateness 0, max_future
    1 h), logged at binding time NOW."""
    d = tmp_path / "in"
    d.mkdir()
    table = pa.table({"k": list(range(len(times))), "ts": pa.array(times, pa.int64())})
    if fmt == "parquet":
        pq.write_table(table, d / "a.parquet")
    else:
        with open(d / "a.jsonl", "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in table.to_pylist())
    src = Files(str(d), format=fmt, schema=table.schema, finite=False, settle=0)
    rt = SourceRuntime(
        "s", src, str(tmp_path / "log"), time_column="ts", lateness=0, max_future=3_600_000
    )
    rt.ingest(tick=1, into_time=NOW)
    return rt


def _late_rows(entry: LogFile) -> list[dict]:
    """The late rows of a log entry as (k or row index, _time), read with pyarrow."""
    if entry.linked:
        side = pq.read_table(entry.late_path)
        return [{"row": r["__row"], "_time": r["_time"]} for r in side.to_pylist()]
    rows = pq.read_table(entry.path).to_pylist()
    return [{"row": r["k"], "_time": r["_time"]} for r in rows if r["_late"] is not None]


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_far_future_rows_are_errors_and_side_outputs_are_at_the_binding_time(tmp_path, fmt):
    """A year-9999 record and a null time go to `errors`, stamped at the binding time
    with their reasons, and move neither `max_seen` nor the frontier; a late record is
    stamped at the binding time too (not at an event time)."""
    times = [T, T + 5, YEAR_9999, T - 1_000, T + 9, None]
    rt = _ingest_one_tick(tmp_path, fmt, times)
    assert rt.stamper.max_seen == T + 9 and rt.frontier == T + 9
    (errors,) = rt.error_files
    rows = pq.read_table(errors.path).to_pylist()
    assert [json.loads(r["raw"])["k"] for r in rows] == [2, 5]
    assert all(r["_time"] == NOW for r in rows) and errors.bounds("errors") == (NOW, NOW)
    assert "max_future=3600000" in rows[0]["reason"] and "9999-12-31" in rows[0]["reason"]
    assert rows[1]["reason"] == "event time column 'ts' is null"
    (health,) = rt.health_files
    assert health.min_time == health.max_time == NOW
    (data,) = rt.files  # (a file with refused rows is copied, never linked)
    assert not data.linked and data.rows == 4 and data.late == 1
    assert _late_rows(data) == [{"row": 3, "_time": NOW}]
    # Bounds per output, and bounds over both domains for whoever cannot tell them apart.
    assert data.bounds("main") == (T, T + 9) and data.bounds("late") == (NOW, NOW)
    assert (data.min_time, data.max_time) == (T, NOW)
    assert rt.log.entries_for("main", T + 10, NOW) == []
    assert rt.log.entries_for("late", NOW, NOW + 1) == [data]
    assert rt.log.entries_for("late", T, NOW) == []
    assert rt.log.max_time("main", T, None) == T + 9
    assert rt.log.max_time("late", MIN_TIME, None) == NOW


def test_a_linked_entry_lists_its_late_rows_at_the_binding_time(tmp_path):
    rt = _ingest_one_tick(tmp_path, "parquet", [T, T + 5, T - 1_000, T + 9])
    (data,) = rt.files
    assert data.linked and data.late == 1 and data.late_time == NOW
    assert _late_rows(data) == [{"row": 2, "_time": NOW}]
    assert data.bounds("main") == (T, T + 9) and data.bounds("late") == (NOW, NOW)
    assert (data.min_time, data.max_time) == (T, NOW)


def test_bounds_of_entries_without_late_rows_or_written_before():
    """An entry without late rows has one domain; one of an older version (no late_time)
    keeps the bounds it has for every output (its late rows lie in them)."""
    plain = LogFile("/l/part-1", 5, 9, 3, late=0)
    assert plain.bounds("main") == (5, 9) and plain.bounds("late") is None
    old = LogFile("/l/part-2", 5, 9, 3, late=1)
    assert old.bounds("main") == (5, 9) and old.bounds("late") == (5, 9)
    only_late = LogFile("/l/part-3", 7, 7, 2, late=2, late_time=7)
    assert only_late.bounds("main") is None and only_late.bounds("late") == (7, 7)
