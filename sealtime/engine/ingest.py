"""Ingestion at the edge: a source's reader, timestamper and ingest log, coordinated.

`SourceRuntime` runs one source inside a dataflow. Each tick (`ingest`) it

1. reads a batch from the source's reader (file ranges for immutable Parquet input; a
   clocked reader is given the tick's binding time),
2. stamps it — `sealtime.engine.timestamper.Timestamper` decides times, lateness,
   refusals (null or far-future event times), idleness and the frontier, without I/O,
3. logs it — `sealtime.engine.ingest_log.IngestLogWriter` writes the data, late,
   errors and health entries, one Arrow schema per kind — *before* any row propagates,
4. returns its `BindingPart` of the tick's binding (`sealtime.engine.bindings`).

The engine then reads the log per sealed time range through `frame`
(`sealtime.engine.ingest_log.IngestLogReader`). A restart restores the runtime from
the last binding's part (`restored`); a replay feeds recorded parts (`apply_binding`).

Time assignment (details in `sealtime.engine.timestamper`):

* ingestion time: ``_time`` = the tick's binding time; the frontier becomes
  ``into_time + 1``.
* event time (``time="col"``, ``lateness=L``): ``_time`` = the column (ms); a record
  whose time is null or beyond ``into_time + max_future`` goes to ``errors`` (it moves
  nothing); record *i* of the others is late iff its time < ``max event time of the
  records before it - L``; late rows go to the ``late`` output with a reason.
* explicit time (``Rows``, ``Timer``): ``_time``/``_diff`` come from the source.
* idleness (``idle_timeout``): a quiet source's frontier follows the ticker's clock.
* side outputs (late, errors, health): stamped at the tick's binding time ``into_time``,
  so they are released with the binding whatever the event-time frontier.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..columns import DIFF, LATE, TIME
from ..errors import SchemaError
from ..plan import DataPathTuning
from ..sources.base import ClockedReader, LinkedBatch, LinkedReader, ReadBatch, Source
from ..sources.decode import SchemaMismatchError
from ..sources.files import read_row_range
from ..time.order import MIN_TIME
from .bindings import BindingPart, SourceState
from .ingest_log import (
    IngestLogReader,
    IngestLogWriter,
    LinkedStamp,
    LogEntries,
    LogFile,
    unreferenced_paths,
)
from .timestamper import Timestamper

__all__ = ["MIN_TIME", "LogFile", "SourceRuntime", "unreferenced_paths"]


def _linkable_time(t: pa.DataType) -> bool:
    """Event-time column types Spark turns into the same milliseconds as the stamping."""
    if pa.types.is_timestamp(t):
        return t.tz is not None and t.unit in ("ms", "us")
    return pa.types.is_integer(t)


class SourceRuntime:
    """A source's reader, timestamper and ingest log inside a running dataflow.

    `restored` is the part a restart resumes from (`restore_point`): the last
    binding's state with the log entries of all bindings; `acknowledged` the
    resumption position upstream counts as acknowledged; with `replay` nothing is read
    upstream (the engine feeds the recorded parts instead).

    >>> import tempfile
    >>> from sealtime.sources import Rows
    >>> rt = SourceRuntime("s", Rows({"x": "long"}, [(5, {"x": 1})]), tempfile.mkdtemp())
    >>> part = rt.ingest(tick=1, into_time=100)
    >>> part.rows, part.frontier, rt.files[0].min_time
    (1, None, 5)
    """

    def __init__(
        self,
        name: str,
        source: Source,
        log_dir: str,
        time_column: str | None = None,
        lateness: int | None = None,
        max_rows: int | None = None,
        idle_timeout: int | None = None,
        max_future: int | None = None,
        restored: BindingPart | None = None,
        acknowledged: Any = None,
        replay: bool = False,
        tuning: DataPathTuning | None = None,
    ) -> None:
        if time_column is not None and time_column not in source.schema.names:
            raise SchemaError(
                f"source {name!r}: time={time_column!r} is not a column; "
                f"columns are {source.schema.names}"
            )
        # Parameters stored as attributes: alike only in form to other constructors.
        self.name = name
        self.source = source
        self.log_dir = log_dir
        self.max_rows = max_rows
        #: how far (ms) an event time may lie ahead of the binding time (None: no bound)
        self.max_future = max_future
        #: replay: read nothing upstream; the engine feeds the original bindings instead
        self.replay = replay
        self.explicit = source.time_column == TIME
        self.stamper = Timestamper(
            name,
            time_column=time_column,
            explicit=self.explicit,
            lateness=lateness,
            idle_timeout=idle_timeout,
            max_future=max_future,
        )
        self.entries = LogEntries()
        tuning = tuning or DataPathTuning()
        self.writer = IngestLogWriter(log_dir, source.schema, self.entries, tuning=tuning)
        self.log = IngestLogReader(source.schema, self.entries, tuning.pushdown_rows)
        self.position: Any = None
        self.rows_in = 0
        self.late_count = 0
        self.error_count = 0
        #: the status last written to the health log
        self.health: str | None = None
        #: largest `_time` in the log so far (for mapping a time back to a position)
        self.max_logged = MIN_TIME
        self._mark = self.entries.mark()
        if restored is not None:
            self._take_state(restored.state)
            self.entries.data[:] = restored.files
            self.entries.errors[:] = restored.error_files
            self.entries.health[:] = restored.health_files
        self.reader = None if replay else source.resume(self.position, acknowledged)

    # ------------------------------------------------------------------ views
    # Read-only views of the stamper's and writer's state: alike in form on purpose.
    @property
    def time_column(self) -> str | None:
        """The event-time column (None: ingestion or explicit time)."""
        return self.stamper.time_column

    @property
    def event_time(self) -> bool:
        """Are times taken from the rows?"""
        return self.stamper.event_time

    @property
    def frontier(self) -> int | None:
        """The source's frontier (None: finished)."""
        return self.stamper.frontier

    @property
    def exhausted(self) -> bool:
        """Has the source ended?"""
        return self.stamper.exhausted

    @property
    def offset(self) -> int:
        """Data rows logged so far (the next ``_offset``)."""
        return self.writer.offset

    @property
    def files(self) -> list[LogFile]:
        """The data entries of the log (edited in place by truncation)."""
        return self.entries.data

    @property
    def error_files(self) -> list[LogFile]:
        """The errors entries of the log."""
        return self.entries.errors

    @property
    def health_files(self) -> list[LogFile]:
        """The health entries of the log."""
        return self.entries.health

    # ------------------------------------------------------------------ one tick
    def ingest(self, tick: int, into_time: int) -> BindingPart:
        """Read, stamp, log. Returns this source's part of the tick's binding."""
        # Files the log gains from here on belong to this tick's binding.
        self._mark = self.entries.mark()
        if self.exhausted:
            return self._part(into_time)
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
        stamper = self.stamper
        # Side outputs (late, errors, health) are stamped at the binding time.
        side = stamper.side_time(into_time)
        stamper.note_read(
            batch.data.num_rows > 0 or (batch.errors is not None and batch.errors.num_rows > 0),
            into_time,
        )
        if self.event_time:
            batch = self._route_refused(batch, into_time)
        n = batch.data.num_rows
        self.rows_in += n
        rows = self._stamp(batch, into_time)
        if n:
            self.writer.write_data(tick, rows)
        if batch.errors is not None and batch.errors.num_rows:
            self.error_count += batch.errors.num_rows
            self.writer.write_errors(batch.errors, tick, side)
        self._check_health(tick, side)
        stamper.advance(into_time, exhausted=batch.exhausted, event_frontier=batch.event_frontier)
        return self._part(into_time)

    def _stamp(self, batch: ReadBatch, into_time: int) -> pa.Table | LinkedStamp:
        """The batch's rows with their times: a table with ``_time``, ``_diff`` and
        ``_late`` added, or the linked file ranges with the per-row stamping."""
        data = batch.data
        n = data.num_rows
        links = tuple(batch.links) if isinstance(batch, LinkedBatch) else ()
        if not self.event_time:
            if links:
                times = np.full(n, into_time, np.int64)
                return LinkedStamp(links, times, np.zeros(n, bool), None, fixed=into_time)
            table = data.append_column(TIME, pa.array(np.full(n, into_time, np.int64)))
            table = table.append_column(DIFF, pa.array(np.ones(n, np.int64)))
            return table.append_column(LATE, pa.nulls(n, pa.string()))
        admission = self.stamper.admit(self.stamper.event_times(data), into_time)
        self.late_count += admission.late_count
        if links:
            return LinkedStamp(
                links,
                admission.times,
                admission.late,
                admission.reason,
                time_column=self.time_column or "",
            )
        table = data
        if not self.explicit:
            table = table.append_column(TIME, pa.array(admission.times))
            table = table.append_column(DIFF, pa.array(np.ones(n, np.int64)))
        elif admission.reason is not None:
            # A late record is stamped at the binding time, like the other side outputs.
            i = table.schema.get_field_index(TIME)
            table = table.set_column(i, TIME, pa.array(admission.times))
        reason = admission.reason if admission.reason is not None else pa.nulls(n, pa.string())
        return table.append_column(LATE, reason)

    def _route_refused(self, batch: ReadBatch, into_time: int) -> ReadBatch:
        """Rows the stamper refuses (a null event time, or one beyond ``into_time +
        max_future``) go to `errors` (raw row as JSON + reason); the rest go on. A linked
        batch with such rows is read whole and logged as a copy, so the log never links
        a file range holding a row that is not in the output."""
        if not self.stamper.refuses_any(batch.data, into_time):
            return batch
        data = batch.data
        if isinstance(batch, LinkedBatch) and batch.links:
            names = self.source.schema.names
            data = pa.concat_tables(
                [
                    read_row_range(pq.ParquetFile(path), first, end, names)
                    for path, first, end, _ in batch.links
                ]
            ).cast(self.source.schema)
        data, errors = self.stamper.refuse(data, into_time)
        assert errors is not None
        if batch.errors is not None and batch.errors.num_rows:
            old = batch.errors.select(["raw", "reason"]).cast(errors.schema)
            errors = pa.concat_tables([old, errors])
        return ReadBatch(
            data=data,
            position=batch.position,
            exhausted=batch.exhausted,
            event_frontier=batch.event_frontier,
            errors=errors,
        )

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

    def _check_health(self, tick: int, at: int) -> None:
        """Log a change of the reader's status: retract the old row, add the new one."""
        assert self.reader is not None
        status = self.reader.health()
        if status == self.health:
            return
        changes = [(status, 1)] if self.health is None else [(self.health, -1), (status, 1)]
        self.writer.write_health(self.name, changes, tick, at)
        self.health = status

    # ------------------------------------------------------------------ durable state
    def _part(self, into_time: int) -> BindingPart:
        files, errors, health = self.entries.since(self._mark)
        for f in files:
            self.max_logged = max(self.max_logged, f.max_time)
        return BindingPart(
            position=self.position,
            frontier=self.frontier,
            into_time=into_time,
            state=self.state(),
            files=tuple(files),
            error_files=tuple(errors),
            health_files=tuple(health),
        )

    def state(self) -> SourceState:
        """The scalar state a restart needs; log entries travel separately."""
        s = self.stamper
        return SourceState(
            position=self.position,
            frontier=s.frontier,
            exhausted=s.exhausted,
            max_seen=s.max_seen,
            reported=s.reported,
            offset=self.writer.offset,
            late_count=self.late_count,
            error_count=self.error_count,
            rows_in=self.rows_in,
            max_logged=self.max_logged,
            health=self.health,
            last_active=s.last_active,
            idle_floor=s.idle_floor,
            idle_at=s.idle_at,
        )

    def _take_state(self, state: SourceState) -> None:
        s = self.stamper
        self.position = state.position
        s.frontier, s.exhausted = state.frontier, state.exhausted
        s.max_seen, s.reported = state.max_seen, state.reported
        s.last_active, s.idle_floor, s.idle_at = state.last_active, state.idle_floor, state.idle_at
        self.writer.offset = state.offset
        self.late_count, self.error_count = state.late_count, state.error_count
        self.rows_in, self.max_logged, self.health = state.rows_in, state.max_logged, state.health

    def apply_binding(self, part: BindingPart) -> None:
        """Replay: take one original binding instead of reading the source."""
        self._take_state(part.state)
        self._mark = self.entries.mark()
        self.entries.data.extend(part.files)
        self.entries.errors.extend(part.error_files)
        self.entries.health.extend(part.health_files)

    def acknowledge(self, position: Any) -> None:
        """Acknowledge upstream up to `position` (the resumption frontier), if the source
        takes acknowledgements."""
        if self.reader is not None and position is not None:
            self.reader.acknowledge(position)

    def close(self) -> None:
        """Close the reader."""
        if self.reader is not None:
            self.reader.close()

    # ------------------------------------------------------------------ reading
    def frame(
        self,
        spark: Any,
        which: str,
        lo: int,
        hi: int | None,
        data: list[str],
        skip: Container[tuple[str, int]] = (),
    ) -> Any:
        """The logged updates of output `which` ("main", "late", "errors", "health") at
        times in ``[lo, hi)`` as a Spark DataFrame (None when no log file overlaps),
        without the entries whose key is in `skip` (`IngestLogReader.frame`)."""
        return self.log.frame(spark, which, lo, hi, data, skip)

    def max_time(self, which: str, lo: int, hi: int | None) -> int | None:
        """An upper bound (inclusive) of the times `frame` returns for ``[lo, hi)``."""
        return self.log.max_time(which, lo, hi)

    def files_for(self, which: str, lo: int, hi: int | None) -> list[str]:
        """The log files (and late sidecars) holding updates of `which` in ``[lo, hi)``."""
        return self.log.files_for(which, lo, hi)
