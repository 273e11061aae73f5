"""The service's catalog and the pub-sub catalog share a metadata store (a service's
PUBLISH records the publication there): each keeps its own table."""

from __future__ import annotations

import sqlite3

from sealtime.pubsub.catalog import Catalog
from sealtime.serve.catalog import ObjectKind, ServiceCatalog
from sealtime.storage import MetadataStore


def test_publish_beside_the_service_catalog(tmp_path):
    store = MetadataStore.open(str(tmp_path))
    service = ServiceCatalog(store, "svc")
    service.add(ObjectKind.VIEW, "v", "CREATE VIEW v AS SELECT 1", owner="ann")
    pubsub = Catalog(store)
    pubsub.publish("v_pub", [("127.0.0.1", 5000)], schema=None, dataflow="svc", mode="view")
    assert [e.name for e in pubsub.entries()] == ["v_pub"]
    assert [(e.kind, e.name) for e in service.entries()] == [(ObjectKind.VIEW, "v")]


def test_a_data_dir_of_the_shared_table_keeps_its_objects(tmp_path):
    """A data dir whose service catalog was made in ``sealtime_catalog`` (before the
    tables were told apart): the objects move, and PUBLISH works there."""
    store = MetadataStore.open(str(tmp_path))
    store.migrate("serve-catalog", [_FIRST_STEP])
    store.execute(
        "INSERT INTO sealtime_catalog VALUES ('svc', 1, 'source', 's', 'CREATE SOURCE s', "
        "'ann', 1.0, '[]', NULL)"
    )
    store.migrate("pubsub_catalog", ["SELECT 1"])  # (its CREATE found the service's table)
    service = ServiceCatalog(store, "svc")
    assert [e.name for e in service.entries()] == ["s"]
    pubsub = Catalog(store)
    pubsub.publish("s_pub", [("127.0.0.1", 5000)], schema=None, dataflow="svc")
    assert [e.name for e in pubsub.entries()] == ["s_pub"]
    store.close()
    with sqlite3.connect(tmp_path / "metadata.sqlite") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sealtime_catalog", "sealtime_service_catalog"} <= tables


_FIRST_STEP = (
    "CREATE TABLE IF NOT EXISTS sealtime_catalog ("
    "service TEXT NOT NULL, id BIGINT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, "
    "sql TEXT NOT NULL, owner TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
    "depends TEXT NOT NULL, live_tick BIGINT, PRIMARY KEY (service, id))"
)
