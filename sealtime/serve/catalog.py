"""The live service's catalog: every object's SQL, creation order, owner and
dependencies, in the metadata store.

The running graph is a function of the catalog (DESIGN.md §12): a restarted service
replays its objects' statements in creation order. Each change is one transaction; a
dropped object's row goes. Beside the objects the catalog keeps the id of every plan
node by its structure (`sealtime.plan.PlanNode.structure`), so that a restart builds the
same nodes under the same ids and finds each operator's state where it left it, and the
tick at which each view became live (finished hydrating).

>>> import tempfile
>>> from sealtime.storage import MetadataStore
>>> cat = ServiceCatalog(MetadataStore.open(tempfile.mkdtemp()), "svc")
>>> s = cat.add(ObjectKind.SOURCE, "bids", "CREATE SOURCE bids FROM ...", owner="ann")
>>> v = cat.add(ObjectKind.VIEW, "hot", "CREATE VIEW hot AS ...", owner="bob", depends=("bids",))
>>> [e.name for e in cat.entries()], cat.dependents("bids")
(['bids', 'hot'], ['hot'])
>>> _ = cat.remove("hot"); [e.name for e in cat.entries()]
['bids']
"""

from __future__ import annotations

import enum
import json
import time as _time
from dataclasses import dataclass

from ..errors import NotFoundError
from ..storage.metadata import MetadataStore, Migration, Transaction

__all__ = ["CatalogEntry", "ObjectKind", "ServiceCatalog"]


# Alike only in form to other enums (e.g. plan.over.WindowKind): its values are stored.
class ObjectKind(str, enum.Enum):
    """What a catalog object is (stored as its value)."""

    SOURCE = "source"
    VIEW = "view"
    SINK = "sink"
    PUBLICATION = "publication"


#: the service's table (``sealtime_catalog`` is the pub-sub catalog's: docs/catalog.md)
_TABLE = "sealtime_service_catalog"
_COLUMNS = "service, id, kind, name, sql, owner, created_at, depends, live_tick"


def _leave_pubsub_table(tx: Transaction) -> None:
    """Step 2: move the service's rows out of ``sealtime_catalog``, which step 1 named
    like the pub-sub catalog's table (a PUBLISH in the service then failed with "no
    such column: dataflow"), and let the pub-sub catalog create its own table again."""
    tx.execute(
        f"CREATE TABLE IF NOT EXISTS {_TABLE} ("
        "service TEXT NOT NULL, id BIGINT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, "
        "sql TEXT NOT NULL, owner TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
        "depends TEXT NOT NULL, live_tick BIGINT, PRIMARY KEY (service, id))"
    )
    if tx.dialect.name == "postgresql":
        rows = tx.query(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?",
            ("sealtime_catalog",),
        )
        columns = {r[0] for r in rows}
    else:
        columns = {r[1] for r in tx.query("PRAGMA table_info(sealtime_catalog)")}
    if "service" not in columns:  # (absent, or the pub-sub catalog's own)
        return
    tx.execute(f"INSERT INTO {_TABLE} ({_COLUMNS}) SELECT {_COLUMNS} FROM sealtime_catalog")
    tx.execute("DROP TABLE sealtime_catalog")
    # (its CREATE TABLE IF NOT EXISTS found ours and did nothing: run it again)
    tx.execute("DELETE FROM sealtime_migrations WHERE component = ?", ("pubsub_catalog",))


_MIGRATIONS: list[Migration] = [
    "CREATE TABLE IF NOT EXISTS sealtime_catalog ("
    "service TEXT NOT NULL, id BIGINT NOT NULL, kind TEXT NOT NULL, name TEXT NOT NULL, "
    "sql TEXT NOT NULL, owner TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, "
    "depends TEXT NOT NULL, live_tick BIGINT, PRIMARY KEY (service, id))",
    _leave_pubsub_table,
]
_NODE_IDS = "serve-node-ids"


@dataclass(frozen=True)
class CatalogEntry:
    """One object: `id` (creation order), `kind` (`ObjectKind`), `name`, the `sql` that made
    it, its `owner` (the user who created it), `created_at` (wall-clock seconds),
    `depends` (the names of the objects it reads) and, for a view, `live_tick` (the tick
    at which it finished hydrating; None while it hydrates)."""

    id: int
    kind: ObjectKind
    name: str
    sql: str
    owner: str
    created_at: float
    depends: tuple[str, ...]
    live_tick: int | None = None


class ServiceCatalog:
    """The catalog of the service `service` in `store`."""

    def __init__(self, store: MetadataStore, service: str) -> None:
        self.store = store
        self.service = service
        store.migrate("serve-catalog", _MIGRATIONS)

    def entries(self) -> list[CatalogEntry]:
        """Every object, in creation order."""
        rows = self.store.query(
            "SELECT id, kind, name, sql, owner, created_at, depends, live_tick "
            f"FROM {_TABLE} WHERE service = ? ORDER BY id",
            (self.service,),
        )
        return [
            CatalogEntry(
                int(i),
                ObjectKind(k),
                n,
                q,
                o,
                float(c),
                tuple(json.loads(d)),
                None if t is None else int(t),
            )
            for i, k, n, q, o, c, d, t in rows
        ]

    def entry(self, name: str) -> CatalogEntry | None:
        """The object named `name` (case-insensitive), if any."""
        key = name.lower()
        return next((e for e in self.entries() if e.name.lower() == key), None)

    def add(
        self, kind: ObjectKind, name: str, sql: str, *, owner: str, depends: tuple[str, ...] = ()
    ) -> CatalogEntry:
        """Record a new object (its id: one more than the last)."""
        with self.store.transaction() as tx:
            row = tx.query_one(f"SELECT MAX(id) FROM {_TABLE} WHERE service = ?", (self.service,))
            new_id = (row[0] or 0) + 1 if row else 1
            entry = CatalogEntry(new_id, kind, name, sql, owner, _time.time(), tuple(depends))
            tx.execute(
                f"INSERT INTO {_TABLE} (service, id, kind, name, sql, owner, "
                "created_at, depends, live_tick) VALUES (?, ?, ?, ?, ?, ?, ?, ?, NULL)",
                (
                    self.service,
                    entry.id,
                    kind.value,
                    name,
                    sql,
                    owner,
                    entry.created_at,
                    json.dumps(list(entry.depends)),
                ),
            )
        return entry

    def remove(self, name: str) -> CatalogEntry:
        """Forget the object named `name`."""
        entry = self.entry(name)
        if entry is None:
            raise NotFoundError(f"no object named {name!r} in the catalog")
        with self.store.transaction() as tx:
            tx.execute(
                f"DELETE FROM {_TABLE} WHERE service = ? AND id = ?",
                (self.service, entry.id),
            )
        return entry

    def mark_live(self, name: str, tick: int) -> None:
        """View `name` finished hydrating at tick `tick`."""
        with self.store.transaction() as tx:
            tx.execute(
                f"UPDATE {_TABLE} SET live_tick = ? WHERE service = ? AND lower(name) = ?",
                (tick, self.service, name.lower()),
            )

    def dependents(self, name: str) -> list[str]:
        """The objects that read `name` (directly), in creation order."""
        key = name.lower()
        return [e.name for e in self.entries() if key in (d.lower() for d in e.depends)]

    def node_ids(self) -> dict[str, int]:
        """The plan node ids by structure, as last saved."""
        return dict(self.store.kv_get(_NODE_IDS, self.service, {}))

    def save_node_ids(self, ids: dict[str, int]) -> None:
        """Save the plan node ids by structure (after every change of the graph)."""
        self.store.kv_put(_NODE_IDS, self.service, ids)
