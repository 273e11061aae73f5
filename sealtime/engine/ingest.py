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
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..sources.base import ReadBatch, Source

__all__ = ["MIN_TIME", "LogFile", "SourceRuntime"]

MIN_TIME = -(2**62)  # below any real time; leaves room for `- lateness` without overflow


@dataclass
class LogFile:
    path: str
    min_time: int
    max_time: int
    rows: int


@dataclass
class SourceRuntime:
    """A source's reader, ingest log and frontier inside a running dataflow."""

    name: str
    source: Source
    log_dir: str
    time_column: str | None = None
    lateness: int | None = None
    max_rows: int | None = None
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

    def __post_init__(self) -> None:
        if os.path.isdir(self.log_dir) and os.listdir(self.log_dir):
            raise RuntimeError(
                f"source {self.name!r}: {self.log_dir} holds an ingest log from an earlier run; "
                "use a new data_dir (resuming from a log is not supported by this version)"
            )
        os.makedirs(self.log_dir, exist_ok=True)
        self.reader = self.source.open(self.position)
        self.explicit = getattr(self.source, "time_column", None) == "_time"
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
        if self.exhausted:
            return self._binding(into_time)
        batch = self.reader.read(self.max_rows)
        self.position = batch.position
        lower = self.frontier
        data = batch.data
        n = data.num_rows
        self.rows_in += n
        if self.event_time:
            table = self._stamp_event_time(data, batch)
        else:
            table = self._stamp_ingestion_time(data, into_time)
        if n:
            self._write(table, tick, self.files, "part")
        if batch.errors is not None and batch.errors.num_rows:
            err_time = (
                into_time if not self.event_time else (lower if lower is not None else MIN_TIME)
            )
            self._write_errors(batch.errors, tick, err_time)
        self._advance(batch, into_time)
        return self._binding(into_time)

    def _binding(self, into_time: int) -> dict[str, Any]:
        return {"position": self.position, "frontier": self.frontier, "into_time": into_time}

    def _stamp_ingestion_time(self, data: pa.Table, into_time: int) -> pa.Table:
        n = data.num_rows
        table = data.append_column("_time", pa.array(np.full(n, into_time, np.int64)))
        table = table.append_column("_diff", pa.array(np.ones(n, np.int64)))
        table = table.append_column("_late", pa.nulls(n, pa.string()))
        return self._with_offsets(table)

    def _stamp_event_time(self, data: pa.Table, batch: ReadBatch) -> pa.Table:
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
            if col.null_count:
                raise ValueError(
                    f"source {self.name!r}: time column {self.time_column!r} has nulls; "
                    "filter them at the source or use ingestion time"
                )
            times = col.to_numpy(zero_copy_only=False).astype(np.int64)
            table = data.append_column("_time", pa.array(times))
            table = table.append_column("_diff", pa.array(np.ones(n, np.int64)))
        # The admission bound for record i, from the log order alone. With `lateness`,
        # only bounded lateness counts (a source's watermark depends on how reads were
        # split, which would make the decision depend on tick sizes); without it, the
        # source's own frontier does (explicit times), or lateness 0.
        if self.lateness is not None or self.reported is None:
            carry = self.max_seen if self.max_seen is not None else MIN_TIME
            prev_max = np.maximum.accumulate(np.concatenate(([carry], times)))[:-1] if n else times
            bound = prev_max - (self.lateness or 0)
        else:
            bound = np.full(n, self.reported, np.int64)
        late = times < bound
        if n:
            top = int(times.max())
            self.max_seen = top if self.max_seen is None else max(self.max_seen, top)
        reason = pa.nulls(n, pa.string())
        if late.any():
            self.late_count += int(late.sum())
            b = pa.array(bound)
            text = pc.binary_join_element_wise(
                "event time ",
                pc.cast(pa.array(times), pa.string()),
                " is behind the sealed frontier ",
                pc.cast(b, pa.string()),
                "",
            )
            reason = pc.if_else(pa.array(late), text, reason)
            # A late record is stamped at the (unsealed) bound it missed, so it is released
            # to the `late` output like any other update.
            times = np.where(late, bound, times)
            table = table.set_column(
                table.schema.get_field_index("_time"), "_time", pa.array(times)
            )
        table = table.append_column("_late", reason)
        return self._with_offsets(table)

    def _with_offsets(self, table: pa.Table) -> pa.Table:
        n = table.num_rows
        table = table.append_column(
            "_offset", pa.array(np.arange(self.offset, self.offset + n, dtype=np.int64))
        )
        self.offset += n
        return table

    def _write(self, table: pa.Table, tick: int, files: list[LogFile], prefix: str) -> None:
        path = os.path.join(self.log_dir, f"{prefix}-{tick:08d}.parquet")
        pq.write_table(table, path)
        t = table.column("_time")
        files.append(LogFile(path, pc.min(t).as_py(), pc.max(t).as_py(), table.num_rows))

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

    # ------------------------------------------------------------------ reading
    def log_schema(self, which: str) -> pa.Schema:
        """Arrow schema of the log files (`which` = "errors" for the errors log)."""
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

        return from_arrow_schema(self.log_schema("errors" if which == "errors" else "main"))

    def files_for(self, which: str, lo: int, hi: int | None) -> list[str]:
        files = self.error_files if which == "errors" else self.files
        return [f.path for f in files if f.max_time >= lo and (hi is None or f.min_time < hi)]

    def frame(self, spark, which: str, lo: int, hi: int | None, data: list[str]):
        """The logged updates of output `which` ("main", "late", "errors") at times in
        ``[lo, hi)`` as a Spark DataFrame (None when no log file overlaps the range)."""
        from pyspark.sql import functions as F

        paths = self.files_for(which, lo, hi)
        if not paths:
            return None
        # An explicit schema spares Spark a job to infer it from the files' footers.
        df = spark.read.schema(self.spark_schema(which)).parquet(*paths)
        cond = F.col("_time") >= lo
        if hi is not None:
            cond = cond & (F.col("_time") < hi)
        df = df.filter(cond)
        if which == "main":
            return df.filter(F.col("_late").isNull()).select(*data, "_time", "_diff")
        if which == "late":
            cols = [c for c in self.source.schema.names if c not in ("_time", "_diff")]
            return df.filter(F.col("_late").isNotNull()).select(
                *cols, F.col("_late").alias("reason"), "_time", "_diff"
            )
        return df.select("raw", "reason", "_time", "_diff")
