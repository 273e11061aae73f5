"""Publisher API behaviour (what the engine relies on) and stream-mode delivery details."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from sealtime.errors import SchemaError, StateError
from sealtime.progress import DowngradeError
from sealtime.pubsub import (
    Closed,
    Data,
    Epoch,
    Progress,
    Publisher,
    SubscribeError,
    subscribe_stream,
)
from sealtime.time import Antichain, Product
from tests.pubsub.conftest import ids_table, read_all, start


def test_send_validates_time_shape_and_schema():
    pub = Publisher("v", lower=[Product(0, 0)])
    with pytest.raises(TypeError, match="another shape"):
        pub.send(3, ids_table([1]))
    with pytest.raises(TypeError, match="unsupported time"):
        pub.send(1.5, ids_table([1]))
    pub.send(Product(np.int64(1), 2), ids_table([1]))  # numpy ints are normalized
    with pytest.raises(SchemaError, match="schema mismatch"):
        pub.send(Product(1, 2), pa.Table.from_arrays([pa.array(["a"])], names=["id"]))
    with pytest.raises(TypeError, match="pyarrow Table"):
        pub.send(Product(1, 2), [1, 2])
    pub.advance_lower([Product(1, 0), Product(0, 3)])
    with pytest.raises(DowngradeError, match="it is complete"):
        pub.send(Product(0, 2), ids_table([1]))
    pub.send(Product(0, 3), ids_table([1]))  # ≥ an element: still open
    assert pub.upper == Antichain([Product(1, 2), Product(0, 3)])
    pub.close()
    with pytest.raises(StateError, match="closed"):
        pub.send(Product(5, 5), ids_table([1]))


def test_lower_frontier_only_advances():
    pub = Publisher("v", lower=[Product(0, 0)])
    pub.advance_lower([Product(2, 0)])
    with pytest.raises(DowngradeError, match="only advance"):
        pub.advance_lower([Product(1, 5)])
    with pytest.raises(DowngradeError, match="only advance"):
        pub.update_lower([(Product(0, 9), 1)])
    assert pub.lower == Antichain([Product(2, 0)])  # the failed update was not applied


def test_update_lower_counts_like_capabilities(publishers):
    pub = start(publishers, "caps", lower=[0])  # one capability at 0
    assert pub.update_lower([(0, 1)]) == []  # a second holder: the frontier is unchanged
    sub = subscribe_stream(pub.address, timeout=10)
    assert sub.next_event(timeout=5) == Progress(Antichain([0]))
    pub.send(0, ids_table([1]))
    assert pub.update_lower([(0, -1), (5, 1)]) == []  # one holder left at 0
    assert sub.next_event(timeout=0.2) is None
    assert pub.update_lower([(0, -1)]) == [(0, -1), (5, 1)]
    assert isinstance(sub.next_event(timeout=5), Epoch)
    assert sub.next_event(timeout=5) == Progress(Antichain([5]))
    sub.close()


def test_big_tables_are_split_into_frames_of_one_epoch(publishers):
    pub = start(publishers, "big", max_frame_size=64 * 1024)
    sub = subscribe_stream(pub.address, timeout=10)
    table = pa.Table.from_arrays([pa.array(np.arange(100_000, dtype=np.int64))], names=["x"])
    pub.send(1, table)
    pub.advance_lower([2])
    events = [sub.next_event(timeout=5) for _ in range(3)]
    assert isinstance(events[1], Epoch) and events[1].table.num_rows == 100_000
    assert events[1].table.column("x").to_numpy().tolist() == list(range(100_000))
    sub.close()


def test_subscriber_accepting_smaller_frames_is_refused(publishers):
    pub = start(publishers, "big", max_frame_size=1 << 20)
    with pytest.raises(SubscribeError, match="accepts frames up to 65536"):
        subscribe_stream(pub.address, timeout=10, max_frame_size=65536)


def test_raw_mode_yields_data_messages_as_they_come(publishers):
    pub = start(publishers, "raw", partition=4)
    sub = subscribe_stream(pub.address, atomic=False, timeout=10)
    pub.send(1, ids_table([1]))
    pub.send(1, ids_table([2]))
    events = [sub.next_event(timeout=5) for _ in range(3)]
    assert events[1:] == [
        Data(1, ids_table([1]), partition=4),
        Data(1, ids_table([2]), partition=4),
    ]
    sub.close()


def test_finished_stream_ends_with_empty_progress_then_closed(publishers):
    pub = start(publishers, "fin", lower=[0])
    sub = subscribe_stream(pub.address, timeout=10, idle_timeout=10)
    assert sub.name == "fin" and sub.partitions == [0] and sub.schema is None
    pub.send(3, ids_table([1]))
    pub.send(1, ids_table([2]))
    pub.advance_lower([])
    pub.close("end of stream")
    events = list(sub)
    assert [type(e) for e in events] == [Progress, Epoch, Epoch, Progress, Closed]
    assert [e.time for e in events[1:3]] == [1, 3]  # released in time order
    assert events[-2:] == [Progress(Antichain()), Closed("end of stream")]
    assert sub.closed and sub.reason == "end of stream"


def test_publisher_close_drops_incomplete_epochs(publishers):
    pub = start(publishers, "inc")
    sub = subscribe_stream(pub.address, timeout=10)
    pub.send(1, ids_table([1]))
    pub.close()
    events = read_all(sub)
    assert events == [Progress(Antichain([0])), Closed("publisher closed")]


def test_schema_is_announced_once_known(publishers):
    pub = start(publishers, "schema")
    pub.send(0, ids_table([1]))
    sub = subscribe_stream(pub.address, timeout=10)
    assert sub.schema == ids_table([]).schema
    sub.close()


def test_subscribers_come_and_go(publishers):
    pub = start(publishers, "churn")
    subs = [subscribe_stream(pub.address, timeout=10) for _ in range(5)]
    for s in subs[:3]:
        s.close()
    pub.send(0, ids_table([1]))
    pub.advance_lower([1])
    for s in subs[3:]:
        assert [type(s.next_event(timeout=5)) for _ in range(3)] == [Progress, Epoch, Progress]
        s.close()
    deadline = time.monotonic() + 10  # leaving is noticed asynchronously
    while pub.subscriber_count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert pub.subscriber_count == 0
    assert sum("subscriber closed" in d.reason for d in pub.disconnections) == 5


def test_connecting_to_nothing_fails_fast():
    pub = Publisher("gone").start()
    address = pub.address
    pub.close()
    with pytest.raises(SubscribeError):
        subscribe_stream(address, timeout=5)
