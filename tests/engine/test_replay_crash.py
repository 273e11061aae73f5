"""Replay of a default-settings run that was killed three times (issue 32, acceptance).

A child process runs `tests.engine.replay_job` (every setting at its default: log
truncation, the default retention) with ``sealtime run`` and is SIGKILLed at failpoints
that fall between a tick's binding and its sink commit — after the binding, after the
operators ran, between writing and committing the sink — so that each restart's
first tick catches up several bindings in one commit. The run is then finished
uncrashed in this process and replayed with ``sealtime replay --from D --data-dir NEW``
(the README's line) into a new data dir.

The replay's sink must hold the same rows committed in the same ranges ``[lower,
upper)`` as the original's, the catch-ups included, and the original's rows must equal a
pandas computation over the input (`tests.engine.test_crash.oracle`).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from sealtime.engine.bindings import BindingLog
from sealtime.storage import MetadataStore, Shard
from tests.engine import replay_job
from tests.engine.test_crash import canon, events, oracle, write_files

ROOT = Path(__file__).resolve().parents[2]
# The n-th hit of each: a few ticks into each run, before the input (16 ticks) ends —
# each after a tick's binding and before its sink commit.
KILLS = ["binding.committed=2", "tick.computed=2", "sink.written=2"]
# Four runs in child processes (a JVM start each), so in the full tier (docs/testing.md);
# the default tier replays an in-process restart's catch-up
# (tests/engine/test_replay_retention.py).
pytestmark = [pytest.mark.xdist_group("crash"), pytest.mark.full]


def commits(data_dir: Path) -> list[tuple[int, int | None, list[tuple]]]:
    """The sink's commits: (lower, upper, its rows sorted) per batch, in order."""
    store = MetadataStore.open(str(data_dir))
    try:
        shard = Shard.open(store, "replayed.windows", data_dir / "shards")
        out = []
        for b in shard.batches():
            rows = shard.read_files(b.files).to_pylist() if b.files else []
            out.append((b.lower, b.upper, sorted(tuple(sorted(r.items())) for r in rows)))
        return out
    finally:
        store.close()


def content(data_dir: Path) -> pd.DataFrame:
    rows = [dict(r) for _, _, batch in commits(data_dir) for r in batch]
    return canon(pd.DataFrame(rows))


def run_killed(data_dir: Path, env: dict[str, str], failpoint: str) -> str:
    """One ``sealtime run`` of the job in a child process, killed at `failpoint`."""
    child = {**os.environ, **env, "PYTHONPATH": str(ROOT), "SEALTIME_FAILPOINTS": failpoint}
    cmd = [sys.executable, "-m", "sealtime.cli", "run", "tests.engine.replay_job:build"]
    proc = subprocess.run(
        [*cmd, "--data-dir", str(data_dir)],
        env=child,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        timeout=900,
    )
    out = proc.stdout.decode(errors="replace")
    assert proc.returncode == -signal.SIGKILL, (
        f"the run with {failpoint} was not killed there (exit {proc.returncode}):\n{out[-3000:]}"
    )
    return out


def test_a_run_killed_three_times_replays_to_the_same_commits(spark, tmp_path, monkeypatch):
    rows = events()
    write_files(tmp_path / "in", rows)
    monkeypatch.setenv("REPLAY_INPUT", str(tmp_path / "in"))
    data = tmp_path / "run"
    for failpoint in KILLS:
        run_killed(data, {"REPLAY_INPUT": str(tmp_path / "in")}, failpoint)
    # Finish uncrashed, in this process.
    flow = replay_job.build(str(data), spark=spark)
    assert flow.engine.recovered_from["ticks"] > 0
    flow.run()
    flow.close()
    pd.testing.assert_frame_equal(content(data), oracle(rows))

    store = MetadataStore.open(str(data))
    catch_ups = BindingLog(store, "replayed").catch_ups()
    ticks = len(BindingLog(store, "replayed").load())
    store.close()
    # The kills left bindings whose commits a restart's first tick made at once: the
    # commit ranges a tick-by-tick replay would not reproduce.
    assert any(through - after >= 2 for after, through in catch_ups), catch_ups
    original = commits(data)
    assert len(original) < ticks

    from sealtime import cli

    spec = "tests.engine.replay_job:build"
    new = tmp_path / "replay"
    assert cli.main(["replay", spec, "--from", str(data), "--data-dir", str(new)]) == 0
    replayed = commits(new)
    assert [(lo, hi) for lo, hi, _ in replayed] == [(lo, hi) for lo, hi, _ in original]
    assert replayed == original
