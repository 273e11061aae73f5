"""The same dataflow on a standalone cluster and in local mode gives the same output,
also when an executor is SIGKILLed mid-run.

`tests/cluster/cluster_job.py` (a windowed aggregate and a running aggregate, both to
Parquet sinks) runs in child processes: once in local mode (the reference), once on
the cluster of `standalone_cluster` (two workers, one core each), and once more on the
cluster while the test kills one worker's executor JVM with SIGKILL after the job has
committed a few ticks. Each run must finish by itself (no restart by hand) and its
consolidated sink contents must equal the reference's: no update lost, none duplicated.
Every event is also counted in the final contents (a check independent of the
reference).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

import sealtime as st
from tests.cluster import cluster_job
from tests.cluster.conftest import Cluster, executor_pids

# The full tier (docs/testing.md): three Spark daemons and a job JVM per run.
# Under pytest-xdist one worker runs them all (one cluster, one reference run).
pytestmark = [pytest.mark.full, pytest.mark.xdist_group("cluster")]

JOB = Path(cluster_job.__file__)
SINKS = ("windows", "running")
RUN_TIMEOUT = 600.0  # a bound for a hung run on a busy machine, not the expected time
KILL_AFTER_TICK = 2  # then checkpoints at ticks 3, 6, 9 read what the executor held


def sink_contents(data_dir: Path, sink: str) -> pd.DataFrame:
    """A Parquet sink's committed updates, consolidated: summed `_diff` per (row, `_time`),
    zero sums dropped, sorted (so how updates were split across commits or partitions
    does not matter, and a lost or duplicated update does)."""
    committed = st.sinks.Parquet(data_dir / "out" / sink).directories()
    frames = [pq.read_table(d).to_pandas() for d in committed]
    return consolidate(pd.concat([f for f in frames if len(f)], ignore_index=True))


def consolidate(df: pd.DataFrame) -> pd.DataFrame:
    """Updates summed per (row, `_time`), zero sums dropped, sorted; timestamps as UTC
    nanoseconds (Spark's and pyarrow's Parquet files may differ in unit and zone)."""
    df = df.copy()
    for c in df.columns:
        if pd.api.types.is_datetime64_any_dtype(df[c]):
            naive = pd.to_datetime(df[c], utc=True).dt.tz_localize(None)
            df[c] = naive.astype("datetime64[ns]").astype("int64")
    keys = sorted(c for c in df.columns if c != "_diff")
    out = df.groupby(keys, as_index=False, dropna=False)["_diff"].sum()
    out = out[out["_diff"] != 0]
    return out.sort_values(keys).reset_index(drop=True)


def accumulated_bids(contents: pd.DataFrame) -> int:
    """Events counted by the final contents of a sink (sum of bids x diff)."""
    return int((contents["bids"] * contents["_diff"]).sum())


def start_job(
    master: str, data_dir: Path, progress: Path, record: bool = False
) -> subprocess.Popen:
    env = {**os.environ, "SEALTIME_DRIVER_HOST": "127.0.0.1"}
    # The documented cluster setting, not Spark's global one, must be enough.
    env.pop("SPARK_LOCAL_IP", None)
    log = open(data_dir.parent / f"{data_dir.name}.log", "wb")  # noqa: SIM115 - closed in finish_job
    proc = subprocess.Popen(
        [sys.executable, str(JOB), master, str(data_dir), str(progress)]
        + (["--record"] if record else []),
        env=env,
        cwd=data_dir.parent,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its JVM goes with the group if the test fails
    )
    proc.log = log  # type: ignore[attr-defined]
    return proc


def finish_job(proc: subprocess.Popen, timeout: float = RUN_TIMEOUT) -> dict:
    """Wait for the job; its JSON result line, or a failure with the log's tail."""
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        proc.log.close()  # type: ignore[attr-defined]
    assert proc.returncode == 0, f"job failed (rc {proc.returncode}):\n{job_log(proc)}"
    # The result is the job's marked line, not the log's last: PySpark's Python workers
    # share the log and may write after it (over Unix sockets, a worker whose idle
    # connection the exiting JVM closes prints a BrokenPipeError).
    results = [
        line[len(cluster_job.RESULT_PREFIX) :]
        for line in Path(proc.log.name).read_text(errors="replace").splitlines()  # type: ignore[attr-defined]
        if line.startswith(cluster_job.RESULT_PREFIX)
    ]
    assert results, f"job printed no result line:\n{job_log(proc)}"
    return json.loads(results[-1])


def run_job(master: str, data_dir: Path) -> dict:
    proc = start_job(master, data_dir, data_dir.parent / f"{data_dir.name}.progress")
    try:
        return finish_job(proc)
    finally:
        kill_group(proc)


def kill_group(proc: subprocess.Popen) -> None:
    """Kill what is left of a job that did not end cleanly (its driver JVM, in the
    job's process group); a clean exit leaves nothing behind."""
    if proc.returncode != 0:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


def read_progress(progress: Path) -> int:
    try:
        return int(progress.read_text() or 0)
    except (OSError, ValueError):
        return 0


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[dict[str, pd.DataFrame], int]:
    """The job in local mode: the output (per sink) and tick count every cluster run
    must reproduce."""
    base = tmp_path_factory.mktemp("local")
    result = run_job("local[2]", base / "data")
    out = {s: sink_contents(base / "data", s) for s in SINKS}
    # Independent of the reference: every event is counted once in both sinks.
    for s in SINKS:
        assert accumulated_bids(out[s]) == cluster_job.EVENTS, s
    return out, result["ticks"]


def assert_same(data_dir: Path, result: dict, reference) -> None:
    contents, ticks = reference
    assert result["ticks"] == ticks
    for s in SINKS:
        got = sink_contents(data_dir, s)
        pd.testing.assert_frame_equal(got, contents[s], obj=f"sink {s!r}")
        assert accumulated_bids(got) == cluster_job.EVENTS, s


def test_cluster_equals_local(standalone_cluster: Cluster, reference, tmp_path):
    """The job on two workers commits exactly the local run's output."""
    result = run_job(standalone_cluster.master_url, tmp_path / "data")
    print(f"cluster run: {result}")
    assert_same(tmp_path / "data", result, reference)


# record=True covers record=False's check (the sinks) and adds the traces; CI time
# allows one killed run.
@pytest.mark.parametrize("record", [True], ids=["record=True"])
def test_executor_killed_mid_run(standalone_cluster: Cluster, reference, tmp_path, record):
    """SIGKILL one worker's executor after tick KILL_AFTER_TICK: the run finishes on
    its own (the worker starts a new executor) with exactly the local run's output.
    With ``record=True`` the traces read after the run (``updates()``) must survive the
    loss too, and equal the sinks."""
    data, progress = tmp_path / "data", tmp_path / "data.progress"
    worker = standalone_cluster.workers[0].pid
    launched = standalone_cluster.executors_launched(0)
    proc = start_job(standalone_cluster.master_url, data, progress, record)
    try:
        deadline = time.monotonic() + RUN_TIMEOUT
        victims: list[int] = []
        while read_progress(progress) < KILL_AFTER_TICK or not victims:
            assert proc.poll() is None, "the job ended before the kill:\n" + job_log(proc)
            assert time.monotonic() < deadline, "no progress, or no executor on worker 0"
            time.sleep(0.1)
            victims = executor_pids(worker)
        assert len(victims) == 1, f"worker {worker} runs executors {victims}"
        os.kill(victims[0], signal.SIGKILL)
        killed_at = read_progress(progress)
        result = finish_job(proc)
    finally:
        kill_group(proc)
    # The kill happened mid-run, and the worker launched a replacement executor.
    replacements = standalone_cluster.executors_launched(0) - launched - 1
    print(
        f"executor {victims[0]} SIGKILLed after tick {killed_at} of {result['ticks']}; "
        f"replacement executors on that worker: {replacements}; run: {result}"
    )
    assert killed_at < result["ticks"], (killed_at, result)
    assert replacements >= 1, "the worker did not launch a new executor"
    assert_same(data, result, reference)
    if record:
        for s in SINKS:
            recorded = consolidate(pq.read_table(data / "recorded" / f"{s}.parquet").to_pandas())
            pd.testing.assert_frame_equal(recorded, reference[0][s], obj=f"updates() of {s!r}")


def job_log(proc: subprocess.Popen) -> str:
    return Path(proc.log.name).read_text(errors="replace")[-4000:]  # type: ignore[attr-defined]
