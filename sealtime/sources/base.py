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

__all__ = ["ReadBatch", "Source", "SourceReader"]


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


class SourceReader(ABC):
    """An open source. Not shared between threads."""

    @abstractmethod
    def read(self, max_rows: int | None = None) -> ReadBatch:
        """Return the next rows (at most `max_rows` when given) and the position after them.

        Must not block for long: a reader with nothing new returns an empty table.
        """

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and files."""


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
