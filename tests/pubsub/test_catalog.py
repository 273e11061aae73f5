"""The catalog: stored in the metadata store (SQLite and PostgreSQL), served as a view,
resolved by `st.subscribe(name, catalog=...)` and listed by the CLI."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sealtime as st
from sealtime import cli
from sealtime.pubsub import Closed, Epoch, Progress, Snapshot
from sealtime.pubsub.catalog import (
    CATALOG_TOPIC,
    Catalog,
    CatalogServer,
    RemoteCatalog,
    SqliteCatalog,
    open_catalog,
    subscribe_catalog,
)
from sealtime.storage import MetadataStore
from tests.pubsub.conftest import ids_table, start
from tests.storage.conftest import store_spec  # noqa: F401 - fixture (SQLite and PostgreSQL)

SCHEMA = pa.schema([("id", pa.int64()), ("_diff", pa.int64())])


@pytest.fixture
def catalog(store_spec):  # noqa: F811
    url, schema = store_spec
    store = MetadataStore.open(url, schema=schema)
    yield Catalog(store)
    store.close()


def test_catalog_stores_names_partitions_schema_and_addresses(catalog, store_spec):  # noqa: F811
    catalog.publish("a", ["127.0.0.1:1", "127.0.0.1:2"], schema=SCHEMA, dataflow="f", mode="view")
    catalog.publish("b", [("localhost", 3)], schema=None, dataflow="f")
    assert catalog.lookup("a") == ["127.0.0.1:1", "127.0.0.1:2"]
    (e0, e1) = catalog.entry("a")
    assert (e0.partition, e0.partitions, e0.mode, e0.dataflow) == (0, 2, "view", "f")
    assert e1.arrow_schema == SCHEMA
    # Republishing replaces; another dataflow cannot take the name; unpublish removes.
    catalog.publish("a", ["127.0.0.1:9"], schema=SCHEMA, dataflow="f")
    assert catalog.lookup("a") == ["127.0.0.1:9"]
    with pytest.raises(ValueError, match="published by dataflow 'f'"):
        catalog.publish("a", ["127.0.0.1:5"], schema=SCHEMA, dataflow="other")
    with pytest.raises(ValueError, match="reserved"):
        catalog.publish(CATALOG_TOPIC, ["127.0.0.1:5"], schema=SCHEMA, dataflow="f")
    assert not catalog.unpublish("a", dataflow="other")
    assert catalog.unpublish("a", dataflow="f")
    with pytest.raises(KeyError, match=r"not in the catalog \(known: \['b'\]\)"):
        catalog.lookup("a")
    # A second store object (another process) sees the same catalog.
    url, schema = store_spec
    other = MetadataStore.open(url, schema=schema)
    assert [e.name for e in Catalog(other).entries()] == ["b"]
    other.close()


def test_catalog_server_serves_changes_as_updates(catalog, publishers):
    catalog.publish("a", ["127.0.0.1:1"], schema=SCHEMA, dataflow="f")
    server = CatalogServer(catalog, poll_interval=None).start()
    try:
        sub = subscribe_catalog(server.address, timeout=10)
        first = sub.next_event(timeout=10)
        assert isinstance(first, Snapshot) and first.table.column("name").to_pylist() == ["a"]
        assert sub.next_event(timeout=10) == Progress(st.time.Antichain([1]))
        catalog.publish("b", ["127.0.0.1:2", "127.0.0.1:3"], schema=SCHEMA, dataflow="f")
        assert server.refresh() == 2
        catalog.unpublish("a")
        catalog.publish("b", ["127.0.0.1:4"], schema=SCHEMA, dataflow="f")
        assert server.refresh() == 4  # a removed, b's two partitions replaced by one
        changes = []
        for _ in range(4):
            event = sub.next_event(timeout=10)
            if isinstance(event, Epoch):
                rows = event.table.select(["address", "_diff"]).to_pylist()
                changes.append((event.time, sorted((r["address"], r["_diff"]) for r in rows)))
        assert changes == [
            (1, [("127.0.0.1:2", 1), ("127.0.0.1:3", 1)]),
            (
                2,
                [("127.0.0.1:1", -1), ("127.0.0.1:2", -1), ("127.0.0.1:3", -1), ("127.0.0.1:4", 1)],
            ),
        ]
        assert sub.lower == st.time.Antichain([3])
        # A host:port catalog is a snapshot of this view.
        assert RemoteCatalog(server.address).lookup("b") == ["127.0.0.1:4"]
        sub.close()
    finally:
        server.close()


def test_subscribe_by_name_through_data_dir_and_server(tmp_path, publishers):
    store = MetadataStore.open(tmp_path)
    catalog = Catalog(store)
    parts = [start(publishers, "s", partition=p, schema=SCHEMA) for p in range(2)]
    catalog.publish(
        "s", [f"{h}:{p}" for h, p in (x.address for x in parts)], schema=SCHEMA, dataflow="f"
    )
    server = CatalogServer(catalog, poll_interval=None).start()
    catalog.set_server("f", server.address)
    try:
        assert isinstance(open_catalog(tmp_path), SqliteCatalog)
        assert SqliteCatalog(tmp_path).servers() == {"f": "{}:{}".format(*server.address)}
        host, port = server.address
        subs = [
            st.subscribe("s", catalog=str(tmp_path), timeout=10),
            st.subscribe("s", catalog=f"{host}:{port}", timeout=10),
        ]
        for p in parts:
            p.send(0, pa.table({"id": [p.partition], "_diff": [1]}))
            p.advance_lower([1])
        for sub in subs:
            assert sub.partitions == [0, 1]
            events = [sub.next_event(timeout=10) for _ in range(3)]
            assert isinstance(events[1], Epoch) and sorted(events[1].table["id"].to_pylist()) == [
                0,
                1,
            ]
            sub.close()
        # The catalog of a data dir is subscribable through the server it records.
        with subscribe_catalog(tmp_path) as sub:
            assert isinstance(sub.next_event(timeout=10), Snapshot)
    finally:
        server.close()
        store.close()


def test_cli_catalog_and_subscribe(tmp_path, publishers, capsys):
    store = MetadataStore.open(tmp_path)
    pub = start(publishers, "prices", schema=SCHEMA)
    address = "{}:{}".format(*pub.address)
    Catalog(store).publish("prices", [address], schema=SCHEMA, dataflow="demo")
    assert cli.main(["catalog", "--catalog", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "prices" in out and address in out and "id int64" in out
    assert "(1 entries)" in out

    import threading

    def feed():
        import time

        while pub.subscriber_count == 0:
            time.sleep(0.01)
        pub.send(0, ids_table([7]).append_column("_diff", pa.array([1], pa.int64())))
        pub.advance_lower([])

    threading.Thread(target=feed, daemon=True).start()
    assert cli.main(["subscribe", "prices", "--catalog", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "time 0 rows=1" in out and "{'id': 7, '_diff': 1}" in out and "progress []" in out
    store.close()
    with pytest.raises(SystemExit, match="--catalog"):
        cli.main(["catalog"])
    assert not isinstance(Closed("x"), Epoch)
