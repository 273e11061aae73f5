"""Timer determinism: a dataflow with a timer source and a per-key timeout
(`tests.engine.timer_job`) run uninterrupted, killed with SIGKILL at failpoints and at
random moments and restarted, and replayed, gives identical sink contents — and the
replay identical commits (same ranges, same rows)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sealtime.failpoints import POINTS
from sealtime.storage import MetadataStore, Shard
from tests.engine import timer_job

ROOT = Path(__file__).resolve().parents[2]
KILLS = 4  # each kill costs a Spark start
SIZES = [pytest.param(2, id="2-kills"), pytest.param(KILLS, id="4-kills")]
# The full tier (docs/testing.md): the default tier replays timers and timeouts in
# process (tests/engine/test_replay_live.py) and kills child runs in tests/engine/test_crash.py.
pytestmark = pytest.mark.full


def write_input(directory: Path, n: int = 400, seed: int = 3) -> None:
    """Readings of five sensors; each sensor goes quiet now and then for a few seconds."""
    rng = random.Random(seed)
    directory.mkdir(parents=True)
    rows = []
    for i in range(n):
        sensor = f"s{rng.randrange(5)}"
        if (i // 40) % 5 == int(sensor[1]):  # this sensor is quiet in this stretch
            sensor = "s0" if sensor != "s0" else "s1"
        rows.append({"sensor": sensor, "value": i, "ts": timer_job.BASE + i * 75})
    for f in range(0, n, 100):
        with open(directory / f"r-{f // 100:03d}.jsonl", "w") as out:
            out.writelines(json.dumps(r) + "\n" for r in rows[f : f + 100])


def commits(data_dir: Path, sink: str) -> list[tuple]:
    store = MetadataStore.open(str(data_dir))
    try:
        shard = Shard.open(store, f"timers.{sink}", data_dir / "shards")
        out = []
        for b in shard.batches():
            rows = sorted(
                json.dumps(r, sort_keys=True) for r in shard.read_files(b.files).to_pylist()
            )
            out.append((b.lower, b.upper, rows))
        return out
    finally:
        store.close()


def shard_upper(data_dir: Path, sink: str) -> int:
    store = MetadataStore.open(str(data_dir))
    try:
        return Shard.open(store, f"timers.{sink}", data_dir / "shards").upper
    finally:
        store.close()


def content(data_dir: Path, sink: str, below: int) -> list[str]:
    """The sink's updates at times below `below` (commit boundaries may differ after a
    restart: the catch-up tick covers several)."""
    rows = [r for _, _, rs in commits(data_dir, sink) for r in rs]
    return sorted(r for r in rows if json.loads(r)["_time"] < below)


def run_in_process(spark, data_dir: Path, env: dict, ticks: int) -> None:
    os.environ.update(env)
    try:
        flow = timer_job.build(str(data_dir), spark=spark)
        while flow.engine.tick_no < ticks:
            flow.run(ticks=1)
        flow.close()
    finally:
        for k in env:
            os.environ.pop(k)


@pytest.mark.parametrize("n_kills", SIZES)
def test_timer_and_timeout_uninterrupted_crashed_replayed(spark, tmp_path, n_kills):
    write_input(tmp_path / "in")
    env = {"TIMER_INPUT": str(tmp_path / "in")}
    # 1. uninterrupted (log kept for the replay)
    ref = tmp_path / "ref"
    run_in_process(spark, ref, {**env, "TIMER_TRUNCATE": "0"}, timer_job.TICKS)
    fired = commits(ref, "fired")
    silent = commits(ref, "silent")
    upper = timer_job.BASE + timer_job.TICKS * 1000 + 1  # the 30th binding time + 1
    assert shard_upper(ref, "fired") == upper
    assert sum(len(rs) for _, _, rs in fired) == 10  # every 3 s over 30 ticks
    keys = {json.loads(r)["sensor"] for _, _, rs in silent for r in rs}
    assert keys == {"timer", "s0", "s1", "s2", "s3", "s4"}, keys
    # 2. killed and restarted
    crashed = tmp_path / "crashed"
    rng = random.Random(5)
    kills = 0
    for i in range(n_kills):
        child = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
        child.pop("SEALTIME_FAILPOINTS", None)
        timer = None
        if i % 4 == 3:
            timer = rng.uniform(4.0, 9.0)
        else:
            child["SEALTIME_FAILPOINTS"] = f"{POINTS[i % len(POINTS)]}={rng.choice([1, 2, 3])}"
        cmd = [sys.executable, "-m", "sealtime.cli", "run", "tests.engine.timer_job:build"]
        cmd += ["--data-dir", str(crashed), "--ticks", str(timer_job.TICKS)]
        proc = subprocess.Popen(
            cmd, env=child, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            proc.wait(timeout=timer if timer is not None else 120.0)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
        out, _ = proc.communicate(timeout=60)
        if proc.returncode == 0:
            continue  # it finished its ticks before this kill
        assert proc.returncode == -signal.SIGKILL, out.decode(errors="replace")[-3000:]
        kills += 1
    assert kills >= n_kills // 2
    run_in_process(spark, crashed, env, timer_job.TICKS)
    for sink in ("fired", "silent"):
        assert content(crashed, sink, upper) == content(ref, sink, upper), sink
    # 3. replayed (CLI): the same commits, range by range
    from sealtime import cli

    os.environ.update(env)
    try:
        replay = tmp_path / "replay"
        spec = "tests.engine.timer_job:build"
        assert cli.main(["replay", spec, "--from", str(ref), "--data-dir", str(replay)]) == 0
    finally:
        os.environ.pop("TIMER_INPUT")
    assert commits(replay, "fired") == fired
    assert commits(replay, "silent") == silent
