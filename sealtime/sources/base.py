"""The Source API: how data enters a dataflow.

A source is a description (picklable, no open connections); `open()` gives a reader.
A reader hands the coordinator Arrow record batches tagged with source-native
positions: `read(max_rows)` returns the rows after the reader's current position and
the position after them (the source-native frontier, Materialize's "upper"). Rows never
go through Python one by one: readers produce `pyarrow.Table`s with vectorised code.

Time is not the reader's business: the coordinator's remap step mints a binding for each
tick and the reclock step gives each row its `_time` (ingestion time) or takes it from a
column (event time). A reader that knows its event-time frontier (a broker watermark, an
end of file) reports it in `ReadBatch.event_frontier`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

__all__ = [
    "ClockedReader",
    "LinkedBatch",
    "LinkedReader",
    "ReadBatch",
    "Source",
    "SourceReader",
]


@dataclass(frozen=True)
class ReadBatch:
    """Rows read by one `SourceReader.read` call.

    * `data`: the decoded rows (may have zero rows).
    * `position`: source-native position *after* these rows (e.g. next offset); JSON-able.
    * `exhausted`: the source will never produce more rows (its frontier becomes empty).
    * `event_frontier`: optional event-time lower bound (ms) for all rows still to come.
    * `errors`: rows that could not be decoded: columns `raw` (string) and `reason`.

    >>> import pyarrow as pa
    >>> b = ReadBatch(pa.table({"x": [1, 2]}), position=2, exhausted=False)
    >>> b.data.num_rows, b.position
    (2, 2)
    """

    data: pa.Table
    position: Any
    exhausted: bool = False
    event_frontier: int | None = None
    errors: pa.Table | None = field(default=None)


@dataclass(frozen=True)
class LinkedBatch(ReadBatch):
    """A `ReadBatch` from `LinkedReader.read_linked`: the rows are *ranges of immutable
    Parquet files* instead of a table.

    * `links`: ``(path, first, end, file_rows)`` per file, in read order — the rows
      ``[first, end)`` of the file at `path` (``file_rows`` rows in all).
    * `data`: only the columns asked for (e.g. the event-time column) of those rows, in
      the same order, conformed to the declared types.

    >>> import pyarrow as pa
    >>> b = LinkedBatch(pa.table({"t": [5, 6]}), position=2, links=(("/d/a.parquet", 0, 2, 9),))
    >>> sum(end - first for _, first, end, _ in b.links)
    2
    """

    links: tuple[tuple[str, int, int, int], ...] = ()


class SourceReader(ABC):
    """An open source. Not shared between threads.

    The engine calls only the methods declared here (and those of `LinkedReader` /
    `ClockedReader` for readers that are instances of them): nothing is discovered by
    attribute lookup, so a reader that misspells an override fails loudly in review,
    not silently at run time.

    >>> class Once(SourceReader):
    ...     def read(self, max_rows=None):
    ...         return ReadBatch(pa.table({"x": [1]}), position=1, exhausted=True)
    >>> r = Once()
    >>> r.health(), r.acknowledge(1), r.read().exhausted
    ('running', None, True)
    """

    @abstractmethod
    def read(self, max_rows: int | None = None) -> ReadBatch:
        """Return the next rows (at most `max_rows` when given) and the position after them.

        Must not block for long: a reader with nothing new returns an empty table.
        """

    def health(self) -> str:
        """The reader's status: ``"running"`` (the default), ``"stalled"`` or
        ``"failed: <reason>"``. The engine logs each change to the source's ``health``
        output."""
        return "running"

    def acknowledge(self, position: Any) -> None:  # noqa: B027 - optional hook
        """Upstream may forget everything up to `position` (the resumption frontier:
        every output that must not lose data holds it durably). Brokers commit it; the
        default does nothing. Called with monotone positions."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and files."""


class LinkedReader(SourceReader):
    """A reader of immutable Parquet files that can hand the ingest log *file ranges*
    instead of copied rows (`LinkedBatch`), so logging a large file costs no copy.

    >>> issubclass(LinkedReader, SourceReader)
    True
    """

    @abstractmethod
    def read_linked(self, max_rows: int | None, columns: list[str]) -> ReadBatch:
        """Like `read`, but return a `LinkedBatch` (file ranges plus only `columns` of the
        rows) where the files allow it, else a plain `ReadBatch`."""


class ClockedReader(SourceReader):
    """A reader whose rows are a function of the logical clock (timers): the engine
    gives it each tick's binding time instead of calling `read`, so a replay that
    reuses the recorded bindings produces exactly the same rows.

    >>> issubclass(ClockedReader, SourceReader)
    True
    """

    def read(self, max_rows: int | None = None) -> ReadBatch:
        raise RuntimeError(
            f"{type(self).__name__} fires on the logical clock: it is read with the tick's "
            "binding time (read_at); add its source to a Dataflow with flow.source(...)"
        )

    @abstractmethod
    def read_at(self, into_time: int, max_rows: int | None) -> ReadBatch:
        """The rows due at logical times up to `into_time` (at most `max_rows`)."""


class Source(ABC):
    """A description of where rows come from; `open(position)` starts reading.

    `schema` is the Arrow schema of `ReadBatch.data`. `position=None` means the start.
    """

    schema: pa.Schema

    @abstractmethod
    def open(self, position: Any = None) -> SourceReader:
        """Open a reader that resumes right after `position` (None = from the start)."""

    def resume(self, position: Any, acknowledged: Any = None) -> SourceReader:
        """Open a reader after a restart: read on right after `position` (the last
        position the dataflow logged durably) while upstream counts only `acknowledged`
        (the resumption frontier, at or before `position`) as acknowledged.

        Sources that acknowledge upstream (brokers) override this so that reopening never
        moves the upstream acknowledgement past `acknowledged`; the default just opens.
        """
        return self.open(position)

    @property
    def finite(self) -> bool:
        """True when the source ends by itself (run() without ticks can wait for it)."""
        return True

    #: ``"_time"`` when the rows carry their own logical times and multiplicities
    #: (``_time``/``_diff`` columns: `Rows`, `Timer`, `Subscription`); None when the
    #: dataflow stamps them (ingestion time, or event time from a column by ``time=``).
    time_column: str | None = None

    #: The outputs of a source with several (name -> schema), e.g. `Nexmark`'s
    #: ``person``/``auction``/``bid``; None for a source with one output.
    subsources: dict[str, pa.Schema] | None = None

    @property
    def insert_only(self) -> bool:
        """True when every update this source produces is an insertion (``_diff > 0``).
        Operators downstream may then skip the bookkeeping retractions need. Sources
        with explicit multiplicities override it."""
        return True
