"""Publish/subscribe with epoch atomicity (Strymon's protocol over TCP + Arrow IPC).

* `Publisher`: serves one partition of a stream from a background asyncio thread; the
  (synchronous) engine calls `send(time, table)`, `advance_lower(frontier)` /
  `update_lower(changes)` and `close()`.
* `subscribe_stream(address)` / `subscribe_group([addresses])`: blocking iterators of
  `Progress`, `Epoch` (or `Data`) and `Closed` events. They need neither Spark nor Java.
* `sealtime.pubsub.protocol`: frames, messages, time encoding.

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

from sealtime.pubsub.frontier import UpperFrontier, covered_by, merge_lowers, merge_uppers
from sealtime.pubsub.protocol import PROTOCOL_VERSION, ProtocolError
from sealtime.pubsub.publisher import Disconnection, Publisher
from sealtime.pubsub.subscriber import (
    Closed,
    Data,
    Epoch,
    Event,
    Progress,
    SubscribeError,
    Subscription,
    subscribe_group,
    subscribe_stream,
)

__all__ = [
    "PROTOCOL_VERSION",
    "Closed",
    "Data",
    "Disconnection",
    "Epoch",
    "Event",
    "Progress",
    "ProtocolError",
    "Publisher",
    "SubscribeError",
    "Subscription",
    "UpperFrontier",
    "covered_by",
    "merge_lowers",
    "merge_uppers",
    "subscribe_group",
    "subscribe_stream",
]
