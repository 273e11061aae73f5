"""Replay, then live (issue 14): a recorded run is replayed tick by tick with its
binding times, then hands over to live input — ``time_reset`` says so once, timers
apply their gap policy, sources read on from their recorded positions — and a changed
graph replays the recorded input with restamped timers into a log that replays exactly.

The ticker's clock is injected (`Clock`), so nothing here is timed. The reference
outputs are written out by hand from the clock times below.
"""

from __future__ import annotations

import json
import os

import pytest

import sealtime as st

B = 1_700_000_000_000  # ms, a multiple of the 10 s timer period
EVERY = 10_000
AFTER = 15_000  # timeout
K0 = B // EVERY  # seq of the firing at B
# The recorded run's binding times, and the first two live ones after the replay.
RECORDED = [B + 1_000, B + 11_000, B + 21_000]
LIVE = [B + 75_000, B + 81_000]


class Clock:
    """The ticker's clock, moved by the test: seconds, like `time.time`."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def write(directory, name: str, keys: list[str]) -> None:
    with open(os.path.join(directory, name), "w") as f:
        f.writelines(json.dumps({"k": k}) + "\n" for k in keys)


def build(spark, data_dir, inputs, clock: Clock, gap: str = "fire_once", *, changed=False):
    """readings (files, ingestion time) → timeout(15 s); a 10 s timer; time_reset.
    `changed`: the graph gains a second timer (7 s, a source the recording lacks), a
    count per key and a Persist sink per collection — a changed graph for the replay."""
    flow = st.Dataflow(
        "handover",
        data_dir=str(data_dir),
        spark=spark,
        clock=clock,
        truncate_log=False,
        checkpoint_every=None,
    )
    readings = flow.source(
        "readings", st.sources.Files(str(inputs), format="jsonl", schema={"k": "string"}, settle=0)
    )
    fired = flow.source("timer", st.sources.Timer(every="10s", gap=gap))
    out = {
        "readings": readings,
        "fired": fired,
        "reset": flow.time_reset,
        "silent": readings.timeout(by="k", after=AFTER),
    }
    if changed:
        out["beat"] = flow.source("beat", st.sources.Timer(every="7s", gap="cancel"))
        out["counts"] = readings.aggregate(by="k", n=st.count())
        for name, col in out.items():
            col.sink(st.sinks.Persist(name))
    return flow, out


def run_at(flow, clock: Clock, times: list[int]) -> None:
    for t in times:
        clock.ms = t
        flow.run(ticks=1)


def commits(flow) -> dict[str, list]:
    """Every Persist sink's commits: (lower, upper, rows) per batch."""
    out = {}
    for _, sink in flow.sinks:
        shard = sink.shard
        out[sink.name] = [
            (b.lower, b.upper, sorted(map(repr, shard.read_files(b.files).to_pylist())))
            for b in shard.batches()
        ]
    return out


def rows(col, *names) -> list[tuple]:
    return [tuple(r[n] for n in names) for r in col.updates().to_pylist()]


@pytest.fixture(scope="module")
def recorded(spark, tmp_path_factory):
    """The original run: 3 ticks; one input file before tick 1, one before tick 2; a
    third file arrives after the run (only live input reads it)."""
    root = tmp_path_factory.mktemp("handover")
    inputs = root / "in"
    inputs.mkdir()
    write(inputs, "1.jsonl", ["a", "b"])
    clock = Clock(RECORDED[0])
    flow, out = build(spark, root / "old", inputs, clock)
    run_at(flow, clock, RECORDED[:1])
    write(inputs, "2.jsonl", ["a"])
    run_at(flow, clock, RECORDED[1:])
    # The recorded run fires at B+10 s and B+20 s; b times out at B+1 s + 15 s.
    assert rows(out["fired"], "fired_at", "missed") == [(B + 10_000, 0), (B + 20_000, 0)]
    assert rows(out["silent"], "k", "timed_out_at") == [("b", B + 16_000)]
    assert rows(out["reset"], "from_time") == []
    flow.close()
    write(inputs, "3.jsonl", ["c"])
    return root, inputs


@pytest.mark.parametrize("gap", ["fire_once", "cancel"])
def test_replay_then_live_hands_over_once(spark, recorded, gap):
    root, inputs = recorded
    clock = Clock(0)  # the replay reads no clock: the recorded times are used
    flow, out = build(spark, root / f"new-{gap}", inputs, clock, gap)
    reports = flow.replay(root / "old", then_live=True)
    assert [r.into_time for r in reports] == RECORDED
    run_at(flow, clock, LIVE)

    # time_reset: once, at the first live time, (last replayed time, first live time).
    assert rows(out["reset"], "from_time", "to_time", "_time", "_diff") == [
        (RECORDED[-1], LIVE[0], LIVE[0], 1)
    ]
    # Timer: the recorded firings, then the gap (B+30 s .. B+70 s: 5 firings, seq K0+3
    # to K0+7) once at the hand-over time or not at all, then B+80 s as usual.
    recorded_firings = [(B + 10_000, K0 + 1, 0, B + 10_000), (B + 20_000, K0 + 2, 0, B + 20_000)]
    gap_rows = [(LIVE[0], K0 + 3, 5, LIVE[0])] if gap == "fire_once" else []
    live = [(B + 80_000, K0 + 8, 0, B + 80_000)]
    assert rows(out["fired"], "fired_at", "seq", "missed", "_time") == (
        recorded_firings + gap_rows + live
    )
    # Live input reads on from the recorded position: only the new file, at the live time.
    assert rows(out["readings"], "k", "_time") == [
        ("a", RECORDED[0]),
        ("b", RECORDED[0]),
        ("a", RECORDED[1]),
        ("c", LIVE[0]),
    ]
    # A timeout is a function of the data's times: a's deadline (B+11 s + 15 s) lies in
    # the gap, so it fires at that time, in the hand-over tick; c's is not sealed yet.
    assert rows(out["silent"], "k", "last_update", "timed_out_at", "_time") == [
        ("b", RECORDED[0], RECORDED[0] + AFTER, RECORDED[0] + AFTER),
        ("a", RECORDED[1], RECORDED[1] + AFTER, RECORDED[1] + AFTER),
    ]
    assert flow.engine.time_reset == (RECORDED[-1], LIVE[0])
    flow.close()


def test_changed_graph_replay_restamps_timers_and_replays_exactly(spark, recorded, tmp_path):
    root, inputs = recorded
    # The changed graph (a new 7 s timer, a count) replays the recorded input...
    clock = Clock(0)
    first, out = build(spark, tmp_path / "n1", inputs, clock, changed=True)
    first.replay(root / "old", then_live=True)
    run_at(first, clock, LIVE[:1])
    # ...with the new timer restamped at the recorded binding times: it starts at the
    # first one (B+1 s) and fires at multiples of 7 s after it; its gap is cancelled.
    # (B+1 s is itself a multiple of 7 s; the live time B+75 s is not)
    assert rows(out["beat"], "fired_at", "missed") == [
        (B + 1_000, 0),
        (B + 8_000, 0),
        (B + 15_000, 0),
    ]
    assert rows(out["reset"], "from_time", "to_time") == [(RECORDED[-1], LIVE[0])]
    assert rows(out["counts"], "k", "n", "_time", "_diff") == [
        ("a", 1, RECORDED[0], 1),
        ("b", 1, RECORDED[0], 1),
        ("a", 1, RECORDED[1], -1),
        ("a", 2, RECORDED[1], 1),
        ("c", 1, LIVE[0], 1),
    ]
    want = commits(first)
    first.close()
    # The new log is self-contained (its own links) and replays exactly, the hand-over
    # tick included (the changed graph's timers restamped there from the marker).
    assert all(
        f["path"].startswith(str(tmp_path / "n1"))
        for b in first.bindings
        for part in b["sources"].values()
        for f in part["files"]
    )
    again, _ = build(spark, tmp_path / "n2", inputs, Clock(0), changed=True)
    assert len(again.replay(tmp_path / "n1")) == len(RECORDED) + 1
    assert commits(again) == want
    # A finished replay that was not asked to go live says so.
    with pytest.raises(RuntimeError, match="then_live=True"):
        again.run(ticks=1)
    again.close()


def test_replay_refuses_an_unrecorded_source(spark, recorded, tmp_path):
    root, inputs = recorded
    flow, _ = build(spark, tmp_path / "n", inputs, Clock(0))
    flow.source("extra", st.sources.Rows({"x": "long"}, [(0, {"x": 1})]))
    with pytest.raises(ValueError, match="source 'extra' that the run"):
        flow.replay(root / "old")
    flow.close()
