"""sealtime's Python worker daemon (`sealtime.spark.daemon`): PySpark's, quiet when the
executor has closed a worker's connection.

The worker resets signal handlers, so it runs in a child process here.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(
    not hasattr(socket, "AF_UNIX"), reason="the platform has no Unix sockets"
)

# An idle worker whose executor closed its connection: the worker reads the end of its
# input and tries to report it. PySpark's executors set the environment variable, as the
# JVM does for its daemon by default (spark.python.daemon.killWorkerOnFlushFailure).
CHILD = """
import socket, sys
from {module} import worker
executor, python_side = socket.socketpair()
executor.close()
print("exit code", worker(python_side, True))
"""


def run_worker(module: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON_DAEMON_KILL_WORKER_ON_FLUSH_FAILURE": "true"}
    return subprocess.run(
        [sys.executable, "-c", CHILD.format(module=module)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_worker_whose_connection_is_closed_ends_quietly():
    done = run_worker("sealtime.spark.daemon")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "exit code 1"
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_pyspark_daemon_prints_the_traceback_sealtime_avoids():
    """The case is real: PySpark's own worker raises BrokenPipeError here (if a PySpark
    upgrade stops doing so, `sealtime.spark.daemon` is no longer needed)."""
    done = run_worker("pyspark.daemon")
    assert done.returncode != 0
    assert "BrokenPipeError" in done.stderr


def test_the_session_runs_python_workers_under_sealtime_daemon(spark):
    """sealtime's sessions name the daemon, and Spark starts it: a Python task runs and
    the daemon process is sealtime's."""
    if not os.path.isdir("/proc"):
        pytest.skip("needs /proc to read the daemon's command line")
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.python.daemon.module") == "sealtime.spark.daemon"

    def pid(batches):
        import pyarrow as pa

        for _ in batches:
            yield pa.RecordBatch.from_arrays([pa.array([os.getppid()])], ["ppid"])

    parents = {
        r.ppid for r in spark.range(0, 4, numPartitions=2).mapInArrow(pid, "ppid long").collect()
    }
    for parent in parents:
        with open(f"/proc/{parent}/cmdline", "rb") as f:
            cmdline = f.read().split(b"\0")
        assert b"sealtime.spark.daemon" in cmdline, cmdline
