"""Crash tests: SIGKILL the coordinator at 8 points per source, restart, compare the sink.

The pipeline (`tests.engine.crash_job`): source → event-time window aggregate → join →
Persist sink, with checkpoints and log truncation. A child process runs it with
``sealtime run``; each run is killed with SIGKILL — at a failpoint (while minting a
binding, right after it, inside a tick before the sinks, between writing and committing
the sink, after the sink commit, after writing a checkpoint; hit counts random) or by a
timer at a random moment of its tick loop (`await_kill`). After the kills the test finishes the run uncrashed and
requires the sink's content to equal an uncrashed run's exactly (no loss, no duplicate)
and a batch query over the input. For NATS it also checks after every kill that the
consumer's ack floor on the server has not passed the resumption frontier.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd
import pytest

from sealtime.engine.bindings import BindingLog
from sealtime.failpoints import POINTS
from sealtime.storage import MetadataStore, Shard
from tests.engine import crash_job
from tests.sources.conftest import NatsStream

ROOT = Path(__file__).resolve().parents[2]
KILLS = 8  # the full tier's kills per source (a run per kill, each starting Spark)
# The default tier runs the same scenarios with one kill of each schedule (the
# full tier adds the 8-kill runs: docs/testing.md).
SIZES = [pytest.param(1, id="1-kill"), pytest.param(KILLS, id="8-kills", marks=pytest.mark.full)]
# Under pytest-xdist the module's tests share one worker (and one reference run).
pytestmark = pytest.mark.xdist_group("crash")
EVENTS = 4000  # 16 ticks of crash_job.PER_TICK
# A failpoint run ends by itself: killed at its failpoint (hit 1 or 2 of a point every
# tick with input passes) or finished. It is killed here only when it has ticked this
# many times without reaching it (its input is all read: a stream that never ends), or
# when it has made no progress for HANG_S seconds (hung). Both are events of the run, not
# guesses of how long a JVM takes to start on a loaded machine.
MISSED_TICKS = 20
HANG_S = 600.0
WINDOW = 10_000
BASE = 1_700_000_000_000


def events(n: int = EVENTS, seed: int = 7) -> list[dict]:
    """Bids, 20 ms apart in event time with ±0.5 s jitter (less than the 2 s lateness,
    so none is late and a batch query is the oracle)."""
    rng = random.Random(seed)
    channels = [c for c, _ in crash_job.CHANNELS]
    return [
        {
            "bid": i,
            "channel": channels[rng.randrange(len(channels))],
            "price": rng.randrange(1, 10_000),
            "ts": BASE + i * 20 + rng.randrange(-500, 500),
        }
        for i in range(n)
    ]


def oracle(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows)
    df["window_start"] = df["ts"] // WINDOW * WINDOW
    g = (
        df.groupby(["channel", "window_start"])
        .agg(max_price=("price", "max"), bids=("price", "size"))
        .reset_index()
    )
    g["window_end"] = g["window_start"] + WINDOW
    g = g.merge(pd.DataFrame(crash_job.CHANNELS, columns=["channel", "owner"]), on="channel")
    g["_time"] = g["window_end"] - 1
    g["_diff"] = 1
    return canon(g)


def canon(df: pd.DataFrame) -> pd.DataFrame:
    cols = ["channel", "window_start", "window_end", "max_price", "bids", "owner", "_time", "_diff"]
    df = df[cols].copy()
    for c in ("window_start", "window_end", "max_price", "bids", "_time", "_diff"):
        df[c] = df[c].astype("int64")
    return df.sort_values(cols).reset_index(drop=True)


def sink_content(data_dir: Path) -> pd.DataFrame:
    store = MetadataStore.open(str(data_dir))
    try:
        shard = Shard.open(store, "crash.windows", data_dir / "shards")
        files = [f for b in shard.batches() for f in b.files]
        table = shard.read_files(files) if files else shard.full_schema.empty_table()
    finally:
        store.close()
    df = table.to_pandas()
    for c in ("window_start", "window_end"):
        if len(df) and not pd.api.types.is_integer_dtype(df[c]):
            df[c] = df[c].astype("int64")
    return canon(df) if len(df) else df


def durable_state(data_dir: Path) -> tuple[int | None, dict]:
    """(sink upper, resumption positions) as the metadata store says now."""
    store = MetadataStore.open(str(data_dir))
    try:
        if not Shard.exists(store, "crash.windows"):
            return None, {}
        upper = Shard.open(store, "crash.windows", data_dir / "shards").upper
        bindings = BindingLog(store, "crash").load()
        return upper, BindingLog.resumption_positions([b.sources for b in bindings], upper)
    finally:
        store.close()


def schedule(seed: int, n: int, skip: int = 0) -> list[tuple[str, object]]:
    """n kill plans: mostly failpoints (point, hit count), some timer kills; `skip` leaves
    out the schedule's first plans (the same later plans either way)."""
    rng = random.Random(seed)
    plans: list[tuple[str, object]] = []
    for i in range(n + skip):
        if i % 5 == 4:
            plans.append(("timer", rng.uniform(3.0, 8.0)))
        else:
            point = POINTS[i % len(POINTS)] if i < len(POINTS) else rng.choice(POINTS)
            plans.append(("failpoint", f"{point}={rng.choice([1, 1, 2])}"))
    return plans[skip:]


def bindings_count(data_dir: Path) -> int:
    """How many bindings the run in `data_dir` has committed (0 before its store
    exists), read without writing while the run writes."""
    path = data_dir / "metadata.sqlite"
    if not path.exists():
        return 0
    try:
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT COUNT(*) FROM sealtime_bindings").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:  # (the run has not created its tables yet)
        return 0


def await_kill(proc: subprocess.Popen, kind: str, arg: object, data_dir: Path) -> None:
    """Wait until the run `proc` in `data_dir` is killed as its plan says, killing it
    here when the plan says so: a ``timer`` plan `arg` seconds after the run's first
    new binding (its tick loop runs; counted from the process start, a loaded machine's
    JVM start would take the whole time); a ``failpoint`` plan kills itself, or is
    killed after `MISSED_TICKS` ticks that passed the failpoint by. A run that makes no
    progress for `HANG_S` seconds is killed too."""
    start = last = bindings_count(data_dir)
    progress = time.monotonic()
    fire_at: float | None = None
    while proc.poll() is None:
        now, ticks = time.monotonic(), bindings_count(data_dir)
        if ticks != last:
            last, progress = ticks, now
        if kind == "timer" and fire_at is None and ticks > start:
            fire_at = now + float(arg)
        due = fire_at is not None and now >= fire_at
        if due or ticks - start > MISSED_TICKS or now - progress > HANG_S:
            proc.send_signal(signal.SIGKILL)
            break
        time.sleep(0.1)


def crash_loop(
    data_dir: Path, env: dict, plans: list, *, ticks: int | None = None, after_kill=None
) -> int:
    """Run the job in a child process once per plan, each run killed with SIGKILL (at
    its failpoint or by its timer: `await_kill`). Stops early, returning the number of
    kills, when a run finishes the job."""
    kills = 0
    for kind, arg in plans:
        child_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
        child_env.pop("SEALTIME_FAILPOINTS", None)
        if kind == "failpoint":
            child_env["SEALTIME_FAILPOINTS"] = str(arg)
        cmd = [sys.executable, "-m", "sealtime.cli", "run", "tests.engine.crash_job:build"]
        cmd += ["--data-dir", str(data_dir)]
        cmd += [] if ticks is None else ["--ticks", str(ticks)]
        # (its output in a file: a full pipe nobody reads while waiting would stall it)
        with tempfile.TemporaryFile() as output:
            proc = subprocess.Popen(
                cmd, env=child_env, cwd=ROOT, stdout=output, stderr=subprocess.STDOUT
            )
            await_kill(proc, kind, arg, data_dir)
            proc.wait(timeout=60)
            output.seek(0)
            out = output.read()
        if proc.returncode == 0:
            return kills  # the job finished before this plan's kill
        assert proc.returncode == -signal.SIGKILL, (
            f"run with {kind} {arg} failed (exit {proc.returncode}):\n"
            + out.decode(errors="replace")[-3000:]
        )
        kills += 1
        if after_kill is not None:
            after_kill()
    return kills


@pytest.fixture(scope="module")
def reference(spark, tmp_path_factory) -> pd.DataFrame:
    """An uncrashed run of the same job over the same events (file source)."""
    base = tmp_path_factory.mktemp("crash-ref")
    write_files(base / "in", events())
    os.environ["CRASH_SOURCE"], os.environ["CRASH_INPUT"] = "files", str(base / "in")
    try:
        flow = crash_job.build(str(base / "data"), spark=spark)
        flow.run()
        flow.close()
    finally:
        os.environ.pop("CRASH_SOURCE"), os.environ.pop("CRASH_INPUT")
    got = sink_content(base / "data")
    pd.testing.assert_frame_equal(got, oracle(events()))
    return got


def write_files(directory: Path, rows: list[dict], per_file: int = 500) -> None:
    directory.mkdir(parents=True)
    for i in range(0, len(rows), per_file):
        with open(directory / f"bids-{i // per_file:04d}.jsonl", "w") as f:
            for r in rows[i : i + per_file]:
                f.write(json.dumps(r) + "\n")


@pytest.mark.parametrize("n_kills", SIZES)
def test_crash_file_source(spark, tmp_path, reference, n_kills):
    """Scenarios of kill-and-restart until n_kills kills happened; each scenario is finished
    uncrashed and its sink compared with the uncrashed reference."""
    write_files(tmp_path / "in", events())
    env = {"CRASH_SOURCE": "files", "CRASH_INPUT": str(tmp_path / "in")}
    # One kill (the default tier): the schedule's second, right after a binding commit,
    # so that the restart recovers committed ticks (the NATS test kills while logging).
    plans = schedule(1, n_kills, skip=1 if n_kills == 1 else 0)
    kills = scenario = 0
    while kills < n_kills:
        data = tmp_path / f"data-{scenario}"
        done = crash_loop(data, env, plans[kills:])
        assert done > 0 or scenario == 0, "a scenario ended without any kill"
        kills += done
        scenario += 1
        # Finish uncrashed (in this process, same job, same data dir).
        os.environ.update(env)
        try:
            flow = crash_job.build(str(data), spark=spark)
            assert flow.engine.recovered_from["ticks"] > 0
            flow.run()
            flow.close()
        finally:
            for k in env:
                os.environ.pop(k)
        pd.testing.assert_frame_equal(sink_content(data), reference)
    assert kills >= n_kills


@pytest.mark.parametrize("n_kills", SIZES)
def test_crash_nats_source(spark, tmp_path, reference, nats_stream: NatsStream, n_kills):
    rows = events()
    # A last event far ahead seals every window of the real events (the stream never
    # ends, so nothing else would close the last ones).
    sentinel = {"bid": -1, "channel": "web", "price": 0, "ts": rows[-1]["ts"] + 60_000}
    nats_stream.publish([json.dumps(r).encode() for r in rows + [sentinel]])
    env = {
        "CRASH_SOURCE": "nats",
        "CRASH_STREAM": nats_stream.name,
        "CRASH_SUBJECT": nats_stream.subject,
        # The reader resumes exactly where the log ends (no re-read after a restart), so
        # input goes fast; smaller ticks keep it flowing through all the kills (once it
        # is all read, sink failpoints are never hit and each run waits MISSED_TICKS).
        "CRASH_PER_TICK": "60",
    }
    data = tmp_path / "data"
    durable = crash_job.source_for_nats(nats_stream.subject, nats_stream.name).durable
    floors: list[tuple[int, int]] = []

    def check_ack_floor() -> None:
        upper, positions = durable_state(data)
        try:
            floor = nats_stream.consumer_info(durable).ack_floor.stream_seq
        except Exception:  # the consumer does not exist yet (killed before setup)
            floor = 0
        resume = positions.get("bids", 0)
        floors.append((floor, resume))
        assert floor <= resume, f"ack floor {floor} passed the resumption frontier {resume}"

    kills = crash_loop(data, env, schedule(2, n_kills), ticks=100_000, after_kill=check_ack_floor)
    assert kills == n_kills
    target = max(r["ts"] for r in rows) // WINDOW * WINDOW + WINDOW  # all real windows
    os.environ.update(env)
    try:
        flow = crash_job.build(str(data), spark=spark)
        for _ in range(200):
            flow.run(ticks=1)
            upper = flow.sinks[0].sink.durable_upper()
            if upper is not None and upper >= target:
                break
        flow.close()
    finally:
        for k in env:
            os.environ.pop(k)
    check_ack_floor()
    assert any(f > 0 for f, _ in floors), "the consumer never acknowledged anything"
    got = sink_content(data)
    pd.testing.assert_frame_equal(
        got[got["window_end"] <= target].reset_index(drop=True), reference
    )
