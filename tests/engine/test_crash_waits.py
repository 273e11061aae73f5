"""The crash suites' kill timing (`tests.engine.test_crash.await_kill`) on a loaded
machine: a run that takes long to start (the JVM, several on one machine) is killed where
its plan says — a timer counts from its first binding, not from its process start — and
a failpoint run is left to kill itself, however long that takes.

The child here is a stand-in for ``sealtime run``: it "starts" for `START_S` seconds,
then commits a binding every 0.1 s to a store shaped like the metadata store, and kills
itself at its n-th binding when told to (a failpoint).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from tests.engine.test_crash import MISSED_TICKS, await_kill, bindings_count

START_S = 2.0

CHILD = """
import os, signal, sqlite3, sys, time
start, path, kill_at = float(sys.argv[1]), sys.argv[2], int(sys.argv[3])
time.sleep(start)
conn = sqlite3.connect(path)
conn.execute("PRAGMA journal_mode=WAL")
conn.execute("CREATE TABLE sealtime_bindings (flow TEXT, tick BIGINT)")
for tick in range(1, 10_000):
    with conn:
        conn.execute("INSERT INTO sealtime_bindings VALUES ('f', ?)", (tick,))
    if tick == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    time.sleep(0.1)
"""


def child(tmp_path, kill_at: int = 0) -> subprocess.Popen:
    store = str(tmp_path / "metadata.sqlite")
    return subprocess.Popen([sys.executable, "-c", CHILD, str(START_S), store, str(kill_at)])


def test_a_timer_kill_counts_from_the_first_binding(tmp_path):
    proc = child(tmp_path)
    await_kill(proc, "timer", 0.5, tmp_path)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    # Killed inside its tick loop, not while it was starting (0.5 s < START_S).
    assert bindings_count(tmp_path) >= 2


def test_a_failpoint_run_is_left_to_kill_itself(tmp_path):
    began = time.monotonic()
    proc = child(tmp_path, kill_at=3)
    await_kill(proc, "failpoint", "binding.committed=3", tmp_path)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert bindings_count(tmp_path) == 3  # (its own kill, at its third binding)
    assert time.monotonic() - began >= START_S


def test_a_failpoint_that_is_never_reached_is_killed_after_some_ticks(tmp_path):
    proc = child(tmp_path)  # (never kills itself: its input is all read, say)
    await_kill(proc, "failpoint", "sink.written=1", tmp_path)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert bindings_count(tmp_path) > MISSED_TICKS
