"""Seeing time: the live web view, Prometheus metrics, ``sealtime status`` and progress.

* `Monitor` / `Snapshot` (`snapshot`): one immutable snapshot per tick, published by
  the engine; everything below reads only those (or the metadata store).
* `serve_ui` / `UiServer` (`server`): the web page and ``/metrics``
  (``flow.serve_ui()``, ``sealtime run|demo --ui HOST:PORT``; the address is read by
  `sealtime.net.parse_address`, the one address grammar).
* `collect_status` / `format_status` (`status`): ``sealtime status --data-dir D``.
* `TickProgress` (`progress`): rich progress bars and the demo's status line.
"""

from __future__ import annotations

from .metrics import SnapshotCollector, registry_for, render
from .progress import TickProgress, fmt_time
from .server import UiServer, serve_ui
from .snapshot import Monitor, Snapshot
from .status import collect_status, format_status

__all__ = [
    "Monitor",
    "Snapshot",
    "SnapshotCollector",
    "TickProgress",
    "UiServer",
    "collect_status",
    "fmt_time",
    "format_status",
    "registry_for",
    "render",
    "serve_ui",
]
