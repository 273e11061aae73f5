"""The latest late and error rows of a source, read from its ingest log on demand.

The snapshot carries only the paths of recent log entries holding such rows; the web
server reads them here (pyarrow, on its own thread) when someone opens the view, so
the tick never pays for it. A file deleted meanwhile (log truncation after a
checkpoint) is skipped.

>>> latest_late((), 5)
[]
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..columns import DIFF, LATE, OFFSET, TIME
from ..engine.snapshot import LogFileView

__all__ = ["latest_errors", "latest_late"]

#: the log columns a late row is shown without (its `_time` is its tick's binding time)
_HIDDEN = (DIFF, OFFSET)


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    # JSON-safe: timestamps, decimals and bytes become strings.
    return json.loads(json.dumps(table.to_pylist(), default=str))


def latest_late(files: Sequence[LogFileView], limit: int) -> list[dict[str, Any]]:
    """Up to `limit` most recent late rows, newest first: the row's columns, ``_time``
    (the binding time of the tick that read it) and ``reason``. `files` are the entries
    of `SourceInfo.late_files`, oldest first."""
    out: list[dict[str, Any]] = []
    for entry in reversed(files):
        path, late_path = entry.path, entry.late_path
        try:
            if late_path:  # a linked entry: the sidecar lists the late rows of the file
                side = pq.read_table(late_path)
                data = pq.read_table(path).take(side.column("__row"))
                table = data.append_column(TIME, side.column(TIME)).append_column(
                    "reason", side.column("reason")
                )
            else:
                full = pq.read_table(path)
                table = full.filter(pc.is_valid(full.column(LATE)))
                table = table.rename_columns(
                    ["reason" if c == LATE else c for c in table.column_names]
                )
        except (FileNotFoundError, OSError):
            continue
        table = table.drop_columns([c for c in _HIDDEN if c in table.column_names])
        rows = _rows(table)
        out.extend(reversed(rows))
        if len(out) >= limit:
            break
    return out[:limit]


def latest_errors(files: tuple[str, ...], limit: int) -> list[dict[str, Any]]:
    """Up to `limit` most recent error rows (``raw``, ``reason``, ``_time``), newest first."""
    out: list[dict[str, Any]] = []
    for path in reversed(files):
        try:
            table = pq.read_table(path, columns=["raw", "reason", TIME])
        except (FileNotFoundError, OSError):
            continue
        out.extend(reversed(_rows(table)))
        if len(out) >= limit:
            break
    return out[:limit]
