"""`st.subscribe`: dispatch by address, address list, catalog mapping or lookup object."""

from __future__ import annotations

import pytest

import sealtime as st
from sealtime.pubsub import Epoch, InMemoryHistory, Progress, Snapshot
from sealtime.time import Antichain
from tests.pubsub.conftest import ids_table, start
from tests.pubsub.test_view import updates


class Catalog:
    def __init__(self, entries):
        self.entries = entries

    def lookup(self, name):
        return self.entries[name]


def test_subscribe_dispatches(publishers):
    parts = [start(publishers, "s", partition=p) for p in range(3)]
    view = start(publishers, "v", history=InMemoryHistory())
    host, port = parts[0].address
    one = st.subscribe(f"{host}:{port}")
    group = st.subscribe([p.address for p in parts])
    by_name = st.subscribe("s", catalog={"s": [p.address for p in parts]})
    by_lookup = st.subscribe("v", catalog=Catalog({"v": view.address}), mode="view")
    assert one.partitions == [0] and group.partitions == by_name.partitions == [0, 1, 2]
    for p in parts:
        p.send(0, ids_table([p.partition]))
        p.advance_lower([1])
    view.send(0, updates([("a", 1)]))
    view.advance_lower([1])
    for sub, rows in ((one, 1), (group, 3), (by_name, 3)):
        events = [sub.next_event(timeout=5) for _ in range(3)]
        assert isinstance(events[1], Epoch) and events[1].table.num_rows == rows
        assert events[2] == Progress(Antichain([1]))
        sub.close()
    first = by_lookup.next_event(timeout=5)
    assert isinstance(first, Snapshot | Epoch)
    by_lookup.close()


def test_subscribe_errors():
    with pytest.raises(ValueError, match="pass a catalog"):
        st.subscribe("no-such-topic")
    with pytest.raises(KeyError, match="not in the catalog"):
        st.subscribe("t", catalog={})
    with pytest.raises(ValueError, match="neither an existing data dir"):
        st.subscribe("t", catalog="/some/data_dir")
    with pytest.raises(ValueError, match="mode must be"):
        st.subscribe("127.0.0.1:1", mode="table")
    with pytest.raises(ValueError, match="per partition"):
        st.subscribe(["127.0.0.1:1", "127.0.0.1:2"], mode="view")
    with pytest.raises(ValueError, match="keeps no history"):
        st.subscribe("127.0.0.1:1", resume_from=[3])
