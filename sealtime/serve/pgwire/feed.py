"""A subscription's way from the service's `EventStream` to a client: `Feed`.

A pump thread per subscription reads the events (blocking calls into the service),
turns each into Arrow rows of the subscription's columns (`subscription_table`) and
hands them to the server's event loop, where they wait in a bounded buffer until the
client takes them (COPY writes them as they come; a cursor's FETCH takes them). When
more than `limit` bytes wait, the subscriber has fallen behind: the feed closes the
events (the service frees what it held) and the next take raises ("fell behind at time
t"), as the pub-sub publisher does (docs/pubsub.md).

>>> import pyarrow as pa
>>> from sealtime.serve.backend import Column, PgType, Update, subscription_columns
>>> cols = subscription_columns([Column("k", PgType.TEXT)], progress=True)
>>> batch = pa.record_batch({"k": ["a"], "_time": [5], "_diff": [1]})
>>> subscription_table(cols, True, Update(batch)).to_pylist()
[{'mz_timestamp': 5, 'mz_progressed': False, 'mz_diff': 1, 'k': 'a'}]
>>> subscription_table(cols, True, Progress(6)).to_pylist()
[{'mz_timestamp': 6, 'mz_progressed': True, 'mz_diff': None, 'k': None}]
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from typing import Any

import numpy as np
import pyarrow as pa

from ...columns import DIFF, TIME
from ..backend import (
    MZ_DIFF,
    MZ_PROGRESSED,
    MZ_TIMESTAMP,
    Column,
    LimitExceededError,
    Progress,
    Subscription,
    Update,
)

__all__ = ["Feed", "subscription_table"]

log = logging.getLogger(__name__)


def subscription_table(columns: list[Column], progress: bool, event: Any) -> pa.Table | None:
    """An event as rows of the subscription's columns (None: nothing to send)."""
    view = columns[3 if progress else 2 :]
    if isinstance(event, Update):
        batch = event.batch
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        n = table.num_rows
        if n == 0:
            return None
        arrays = [table.column(TIME)]
        names = [MZ_TIMESTAMP]
        if progress:
            arrays.append(pa.chunked_array([np.zeros(n, dtype=bool)]))
            names.append(MZ_PROGRESSED)
        arrays.append(table.column(DIFF))
        names.append(MZ_DIFF)
        for col in view:
            arrays.append(table.column(col.name))
            names.append(col.name)
        return pa.Table.from_arrays(arrays, names=names)
    if isinstance(event, Progress) and progress:
        arrays = [pa.array([event.time], pa.int64()), pa.array([True]), pa.nulls(1, pa.int64())]
        arrays += [pa.nulls(1) for _ in view]
        return pa.Table.from_arrays(arrays, names=[c.name for c in columns])
    return None


class Feed:
    """A subscription's bounded buffer: a pump thread reads the events and hands their
    rows to the loop; the client's side (COPY or FETCH) takes them. Beyond
    `limit` bytes unsent, the subscription falls behind: its events are closed (the
    service is told) and the next take raises."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        sub: Subscription,
        limit: int,
        stats: dict[str, int],
    ) -> None:
        self.loop = loop
        self.sub = sub
        self.columns = sub.columns
        self.limit = limit
        self.stats = stats
        self.tables: deque[tuple[pa.Table, int]] = deque()
        self.bytes = 0
        self.done = False
        self.failure: BaseException | None = None
        self.last_time: int | None = None
        self.progressed: int | None = None  # the last frontier seen (pump thread only)
        self.changed = asyncio.Event()
        self.closed = False
        self.thread = threading.Thread(target=self._pump, name="pgwire-subscription", daemon=True)
        stats["subscriptions"] += 1
        self.thread.start()

    def _pump(self) -> None:
        try:
            for event in self.sub.events:
                if self.closed:
                    break
                if isinstance(event, Progress):
                    if self.progressed is not None and event.time <= self.progressed:
                        continue  # progress rows only when the frontier advances
                    self.progressed = event.time
                time = event.time if isinstance(event, Progress) else None
                table = subscription_table(self.columns, self.sub.progress, event)
                if time is None and table is not None:
                    time = int(table.column(0)[0].as_py())
                self.loop.call_soon_threadsafe(self._push, table, time)
        except Exception as e:  # the service failed the subscription: tell the client
            self.loop.call_soon_threadsafe(self._fail, e)
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is gone (server closed)
                self.loop.call_soon_threadsafe(self._end)

    def _push(self, table: pa.Table | None, time: int | None) -> None:
        if self.closed:
            return
        if time is not None:
            self.last_time = time
        if table is None:
            return
        self.tables.append((table, time if time is not None else 0))
        self.bytes += table.nbytes
        self.stats["buffered_bytes"] += table.nbytes
        if self.bytes > self.limit:
            oldest = self.tables[0][1]
            self._fail(
                LimitExceededError(
                    f"fell behind at time {oldest}: {self.bytes} bytes of updates were waiting "
                    f"for this client (subscription_buffer_bytes={self.limit}); read faster, "
                    "or subscribe again (AS OF a later time)"
                )
            )
        self.changed.set()

    def _fail(self, error: BaseException) -> None:
        if self.failure is None:
            self.failure = error
        self.close()

    def _end(self) -> None:
        self.done = True
        self.changed.set()

    def _drop(self) -> None:
        self.stats["buffered_bytes"] -= self.bytes
        self.bytes = 0
        self.tables.clear()

    def close(self) -> None:
        """Stop: the events are closed (the pump ends) and the buffer freed."""
        if not self.closed:
            self.closed = True
            self.stats["subscriptions"] -= 1
            try:
                self.sub.events.close()
            except Exception:  # the service's close failing must not break the client's
                log.exception("closing a subscription's events failed")
            self._drop()
            self.changed.set()

    @property
    def ended(self) -> bool:
        return (self.done or self.closed) and not self.tables

    def take(self, count: int | None) -> list[pa.Table]:
        """Up to `count` rows (None: all) that are there; raises the failure if it
        fell behind."""
        if self.failure is not None:
            raise self.failure
        out: list[pa.Table] = []
        want = count
        while self.tables and (want is None or want > 0):
            table, time = self.tables[0]
            if want is not None and table.num_rows > want:
                out.append(table.slice(0, want))
                rest = table.slice(want)
                self.tables[0] = (rest, time)
                self._account(table.nbytes - rest.nbytes)
                want = 0
            else:
                self.tables.popleft()
                out.append(table)
                self._account(table.nbytes)
                if want is not None:
                    want -= table.num_rows
        if not self.tables:
            self.changed.clear()
        return out

    def _account(self, nbytes: int) -> None:
        self.bytes -= nbytes
        self.stats["buffered_bytes"] -= nbytes

    async def wait(self, timeout: float | None) -> None:
        """Until rows are there, the subscription ended, or `timeout` passed."""
        if self.tables or self.ended or self.failure is not None:
            return
        self.changed.clear()
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self.changed.wait(), timeout)
