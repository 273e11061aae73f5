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

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..errors import SealtimeError, StateError

__all__ = [
    "BrokerFailed",
    "BrokerHealth",
    "BrokerReader",
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
        raise StateError(
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


class BrokerFailed(SealtimeError, RuntimeError):
    """A permanent problem of a broker source (a missing stream, a key of another type,
    an unusable configuration, a stream subscription cut): its reader's health becomes
    ``failed: <message>``, and its reads raise it.

    >>> def attempt():
    ...     raise BrokerFailed("stream 'S' not found")
    >>> h = BrokerHealth("B", retry_interval=1.0)
    >>> h.setup(attempt, force=True), h.health()
    (False, "failed: stream 'S' not found")
    """


class BrokerHealth:
    """The connection state of a broker reader — status, retries with backoff, health
    — shared by every broker source (`NatsJetStream`, `RedisStream`).

    * ``"stalled"`` until the first `setup` succeeds, and after a connection error
      (`stall`): reads return empty batches at the same position while `setup` is
      retried — at most once per delay, which starts at `retry_interval` seconds and
      doubles after each failed attempt up to `max_retry_interval` (a success resets it);
    * ``"running"`` once set up (`running`);
    * ``"failed: <reason>"`` after a permanent problem (`BrokerFailed`, `fail`): final;
      `check` (and so `connect`) raises ``BrokerFailed("<name>: <reason>")`` (a ``RuntimeError``).

    `clock` (seconds, monotonic) is injectable for tests.

    >>> now = [0.0]
    >>> h = BrokerHealth("Broker('x')", retry_interval=1.0, max_retry_interval=4.0,
    ...                  clock=lambda: now[0])
    >>> def down():
    ...     raise ConnectionError("refused")
    >>> h.setup(down, force=True), h.health(), h.reason
    (False, 'stalled', 'ConnectionError: refused')
    >>> now[0] = 1.5; h.setup(down)  # due after 1 s: tried, fails; next delay 2 s
    False
    >>> now[0] = 3.0; h.setup(lambda: None)  # not due yet (1.5 + 2): not tried
    False
    >>> now[0] = 3.5; h.setup(lambda: None), h.health()
    (True, 'running')
    >>> h.fail("stream 'S' not found"); h.health()
    "failed: stream 'S' not found"
    >>> h.check()
    Traceback (most recent call last):
    ...
    sealtime.sources.base.BrokerFailed: Broker('x'): stream 'S' not found
    """

    def __init__(
        self,
        name: str,
        retry_interval: float,
        max_retry_interval: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self.retry_interval = float(retry_interval)
        self.max_retry_interval = float(
            retry_interval
            if max_retry_interval is None
            else max(max_retry_interval, retry_interval)
        )
        self.clock = clock
        #: ``"running"``, ``"stalled"`` or ``"failed"``; `reason` says why (not running)
        self.status = "stalled"
        self.reason = ""
        #: is the connection set up (reads may go to the broker)?
        self.ready = False
        self._failures = 0
        self._last_attempt = float("-inf")

    def health(self) -> str:
        """``"running"``, ``"stalled"`` or ``"failed: <reason>"`` (`SourceReader.health`)."""
        return f"failed: {self.reason}" if self.failed else self.status

    @property
    def failed(self) -> bool:
        """Has a permanent problem been found?"""
        return self.status == "failed"

    @property
    def delay(self) -> float:
        """Seconds between setup attempts now (the backoff)."""
        if self._failures == 0:
            return self.retry_interval
        return min(self.retry_interval * 2 ** (self._failures - 1), self.max_retry_interval)

    def check(self) -> None:
        """Raise `BrokerFailed` naming the source and the reason once failed."""
        if self.failed:
            raise BrokerFailed(f"{self.name}: {self.reason}")

    def running(self) -> None:
        """The broker answered: running again (a failure stays)."""
        if not self.failed:
            self.status = "running"

    def stall(self, why: BaseException | str, *, reconnect: bool = False) -> None:
        """A transient problem (`why`): stalled (a failure stays). With `reconnect` the
        connection must be set up again (`ready` becomes False)."""
        if reconnect:
            self.ready = False
        if not self.failed:
            self.status = "stalled"
            self.reason = why if isinstance(why, str) else f"{type(why).__name__}: {why}"

    def retry_now(self) -> None:
        """Let the next `setup` run at once (e.g. a deleted group to recreate)."""
        self._last_attempt = float("-inf")

    def fail(self, reason: str) -> None:
        """A permanent problem: failed with `reason`."""
        self.ready = False
        self.status = "failed"
        self.reason = reason

    def setup(
        self,
        attempt: Callable[[], None],
        *,
        force: bool = False,
        transient: tuple[type[BaseException], ...] = (Exception,),
    ) -> bool:
        """Run `attempt` (connect and prepare reading) when a retry is due (or `force`):
        success makes the reader ready and running; `BrokerFailed` fails it; an
        exception of a `transient` type stalls it (the next attempt after `delay`).
        Returns `ready`."""
        if self.failed:
            return False
        now = self.clock()
        if not force and now - self._last_attempt < self.delay:
            return self.ready
        self._last_attempt = now
        try:
            attempt()
        except BrokerFailed as exc:
            self.fail(str(exc))
        except transient as exc:
            self._failures += 1
            self.stall(exc, reconnect=True)
        else:
            self._failures = 0
            self.ready = True
            self.status = "running"
        return self.ready

    # Its parameters mirror setup()'s on purpose: it calls setup() with them.
    def connect(
        self,
        attempt: Callable[[], None],
        *,
        reset: bool = False,
        transient: tuple[type[BaseException], ...] = (Exception,),
    ) -> bool:
        """Before a read: raise when failed; set up when not ready (when due) or, with
        `reset`, at once; True when the reader may read from the broker.

        >>> h = BrokerHealth("B", retry_interval=1.0)
        >>> h.connect(lambda: None), h.health()
        (True, 'running')
        """
        self.check()
        if not self.ready or reset:
            self.setup(attempt, force=self.ready, transient=transient)
            self.check()
        return self.ready


class BrokerReader(SourceReader):
    """A reader of a message broker: its `health` is its `BrokerHealth` (`link`).

    >>> class Quiet(BrokerReader):
    ...     def __init__(self):
    ...         self.link = BrokerHealth("Quiet()", retry_interval=1.0)
    ...     def read(self, max_rows=None):
    ...         return ReadBatch(pa.table({"x": pa.array([], pa.int64())}), position=0)
    >>> Quiet().health()
    'stalled'
    """

    link: BrokerHealth

    def health(self) -> str:
        """``"running"``, ``"stalled"`` (unreachable, retrying) or ``"failed: …"``."""
        return self.link.health()
