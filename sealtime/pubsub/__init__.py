"""Publish/subscribe with epoch atomicity (Strymon's protocol over TCP + Arrow IPC).

* `Publisher`: serves one partition of a stream from a background asyncio thread; the
  (synchronous) engine calls `send(time, table)`, `advance_lower(frontier)` /
  `update_lower(changes)` and `close()`.
* `subscribe_stream(address)` / `subscribe_group([addresses])`: blocking iterators of
  `Progress`, `Epoch` (or `Data`) and `Closed` events. They need neither Spark nor Java.
* `subscribe(topic, catalog=None, mode="stream"|"view")`: `st.subscribe`, by name
  (through a catalog mapping/lookup) or by address(es).
* `subscribe_view(address, resume_from=None)`: view mode against a publisher with a
  `HistoryProvider` (`InMemoryHistory`): `Snapshot`, then updates per time, resumable.
* `parse_address` (from `sealtime.net`): ``"[HOST:]PORT"`` or ``(host, port)``, the
  address grammar of every setting that takes one.
* `sealtime.pubsub.protocol`: frames, messages, time encoding.
* `sealtime.pubsub.catalog`: the catalog of publications (metadata store, served as a
  view; `open_catalog`, `subscribe_catalog`); `sealtime.pubsub.durable.ShardHistory`:
  durable view history in a persist shard.

See docs/pubsub.md for the design.

>>> import pyarrow as pa
>>> from sealtime.pubsub import Publisher, subscribe_stream, Epoch
>>> with Publisher("prices").start() as pub, subscribe_stream(pub.address) as sub:
...     pub.send(10, pa.table({"price": [1.5]}))
...     _ = pub.advance_lower([11])
...     epochs = [e for e in (sub.next_event(timeout=10) for _ in range(3)) if isinstance(e, Epoch)]
>>> [(e.time, e.table.num_rows) for e in epochs]
[(10, 1)]
"""

from sealtime.net import parse_address
from sealtime.pubsub.catalog import CatalogEntry, open_catalog, subscribe_catalog
from sealtime.pubsub.frontier import UpperFrontier, covered_by, merge_lowers, merge_uppers
from sealtime.pubsub.history import HistoryProvider, InMemoryHistory
from sealtime.pubsub.protocol import PROTOCOL_VERSION, ProtocolError
from sealtime.pubsub.publisher import Disconnection, Publisher
from sealtime.pubsub.subscriber import (
    Closed,
    Data,
    Epoch,
    Event,
    Progress,
    Snapshot,
    SubscribeError,
    Subscription,
    subscribe,
    subscribe_group,
    subscribe_stream,
    subscribe_view,
)

__all__ = [
    "PROTOCOL_VERSION",
    "CatalogEntry",
    "Closed",
    "Data",
    "Disconnection",
    "Epoch",
    "Event",
    "HistoryProvider",
    "InMemoryHistory",
    "Progress",
    "ProtocolError",
    "Publisher",
    "Snapshot",
    "SubscribeError",
    "Subscription",
    "UpperFrontier",
    "covered_by",
    "merge_lowers",
    "merge_uppers",
    "open_catalog",
    "parse_address",
    "subscribe",
    "subscribe_catalog",
    "subscribe_group",
    "subscribe_stream",
    "subscribe_view",
]
