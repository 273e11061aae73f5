"""A standalone Spark cluster for the tests: one master and two workers, started from the
pyspark package with ``spark-class`` on loopback, torn down even when a test fails.

Each daemon runs in its own process group (``start_new_session``), so tearing down
kills the group: the worker's executors (children of the worker JVM, same group) go
with it, and their Python daemons exit when the executor's pipe closes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["Cluster", "executor_pids", "standalone_cluster"]

VENV_BIN = Path(sys.executable).parent
SPARK_CLASS = VENV_BIN / "spark-class"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
START_TIMEOUT = 120.0  # JVM start-up on a busy 2-core machine takes tens of seconds


@dataclass
class Cluster:
    """A running master and its workers (process handles, URLs, log files)."""

    master_url: str
    web_url: str
    master: subprocess.Popen
    workers: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)
    work_dirs: list[Path] = field(default_factory=list)  # per worker: app-*/<executor id>/

    def state(self) -> dict:
        """The master web UI's JSON (workers, applications)."""
        with urllib.request.urlopen(self.web_url + "/json", timeout=5) as r:
            return json.load(r)

    def executors_launched(self, worker: int) -> int:
        """How many executors worker `worker` has launched so far (one directory each
        under ``SPARK_WORKER_DIR/<app id>/``), over all applications."""
        return sum(1 for d in self.work_dirs[worker].glob("app-*/*") if d.is_dir())

    def log_tails(self, chars: int = 2000) -> str:
        """The end of every daemon's log, for failure messages."""
        parts = []
        for log in self.logs:
            text = log.read_text(errors="replace") if log.exists() else ""
            parts.append(f"--- {log.name} ---\n{text[-chars:]}")
        return "\n".join(parts)


def free_port() -> int:
    """A port free on loopback now (the daemon binds it a moment later)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after
    # the last ")".
    return int(stat[stat.rindex(")") + 2 :].split()[1])


def executor_pids(worker_pid: int) -> list[int]:
    """The executor JVMs a worker JVM launched (CoarseGrainedExecutorBackend children),
    found by reading /proc (no psutil)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if EXECUTOR_CLASS.encode() in cmdline and _ppid(int(entry)) == worker_pid:
            out.append(int(entry))
    return sorted(out)


def _require_spark() -> None:
    # Under CI this test must run: a missing Java or spark-class is a failure that says
    # what to install, never a skip.
    if not SPARK_CLASS.exists():
        pytest.fail(
            f"{SPARK_CLASS} not found: the cluster tests start Spark's standalone daemons "
            "from the pyspark package; install pyspark in this venv (pip install -e .)"
        )
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.fail("java not found: PySpark 4 needs Java 17+ (apt-get install openjdk-17-jdk)")


def _start(cmd: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM the process group (the worker kills its executors), SIGKILL what is left."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory) -> Iterator[Cluster]:
    """A master and two 1-core workers on 127.0.0.1; yields when both are registered."""
    _require_spark()
    base = tmp_path_factory.mktemp("cluster")
    env = {
        **os.environ,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(base / "logs"),
        "SPARK_LOCAL_DIRS": str(base / "local"),
        "PYSPARK_PYTHON": sys.executable,
    }
    for d in ("logs", "local"):
        (base / d).mkdir()
    port, web = free_port(), free_port()
    master_log = base / "master.log"
    master = _start(
        [str(SPARK_CLASS), "org.apache.spark.deploy.master.Master"]
        + ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(web)],
        env,
        master_log,
    )
    cluster = Cluster(f"spark://127.0.0.1:{port}", f"http://127.0.0.1:{web}", master)
    cluster.logs.append(master_log)
    try:
        for i in range(2):
            log = base / f"worker{i}.log"
            worker_env = {**env, "SPARK_WORKER_DIR": str(base / f"work{i}")}
            cluster.work_dirs.append(base / f"work{i}")
            cluster.workers.append(
                _start(
                    [str(SPARK_CLASS), "org.apache.spark.deploy.worker.Worker", cluster.master_url]
                    + ["--host", "127.0.0.1", "--cores", "1", "--memory", "2g"]
                    + ["--webui-port", str(free_port())],
                    worker_env,
                    log,
                )
            )
            cluster.logs.append(log)
        deadline = time.monotonic() + START_TIMEOUT
        alive = 0
        while time.monotonic() < deadline:
            for p in [master, *cluster.workers]:
                if p.poll() is not None:
                    pytest.fail(
                        f"a Spark daemon exited ({p.args[1]}, rc {p.returncode}):\n"
                        + cluster.log_tails()
                    )
            with contextlib.suppress(OSError, ValueError):
                alive = sum(w.get("state") == "ALIVE" for w in cluster.state()["workers"])
                if alive == 2:
                    break
            time.sleep(0.5)
        else:
            pytest.fail(
                f"the standalone cluster did not come up in {START_TIMEOUT:.0f} s "
                f"({alive} of 2 workers registered):\n" + cluster.log_tails()
            )
        yield cluster
    finally:
        for p in [*cluster.workers, master]:
            _stop(p)
