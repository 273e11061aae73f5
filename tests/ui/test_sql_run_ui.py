"""`sealtime run file.sql --ui`: the command line's SQL pipeline serves the web view and
/metrics, and the graph's boxes and the metrics' operators carry each view's name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.cluster.conftest import free_port

# The full tier's: a `sealtime run` child with its own JVM (35 s); the default tier checks
# the graph's names in process (tests/ui/test_browser.py).
pytestmark = pytest.mark.full

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "smile_figure1.sql"


def _get(url: str) -> str | None:
    try:
        return urllib.request.urlopen(url, timeout=5).read().decode()
    except OSError:
        return None


def test_run_of_a_sql_file_serves_the_view_naming_each_view(tmp_path):
    port = free_port()
    cmd = [sys.executable, "-m", "sealtime.cli", "run", str(EXAMPLE)]
    cmd += ["--data-dir", str(tmp_path / "d"), "--forever", "--ui", f"127.0.0.1:{port}"]
    with open(tmp_path / "run.log", "wb") as log:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/"

    def output() -> str:
        return (tmp_path / "run.log").read_text(errors="replace")[-3000:]

    try:
        deadline = time.monotonic() + 240
        snap: dict = {}
        while True:  # until every source's rows are in (5 ticks at its MAX ROWS PER TICK)
            assert proc.poll() is None, output()
            assert time.monotonic() < deadline, ("no sealed tick shown", snap, output())
            text = _get(base + "api/snapshot")
            snap = json.loads(text) if text else {}
            if (snap.get("tick") or 0) >= 6:
                break
            time.sleep(0.5)
        names = [n["name"] for n in snap["nodes"]]
        for view in ("buys", "bought", "available"):
            assert any(n.startswith(f"{view}: ") for n in names), (view, names)
        assert {"sellers", "buyers_west", "buyers_east"} <= set(names), names
        page = _get(base)
        assert page is not None and "<html" in page.lower()
        metrics = _get(base + "metrics") or ""
        assert 'operator="available: ' in metrics, metrics[:2000]
        assert "web view: http://127.0.0.1:" in output()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
