"""`Subscription`: a source that reads another dataflow's publication, frontiers intact.

``st.sources.Subscription("totals", catalog="path/to/other/data_dir", mode="view")``
looks the name up in the publishing dataflow's catalog (data dir, ``"host:port"`` of its
catalog server, or a ``postgresql://`` metadata store) and subscribes to it:

* rows keep their **published times**: the source has explicit times (``time_column ==
  "_time"``, like `Rows`), and `_diff` comes from the publication, so retractions flow on;
* the source's frontier is the publisher's **lower frontier** (`ReadBatch.event_frontier`):
  a time is complete downstream exactly when it is complete upstream;
* the position is the subscriber's frontier. In view mode a restarted dataflow resumes
  from it with no gap and no duplicate (the publisher replays its durable history), and a
  cut connection is re-established the same way. A view subscription that starts from
  scratch receives a snapshot, stamped at the time just below its ``as_of`` frontier.
  Stream mode keeps no history: a cut connection fails the source with the reason.

The publication's schema is read from the catalog when the source is created.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ..columns import DIFF, TIME
from ..errors import ConfigError
from ..time.order import MIN_TIME
from .base import BrokerFailed, ReadBatch, Source, SourceReader

__all__ = ["Subscription"]


class Subscription(Source):
    """Another dataflow's publication `name` as a source (see the module docstring).

    * `catalog`: where `name` is looked up (`sealtime.pubsub.catalog.open_catalog`); a
      mapping ``{name: address(es)}`` works too if `schema` is given.
    * `mode`: ``"stream"`` (group subscription over all partitions) or ``"view"`` (one
      partition; resumable).
    * `finite`: True if the publication ends (its frontier becomes empty), so
      ``flow.run()`` may wait for it; default False (use ``run(ticks=...)``).

    >>> Subscription("t", {"t": "127.0.0.1:1"}, schema=pa.schema([("x", pa.int64())])).schema
    x: int64
    """

    time_column = TIME
    diff_column = DIFF

    def __init__(
        self,
        name: str,
        catalog: Any = None,
        *,
        mode: str = "stream",
        finite: bool = False,
        schema: pa.Schema | None = None,
        timeout: float = 10.0,
    ) -> None:
        if mode not in ("stream", "view"):
            raise ConfigError(f"Subscription(mode={mode!r}): use 'stream' or 'view'")
        self.name = name
        self.catalog = catalog
        self.mode = mode
        self.timeout = timeout
        self._finite = finite
        if schema is None:
            from ..pubsub.catalog import open_catalog

            cat = open_catalog(catalog)
            if not hasattr(cat, "entry"):
                raise ConfigError(
                    f"Subscription({name!r}): pass schema= when the catalog is a mapping"
                )
            entries = cat.entry(name)
            schema = entries[0].arrow_schema
            if schema is None:
                raise ConfigError(
                    f"Subscription({name!r}): the catalog has no schema for it; pass schema="
                )
            if mode == "view" and len(entries) > 1:
                raise ConfigError(
                    f"Subscription({name!r}, mode='view'): the publication has "
                    f"{len(entries)} partitions; view subscriptions are per partition — "
                    "publish the view with partitions=1 or subscribe in stream mode"
                )
        self.schema = pa.schema([f for f in schema if f.name not in (TIME, DIFF)])

    @property
    def finite(self) -> bool:
        return self._finite

    @property
    def insert_only(self) -> bool:
        # A view subscription carries the publisher's retractions.
        return False

    def open(self, position: Any = None) -> SourceReader:
        """Subscribe; `position` (a frontier: list of times) resumes a view subscription."""
        return _SubscriptionReader(self, position)


class _SubscriptionReader(SourceReader):
    def __init__(self, source: Subscription, position: Any) -> None:
        from ..time import Antichain

        self.source = source
        self.lower: Any = None if position is None else Antichain(int(t) for t in position)
        self.sub: Any = None
        self.finished = self.lower is not None and self.lower.is_empty()
        self.reconnects = 0
        if not self.finished:
            self._connect()

    def _connect(self) -> None:
        from ..pubsub.subscriber import Subscription as _Sub
        from ..pubsub.subscriber import resolve_addresses, subscribe_view

        src = self.source
        addresses = resolve_addresses(src.name, src.catalog)
        if src.mode == "view":
            resume = None if self.lower is None else list(self.lower.elements())
            self.sub = subscribe_view(addresses[0], resume, timeout=src.timeout)
        else:
            self.sub = _Sub(addresses, timeout=src.timeout)

    def _stamp(self, table: pa.Table, time: int) -> pa.Table:
        cols = [table.column(f.name).cast(f.type) for f in self.source.schema]
        n = table.num_rows
        diff = (
            table.column(DIFF).cast(pa.int64())
            if DIFF in table.column_names
            else pa.array(np.ones(n, np.int64))
        )
        return pa.Table.from_arrays(
            [*cols, pa.array(np.full(n, time, np.int64)), diff],
            names=[*self.source.schema.names, TIME, DIFF],
        )

    def read(self, max_rows: int | None = None) -> ReadBatch:
        from ..pubsub.subscriber import Closed, Epoch, Progress, Snapshot, SubscribeError

        tables: list[pa.Table] = []
        rows = 0
        if self.sub is None and not self.finished:
            try:  # reconnect (view mode), from the frontier reached
                self._connect()
                self.reconnects += 1
            except SubscribeError:
                pass
        while self.sub is not None and not self.finished:
            event = self.sub.next_event(timeout=0)
            if event is None:
                break
            if isinstance(event, Snapshot):
                as_of = event.as_of.elements()
                if event.table.num_rows:
                    t = as_of[0] - 1 if as_of else MIN_TIME
                    tables.append(self._stamp(event.table, t))
            elif isinstance(event, Epoch):
                tables.append(self._stamp(event.table, int(event.time)))
                rows += event.table.num_rows
            elif isinstance(event, Progress):
                self.lower = event.lower
                if event.lower.is_empty():
                    self.finished = True
                elif max_rows is not None and rows >= max_rows:
                    break  # stop only at a progress point: position matches the rows
            elif isinstance(event, Closed):
                self.sub = None
                if self.source.mode != "view":
                    raise BrokerFailed(
                        f"Subscription({self.source.name!r}): {event.reason} — stream mode "
                        "keeps no history, so it cannot resume without a gap; publish "
                        "with mode='view' for resumable subscriptions"
                    )
        data = (
            pa.concat_tables(tables)
            if tables
            else pa.schema(
                [*self.source.schema, (TIME, pa.int64()), (DIFF, pa.int64())]
            ).empty_table()
        )
        if len(tables) > 1:
            data = data.take(pa.array(np.argsort(data.column(TIME).to_numpy(), kind="stable")))
        lower = self.lower
        position = None if lower is None else [int(t) for t in lower.elements()]
        frontier = None if lower is None or lower.is_empty() else int(lower.elements()[0])
        return ReadBatch(data, position, exhausted=self.finished, event_frontier=frontier)

    def close(self) -> None:
        if self.sub is not None:
            self.sub.close()
            self.sub = None
