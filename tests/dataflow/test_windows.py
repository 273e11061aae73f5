"""Windows are emitted exactly once, when sealed, and chaining adds no ticks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as hs

import sealtime as st
from sealtime.sinks.base import Sink
from sealtime.sources.rows import Rows
from tests.conftest import examples, spark_settings


@spark_settings(examples(ci=15, dev=4, default=2))
@given(
    times=hs.lists(hs.integers(0, 60), min_size=1, max_size=25),
    spec=hs.sampled_from([st.Tumbling(10), st.Sliding(10, 5), st.Session(7)]),
)
def test_each_window_once_when_frontier_passes_its_end(make_flow, times, spec):
    flow = make_flow()
    src = Rows({"k": "string"}, [(t, {"k": "x"}) for t in times], times_per_tick=1)
    out = flow.source("s", src).window(spec).aggregate(by="k", n=st.count())
    emitted = []  # (tick frontier, window_end)
    seen_ends: set[tuple[int, int]] = set()
    while not flow.engine.finished():
        report = flow.run(ticks=1)[0]
        frontier = report.frontier
        rows = out.updates().to_pylist()
        for r in rows:
            key = (r["window_start"], r["window_end"])
            if key in seen_ends:
                continue
            seen_ends.add(key)
            emitted.append((frontier, r["window_end"]))
            # Never before: the frontier has passed the window's end.
            assert frontier is None or r["window_end"] <= frontier
    rows = out.updates().to_pylist()
    # Exactly once, append-only.
    assert len(rows) == len({(r["window_start"], r["window_end"]) for r in rows})
    assert all(r["_diff"] == 1 and r["_time"] == r["window_end"] - 1 for r in rows)
    # When the source is exhausted, every window holding data has been emitted.
    assert sum(r["n"] for r in rows) == len(times) * (
        2 if isinstance(spec, st.Sliding) else 1
    ) - _edge(times, spec)


def _edge(times, spec):
    # Sliding(10, 5) puts each time in 2 windows; only windows with start >= 0 ... all do,
    # since window starts may be negative: nothing is cut off.
    return 0


def test_chained_windows_emit_in_the_same_tick(make_flow):
    flow = make_flow()
    src = Rows(
        {"k": "string", "v": "long"},
        [(t, {"k": "x", "v": 1}) for t in range(0, 80, 3)],
        times_per_tick=2,
    )
    seen: dict[str, list[tuple[int, int]]] = {"s1": [], "s2": [], "s3": []}
    tick = {"n": 0}

    def tap(stage):
        def fn(table, lo, hi):
            for r in table.to_pylist():
                seen[stage].append((tick["n"], r["window_end"]))

        return fn

    s1 = (
        flow.source("s", src)
        .window(st.Tumbling(10))
        .aggregate(by="k", n=st.count())
        .inspect(tap("s1"))
    )
    s2 = s1.window(st.Tumbling(20)).aggregate(by="k", n=st.sum("n")).inspect(tap("s2"))
    s3 = s2.window(st.Tumbling(40)).aggregate(by="k", n=st.sum("n")).inspect(tap("s3"))
    while not flow.engine.finished():
        tick["n"] += 1
        flow.run(ticks=1)
    s1_tick = {end: t for t, end in seen["s1"]}
    # Stage 3's window [0, 40) is emitted in the tick that sealed stage 1's window [30, 40),
    # and stage 2's [20, 40) too: no extra tick per stage.
    assert dict((end, t) for t, end in seen["s3"])[40] == s1_tick[40]
    assert dict((end, t) for t, end in seen["s2"])[40] == s1_tick[40]
    assert dict((end, t) for t, end in seen["s2"])[20] == s1_tick[20]
    total = sum(r["n"] for r in s3.updates().to_pylist())
    assert total == len(range(0, 80, 3))


def test_open_windows_emitted_when_sources_end(make_flow):
    flow = make_flow()
    src = Rows({"k": "string"}, [(5, {"k": "a"}), (1234, {"k": "a"})], times_per_tick=10)
    out = flow.source("s", src).window(st.Tumbling(1000)).aggregate(by="k", n=st.count())
    flow.run()
    rows = sorted((r["window_start"], r["n"]) for r in out.updates().to_pylist())
    assert rows == [(0, 1), (1000, 1)]
    assert out.frontier is None


class _PlanSink(Sink):
    """Keeps, per committed range, how many log scans its plan holds and its rows."""

    def __init__(self) -> None:
        self.scans: list[int] = []
        self.rows: list[dict] = []

    def commit(self, delta, lo, hi, context) -> bool:
        if delta is None:
            return False
        plan = delta._jdf.queryExecution().executedPlan().toString()
        self.scans.append(plan.count("FileScan parquet"))
        self.rows.extend(r.asDict() for r in delta.collect())
        return True


@pytest.mark.parametrize("checkpoint_every", [None, 3])
def test_deferred_ticks_are_read_again_as_one_scan(make_flow, checkpoint_every):
    """Ticks that cannot seal a window run no job; the tick that seals one reads all
    their updates again from the log in one scan (not one plan per tick), and the
    windows are right -- also when a checkpoint folds waiting ticks into the state."""
    flow = make_flow(record=False, checkpoint_every=checkpoint_every)
    times = list(range(0, 35))
    src = Rows({"k": "string", "v": "long"}, [(t, {"k": "ab"[t % 2], "v": t}) for t in times])
    out = flow.source("s", src).window(st.Tumbling(10)).aggregate(by="k", s=st.sum("v"))
    sink = _PlanSink()
    out.sink(sink)
    flow.run()
    want = {}
    for t in times:
        key = (t // 10 * 10, "ab"[t % 2])
        want[key] = want.get(key, 0) + t
    got = {(r["window_start"], r["k"]): r["s"] for r in sink.rows}
    assert got == want
    assert all(r["_diff"] == 1 for r in sink.rows)
    # Each range that emitted read the log once, not once per tick that waited.
    assert sink.scans and max(sink.scans) == 1, sink.scans
