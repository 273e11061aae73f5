"""Machine description for benchmark reports (cpu, cores, memory, python, date)."""

from __future__ import annotations

import datetime as _dt
import os
import platform


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
