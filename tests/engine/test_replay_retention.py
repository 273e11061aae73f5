"""Replay with the default retention, from a checkpoint, and of a restart's catch-up
(issue 32), in process.

* A default-settings data dir keeps its whole log (a day of its times) although
  checkpoints let it truncate: a replay from the beginning works and repeats every
  commit.
* A log truncated behind a checkpoint (``retain_history=0``) is refused with an error
  naming the setting and the fix; ``from_checkpoint="latest"`` restores the original's
  checkpoint and replays the bindings after it: the same commits from there on.
* A restart whose first tick commits several bindings at once (a sink that failed after
  the tick's binding was minted) is replayed with the same commit ranges.

A "restart" abandons the Dataflow object and builds the same graph on the same data dir
(the SIGKILL version: tests/engine/test_replay_crash.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sealtime as st
from sealtime.engine.bindings import BindingLog
from sealtime.errors import LogRetentionError
from sealtime.testing import write_jsonl_files
from sealtime.time.order import MIN_TIME

SCHEMA = {"k": "long", "v": "long", "ts": "long"}


class Crash(Exception):
    """The failure `FailingPersist` raises."""


class FailingPersist(st.sinks.Persist):
    """A Persist sink whose `fail_at`-th commit fails after writing its files: like a
    process that died between a tick's binding and its sink commit."""

    def __init__(self, name: str, fail_at: int | None = None) -> None:
        super().__init__(name)
        self.fail_at = fail_at
        self.published = 0

    def publish(self, written, lo, hi, upper, context) -> None:
        self.published += 1
        if self.published == self.fail_at:
            raise Crash(f"commit {self.published} of {self.name!r}")
        super().publish(written, lo, hi, upper, context)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("replay-in")
    write_jsonl_files(
        d, 6, 40, lambda i, j: {"k": j % 3, "v": i * 100 + j, "ts": i * 4000 + j * 100}
    )
    return d


def build(spark, data_dir, inputs, *, ck=2, retain=..., fail_at=None) -> st.Dataflow:
    """files (event time) -> 5 s windows per key, and running totals per key (with
    retractions), each into a Persist sink; defaults but for the checkpoints."""
    flow = st.Dataflow("rp", data_dir=str(data_dir), spark=spark, checkpoint_every=ck)
    src = st.sources.Files(str(inputs), schema=SCHEMA, finite=True, settle=0, max_per_read=40)
    s = flow.source("s", src, time="ts", lateness="1s", retain_history=retain)
    windows = s.window(st.Tumbling("5s")).aggregate(by="k", n=st.count(), top=st.max("v"))
    windows.sink(FailingPersist("windows", fail_at))
    s.aggregate(by="k", total=st.sum("v")).sink(st.sinks.Persist("totals"))
    return flow


def commits(flow) -> dict[str, list]:
    """Each Persist sink's commits: (lower, upper, its rows sorted)."""
    out = {}
    for edge in flow.sinks:
        sink = edge.sink
        shard = sink.shard
        out[sink.name] = [
            (
                b.lower,
                b.upper,
                sorted(tuple(sorted(r.items())) for r in shard.read_files(b.files).to_pylist())
                if b.files
                else [],
            )
            for b in shard.batches()
        ]
    return out


def test_the_default_retention_keeps_what_a_replay_from_the_beginning_needs(
    spark, inputs, tmp_path
):
    original = build(spark, tmp_path / "a", inputs)
    original.run()
    # Checkpoints were taken (every 2 ticks) and could have truncated the log behind
    # them; the default retention (a day of the log's times) kept every file.
    assert BindingLog(original.metadata_store, "rp").checkpoints()
    logged = [f["path"] for b in original.bindings for f in b["sources"]["s"]["files"]]
    assert logged and all(os.path.exists(p) for p in logged)
    replayed = build(spark, tmp_path / "b", inputs)
    reports = replayed.replay(tmp_path / "a")
    assert len(reports) == len(original.bindings)
    assert commits(replayed) == commits(original)
    original.close()
    replayed.close()


def test_a_truncated_log_is_refused_and_replays_from_its_checkpoint(spark, inputs, tmp_path):
    # (a checkpoint at tick 4 of 6: the replay from it has ticks 5 and 6 to run)
    original = build(spark, tmp_path / "a", inputs, ck=4, retain=0)
    original.run()
    with pytest.raises(LogRetentionError) as info:
        build(spark, tmp_path / "b", inputs).replay(tmp_path / "a")
    text = str(info.value)
    assert "source 's'" in text and "retain_history" in text and "--from-checkpoint" in text
    (tick, manifest), *_ = BindingLog(original.metadata_store, "rp").checkpoints()

    replayed = build(spark, tmp_path / "c", inputs)
    reports = replayed.replay(tmp_path / "a", from_checkpoint="latest")
    assert [r.tick for r in reports] == list(range(tick + 1, len(original.bindings) + 1))
    got, want = commits(replayed), commits(original)
    for name in ("windows", "totals"):
        # From the checkpoint on, the original's commits; the first one starts at the
        # least time (the new sink holds nothing before the checkpoint's frontier).
        first_upper = got[name][0][1]
        tail = [c for c in want[name] if c[1] is None or c[1] >= first_upper]
        assert got[name][0][0] == MIN_TIME
        assert [(hi, rows) for _, hi, rows in got[name]] == [(hi, rows) for _, hi, rows in tail]
        assert tail[0][0] > MIN_TIME  # (the original had committed before it)
    # The new data dir is whole: a restart resumes it (a finished replay: nothing to do).
    again = build(spark, tmp_path / "c", inputs)
    assert again.engine.recovered_from["ticks"] == len(original.bindings)
    assert again.run() == []
    for flow in (original, replayed, again):
        flow.close()


def test_a_restart_that_catches_up_is_replayed_with_the_same_commits(spark, inputs, tmp_path):
    crashed = build(spark, tmp_path / "a", inputs, fail_at=3)
    with pytest.raises(Crash):
        crashed.run()
    # abandoned: like a process that died between its binding and its sink commits
    original = build(spark, tmp_path / "a", inputs)
    original.run()
    catch_ups = BindingLog(original.metadata_store, "rp").catch_ups()
    assert catch_ups and all(through - after >= 2 for after, through in catch_ups), catch_ups
    replayed = build(spark, tmp_path / "b", inputs)
    reports = replayed.replay(tmp_path / "a")
    merged = sum(through - after - 1 for after, through in catch_ups)
    assert len(reports) == len(original.bindings) - merged
    assert commits(replayed) == commits(original)
    for flow in (crashed, original, replayed):
        flow.close()
