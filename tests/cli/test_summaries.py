"""Failures an operator can act on (issue 32): the one line a failure prints first.

`sealtime.summaries.summarize` finds the errno and the path in the chain of causes a
failure comes with — a Python `OSError`, the text of a Spark job's failure (the JVM's
``Caused by:`` chain, a Python worker's traceback), SQLite's words — and
`run_command` prints that line before anything else, the trace going to the command's
log file. The texts below are the shapes those layers produce; the full chain through a
real Spark job on a full disk is tests/cli/test_disk_full.py.
"""

from __future__ import annotations

import io
import os
import sqlite3

import pytest

from sealtime.errors import DataDirOwnedError, FencedError, MetadataStoreError, PlanChangedError
from sealtime.storage.fs import DataFS
from sealtime.summaries import run_command, summarize

JAVA = """An error occurred while calling o412.parquet.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 7.0 \
failed 1 times, most recent failure: Lost task 0.0 in stage 7.0 (TID 9) (vm executor driver): \
org.apache.spark.SparkException: [TASK_WRITE_FAILED] Task failed while writing rows to \
file:/data/d/shards/crash.windows/s-1f2e.
\tat org.apache.spark.sql.errors.QueryExecutionErrors$.taskFailedWhileWritingRowsError(QueryExecutionErrors.scala:774)
Caused by: java.io.IOException: No space left on device
\tat java.base/java.io.FileOutputStream.writeBytes(Native Method)
"""

WORKER = """  File "/venv/lib/python3.11/site-packages/pyspark/worker.py", line 1898, in main
    process()
  File "/work/sealtime/arrangement/runs.py", line 120, in write_run
    f.write(data)
OSError: [Errno 28] No space left on device: '/data/d/state/n0009-windowed_reduce/windows/e1/p0000/r1-1.arrow'
"""


def test_an_os_error_names_its_errno_path_and_fix():
    s = summarize(OSError(30, "Read-only file system", "/data/d/log/bids/e1/part-3.parquet"))
    line = s.line("run")
    assert line.startswith("sealtime run: failed: Read-only file system [Errno 30 EROFS]")
    assert "/data/d/log/bids/e1/part-3.parquet" in line and "fix: " in line
    assert "read-only" in line.split("fix: ")[1] and s.status == 1


def test_the_data_dirs_wrapper_of_an_os_error(tmp_path):
    fs = DataFS.from_uri(str(tmp_path))
    fs.write_bytes("f", b"x")
    with pytest.raises(Exception) as info:
        fs.read_bytes("f/not-a-dir")  # ENOTDIR, wrapped by the data dir's layer
    s = summarize(info.value, data_dir=str(tmp_path))
    assert s.errno is not None and s.path is not None and str(tmp_path) in s.path


def test_a_spark_jobs_java_chain():
    s = summarize(RuntimeError(JAVA), data_dir="/data/d")
    assert (s.errno, s.path) == (28, "/data/d/shards/crash.windows/s-1f2e")
    assert "free space on the filesystem" in s.fix


def test_a_python_workers_traceback_skips_code_paths():
    s = summarize(RuntimeError(f"PythonException: \n{WORKER}"), data_dir="/data/d")
    assert s.errno == 28
    assert s.path == "/data/d/state/n0009-windowed_reduce/windows/e1/p0000/r1-1.arrow"


def test_sqlite_words_and_the_data_dir_for_a_path():
    try:
        try:
            raise sqlite3.OperationalError("database or disk is full")
        except sqlite3.OperationalError as e:
            raise MetadataStoreError("metadata store /data/d: write failed") from e
    except MetadataStoreError as e:
        s = summarize(e, data_dir="/data/d")
    assert (s.errno, s.path) == (28, "/data/d")


def test_sealtime_errors_keep_their_message_and_refusals_their_status():
    assert summarize(DataDirOwnedError("owned by pid 7")).line("run") == (
        "sealtime run: refused: owned by pid 7"
    )
    assert summarize(FencedError("epoch 3 took over")).status == 4
    changed = summarize(PlanChangedError("different graph; give it a new data_dir"))
    assert changed.line("run") == "sealtime run: failed: different graph; give it a new data_dir"


def test_an_unknown_failure_says_so():
    s = summarize(ZeroDivisionError("division by zero"))
    assert s.line("sql").startswith("sealtime sql: failed: ZeroDivisionError: division by zero")
    assert "report" in s.fix


@pytest.mark.parametrize("verbose", [False, True], ids=["quiet", "verbose"])
def test_run_command_prints_the_line_first_and_logs_the_trace(tmp_path, verbose):
    def body() -> int:
        try:
            raise OSError(28, "No space left on device", str(tmp_path / "log" / "p.parquet"))
        except OSError as e:
            raise RuntimeError("the tick failed") from e

    out = io.StringIO()
    status = run_command("run", body, data_dir=str(tmp_path), verbose=verbose, terminal=out)
    lines = out.getvalue().splitlines()
    assert status == 1
    assert lines[0].startswith("sealtime run: failed: No space left on device [Errno 28 ENOSPC]")
    assert str(tmp_path / "log" / "p.parquet") in lines[0] and "fix: free space" in lines[0]
    log = (tmp_path / "logs" / "run.log").read_text()
    assert "Traceback" in log and "the tick failed" in log
    if verbose:
        assert any("Traceback" in line for line in lines[1:])
    else:
        assert lines[1:] == [
            f"  the full trace is in {tmp_path}/logs/run.log (--verbose prints it here)"
        ]


def test_the_log_falls_back_when_the_data_dir_cannot_hold_it(tmp_path):
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    out = io.StringIO()

    def body() -> int:
        raise OSError(2, "No such file or directory", str(blocked / "x"))

    assert run_command("replay", body, data_dir=str(blocked), terminal=out) == 1
    where = out.getvalue().splitlines()[1]
    path = where.split("the full trace is in ")[1].split(" (--verbose")[0]
    assert not path.startswith(str(blocked)) and os.path.exists(path)
    with open(path) as f:
        assert "No such file or directory" in f.read()
