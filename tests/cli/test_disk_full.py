"""A full disk under a real ``sealtime run`` (issue 32): the first line the command
prints names the errno, the path and the fix; the trace goes to a log file.

The run's data dir is a 6 MiB tmpfs mounted in a private mount namespace of the child
(``unshare --user --map-root-user --mount``: no privileges needed where user namespaces
are allowed; as root it works anyway), and the job (`tests.cli.disk_job`) logs ~20 MB
of incompressible rows: a tick fails with ENOSPC somewhere between the ingest log, the
shard and the metadata store — wherever it does, the summary must say so in one line.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from sealtime.testing import write_jsonl_files

ROOT = Path(__file__).resolve().parents[2]
MOUNT = "mount -t tmpfs -o size=6m tmpfs {d} && exec {cmd}"


def namespaces_work() -> bool:
    probe = ["unshare", "--user", "--map-root-user", "--mount", "true"]
    try:
        return subprocess.run(probe, capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def test_a_full_disk_prints_one_line_with_errno_path_and_fix(tmp_path):
    if not namespaces_work():
        message = "needs `unshare --user --mount` (user namespaces) to mount a small tmpfs"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    write_jsonl_files(
        tmp_path / "in",
        10,
        10_000,
        lambda i, j: {"i": i * 10_000 + j, "payload": secrets.token_hex(100)},
    )
    data = tmp_path / "data"
    data.mkdir()
    cmd = f"{sys.executable} -m sealtime.cli run tests.cli.disk_job:build --data-dir {data}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DISK_INPUT": str(tmp_path / "in")}
    proc = subprocess.run(
        [
            "unshare",
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            MOUNT.format(d=data, cmd=cmd),
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        timeout=900,
    )
    err = proc.stderr.decode(errors="replace").splitlines()
    assert proc.returncode == 1, (proc.returncode, err[-40:])
    first = err[0]
    assert first.startswith("sealtime run: failed: No space left on device [Errno 28 ENOSPC]"), err
    assert f" {data}" in first, first  # (a path in the data dir)
    assert "; fix: free space on the filesystem holding " in first and f"df -h {data}" in first
    # The rest is one line saying where the trace is; nothing of Spark's on the terminal.
    assert len(err) == 2 and err[1].startswith("  the full trace is in "), err
    where = err[1].split("the full trace is in ")[1].split(" (--verbose")[0]
    if not where.startswith(str(data)):  # (the tmpfs is gone with the child's namespace)
        with open(where) as f:
            assert "Traceback" in f.read()
