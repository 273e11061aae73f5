"""The catalog: every published stream and view by name, with schema, partitions, address.

The catalog lives in the metadata store (table ``sealtime_catalog``, one row per
partition of a publication: SQLite in the data dir by default, PostgreSQL by URL) and is
**served by the dataflow process** as a view over the same wire protocol as any other
publication (`CatalogServer`, topic ``sealtime_catalog``): a subscriber receives a
snapshot of the catalog, then every change as ``+1``/``-1`` updates of rows, and progress.

Readers never need Spark: `open_catalog` turns what a user passes as ``catalog=`` into an
object with ``lookup(name)`` and ``entries()``:

* a data dir or an SQLite file: read directly with the standard library's ``sqlite3``;
* ``"host:port"``: the snapshot of a `CatalogServer`'s catalog view;
* ``postgresql://...``: the metadata store itself (needs psycopg).

>>> import tempfile
>>> from sealtime.storage import MetadataStore
>>> d = tempfile.mkdtemp()
>>> store = MetadataStore.open(d)
>>> cat = Catalog(store)
>>> cat.publish("prices", ["127.0.0.1:7001", "127.0.0.1:7002"], schema=None, dataflow="f")
>>> open_catalog(d).lookup("prices")
['127.0.0.1:7001', '127.0.0.1:7002']
>>> [(e.name, e.partition, e.partitions, e.mode) for e in open_catalog(d).entries()]
[('prices', 0, 2, 'stream'), ('prices', 1, 2, 'stream')]
>>> store.close()
"""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from sealtime.columns import DIFF
from sealtime.errors import ConfigError, NotFoundError
from sealtime.locations import existing_sqlite_path
from sealtime.net import Address, parse_address
from sealtime.pubsub.history import InMemoryHistory
from sealtime.pubsub.publisher import Publisher
from sealtime.pubsub.subscriber import (
    Closed,
    Snapshot,
    SubscribeError,
    Subscription,
    subscribe_view,
)

__all__ = [
    "CATALOG_SCHEMA",
    "CATALOG_TOPIC",
    "Catalog",
    "CatalogEntry",
    "CatalogServer",
    "RemoteCatalog",
    "SqliteCatalog",
    "open_catalog",
    "subscribe_catalog",
]

#: The topic under which a dataflow serves its catalog (reserved: cannot be published).
CATALOG_TOPIC = "sealtime_catalog"

#: Rows of the catalog view (one per partition of a publication), without `_diff`.
#: (A schema literal: alike in form only to other packages' schemas, deliberately.)
CATALOG_SCHEMA = pa.schema(
    [
        ("name", pa.string()),
        ("partition", pa.int64()),
        ("partitions", pa.int64()),
        ("mode", pa.string()),
        ("address", pa.string()),
        ("schema", pa.string()),  # base64 of the Arrow IPC schema of the published rows
        ("dataflow", pa.string()),
    ]
)

_TABLE = "sealtime_catalog"
_MIGRATIONS = [
    f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
    "name TEXT NOT NULL, part BIGINT NOT NULL, partitions BIGINT NOT NULL, "
    "mode TEXT NOT NULL, address TEXT NOT NULL, arrow_schema TEXT NOT NULL, "
    "dataflow TEXT NOT NULL, PRIMARY KEY (name, part))",
]
_SELECT = (
    f"SELECT name, part, partitions, mode, address, arrow_schema, dataflow FROM {_TABLE} "
    "ORDER BY name, part"
)
#: kv namespace where each dataflow records the address of its catalog server.
SERVER_NAMESPACE = "sealtime_catalog_server"


def schema_to_text(schema: pa.Schema | None) -> str:
    """Arrow schema → base64 text (empty for unknown).

    >>> schema_from_text(schema_to_text(pa.schema([("x", pa.int64())]))).names
    ['x']
    """
    if schema is None:
        return ""
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def schema_from_text(text: str) -> pa.Schema | None:
    """base64 text → Arrow schema (None for empty).

    >>> schema_from_text("") is None
    True
    """
    if not text:
        return None
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


@dataclass(frozen=True)
class CatalogEntry:
    """One partition of a publication.

    >>> e = CatalogEntry("p", 0, 1, "view", "127.0.0.1:9", "", "flow")
    >>> e.arrow_schema is None, e.mode
    (True, 'view')
    """

    name: str
    partition: int
    partitions: int
    mode: str
    address: str
    schema: str
    dataflow: str

    @property
    def arrow_schema(self) -> pa.Schema | None:
        """The Arrow schema of the published rows (data columns and `_diff`)."""
        return schema_from_text(self.schema)

    def row(self) -> tuple[Any, ...]:
        """The entry as a tuple in `CATALOG_SCHEMA` order."""
        return (
            self.name,
            self.partition,
            self.partitions,
            self.mode,
            self.address,
            self.schema,
            self.dataflow,
        )


def _entries(rows: Iterable[Sequence[Any]]) -> list[CatalogEntry]:
    return [
        CatalogEntry(str(r[0]), int(r[1]), int(r[2]), str(r[3]), str(r[4]), str(r[5]), str(r[6]))
        for r in rows
    ]


def entries_table(entries: Sequence[CatalogEntry], diff: int = 1) -> pa.Table:
    """Catalog entries as an Arrow table of `CATALOG_SCHEMA` plus a `_diff` column.

    >>> entries_table([CatalogEntry("p", 0, 1, "stream", "h:1", "", "f")], -1)["_diff"].to_pylist()
    [-1]
    """
    columns = list(zip(*(e.row() for e in entries))) or [[] for _ in CATALOG_SCHEMA]
    arrays = [pa.array(list(c), f.type) for c, f in zip(columns, CATALOG_SCHEMA)]
    arrays.append(pa.array([diff] * len(entries), pa.int64()))
    return pa.Table.from_arrays(arrays, schema=CATALOG_SCHEMA.append(pa.field(DIFF, pa.int64())))


def _lookup(entries: list[CatalogEntry], name: str) -> list[str]:
    found = [e for e in entries if e.name == name]
    if not found:
        known = sorted({e.name for e in entries})
        raise NotFoundError(f"topic {name!r} is not in the catalog (known: {known})")
    return [e.address for e in sorted(found, key=lambda e: e.partition)]


class _Reader:
    """Shared read API: `entries()`, `lookup(name)`, `entry(name)`."""

    def entries(self) -> list[CatalogEntry]:  # pragma: no cover - overridden
        raise NotImplementedError

    def lookup(self, name: str) -> list[str]:
        """The addresses of `name`'s partitions, in partition order (`NotFoundError`, a ``KeyError``, if unknown)."""
        return _lookup(self.entries(), name)

    def entry(self, name: str) -> list[CatalogEntry]:
        """The catalog rows of `name`, in partition order (`NotFoundError`, a ``KeyError``, if unknown)."""
        entries = self.entries()
        found = sorted((e for e in entries if e.name == name), key=lambda e: e.partition)
        if not found:
            _lookup(entries, name)
        return found


class Catalog(_Reader):
    """The catalog in a `MetadataStore` (write side, used by the dataflow process).

    Publishing a name replaces its rows in one transaction. A name belongs to the dataflow
    that published it: another dataflow sharing the store cannot take it over (it gets an
    error naming the owner); the same dataflow restarting replaces its own rows.
    """

    def __init__(self, store: Any) -> None:
        self.store = store
        store.migrate("pubsub_catalog", _MIGRATIONS)

    def publish(
        self,
        name: str,
        addresses: Sequence[Address],
        *,
        schema: pa.Schema | None,
        dataflow: str,
        mode: str = "stream",
    ) -> None:
        """Record publication `name`: one row per partition address."""
        if name == CATALOG_TOPIC:
            raise ConfigError(
                f"publish({name!r}): the name is reserved for the catalog itself; pick another"
            )
        if mode not in ("stream", "view"):
            raise ConfigError(f"mode must be 'stream' or 'view', not {mode!r}")
        text = schema_to_text(schema)
        with self.store.transaction() as tx:
            owners = tx.query(f"SELECT DISTINCT dataflow FROM {_TABLE} WHERE name = ?", (name,))
            others = sorted(str(r[0]) for r in owners if r[0] != dataflow)
            if others:
                raise ConfigError(
                    f"publish({name!r}): the name is published by dataflow {others[0]!r} in "
                    f"this metadata store; pick another name or unpublish it there"
                )
            tx.execute(f"DELETE FROM {_TABLE} WHERE name = ?", (name,))
            for p, address in enumerate(addresses):
                host, port = parse_address(address)
                tx.execute(
                    f"INSERT INTO {_TABLE} (name, part, partitions, mode, address, "
                    "arrow_schema, dataflow) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (name, p, len(addresses), mode, f"{host}:{port}", text, dataflow),
                )

    def unpublish(self, name: str, dataflow: str | None = None) -> bool:
        """Remove `name` (only if owned by `dataflow`, when given); True if it existed."""
        if dataflow is None:
            return self.store.execute(f"DELETE FROM {_TABLE} WHERE name = ?", (name,)) > 0
        return (
            self.store.execute(
                f"DELETE FROM {_TABLE} WHERE name = ? AND dataflow = ?", (name, dataflow)
            )
            > 0
        )

    def entries(self) -> list[CatalogEntry]:
        """Every catalog row, ordered by name and partition."""
        return _entries(self.store.query(_SELECT))

    def set_server(self, dataflow: str, address: Address | None) -> None:
        """Record (or with None, forget) where `dataflow` serves its catalog."""
        if address is None:
            self.store.kv_delete(SERVER_NAMESPACE, dataflow)
        else:
            host, port = parse_address(address)
            self.store.kv_put(SERVER_NAMESPACE, dataflow, f"{host}:{port}")

    def servers(self) -> dict[str, str]:
        """dataflow name → address of its catalog server."""
        return dict(self.store.kv_items(SERVER_NAMESPACE))


class SqliteCatalog(_Reader):
    """Reads the catalog from an SQLite metadata file with the standard library only.

    `path` is the data dir of a dataflow (``<dir>/metadata.sqlite``) or the file itself.
    A store without a catalog table is an empty catalog.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = existing_sqlite_path(
            path,
            "pub-sub catalog",
            "pass the publishing dataflow's data_dir, its metadata file, or its catalog "
            "'host:port'",
        )

    def _query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.path, timeout=30)
        try:
            return conn.execute(sql, params).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise
        finally:
            conn.close()

    def entries(self) -> list[CatalogEntry]:
        """Every catalog row, ordered by name and partition."""
        return _entries(self._query(_SELECT))

    def servers(self) -> dict[str, str]:
        """dataflow name → address of its catalog server."""
        rows = self._query(
            "SELECT key, value FROM sealtime_kv WHERE namespace = ? ORDER BY key",
            (SERVER_NAMESPACE,),
        )
        return {str(k): json.loads(v) for k, v in rows}


class RemoteCatalog(_Reader):
    """The catalog served by a dataflow at `address` (``"host:port"``): each read takes a
    fresh snapshot of its catalog view."""

    def __init__(self, address: Address, timeout: float | None = 10.0) -> None:
        self.address = parse_address(address)
        self.timeout = timeout

    def entries(self) -> list[CatalogEntry]:
        """Every catalog row as of the server's current catalog version."""
        with subscribe_view(self.address, timeout=self.timeout) as sub:
            event = sub.next_event(timeout=self.timeout)
        if isinstance(event, Closed):
            raise SubscribeError(f"catalog at {self.address}: {event.reason}")
        if not isinstance(event, Snapshot):
            raise SubscribeError(f"catalog at {self.address}: no snapshot ({event!r:.100})")
        return _from_table(event.table)

    def servers(self) -> dict[str, str]:
        """This server only (the remote protocol does not list the others)."""
        host, port = self.address
        return {"": f"{host}:{port}"}


def _from_table(table: pa.Table) -> list[CatalogEntry]:
    rows = []
    for r in table.to_pylist():
        for _ in range(int(r.pop(DIFF, 1))):
            rows.append(tuple(r[f.name] for f in CATALOG_SCHEMA))
    return sorted(_entries(rows), key=lambda e: (e.name, e.partition))


def open_catalog(catalog: Any) -> Any:
    """Turn ``catalog=`` into an object with ``lookup(name)`` and ``entries()``.

    Accepts an object that already has ``lookup``, a mapping (returned as is), a data
    dir or SQLite file (`SqliteCatalog`), ``sqlite:///path``, ``postgresql://...``
    (`Catalog` over the metadata store) or a ``"host:port"`` address (`RemoteCatalog`).

    >>> open_catalog({"t": "h:1"})
    {'t': 'h:1'}
    >>> open_catalog("no/such/dir")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: catalog='no/such/dir' is neither an existing data dir or SQLite file, nor 'host:port', nor a postgresql:// URL
    """
    if hasattr(catalog, "lookup") or isinstance(catalog, dict):
        return catalog
    if isinstance(catalog, tuple):
        return RemoteCatalog(catalog)
    text = os.fspath(catalog)
    lowered = text.lower()
    if lowered.startswith(("postgresql://", "postgres://")):
        from sealtime.storage import MetadataStore

        return Catalog(MetadataStore.open(text))
    if lowered.startswith("sqlite:///") or os.path.exists(text):
        return SqliteCatalog(text)
    try:
        parse_address(text)
    except ConfigError:
        raise ConfigError(
            f"catalog={text!r} is neither an existing data dir or SQLite file, nor "
            "'host:port', nor a postgresql:// URL"
        ) from None
    return RemoteCatalog(text)


def subscribe_catalog(
    catalog: Any,
    resume_from: Iterable[Any] | None = None,
    *,
    timeout: float | None = 10.0,
    idle_timeout: float | None = None,
) -> Subscription:
    """Subscribe to a catalog server (view mode): `Snapshot` of the catalog rows, then
    ``Epoch(version, rows with ±1 _diff)`` per change and `Progress`.

    `catalog` is the server's ``"host:port"``, or a data dir / SQLite file whose store
    records exactly one serving dataflow.
    """
    address = catalog
    if not isinstance(catalog, tuple) and os.path.exists(os.fspath(catalog)):
        servers = SqliteCatalog(catalog).servers()
        if len(servers) != 1:
            raise ConfigError(
                f"catalog={os.fspath(catalog)!r} records {len(servers)} catalog servers "
                f"({sorted(servers)}); pass one 'host:port'"
            )
        address = next(iter(servers.values()))
    return subscribe_view(address, resume_from, timeout=timeout, idle_timeout=idle_timeout)


class CatalogServer:
    """Serves a `Catalog` as a view publication (topic `CATALOG_TOPIC`).

    Catalog versions are the logical times: version 0 holds the contents when the server
    starts; every change found by `refresh` is published at the next version as ``-1``
    rows (removed or replaced) and ``+1`` rows (added), then the lower frontier moves past
    it. `refresh` is called by the dataflow after each change it makes and every
    `poll_interval` seconds (changes by other processes sharing the store).

    >>> import tempfile
    >>> from sealtime.storage import MetadataStore
    >>> store = MetadataStore.open(tempfile.mkdtemp())
    >>> server = CatalogServer(Catalog(store), poll_interval=None).start()
    >>> sub = subscribe_catalog(server.address)
    >>> [type(sub.next_event(timeout=10)).__name__ for _ in range(2)]
    ['Snapshot', 'Progress']
    >>> server.catalog.publish("t", ["127.0.0.1:9"], schema=None, dataflow="f"); server.refresh()
    1
    >>> epoch = sub.next_event(timeout=10)
    >>> epoch.time, epoch.table.select(["name", "_diff"]).to_pylist()
    (1, [{'name': 't', '_diff': 1}])
    >>> sub.close(); server.close(); store.close()
    """

    def __init__(
        self,
        catalog: Catalog,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        poll_interval: float | None = 1.0,
    ) -> None:
        self.catalog = catalog
        self.publisher = Publisher(
            CATALOG_TOPIC,
            host=host,
            port=port,
            lower=[0],
            schema=CATALOG_SCHEMA.append(pa.field(DIFF, pa.int64())),
            history=InMemoryHistory(),
        )
        self._poll_interval = poll_interval
        self._lock = threading.Lock()
        self._state: set[CatalogEntry] = set()
        self._version = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` of the catalog view."""
        return self.publisher.address

    @property
    def version(self) -> int:
        """The next catalog version (all versions below it are complete)."""
        return self._version

    def start(self) -> CatalogServer:
        """Publish the current contents at version 0 and start serving."""
        self.publisher.start()
        self.refresh(force=True)
        if self._poll_interval:
            self._thread = threading.Thread(
                target=self._poll, name="sealtime-catalog-poll", daemon=True
            )
            self._thread.start()
        return self

    def _poll(self) -> None:
        assert self._poll_interval
        while not self._stop.wait(self._poll_interval):
            try:
                self.refresh()
            except Exception:  # a transient store error must not kill the server
                continue

    def refresh(self, force: bool = False) -> int:
        """Publish the difference between the store and what was served; returns the
        number of rows changed (added + removed)."""
        with self._lock:
            if self._stop.is_set():
                return 0
            now = set(self.catalog.entries())
            added = sorted(now - self._state, key=CatalogEntry.row)
            removed = sorted(self._state - now, key=CatalogEntry.row)
            if not (added or removed or force):
                return 0
            if added or removed:
                table = pa.concat_tables([entries_table(removed, -1), entries_table(added, 1)])
                self.publisher.send(self._version, table)
            self._state = now
            self._version += 1
            self.publisher.advance_lower([self._version])
            return len(added) + len(removed)

    def close(self) -> None:
        """Stop polling and serving."""
        with self._lock:
            self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        self.publisher.close("catalog server closed")
