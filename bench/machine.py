"""Machine and code description for benchmark reports: the machine (cpu, cores, memory,
python, date) and which sealtime ran (its directory and commit)."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
from pathlib import Path


def describe() -> str:
    cpu = "unknown cpu"
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo", encoding="utf-8") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 1024 / 1024:.0f} GiB RAM"
    except (OSError, ValueError, IndexError):
        pass
    when = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{cpu}, {os.cpu_count()} cores{mem}, Python {platform.python_version()}; run {when}"


def revision() -> str:
    """Which sealtime ran: its directory and git commit (and whether sealtime/ has
    uncommitted changes)."""
    import sealtime

    pkg = Path(sealtime.__file__).resolve().parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(pkg), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(pkg), "status", "--porcelain", "--", "."],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"{pkg} (not a git checkout)"
    return f"{pkg} at commit {sha}" + (" with uncommitted changes" if dirty else "")
