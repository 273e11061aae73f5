"""A view's history in the live service: a durable shard of its updates, and its
subscribers.

Every view of `sealtime serve` has a `ViewHistory` sink: each sealed range of the view's
updates is appended, exactly once, to the shard ``<service>.view.<name>`` (Materialize's
materialized views live in persist shards the same way), and handed to the view's live
subscribers (`Hub`). ``SELECT ... AS OF t`` reads the shard's snapshot at ``t``;
``SUBSCRIBE`` reads a snapshot, then the updates after it, then follows the hub, with no
gap and no duplicate: a subscriber registers with the hub *before* it reads the shard,
and keeps only hub updates at times the shard did not hold yet.

The sink takes Arrow: the view's range is collected once and written with pyarrow, with
no second Spark job.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ..columns import DIFF, TIME
from ..errors import StateError, WriterConflictError
from ..sinks.base import CommitContext, Sink
from ..sinks.persist import open_shard
from ..storage import Shard
from ..time.order import MIN_TIME
from .backend import Event, Progress, Update

__all__ = ["Hub", "ViewHistory", "ViewStream"]

#: events a subscriber's stream holds before it is cut ("fell behind")
STREAM_BUFFER_EVENTS = 4096


class ViewStream:
    """One subscriber's events (`sealtime.serve.backend.EventStream`): a bounded queue the
    hub fills and the wire layer drains. `close()` may come from any thread."""

    def __init__(self, hub: Hub, after: int, limit: int = STREAM_BUFFER_EVENTS) -> None:
        self.hub = hub
        #: updates at times below this were read from the shard: the hub's are skipped
        self.after = after
        self.limit = limit
        self._events: deque[Event] = deque()
        self._cond = threading.Condition()
        self._closed = False
        self._ended: str | None = None

    def offer(self, event: Event) -> None:
        """(the hub) Queue `event`; a subscriber too far behind is cut with a reason."""
        with self._cond:
            if self._closed:
                return
            if len(self._events) >= self.limit:
                time = event.time if isinstance(event, Progress) else None
                self._ended = f"the subscriber fell behind at time {time}"
                self._closed = True
            else:
                self._events.append(event)
            self._cond.notify_all()

    def prepend(self, events: list[Event]) -> None:
        """(the subscriber's setup) Put the snapshot's events before anything queued."""
        with self._cond:
            self._events.extendleft(reversed(events))
            self._cond.notify_all()

    def end(self, reason: str | None = None) -> None:
        """(the hub) No more events: the view was dropped or the service stops."""
        with self._cond:
            self._ended = reason
            self._closed = True
            self._cond.notify_all()

    def close(self) -> None:
        """(the consumer, any thread) Stop: the hub forgets this stream."""
        self.end()
        self.hub.forget(self)

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        with self._cond:
            while not self._events and not self._closed:
                self._cond.wait()
            if self._events:
                return self._events.popleft()
            if self._ended is not None:
                raise StateError(self._ended)
            raise StopIteration


class Hub:
    """The live subscribers of one view."""

    def __init__(self) -> None:
        self._streams: list[ViewStream] = []
        self._lock = threading.Lock()

    def register(self, after: int) -> ViewStream:
        """A new subscriber, for updates at times ``>= after``."""
        stream = ViewStream(self, after)
        with self._lock:
            self._streams.append(stream)
        return stream

    def register_at(self, upper: Callable[[], int | None]) -> tuple[ViewStream, int | None]:
        """A new subscriber for the updates at times from the history's upper on, and
        that upper, read while no publication runs: an update is then either in the
        history below the upper, or delivered to the new stream — never both, never
        neither (a commit appends to the history before it publishes)."""
        with self._lock:
            at = upper()
            stream = ViewStream(self, at if at is not None else MIN_TIME)
            self._streams.append(stream)
            return stream, at

    def forget(self, stream: ViewStream) -> None:
        with self._lock:
            if stream in self._streams:
                self._streams.remove(stream)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._streams)

    def publish(self, table: pa.Table | None, upper: int | None) -> None:
        """A sealed range's updates (times below `upper`) and the new frontier."""
        with self._lock:
            streams = list(self._streams)
            self._deliver(streams, table, upper)

    def _deliver(
        self, streams: list[ViewStream], table: pa.Table | None, upper: int | None
    ) -> None:
        for stream in streams:
            if table is not None and table.num_rows:
                rows = table.filter(pc.greater_equal(table[TIME], stream.after))
                if rows.num_rows:
                    stream.offer(Update(_in_order(rows)))
            if upper is not None and upper > stream.after:
                stream.offer(Progress(upper))
            elif upper is None:
                stream.end()
                if stream in self._streams:
                    self._streams.remove(stream)

    def end(self, reason: str) -> None:
        """End every subscription (the view was dropped)."""
        with self._lock:
            streams, self._streams = self._streams, []
        for stream in streams:
            stream.end(reason)


def _in_order(rows: pa.Table) -> pa.Table:
    """Updates by time, retractions first (the order subscribers receive)."""
    return rows.sort_by([(TIME, "ascending"), (DIFF, "ascending")])


@dataclass
class ViewHistory(Sink):
    """The durable history of one view (see the module docstring): an exactly-once,
    Arrow-taking sink whose commits also feed `hub`."""

    shard_name: str
    hub: Hub

    exactly_once = True
    takes_arrow = True
    batches_commits = True

    def __post_init__(self) -> None:
        self.shard: Shard | None = None
        #: the shard's upper as this writer last moved it (`...`: to be read)
        self._upper: Any = ...
        #: this tick's range, staged for `end_commits`: (rows, expected upper, new upper)
        self._staged: tuple[pa.Table | None, int, int | None] | None = None

    def _open(self) -> Shard:
        if self.shard is None:
            self.shard = open_shard(self.binding, self.shard_name)
        return self.shard

    def durable_upper(self) -> int | None:
        self._upper = self._open().upper
        return self._upper

    def commit(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> bool:
        from ..spark.frames import to_arrow

        table = None if delta is None else to_arrow(delta)
        self.commit_arrow(table, lo, hi, context)
        return delta is not None

    def commit_arrow(
        self, table: pa.Table | None, lo: int, hi: int | None, context: CommitContext
    ) -> None:
        """Stage the range; `end_commits` appends every view's staged range at once."""
        shard = self._open()
        if self._upper is ...:
            self._upper = shard.upper
        upper = self._upper
        if upper is None or (hi is not None and upper >= hi):
            return  # (committed before a restart)
        if table is not None and lo < upper:
            table = table.filter(pc.greater_equal(table[TIME], upper))
        self._staged = (table, upper, hi)

    @classmethod
    def end_commits(cls, sinks: list[Sink]) -> None:
        """Append the staged ranges of `sinks` to their shards in one transaction
        (`Shard.append_many`), then hand them to their subscribers."""
        staged = [s for s in sinks if isinstance(s, ViewHistory) and s._staged is not None]
        if not staged:
            return
        appends = []
        for s in staged:
            table, upper, hi = s._staged  # type: ignore[misc]
            assert s.shard is not None
            appends.append((s.shard, _batch(table, s.shard), upper, hi))
        results = Shard.append_many(appends)
        for s, result in zip(staged, results):
            table, upper, hi = s._staged  # type: ignore[misc]
            s._staged = None
            if not result.ok:
                s._upper = ...
                raise WriterConflictError(
                    f"view history {s.shard_name!r}: the shard's upper moved to "
                    f"{result.upper} while the service expected {upper}; is another "
                    "service writing this data dir?"
                )
            s._upper = hi
            s.hub.publish(table, hi)

    def drop(self) -> None:
        """Forget the history: its shard and files go (the view was dropped)."""
        self._open().delete()
        self.shard = None
        self._upper = ...


def _batch(table: pa.Table | None, shard: Shard) -> pa.Table:
    """`table` in the shard's schema (an empty one for a range without updates)."""
    schema = shard.full_schema
    if table is None:
        return schema.empty_table()
    return table.select(schema.names).cast(schema)
