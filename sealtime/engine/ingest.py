"""Ingestion at the edge: read a batch, stamp times (reclock), route late rows, log it.

For each tick a source's batch is stamped and written to the source's ingest log (one
Parquet file per tick, pyarrow) *before* any of it propagates; Spark then reads the log
for the newly sealed time range ``[lo, hi)``. Stamping is vectorised (numpy/pyarrow).

Time assignment:

* ingestion time: ``_time`` = the tick's binding time (``into_time``); the frontier
  becomes ``into_time + 1``.
* event time (``time="col"``, ``lateness=L``): ``_time`` = the column (ms). Record *i* is
  late iff its time < ``max event time of the records before it - L`` — a function of the
  log order alone, never of where tick boundaries fell. Without ``lateness``, the
  source's own event-time frontier (e.g. a broker watermark) is the bound, or L = 0. A late record goes to the ``late`` output, stamped at
  that bound (an unsealed time) with a reason. The frontier becomes ``max event time
  seen - L`` (or the source's own report, or empty at the end of the source).
* explicit time (``Rows``): ``_time``/``_diff`` come from the source, as does the frontier.
* idleness (``idle_timeout=I``, event time only): when a tick finds the source has read
  nothing for ``I`` ms of the ticker's clock (``into_time`` minus the binding time of
  the last tick that read a record), its frontier moves to ``into_time - L``. The
  advancement is part of the binding (the timestamper state ``idle_floor``/``idle_at``),
  so replay and recovery repeat it; later records below it go to ``late`` with a reason
  naming idleness.
* clocked sources (``Timer``): the reader is given the tick's ``into_time``
  (``read_at(into_time, max_rows)``) and returns rows at explicit times ≤ it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..sources.base import ClockedReader, LinkedBatch, LinkedReader, ReadBatch, Source
from ..sources.decode import SchemaMismatchError
from ..storage.durable import fsync_file
from ..time.order import MIN_TIME

__all__ = ["MIN_TIME", "LogFile", "SourceRuntime", "unreferenced_paths"]


def unreferenced_paths(gone: list[LogFile], kept: list[LogFile]) -> list[str]:
    """The files to delete when the entries `gone` leave the log and `kept` stay: linked
    entries of one source file share a path, and late sidecars belong to their entry."""
    keep = {p for f in kept for p in (f.path, f.late_path) if p}
    out: list[str] = []
    for f in gone:
        for p in (f.path, f.late_path):
            if p and p not in keep and p not in out:
                out.append(p)
    return out


def _inside(entry: LogFile, lo: int, hi: int | None) -> bool:
    """Do all of the entry's times lie in ``[lo, hi)``?"""
    return entry.min_time >= lo and (hi is None or entry.max_time < hi)


def _linkable_time(t: pa.DataType) -> bool:
    """Event-time column types Spark turns into the same milliseconds as the stamping."""
    if pa.types.is_timestamp(t):
        return t.tz is not None and t.unit in ("ms", "us")
    return pa.types.is_integer(t)


@dataclass
class LogFile:
    """One ingest-log entry (JSON-able primitives; every path lies under the log dir).

    A *copied* entry (``time_column == ""``) is a Parquet file in the log format
    (`SourceRuntime.log_schema`). A *linked* entry is a hard link (or a copy) of an
    immutable source Parquet file: the rows ``[first, end)`` of it (``file_rows`` rows in
    all) belong to the entry, ``_time`` is its column `time_column` (ms), ``_diff`` is 1,
    ``_offset`` is ``offset + row - first``, and the rows routed to ``late`` are listed
    in the sidecar `late_path` (``__row`` = row index in the file, ``_time`` = the bound
    the row missed, ``reason``). `late` counts the entry's late rows (-1: unknown).
    """

    path: str
    min_time: int
    max_time: int
    rows: int
    late: int = -1
    time_column: str = ""
    first: int = 0
    end: int = 0
    file_rows: int = 0
    offset: int = 0
    late_path: str = ""
    #: ingestion time: every row of a linked entry has this ``_time`` (no time column)
    fixed_time: int | None = None

    @property
    def linked(self) -> bool:
        return bool(self.time_column) or self.fixed_time is not None


@dataclass
class _LinkedStamp:
    """A stamped `LinkedBatch`: its file ranges and the per-row decisions, in log order."""

    links: tuple[tuple[str, int, int, int], ...]
    times: np.ndarray  # stamped _time (a late row: the bound it missed)
    late: np.ndarray  # bool
    reason: pa.Array | None  # string per row (null when not late); None = none late
    offset: int  # _offset of the first row
    fixed: int | None = None  # ingestion time: the binding time of every row

    @property
    def num_rows(self) -> int:
        return len(self.times)


@dataclass
class SourceRuntime:
    """A source's reader, ingest log and frontier inside a running dataflow."""

    name: str
    source: Source
    log_dir: str
    time_column: str | None = None
    lateness: int | None = None
    max_rows: int | None = None
    #: idleness: ms of the ticker's clock without a record after which the event-time
    #: frontier moves to ``into_time - lateness`` (None: never)
    idle_timeout: int | None = None
    #: binding time of the last tick that read a record (or of the first tick)
    last_active: int | None = None
    #: the largest frontier idleness set, and the binding time it was set at
    idle_floor: int | None = None
    idle_at: int | None = None
    frontier: int | None = MIN_TIME
    position: Any = None
    exhausted: bool = False
    max_seen: int | None = None
    reported: int | None = None
    offset: int = 0
    late_count: int = 0
    error_count: int = 0
    rows_in: int = 0
    files: list[LogFile] = field(default_factory=list)
    error_files: list[LogFile] = field(default_factory=list)
    health_files: list[LogFile] = field(default_factory=list)
    #: the status last written to the health log
    health: str | None = None
    #: largest `_time` in the log so far (for mapping a time back to a position)
    max_logged: int = MIN_TIME
    #: where to start reading: the position of the last durable binding (restart), and
    #: the resumption position that counts as acknowledged upstream
    restored: dict[str, Any] | None = None
    acknowledged: Any = None
    #: replay: read nothing upstream; the engine feeds the original bindings instead
    replay: bool = False
    #: Spark column expressions and the schema of the linked files, built once
    _columns: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        os.makedirs(self.log_dir, exist_ok=True)
        self._mark = (len(self.files), len(self.error_files), len(self.health_files))
        if self.restored is not None:
            self.restore(self.restored)
        self.reader = None if self.replay else self.source.resume(self.position, self.acknowledged)
        self.explicit = self.source.time_column == "_time"
        if self.time_column is not None and self.time_column not in self.source.schema.names:
            raise ValueError(
                f"source {self.name!r}: time={self.time_column!r} is not a column; "
                f"columns are {self.source.schema.names}"
            )

    @property
    def event_time(self) -> bool:
        return self.time_column is not None or self.explicit

    # ------------------------------------------------------------------ one tick
    def ingest(self, tick: int, into_time: int) -> dict[str, Any]:
        """Read, stamp, log. Returns this source's part of the tick's binding."""
        # Files the log gains from here on belong to this tick's binding.
        self._mark = (len(self.files), len(self.error_files), len(self.health_files))
        if self.exhausted:
            return self._binding(into_time)
        try:
            batch = self._read_batch(into_time)
        except SchemaMismatchError as exc:
            # Not a bad record but bad data or a bad declaration: stop, naming the source.
            raise SchemaMismatchError(
                f"source {self.name!r} ({exc.source})",
                exc.column,
                exc.expected,
                exc.found,
                where=exc.where,
                fix=exc.fix,
            ) from exc
        self.position = batch.position
        lower = self.frontier
        read_any = batch.data.num_rows > 0 or (
            batch.errors is not None and batch.errors.num_rows > 0
        )
        if read_any or self.last_active is None:
            self.last_active = into_time
        if self.event_time:
            batch = self._route_null_times(batch)
        data = batch.data
        n = data.num_rows
        self.rows_in += n
        links = batch.links if isinstance(batch, LinkedBatch) else None
        if self.event_time:
            table = self._stamp_event_time(data, batch)
        elif links:
            times = np.full(n, into_time, np.int64)
            table = _LinkedStamp(
                tuple(links), times, np.zeros(n, bool), None, self.offset, into_time
            )
            self.offset += n
        else:
            table = self._stamp_ingestion_time(data, into_time)
        if n:
            self._write(table, tick, self.files, "part")
        if batch.errors is not None and batch.errors.num_rows:
            err_time = (
                into_time if not self.event_time else (lower if lower is not None else MIN_TIME)
            )
            self._write_errors(batch.errors, tick, err_time)
        # Side outputs are stamped at a time not sealed yet: the binding time, or the
        # event-time frontier before this batch.
        side = into_time if not self.event_time else (lower if lower is not None else MIN_TIME)
        self._check_health(tick, side)
        self._advance(batch, into_time)
        return self._binding(into_time)

    def _binding(self, into_time: int) -> dict[str, Any]:
        new = self.files[self._mark[0] :]
        new_err = self.error_files[self._mark[1] :]
        new_health = self.health_files[self._mark[2] :]
        for f in new:
            self.max_logged = max(self.max_logged, f.max_time)
        return {
            "position": self.position,
            "frontier": self.frontier,
            "into_time": into_time,
            "state": self.state(),
            "files": [dataclasses.asdict(f) for f in new],
            "error_files": [dataclasses.asdict(f) for f in new_err],
            "health_files": [dataclasses.asdict(f) for f in new_health],
        }

    # ------------------------------------------------------------------ durable state
    def state(self) -> dict[str, Any]:
        """The scalar state a restart needs (JSON-able); files travel separately."""
        return {
            "position": self.position,
            "frontier": self.frontier,
            "exhausted": self.exhausted,
            "max_seen": self.max_seen,
            "reported": self.reported,
            "offset": self.offset,
            "late_count": self.late_count,
            "error_count": self.error_count,
            "rows_in": self.rows_in,
            "max_logged": self.max_logged,
            "health": self.health,
            "last_active": self.last_active,
            "idle_floor": self.idle_floor,
            "idle_at": self.idle_at,
        }

    def restore(self, restored: dict[str, Any]) -> None:
        """Take the state of the last durable binding and the log files of all bindings."""
        for key, value in restored["state"].items():
            setattr(self, key, value)
        self.files = [LogFile(**f) for f in restored["files"]]
        self.error_files = [LogFile(**f) for f in restored["error_files"]]
        self.health_files = [LogFile(**f) for f in restored.get("health_files", [])]

    def apply_binding(self, part: dict[str, Any]) -> None:
        """Replay: take one original binding instead of reading the source."""
        for key, value in part["state"].items():
            setattr(self, key, value)
        self._mark = (len(self.files), len(self.error_files), len(self.health_files))
        self.files.extend(LogFile(**f) for f in part["files"])
        self.error_files.extend(LogFile(**f) for f in part["error_files"])
        self.health_files.extend(LogFile(**f) for f in part.get("health_files", []))

    def _check_health(self, tick: int, at: int) -> None:
        """Log a change of the reader's status: retract the old row, add the new one."""
        assert self.reader is not None
        status = self.reader.health()
        if status == self.health:
            return
        rows = [(status, 1)] if self.health is None else [(self.health, -1), (status, 1)]
        table = pa.table(
            {
                "source": pa.array([self.name] * len(rows), pa.string()),
                "status": pa.array([r[0] for r in rows], pa.string()),
                "_time": pa.array([at] * len(rows), pa.int64()),
                "_diff": pa.array([r[1] for r in rows], pa.int64()),
            }
        )
        self._write(table, tick, self.health_files, "health")
        self.health = status

    def acknowledge(self, position: Any) -> None:
        """Acknowledge upstream up to `position` (the resumption frontier), if the source
        takes acknowledgements."""
        if self.reader is not None and position is not None:
            self.reader.acknowledge(position)

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()

    def _stamp_ingestion_time(self, data: pa.Table, into_time: int) -> pa.Table:
        n = data.num_rows
        table = data.append_column("_time", pa.array(np.full(n, into_time, np.int64)))
        table = table.append_column("_diff", pa.array(np.ones(n, np.int64)))
        table = table.append_column("_late", pa.nulls(n, pa.string()))
        return self._with_offsets(table)

    def _stamp_event_time(self, data: pa.Table, batch: ReadBatch) -> pa.Table | _LinkedStamp:
        n = data.num_rows
        if self.explicit:
            times = data.column("_time").to_numpy(zero_copy_only=False).astype(np.int64)
            table = data
        else:
            col = data.column(self.time_column)
            if pa.types.is_timestamp(col.type):
                col = pc.cast(pc.cast(col, pa.timestamp("ms", tz=col.type.tz)), pa.int64())
            elif not pa.types.is_integer(col.type):
                raise ValueError(
                    f"source {self.name!r}: time={self.time_column!r} has type {col.type}; "
                    "the event-time column must be a timestamp or an int of milliseconds"
                )
            times = col.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
            table = data  # `_time` and `_diff` are added below (not for linked batches)
        # The admission bound for record i, from the log order alone. With `lateness`,
        # only bounded lateness counts (a source's watermark depends on how reads were
        # split, which would make the decision depend on tick sizes); without it, the
        # source's own frontier does (explicit times), or lateness 0.
        if self.lateness is not None or self.reported is None:
            carry = self.max_seen if self.max_seen is not None else MIN_TIME
            # bound[i] = max(carry, times[:i]) - lateness, with one array allocated.
            bound = np.empty(n, np.int64)
            if n:
                bound[0] = carry
                np.maximum.accumulate(times[:-1], out=bound[1:])
                np.maximum(bound[1:], carry, out=bound[1:])
                bound -= self.lateness or 0
        else:
            bound = np.full(n, self.reported, np.int64)
        # Idleness moved the frontier past the bound the data alone gives: it admits
        # nothing below the frontier it set.
        idle = None
        if self.idle_floor is not None and n:
            idle = bound < self.idle_floor
            if idle.any():
                bound = np.maximum(bound, self.idle_floor)
            else:
                idle = None
        late = times < bound
        if n:
            top = int(times.max())
            self.max_seen = top if self.max_seen is None else max(self.max_seen, top)
        links = batch.links if isinstance(batch, LinkedBatch) else None
        if links:
            return self._stamp_linked(links, times, bound, late, idle)
        if not self.explicit:
            table = table.append_column("_time", pa.array(times))
            table = table.append_column("_diff", pa.array(np.ones(n, np.int64)))
        reason = pa.nulls(n, pa.string())
        if late.any():
            self.late_count += int(late.sum())
            reason = self._late_reason(times, bound, late, idle)
            # A late record is stamped at the (unsealed) bound it missed, so it is released
            # to the `late` output like any other update.
            times = np.where(late, bound, times)
            table = table.set_column(
                table.schema.get_field_index("_time"), "_time", pa.array(times)
            )
        table = table.append_column("_late", reason)
        return self._with_offsets(table)

    def _route_null_times(self, batch: ReadBatch) -> ReadBatch:
        """Rows whose event time is null go to `errors` (raw row as JSON + reason); the
        rest go on. A linked batch with such rows is read whole and logged as a copy, so
        the log never links a file range holding a row that is not in the output."""
        column = "_time" if self.explicit else self.time_column
        assert column is not None
        if batch.data.column(column).null_count == 0:
            return batch
        data = batch.data
        links = batch.links if isinstance(batch, LinkedBatch) else None
        if links:
            names = self.source.schema.names
            data = pa.concat_tables(
                [
                    pq.ParquetFile(path).read(columns=names).slice(first, end - first)
                    for path, first, end, _ in links
                ]
            ).cast(self.source.schema)
        null = pc.is_null(data.column(column))
        bad = data.filter(null)
        raw = [json.dumps(row, default=str, sort_keys=True) for row in bad.to_pylist()]
        errors = pa.table(
            {
                "raw": pa.array(raw, pa.string()),
                "reason": pa.array(
                    [f"event time column {column!r} is null"] * bad.num_rows, pa.string()
                ),
            }
        )
        if batch.errors is not None and batch.errors.num_rows:
            old = batch.errors.select(["raw", "reason"]).cast(errors.schema)
            errors = pa.concat_tables([old, errors])
        return ReadBatch(
            data=data.filter(pc.invert(null)),
            position=batch.position,
            exhausted=batch.exhausted,
            event_frontier=batch.event_frontier,
            errors=errors,
        )

    def _late_reason(
        self,
        times: np.ndarray,
        bound: np.ndarray,
        late: np.ndarray,
        idle: np.ndarray | None = None,
    ) -> pa.Array:
        """Per row: why it is late (null where it is not), naming the bound it missed and
        where the bound comes from (`idle`: the rows whose bound is the frontier that
        idleness set)."""
        t = pc.cast(pa.array(times), pa.string())
        b = pc.cast(pa.array(bound), pa.string())
        if self.lateness is not None or self.reported is None:
            seen = pc.cast(pa.array(bound + (self.lateness or 0)), pa.string())
            text = pc.binary_join_element_wise(
                "event time ",
                t,
                " ms is below the admission bound ",
                b,
                " ms (largest event time seen before it ",
                seen,
                f" ms minus lateness {self.lateness or 0} ms)",
                "",
            )
        else:
            text = pc.binary_join_element_wise(
                "event time ", t, " ms is below the source's event-time frontier ", b, " ms", ""
            )
        if idle is not None:
            idle_text = pc.binary_join_element_wise(
                "event time ",
                t,
                " ms is below the event-time frontier ",
                b,
                " ms, which the source's idle_timeout advanced: no record arrived for "
                f"{self.idle_timeout} ms of the ticker's clock, so at clock time "
                f"{self.idle_at} ms time moved on to the clock minus lateness "
                f"{self.lateness or 0} ms",
                "",
            )
            text = pc.if_else(pa.array(idle), idle_text, text)
        return pc.if_else(pa.array(late), text, pa.nulls(len(times), pa.string()))

    def _read_batch(self, into_time: int) -> ReadBatch:
        """The next batch; immutable Parquet input comes as file ranges when possible;
        a clocked source (``Timer``) is given the tick's binding time."""
        reader = self.reader
        assert reader is not None
        if isinstance(reader, ClockedReader):
            return reader.read_at(into_time, self.max_rows)
        if isinstance(reader, LinkedReader) and not self.explicit:
            if self.time_column is None:
                # Ingestion time: no column is needed to stamp; one is read to count rows.
                return reader.read_linked(self.max_rows, [self.source.schema.names[0]])
            if _linkable_time(self.source.schema.field(self.time_column).type):
                return reader.read_linked(self.max_rows, [self.time_column])
        return reader.read(self.max_rows)

    def _stamp_linked(
        self,
        links,
        times: np.ndarray,
        bound: np.ndarray,
        late: np.ndarray,
        idle: np.ndarray | None = None,
    ) -> _LinkedStamp:
        reason = None
        if late.any():
            self.late_count += int(late.sum())
            reason = self._late_reason(times, bound, late, idle)
            times = np.where(late, bound, times)
        stamp = _LinkedStamp(tuple(links), times, late, reason, self.offset)
        self.offset += len(times)
        return stamp

    def _link(self, source_path: str) -> str:
        """A hard link of the immutable file `source_path` inside the log dir (a copy when
        the log is on another filesystem); reused when the file was linked before."""
        name = os.path.basename(source_path)
        dest = os.path.join(self.log_dir, f"src-{name}")
        if os.path.exists(dest):
            return dest
        try:
            os.link(source_path, dest)
        except FileExistsError:
            pass
        except OSError:  # another filesystem, or links not supported: copy
            tmp = dest + ".tmp"
            shutil.copyfile(source_path, tmp)
            os.replace(tmp, dest)
        return dest

    def _write_linked(self, stamp: _LinkedStamp, tick: int, files: list[LogFile]) -> None:
        at = 0
        for k, (path, first, end, file_rows) in enumerate(stamp.links):
            n = end - first
            times = stamp.times[at : at + n]
            late = stamp.late[at : at + n]
            dest = self._link(path)
            late_path = ""
            n_late = int(late.sum())
            if n_late:
                rows = np.flatnonzero(late)
                late_path = os.path.join(self.log_dir, f"late-{tick:08d}-{k:04d}.parquet")
                assert stamp.reason is not None
                sidecar = pa.table(
                    {
                        "__row": pa.array(rows + first, pa.int64()),
                        "_time": pa.array(times[rows], pa.int64()),
                        "reason": stamp.reason.slice(at, n).take(pa.array(rows)),
                    }
                )
                pq.write_table(sidecar, late_path)
                fsync_file(late_path)  # the engine makes `path` durable; the sidecar is ours
            files.append(
                LogFile(
                    dest,
                    int(times.min()),
                    int(times.max()),
                    n,
                    late=n_late,
                    time_column=self.time_column or "",
                    fixed_time=stamp.fixed,
                    first=first,
                    end=end,
                    file_rows=file_rows,
                    offset=stamp.offset + at,
                    late_path=late_path,
                )
            )
            at += n

    def _with_offsets(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        table = table.append_column(
            "_offset", pa.array(np.arange(self.offset, self.offset + n, dtype=np.int64))
        )
        self.offset += n
        return table

    def _write(self, table: pa.Table, tick: int, files: list[LogFile], prefix: str) -> None:
        if isinstance(table, _LinkedStamp):
            self._write_linked(table, tick, files)
            return
        path = os.path.join(self.log_dir, f"{prefix}-{tick:08d}.parquet")
        pq.write_table(table, path)
        t = table.column("_time")
        late = (
            table.num_rows - table.column("_late").null_count
            if "_late" in table.schema.names
            else 0
        )
        files.append(LogFile(path, pc.min(t).as_py(), pc.max(t).as_py(), table.num_rows, late=late))

    def _write_errors(self, errors: pa.Table, tick: int, at: int) -> None:
        n = errors.num_rows
        self.error_count += n
        table = pa.table(
            {
                "raw": pc.cast(errors.column("raw"), pa.string()),
                "reason": pc.cast(errors.column("reason"), pa.string()),
                "_time": pa.array(np.full(n, at, np.int64)),
                "_diff": pa.array(np.ones(n, np.int64)),
            }
        )
        self._write(table, tick, self.error_files, "errors")

    def _advance(self, batch: ReadBatch, into_time: int) -> None:
        if batch.exhausted:
            self.exhausted = True
            self.frontier = None
            return
        if batch.event_frontier is not None:
            self.reported = (
                batch.event_frontier
                if self.reported is None
                else max(self.reported, batch.event_frontier)
            )
        if not self.event_time:
            candidate = into_time + 1
        elif self.lateness is None and self.reported is not None:
            candidate = self.reported
        else:
            lateness = self.lateness or 0
            candidate = self.max_seen - lateness if self.max_seen is not None else MIN_TIME
        self.frontier = max(self.frontier, candidate)
        self._advance_idle(into_time)

    def _advance_idle(self, into_time: int) -> None:
        """Idleness (Triceps' "time flows without data"): after `idle_timeout` ms of the
        ticker's clock without a record, the event-time frontier moves to the clock minus
        lateness. Only binding times enter here, so replay repeats it exactly."""
        if self.idle_timeout is None or self.last_active is None or not self.event_time:
            return
        if into_time - self.last_active < self.idle_timeout:
            return
        target = into_time - (self.lateness or 0)
        if self.frontier is not None and target > self.frontier:
            self.frontier = target
            self.idle_floor = target
            self.idle_at = into_time

    # ------------------------------------------------------------------ reading
    def log_schema(self, which: str) -> pa.Schema:
        """Arrow schema of the log files (`which` = "errors"/"health" for those logs)."""
        if which == "health":
            return pa.schema(
                [
                    ("source", pa.string()),
                    ("status", pa.string()),
                    ("_time", pa.int64()),
                    ("_diff", pa.int64()),
                ]
            )
        if which == "errors":
            return pa.schema(
                [
                    ("raw", pa.string()),
                    ("reason", pa.string()),
                    ("_time", pa.int64()),
                    ("_diff", pa.int64()),
                ]
            )
        data = [f for f in self.source.schema if f.name not in ("_time", "_diff")]
        system = [
            ("_time", pa.int64()),
            ("_diff", pa.int64()),
            ("_late", pa.string()),
            ("_offset", pa.int64()),
        ]
        return pa.schema(data + [pa.field(n, t) for n, t in system])

    def spark_schema(self, which: str):
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(
            self.log_schema(which if which in ("errors", "health") else "main")
        )

    def _entries(self, which: str, lo: int, hi: int | None) -> list[LogFile]:
        files = {"errors": self.error_files, "health": self.health_files}.get(which, self.files)
        out = [f for f in files if f.max_time >= lo and (hi is None or f.min_time < hi)]
        if which == "late":
            out = [f for f in out if f.late != 0]
        return out

    def max_time(self, which: str, lo: int, hi: int | None) -> int | None:
        """An upper bound (inclusive) of the times `frame` returns for ``[lo, hi)``, from
        the log's metadata (no Spark job); None when the range has no entry."""
        entries = self._entries(which, lo, hi)
        if not entries:
            return None
        top = max(f.max_time for f in entries)
        return top if hi is None else min(top, hi - 1)

    def files_for(self, which: str, lo: int, hi: int | None) -> list[str]:
        """The log files (and late sidecars) holding updates of `which` in ``[lo, hi)``."""
        paths: list[str] = []
        for f in self._entries(which, lo, hi):
            for p in (f.path, f.late_path):
                if p and p not in paths:
                    paths.append(p)
        return paths

    def frame(self, spark, which: str, lo: int, hi: int | None, data: list[str]):
        """The logged updates of output `which` ("main", "late", "errors") at times in
        ``[lo, hi)`` as a Spark DataFrame (None when no log file overlaps the range)."""
        from pyspark.sql import functions as F

        entries = self._entries(which, lo, hi)
        if not entries:
            return None
        cols = [c for c in self.source.schema.names if c not in ("_time", "_diff")]
        parts: list[tuple[Any, bool]] = []  # (frame, holds only times in [lo, hi))
        copied_entries = [f for f in entries if not f.linked]
        copied = [f.path for f in copied_entries]
        if copied:
            # An explicit schema spares Spark a job to infer it from the files' footers.
            df = spark.read.schema(self.spark_schema(which)).parquet(*copied)
            if which == "main":
                df = df.filter(F.col("_late").isNull()).select(*data, "_time", "_diff")
            elif which == "late":
                df = df.filter(F.col("_late").isNotNull()).select(
                    *cols, F.col("_late").alias("reason"), "_time", "_diff"
                )
            elif which == "health":
                df = df.select("source", "status", "_time", "_diff")
            else:
                df = df.select("raw", "reason", "_time", "_diff")
            parts.append((df, all(_inside(e, lo, hi) for e in copied_entries)))
        linked = [f for f in entries if f.linked]
        if linked:
            parts.extend(self._linked_frames(spark, which, linked, data, cols, lo, hi))
        # A frame whose entries' times all lie in [lo, hi) needs no filter (one Spark
        # operator less to plan and to run; most entries are inside their tick's range).
        # (SQL text: one JVM call, where building the Column costs several)
        cond = f"_time >= {lo}" + ("" if hi is None else f" AND _time < {hi}")
        out = None
        for df, exact in parts:
            if not exact:
                df = df.filter(cond)
            out = df if out is None else out.unionByName(df)
        return out

    def _column(self, name: str):
        """A Spark column reference, built once (each costs a JVM round trip)."""
        from pyspark.sql import functions as F

        if name not in self._columns:
            self._columns[name] = F.col(name)
        return self._columns[name]

    def _linked_frames(
        self, spark, which: str, entries: list[LogFile], data, cols, lo: int, hi: int | None
    ) -> list:
        """Spark frames over linked entries: ``_time`` from the event-time column, ``_diff``
        1; rows listed in an entry's late sidecar go to ``late`` (at their bound) instead
        of ``main``. Whole files without late rows are read in one scan, without the row
        index; the others with ``_metadata.row_index`` restricted to the entry's range."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        from ..spark.plans import Projection

        fields = [f for f in self.source.schema if f.name not in ("_time", "_diff")]
        if "schema" not in self._columns:
            self._columns["schema"] = from_arrow_schema(pa.schema(fields))
            self._columns["one"] = F.lit(1).cast("long").alias("_diff")
        schema = self._columns["schema"]
        one = self._columns["one"]
        names = [f.name for f in fields]
        sidecar = "__row BIGINT, _time BIGINT, reason STRING"

        def event_time(e: LogFile):
            if e.fixed_time is not None:
                return F.lit(e.fixed_time).cast("long").alias("_time")
            key = "time:" + e.time_column
            if key not in self._columns:
                c = self._column(e.time_column)
                typ = self.source.schema.field(e.time_column).type
                t = F.unix_millis(c) if pa.types.is_timestamp(typ) else c.cast("long")
                self._columns[key] = t.alias("_time")
            return self._columns[key]

        def in_range(e: LogFile, df) -> tuple[Any, bool]:
            # The range on the stored column itself, which Spark pushes down to the
            # Parquet reader: row groups whose times all lie outside it are skipped. For
            # ms/us timestamps and integers it is also exact (the stamped time is the
            # column's milliseconds, floored), so no filter on ``_time`` follows.
            if e.fixed_time is not None:
                return df, False
            c = "`" + e.time_column.replace("`", "``") + "`"
            typ = self.source.schema.field(e.time_column).type
            if pa.types.is_timestamp(typ):
                bound = "timestamp_millis({})".format
                # (bounds beyond what a timestamp can hold, like the least time, are
                # left out: the stamping admits no such time)
                fits = lambda t: abs(t) < 10**15  # noqa: E731
            elif pa.types.is_integer(typ):
                bound, fits = str, lambda t: True  # noqa: E731
            else:
                return df, False
            exact = True
            conds = []
            if fits(lo):
                conds.append(f"{c} >= {bound(lo)}")
            elif lo > 0:
                exact = False
            if hi is not None:
                if fits(hi):
                    conds.append(f"{c} < {bound(hi)}")
                else:
                    exact = False
            return (df.filter(" AND ".join(conds)) if conds else df), exact

        parts = []
        rest = entries
        if which == "main":
            whole = [e for e in entries if e.first == 0 and e.end == e.file_rows and not e.late]
            # One scan per time stamping: a source's event-time entries share their time
            # column; ingestion-time entries share the binding time of their tick.
            by_stamp: dict[int | None, list[LogFile]] = {}
            for e in whole:
                by_stamp.setdefault(e.fixed_time, []).append(e)
            for group in by_stamp.values():
                df = spark.read.schema(schema).parquet(*[e.path for e in group])
                exact = all(_inside(e, lo, hi) for e in group)
                if not exact:
                    df, exact = in_range(group[0], df)
                if group[0].fixed_time is None:
                    key = f"project:{group[0].time_column}:{','.join(data)}"
                    if key not in self._columns:
                        cols_ = [self._column(c) for c in data]
                        self._columns[key] = Projection([*cols_, event_time(group[0]), one])
                    parts.append((self._columns[key].apply(df), exact))
                else:
                    cols_ = [self._column(c) for c in data]
                    parts.append((df.select(*cols_, event_time(group[0]), one), exact))
            rest = [e for e in entries if e not in whole]
        for e in rest:
            df = spark.read.schema(schema).parquet(e.path)
            df = df.select(*names, F.col("_metadata.row_index").alias("__row"))
            if not (e.first == 0 and e.end == e.file_rows):
                df = df.filter((F.col("__row") >= e.first) & (F.col("__row") < e.end))
            if which == "main":
                if e.late:
                    late = spark.read.schema(sidecar).parquet(e.late_path).select("__row")
                    df = df.join(F.broadcast(late), "__row", "left_anti")
                parts.append((df.select(*data, event_time(e), one), _inside(e, lo, hi)))
            else:
                late = spark.read.schema(sidecar).parquet(e.late_path)
                df = df.join(F.broadcast(late), "__row", "inner")
                parts.append((df.select(*cols, "reason", "_time", one), _inside(e, lo, hi)))
        return parts
