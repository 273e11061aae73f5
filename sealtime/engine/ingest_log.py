"""The ingest log of one source: its entries, one Arrow schema per kind, writer, reader.

Every tick a source's stamped rows are written here *before* any of them propagates
(SMILE's "log before propagating"); Spark then reads the log for each newly sealed time
range ``[lo, hi)``. The log is a directory of Parquet files plus `LogFile` entries
(recorded in the bindings, `sealtime.engine.bindings.BindingPart`).

Log kinds and their schemas (`log_schema`):

========== ============================================ ==================================
kind       file                                         schema
========== ============================================ ==================================
data       ``part-<tick>.parquet`` (copied rows)        `data_schema`: the source's
                                                        columns + ``_time``, ``_diff``,
                                                        ``_late`` (reason, null when the
                                                        row is not late), ``_offset``
late       ``late-<tick>-<k>.parquet`` (sidecar of a    `LATE_SIDECAR_SCHEMA`: ``__row``,
           linked entry)                                ``_time`` (binding), ``reason``
errors     ``errors-<tick>.parquet``                    `ERRORS_SCHEMA`: ``raw``,
                                                        ``reason``, ``_time``, ``_diff``
health     ``health-<tick>.parquet``                    `HEALTH_SCHEMA`: ``source``,
                                                        ``status``, ``_time``, ``_diff``
========== ============================================ ==================================

A *linked* data entry is a hard link (``src-<name>``) of an immutable source Parquet
file instead of a copy: the entry names the row range it owns and the event-time
column; its late rows are listed in its sidecar. A tick that takes only a small part
of a file copies that part (``part-<tick>-<k>.parquet``, `copies_range`), so that no
later read of the log scans the whole file for it.

The outputs read back (`IngestLogReader.frame`): ``main`` (rows not late), ``late``
(the source's columns + ``reason``), ``errors`` and ``health``.

Two time domains share a data entry: its main rows are at their event times, its late
rows at the binding time of the tick that logged them (as are errors and health rows:
`sealtime.engine.timestamper`). An entry's ``min_time``/``max_time`` cover both — what
log truncation and other readers that do not tell outputs apart may rely on — and
`LogFile.bounds` gives each output's own bounds, which the reader prunes entries with.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> entries = LogEntries()
>>> w = IngestLogWriter(d, pa.schema([("x", pa.int64())]), entries)
>>> w.write_errors(pa.table({"raw": ["?"], "reason": ["bad"]}), tick=1, at=5)
>>> [(os.path.basename(f.path), f.min_time, f.rows) for f in entries.errors]
[('errors-00000001.parquet', 5, 1)]
>>> pq.read_schema(entries.errors[0].path).equals(ERRORS_SCHEMA)
True
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Container
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..columns import DIFF, LATE, OFFSET, TIME
from ..errors import InternalError
from ..plan import DataPathTuning
from ..sources.files import read_row_range
from ..storage.fs import DataFS
from ..storage.ownership import epoch_at, epoch_name

#: the data path's default thresholds (`DataPathTuning`)
DEFAULT_TUNING = DataPathTuning()

__all__ = [
    "DATA_SYSTEM_FIELDS",
    "ERRORS_SCHEMA",
    "HEALTH_SCHEMA",
    "LATE_SIDECAR_SCHEMA",
    "OUTPUTS",
    "IngestLogReader",
    "IngestLogWriter",
    "LinkedStamp",
    "LogEntries",
    "LogFile",
    "data_schema",
    "log_schema",
    "unreferenced_paths",
]

#: the system columns of a data log file, after the source's columns
DATA_SYSTEM_FIELDS = (
    pa.field(TIME, pa.int64()),
    pa.field(DIFF, pa.int64()),
    pa.field(LATE, pa.string()),
    pa.field(OFFSET, pa.int64()),
)
_SYSTEM_NAMES = {f.name for f in DATA_SYSTEM_FIELDS}
#: rows that do not decode or have no event time
ERRORS_SCHEMA = pa.schema(
    [("raw", pa.string()), ("reason", pa.string()), (TIME, pa.int64()), (DIFF, pa.int64())]
)
#: changes of the reader's status (the old status retracted, the new one added)
HEALTH_SCHEMA = pa.schema(
    [
        ("source", pa.string()),
        ("status", pa.string()),
        (TIME, pa.int64()),
        (DIFF, pa.int64()),
    ]
)
#: the late rows of a linked entry: row index in the file, the binding time, reason
LATE_SIDECAR_SCHEMA = pa.schema(
    [("__row", pa.int64()), (TIME, pa.int64()), ("reason", pa.string())]
)
#: the outputs `IngestLogReader.frame` reads
OUTPUTS = ("main", "late", "errors", "health")


def data_schema(source_schema: pa.Schema) -> pa.Schema:
    """The schema of a copied data log file: the source's columns (without its own
    ``_time``/``_diff``, if it has them) and `DATA_SYSTEM_FIELDS`.

    >>> data_schema(pa.schema([("k", pa.string()), ("_time", pa.int64())])).names
    ['k', '_time', '_diff', '_late', '_offset']
    """
    data = [f for f in source_schema if f.name not in (TIME, DIFF)]
    return pa.schema(data + list(DATA_SYSTEM_FIELDS))


def log_schema(kind: str, source_schema: pa.Schema) -> pa.Schema:
    """The Arrow schema of the log files of `kind`: ``"data"`` (also ``"main"`` and
    ``"late"``, which copied data files hold), ``"errors"``, ``"health"``, or
    ``"late_sidecar"``.

    >>> log_schema("health", pa.schema([])).names
    ['source', 'status', '_time', '_diff']
    """
    fixed = {"errors": ERRORS_SCHEMA, "health": HEALTH_SCHEMA, "late_sidecar": LATE_SIDECAR_SCHEMA}
    if kind in fixed:
        return fixed[kind]
    if kind in ("data", "main", "late"):
        return data_schema(source_schema)
    raise InternalError(f"log kind {kind!r}: use 'data', 'errors', 'health' or 'late_sidecar'")


@dataclass
class LogFile:
    """One ingest-log entry (JSON-able primitives; every path lies under the log dir).

    A *copied* entry (``time_column == ""``, no ``fixed_time``) is a Parquet file of its
    kind's schema. A *linked* entry is a hard link (or a copy) of an immutable source
    Parquet file: the rows ``[first, end)`` of it (``file_rows`` rows in all) belong to
    the entry, ``_time`` is its column `time_column` (ms) or `fixed_time`, ``_diff`` is
    1, ``_offset`` is ``offset + row - first``, and the rows routed to ``late`` are
    listed in the sidecar `late_path`. `late` counts the entry's late rows (-1: unknown);
    `offset` is the ``_offset`` of the entry's first row (also for copies). A tick that
    takes only part of a large file logs a copy of that part (`copies_range`).

    ``min_time``/``max_time`` bound the times of all the entry's rows; `late_time` is
    the time of its late rows (the binding time of its tick) and `main_min`/`main_max`
    bound its main rows, when they differ (`bounds`).

    >>> LogFile("/l/part-1", 0, 9, 3).linked, LogFile("/l/src-a", 0, 9, 3, time_column="t").linked
    (False, True)
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
    #: the ``_time`` of the entry's late rows: its tick's binding time (None: no late
    #: rows, or an entry of an older version, whose late rows lie in min..max_time)
    late_time: int | None = None
    #: bounds of the main (not late) rows when the entry has late rows (None: as
    #: min_time/max_time)
    main_min: int | None = None
    main_max: int | None = None

    def bounds(self, output: str) -> tuple[int, int] | None:
        """The least and largest time of the entry's rows of `output` (``main``,
        ``late``; any other output: all its rows), None when it has none.

        >>> e = LogFile("/l/part-1", 5, 900, 3, late=1, late_time=900, main_min=5, main_max=7)
        >>> e.bounds("main"), e.bounds("late"), e.bounds("errors")
        ((5, 7), (900, 900), (5, 900))
        >>> LogFile("/l/part-2", 900, 900, 2, late=2, late_time=900).bounds("main") is None
        True
        """
        if output == "late":
            if self.late == 0:
                return None
            if self.late_time is not None:
                return self.late_time, self.late_time
        elif output == "main" and self.late_time is not None:
            if self.late == self.rows:
                return None
            if self.main_min is not None and self.main_max is not None:
                return self.main_min, self.main_max
        return self.min_time, self.max_time

    @property
    def key(self) -> tuple[str, int]:
        """What tells the entry from every other of its log: its file and first row
        (linked entries of one source file share the file).

        >>> LogFile("/l/src-a", 0, 9, 3, first=100).key
        ('/l/src-a', 100)
        """
        return self.path, self.first

    @property
    def linked(self) -> bool:
        """Is the entry a range of a linked source file (not a copy)?"""
        return bool(self.time_column) or self.fixed_time is not None

    def paths(self) -> list[str]:
        """The files of the entry: its file and its late sidecar (if any).

        >>> LogFile("/l/src-a", 0, 1, 1, late_path="/l/late-1").paths()
        ['/l/src-a', '/l/late-1']
        """
        return [p for p in (self.path, self.late_path) if p]


@dataclass
class LogEntries:
    """The entries of a source's log, per kind, oldest first (shared by the writer, the
    reader and the coordinator's truncation, which edits the lists in place).

    >>> LogEntries().of("late")
    []
    """

    data: list[LogFile] = field(default_factory=list)
    errors: list[LogFile] = field(default_factory=list)
    health: list[LogFile] = field(default_factory=list)

    def lists(self) -> tuple[list[LogFile], list[LogFile], list[LogFile]]:
        """(data, errors, health)."""
        return self.data, self.errors, self.health

    def mark(self) -> tuple[int, int, int]:
        """The entry counts now: `since` gives the entries added after."""
        return len(self.data), len(self.errors), len(self.health)

    def since(
        self, mark: tuple[int, int, int]
    ) -> tuple[list[LogFile], list[LogFile], list[LogFile]]:
        """The (data, errors, health) entries added after `mark`."""
        return self.data[mark[0] :], self.errors[mark[1] :], self.health[mark[2] :]

    def of(self, output: str) -> list[LogFile]:
        """The entries that hold `output` (``late`` rows live in data entries)."""
        return {"errors": self.errors, "health": self.health}.get(output, self.data)


def unreferenced_paths(gone: list[LogFile], kept: list[LogFile]) -> list[str]:
    """The files to delete when the entries `gone` leave the log and `kept` stay: linked
    entries of one source file share a path, and late sidecars belong to their entry.

    >>> a, b = LogFile("/l/src-a", 0, 1, 1, late_path="/l/late-1"), LogFile("/l/src-a", 2, 3, 1)
    >>> unreferenced_paths([a], [b])
    ['/l/late-1']
    """
    keep = {p for f in kept for p in f.paths()}
    out: list[str] = []
    for f in gone:
        for p in f.paths():
            if p not in keep and p not in out:
                out.append(p)
    return out


@dataclass(frozen=True)
class LinkedStamp:
    """Stamped rows that are ranges of immutable Parquet files (`LinkedBatch`): the file
    ranges ``(path, first, end, file_rows)`` and the per-row stamping, in log order.

    >>> s = LinkedStamp((("/d/a.parquet", 0, 2, 2),), np.array([1, 2]), np.zeros(2, bool), None)
    >>> s.num_rows
    2
    """

    links: tuple[tuple[str, int, int, int], ...]
    times: np.ndarray  # stamped _time (a late row: the binding time)
    late: np.ndarray  # bool
    reason: pa.Array | None  # string per row (null when not late); None = none late
    fixed: int | None = None  # ingestion time: the binding time of every row
    time_column: str = ""

    @property
    def num_rows(self) -> int:
        """Rows in all ranges."""
        return len(self.times)


class IngestLogWriter:
    """Appends a source's stamped rows, errors and health changes to its log directory
    and records the entries in `entries`. `offset` numbers the data rows in log order
    (the ``_offset`` column: the event id's last part).

    >>> import tempfile
    >>> entries = LogEntries()
    >>> w = IngestLogWriter(tempfile.mkdtemp(), pa.schema([("x", pa.int64())]), entries)
    >>> rows = pa.table({"x": [7, 8], TIME: [5, 6], DIFF: [1, 1], LATE: pa.nulls(2, pa.string())})
    >>> w.write_data(tick=1, rows=rows)
    >>> pq.read_table(entries.data[0].path).column(OFFSET).to_pylist(), w.offset
    ([0, 1], 2)
    """

    def __init__(
        self,
        log_dir: str,
        source_schema: pa.Schema,
        entries: LogEntries,
        offset: int = 0,
        tuning: DataPathTuning = DEFAULT_TUNING,
    ) -> None:
        self.tuning = tuning
        #: the log directory, through the one filesystem layer (`sealtime.storage.fs`):
        #: the owner's epoch directory in it (`sealtime.storage.ownership`), so a fenced
        #: owner never overwrites a file the new owner's bindings name
        self.fs = DataFS.from_uri(log_dir)
        epoch = epoch_at(self.fs.location)
        if epoch is not None:
            self.fs.create_dir(epoch_name(epoch))
            self.fs.sync([epoch_name(epoch)])  # (its entry in the log dir, once)
            self.fs = self.fs.child(epoch_name(epoch))
        self.fs.create_dir()
        self.log_dir = self.fs.location
        self.schema = data_schema(source_schema)
        self.entries = entries
        self.offset = offset

    def write_data(self, tick: int, rows: pa.Table | LinkedStamp) -> None:
        """Log the stamped data rows of `tick`: a table (the source's columns plus
        ``_time``, ``_diff``, ``_late``; ``_offset`` is added here) or linked ranges."""
        if isinstance(rows, LinkedStamp):
            self._write_linked(tick, rows)
            return
        n, start = rows.num_rows, self.offset
        rows = rows.append_column(OFFSET, pa.array(np.arange(start, start + n, dtype=np.int64)))
        self.offset += n
        if not rows.schema.equals(self.schema):
            rows = rows.select(self.schema.names).cast(self.schema)
        late = n - rows.column(LATE).null_count
        self._write(rows, f"part-{tick:08d}.parquet", self.entries.data, late, start)

    def write_errors(self, errors: pa.Table, tick: int, at: int) -> None:
        """Log rows that did not decode (``raw``, ``reason``), stamped at time `at`."""
        n = errors.num_rows
        table = pa.table(
            [
                pc.cast(errors.column("raw"), pa.string()),
                pc.cast(errors.column("reason"), pa.string()),
                pa.array(np.full(n, at, np.int64)),
                pa.array(np.ones(n, np.int64)),
            ],
            schema=ERRORS_SCHEMA,
        )
        self._write(table, f"errors-{tick:08d}.parquet", self.entries.errors, 0)

    def write_health(self, source: str, changes: list[tuple[str, int]], tick: int, at: int) -> None:
        """Log status changes ``(status, diff)`` of `source`, stamped at time `at`."""
        table = pa.table(
            [
                pa.array([source] * len(changes), pa.string()),
                pa.array([s for s, _ in changes], pa.string()),
                pa.array([at] * len(changes), pa.int64()),
                pa.array([d for _, d in changes], pa.int64()),
            ],
            schema=HEALTH_SCHEMA,
        )
        self._write(table, f"health-{tick:08d}.parquet", self.entries.health, 0)

    def _write(
        self, table: pa.Table, name: str, entries: list[LogFile], late: int, offset: int = 0
    ) -> None:
        path = self.fs.join(name)
        pq.write_table(table, self.fs.path(name), filesystem=self.fs.fs)
        t = table.column(TIME)
        min_time, max_time = pc.min(t).as_py(), pc.max(t).as_py()
        entry = LogFile(path, min_time, max_time, table.num_rows, late=late, offset=offset)
        if late > 0:
            is_late = pc.is_valid(table.column(LATE))
            entry = _split_bounds(entry, pc.filter(t, pc.invert(is_late)), pc.filter(t, is_late))
        entries.append(entry)

    def _write_linked(self, tick: int, stamp: LinkedStamp) -> None:
        at = 0
        for k, (path, first, end, file_rows) in enumerate(stamp.links):
            n = end - first
            times = stamp.times[at : at + n]
            late = stamp.late[at : at + n]
            if copies_range(n, file_rows, stamp.fixed is None, self.tuning):
                reason = stamp.reason.slice(at, n) if stamp.reason is not None else None
                self._copy_range(
                    f"part-{tick:08d}-{k:04d}.parquet",
                    path,
                    first,
                    end,
                    times,
                    late,
                    reason,
                    self.offset + at,
                )
                at += n
                continue
            # Immutable input is linked into the log once (copied across filesystems).
            name = f"src-{os.path.basename(path)}"
            self.fs.link_or_copy(path, name)
            dest = self.fs.join(name)
            late_path = ""
            n_late = int(late.sum())
            if n_late:
                rows = np.flatnonzero(late)
                late_name = f"late-{tick:08d}-{k:04d}.parquet"
                late_path = self.fs.join(late_name)
                assert stamp.reason is not None
                sidecar = pa.table(
                    [
                        pa.array(rows + first, pa.int64()),
                        pa.array(times[rows], pa.int64()),
                        stamp.reason.slice(at, n).take(pa.array(rows)),
                    ],
                    schema=LATE_SIDECAR_SCHEMA,
                )
                pq.write_table(sidecar, self.fs.path(late_name), filesystem=self.fs.fs)
                self.fs.sync([late_name])  # the engine makes `path` durable; the sidecar is ours
            entry = LogFile(
                dest,
                int(times.min()),
                int(times.max()),
                n,
                late=n_late,
                time_column=stamp.time_column,
                fixed_time=stamp.fixed,
                first=first,
                end=end,
                file_rows=file_rows,
                offset=self.offset + at,
                late_path=late_path,
            )
            if n_late:
                entry = _split_bounds(entry, pa.array(times[~late]), pa.array(times[late]))
            self.entries.data.append(entry)
            at += n
        self.offset += stamp.num_rows

    def _copy_range(
        self,
        name: str,
        path: str,
        first: int,
        end: int,
        times: np.ndarray,
        late: np.ndarray,
        reason: pa.Array | None,
        offset: int,
    ) -> None:
        """Log rows ``[first, end)`` of the immutable file `path` as the copied entry
        `name`, stamped with `times`, `late` and `reason` (the link's part of the
        stamping); `offset` is the ``_offset`` of its first row."""
        n = end - first
        names = [f.name for f in self.schema if f.name not in _SYSTEM_NAMES]
        rows = read_row_range(pq.ParquetFile(path), first, end, names)
        system = {
            TIME: pa.array(times),
            DIFF: pa.array(np.ones(n, np.int64)),
            LATE: reason if reason is not None else pa.nulls(n, pa.string()),
            OFFSET: pa.array(np.arange(offset, offset + n, dtype=np.int64)),
        }
        for column, values in system.items():
            rows = rows.append_column(column, values)
        rows = rows.select(self.schema.names).cast(self.schema)
        self._write(rows, name, self.entries.data, int(late.sum()), offset)


def copies_range(
    rows: int, file_rows: int, event_time: bool = True, tuning: DataPathTuning = DEFAULT_TUNING
) -> bool:
    """Is a range of `rows` of a file of `file_rows` logged as a copy
    (`DataPathTuning.copy_part_factor`, `.copy_part_factor_ingestion`)?

    >>> copies_range(100, 100), copies_range(100, 400), copies_range(100, 400, False)
    (False, True, False)
    """
    if event_time:
        factor = tuning.copy_part_factor
    else:
        factor = tuning.copy_part_factor_ingestion
    return rows < file_rows and file_rows - rows > factor * rows


def _split_bounds(entry: LogFile, main: pa.Array, late: pa.Array) -> LogFile:
    """`entry` with the bounds of its main and late rows apart (`LogFile.bounds`): its
    late rows are all at one time, the binding time of the tick that logged them.

    >>> e = _split_bounds(LogFile("/l/p", 5, 900, 3, late=1), pa.array([5, 7]), pa.array([900]))
    >>> e.late_time, e.main_min, e.main_max
    (900, 5, 7)
    """
    late_time = pc.min(late).as_py()
    assert late_time == pc.max(late).as_py(), "late rows of one entry share their time"
    if len(main) == 0:
        return dataclasses.replace(entry, late_time=late_time)
    lo, hi = pc.min(main).as_py(), pc.max(main).as_py()
    return dataclasses.replace(entry, late_time=late_time, main_min=lo, main_max=hi)


def _inside(entry: LogFile, lo: int, hi: int | None, output: str = "") -> bool:
    """Do all of the entry's times (of `output`) lie in ``[lo, hi)``?"""
    bounds = entry.bounds(output)
    if bounds is None:
        return True
    return bounds[0] >= lo and (hi is None or bounds[1] < hi)


def _rows_outside(entries: list[LogFile], lo: int, hi: int | None, output: str = "") -> float:
    """An estimate of the rows of `entries` with times outside ``[lo, hi)``, taking each
    entry's times (of `output`) as spread evenly over its `LogFile.bounds`.

    >>> _rows_outside([LogFile("/l/a", 0, 99, 100), LogFile("/l/b", 100, 199, 100)], 50, 150)
    100.0
    """
    out = 0.0
    for e in entries:
        bounds = e.bounds(output)
        if bounds is None:
            continue
        span = bounds[1] - bounds[0] + 1
        a = max(lo, bounds[0])
        b = bounds[1] + 1 if hi is None else min(hi, bounds[1] + 1)
        out += e.rows * (1 - max(0, b - a) / span)
    return out


def _range_condition(column: str, lo: int, hi: int | None, literal: bool) -> str:
    """SQL text of ``lo <= column < hi`` for the BIGINT expression `column` (an event
    time, a row index), with literal or run-time bounds (see `DataPathTuning.pushdown_rows`).

    >>> _range_condition("_time", 5, 9, literal=True)
    '_time >= 5 AND _time < 9'
    """
    from ..spark.plans import runtime_long

    value = str if literal else runtime_long
    return f"{column} >= {value(lo)}" + ("" if hi is None else f" AND {column} < {value(hi)}")


class IngestLogReader:
    """Reads a source's log back as Spark DataFrames, per output and time range.

    Spark column expressions and schemas are built once per reader (each costs a JVM
    round trip).

    >>> r = IngestLogReader(pa.schema([("x", pa.int64())]), LogEntries())
    >>> r.max_time("main", 0, 10), r.files_for("errors", 0, None)
    (None, [])
    """

    def __init__(
        self, source_schema: pa.Schema, entries: LogEntries, pushdown_rows: int | None = None
    ) -> None:
        #: `DataPathTuning.pushdown_rows`
        self.pushdown_rows = (
            DEFAULT_TUNING.pushdown_rows if pushdown_rows is None else pushdown_rows
        )
        self.source_schema = source_schema
        self.entries = entries
        self._columns: dict[Any, Any] = {}  # built once: columns, projections, scans

    def spark_schema(self, output: str) -> Any:
        """The Spark schema of the files holding `output` (copied entries)."""
        from pyspark.sql.pandas.types import from_arrow_schema

        kind = output if output in ("errors", "health") else "data"
        return from_arrow_schema(log_schema(kind, self.source_schema))

    def entries_for(
        self, output: str, lo: int, hi: int | None, skip: Container[tuple[str, int]] = ()
    ) -> list[LogFile]:
        """The entries that may hold updates of `output` at times in ``[lo, hi)``, but
        those whose `LogFile.key` is in `skip`."""
        out = []
        for f in self.entries.of(output):
            bounds = f.bounds(output)
            if bounds is not None and bounds[1] >= lo and (hi is None or bounds[0] < hi):
                out.append(f)
        if skip:
            out = [f for f in out if f.key not in skip]
        return out

    def max_time(self, output: str, lo: int, hi: int | None) -> int | None:
        """An upper bound (inclusive) of the times `frame` returns for ``[lo, hi)``, from
        the log's metadata (no Spark job); None when the range has no entry."""
        entries = self.entries_for(output, lo, hi)
        if not entries:
            return None
        top = max(b[1] for f in entries if (b := f.bounds(output)) is not None)
        return top if hi is None else min(top, hi - 1)

    def files_for(self, output: str, lo: int, hi: int | None) -> list[str]:
        """The log files (and late sidecars) holding updates of `output` in ``[lo, hi)``."""
        paths: list[str] = []
        for f in self.entries_for(output, lo, hi):
            for p in f.paths():
                if p not in paths:
                    paths.append(p)
        return paths

    def frame(
        self,
        spark: Any,
        output: str,
        lo: int,
        hi: int | None,
        data: list[str],
        skip: Container[tuple[str, int]] = (),
    ) -> Any:
        """The logged updates of `output` ("main", "late", "errors", "health") at times in
        ``[lo, hi)`` as a Spark DataFrame (None when no log file overlaps the range);
        ``main`` keeps the columns `data`. Entries whose `LogFile.key` is in `skip` are
        left out (`sealtime.engine.ahead` has read them already)."""
        from pyspark.sql import functions as F

        from ..spark.plans import Projection

        entries = self.entries_for(output, lo, hi, skip)
        if not entries:
            return None
        cols = [c for c in self.source_schema.names if c not in (TIME, DIFF)]
        parts: list[tuple[Any, bool]] = []  # (frame, holds only times in [lo, hi))
        copied_entries = [f for f in entries if not f.linked]
        copied = [f.path for f in copied_entries]
        if copied:
            # An explicit schema spares Spark a job to infer it from the files' footers.
            df = self._scan(output).read(spark, copied)
            key = ("copied", output, *data)  # (a tuple: names may hold commas)
            if key not in self._columns:
                late = F.col(LATE)
                if output == "main":
                    plan = (late.isNull(), Projection([*data, TIME, DIFF]))
                elif output == "late":
                    reason = late.alias("reason")
                    plan = (late.isNotNull(), Projection([*cols, reason, TIME, DIFF]))
                elif output == "health":
                    plan = (None, Projection(["source", "status", TIME, DIFF]))
                else:
                    plan = (None, Projection(["raw", "reason", TIME, DIFF]))
                self._columns[key] = plan
            kept, projection = self._columns[key]
            df = projection.apply(df if kept is None else df.filter(kept))
            parts.append((df, all(_inside(e, lo, hi, output) for e in copied_entries)))
        linked = [f for f in entries if f.linked]
        if linked:
            parts.extend(self._linked_frames(spark, output, linked, data, cols, lo, hi))
        # A frame whose entries' times all lie in [lo, hi) needs no filter (one Spark
        # operator less to plan and to run; most entries are inside their tick's range).
        # (SQL text: one JVM call, where building the Column costs several)
        literal = _rows_outside(entries, lo, hi, output) > self.pushdown_rows
        cond = _range_condition(TIME, lo, hi, literal)
        out = None
        for df, exact in parts:
            if not exact:
                df = df.filter(cond)
            out = df if out is None else out.unionByName(df)
        return out

    def _scan(self, output: str) -> Any:
        """The Parquet reader of `output`'s copied files, built once (`ParquetScan`)."""
        from ..spark.plans import ParquetScan

        key = "scan:" + output
        if key not in self._columns:
            self._columns[key] = ParquetScan(self.spark_schema(output))
        return self._columns[key]

    def _data(self, data: list[str]) -> Any:
        """The projection of the data columns `data`, built once (`Projection`)."""
        from ..spark.plans import Projection

        key = ("data", *data)  # (a tuple: names may hold commas)
        if key not in self._columns:
            self._columns[key] = Projection([self._column(c) for c in data])
        return self._columns[key]

    def _column(self, name: str) -> Any:
        """A Spark column reference, built once (each costs a JVM round trip)."""
        from pyspark.sql import functions as F

        if name not in self._columns:
            self._columns[name] = F.col(name)
        return self._columns[name]

    def _linked_frames(
        self, spark, output: str, entries: list[LogFile], data, cols, lo: int, hi: int | None
    ) -> list:
        """Spark frames over linked entries: ``_time`` from the event-time column, ``_diff``
        1; rows listed in an entry's late sidecar go to ``late`` (at the binding time of
        their tick) instead of ``main``. Whole files without late rows are read in one
        scan, without the row index; the others with ``_metadata.row_index`` restricted
        to the entry's range."""
        from pyspark.sql import functions as F
        from pyspark.sql.pandas.types import from_arrow_schema

        from ..spark.plans import ParquetScan, Projection, runtime_long

        fields = [f for f in self.source_schema if f.name not in (TIME, DIFF)]
        if "linked" not in self._columns:
            self._columns["linked"] = ParquetScan(from_arrow_schema(pa.schema(fields)))
            self._columns["one"] = F.lit(1).cast("long").alias(DIFF)
        scan = self._columns["linked"]
        one = self._columns["one"]
        names = [f.name for f in fields]
        sidecar = "__row BIGINT, _time BIGINT, reason STRING"

        def event_time(e: LogFile):
            if e.fixed_time is not None:
                # (one parsed expression: a literal built from Columns costs ~25 JVM calls;
                # a value read at run time keeps the stage's generated code the same
                # every tick, so Spark compiles it once)
                return F.expr(f"{runtime_long(e.fixed_time)} AS {TIME}")
            key = "time:" + e.time_column
            if key not in self._columns:
                c = self._column(e.time_column)
                typ = self.source_schema.field(e.time_column).type
                t = F.unix_millis(c) if pa.types.is_timestamp(typ) else c.cast("long")
                self._columns[key] = t.alias(TIME)
            return self._columns[key]

        def in_range(group: list[LogFile], df) -> tuple[Any, bool]:
            # The range on the stored column itself. For ms/us timestamps and integers it
            # is exact (the stamped time is the column's milliseconds, floored), so no
            # filter on ``_time`` follows. With literal bounds Spark pushes it down to
            # the Parquet reader, which skips the row groups whose times all lie outside
            # it; that pays only when many rows lie outside (`pushdown_rows`).
            e = group[0]
            if e.fixed_time is not None:
                return df, False
            c = "`" + e.time_column.replace("`", "``") + "`"
            typ = self.source_schema.field(e.time_column).type
            if _rows_outside(group, lo, hi, "main") <= self.pushdown_rows:
                if pa.types.is_timestamp(typ):
                    stamped = f"unix_millis({c})"
                elif pa.types.is_integer(typ):
                    stamped = f"CAST({c} AS BIGINT)"
                else:
                    return df, False
                return df.filter(_range_condition(stamped, lo, hi, literal=False)), True
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
        if output == "main":
            whole = [e for e in entries if e.first == 0 and e.end == e.file_rows and not e.late]
            # One scan per time stamping: a source's event-time entries share their time
            # column; ingestion-time entries share the binding time of their tick.
            by_stamp: dict[int | None, list[LogFile]] = {}
            for e in whole:
                by_stamp.setdefault(e.fixed_time, []).append(e)
            for group in by_stamp.values():
                df = scan.read(spark, [e.path for e in group])
                exact = all(_inside(e, lo, hi, "main") for e in group)
                if not exact:
                    df, exact = in_range(group, df)
                if group[0].fixed_time is None:
                    key = ("project", group[0].time_column, *data)
                    if key not in self._columns:
                        cols_ = [self._column(c) for c in data]
                        self._columns[key] = Projection([*cols_, event_time(group[0]), one])
                    parts.append((self._columns[key].apply(df), exact))
                else:
                    # The data columns are fixed; the binding's time is this tick's.
                    stamped = self._data(data).apply(df, event_time(group[0]), one)
                    parts.append((stamped, exact))
            rest = [e for e in entries if e not in whole]
        if rest and "rows" not in self._columns:
            row = F.col("_metadata.row_index").alias("__row")
            self._columns["rows"] = Projection([*names, row])
            self._columns["sidecar"] = ParquetScan(sidecar)
            self._columns["late data"] = Projection([*cols, "reason", TIME])
        for e in rest:
            df = self._columns["rows"].apply(scan.read(spark, [e.path]))
            if not (e.first == 0 and e.end == e.file_rows):
                # (run-time bounds: the reader skips no row groups by row index anyway,
                # and literal ones would be new generated code every tick)
                df = df.filter(_range_condition("__row", e.first, e.end, literal=False))
            late = self._columns["sidecar"].read(spark, [e.late_path]) if e.late else None
            if output == "main":
                if late is not None:
                    df = df.join(F.broadcast(late.select("__row")), "__row", "left_anti")
                stamped = self._data(data).apply(df, event_time(e), one)
                parts.append((stamped, _inside(e, lo, hi, "main")))
            else:
                assert late is not None  # (only entries with late rows hold "late" rows)
                df = df.join(F.broadcast(late), "__row", "inner")
                parts.append(
                    (self._columns["late data"].apply(df, one), _inside(e, lo, hi, "late"))
                )
        return parts
