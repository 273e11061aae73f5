"""`ServiceBackend` and `ServiceSession`: the live service as the PostgreSQL wire front
end sees it (`sealtime.serve.backend`).

Every statement of the ``sealtime sql`` shell works here, and the service's own:

* ``CREATE SOURCE|VIEW|SINK``, ``PUBLISH``, ``DROP ... [IF EXISTS] name [CASCADE]``:
  applied by the ticker between ticks (`Service.create`, `Service.drop`);
* ``SHOW SOURCES|VIEWS|SINKS``: the catalog;
* ``SELECT ... [AS OF t]``: Spark SQL over the tables' contents at ``t`` (default: the
  latest time every table read has sealed) — a view's from its history shard, a
  source's from its ingest log;
* ``SUBSCRIBE v [WITH (PROGRESS, SNAPSHOT false)] [AS OF t]``: the snapshot at ``t``, the
  history after it, then the live updates, with progress;
* ``EXPLAIN query`` and ``EXPLAIN VIEW v``: the operators, and which are shared.
"""

from __future__ import annotations

import time as _time
import uuid
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..columns import DIFF, TIME
from ..errors import NotFoundError, SealtimeError, StateError
from ..plan import Source
from ..sql import catalog as tables
from ..sql.errors import SqlError
from ..sql.statements import (
    CreateSink,
    CreateSource,
    CreateView,
    Drop,
    Explain,
    Publish,
    Select,
    Show,
    Subscribe,
    parse_statement,
    split,
)
from ..time.order import MIN_TIME
from .backend import (
    Column,
    Command,
    PgType,
    Progress,
    QueryError,
    Result,
    Rows,
    Subscription,
    Update,
    columns_of,
    subscription_columns,
)
from .catalog import ObjectKind
from .service import Service

__all__ = ["ServiceBackend", "ServiceSession"]


class ServiceBackend:
    """The `Backend` of a running `Service`."""

    def __init__(self, service: Service) -> None:
        self.service = service

    def open_session(self, user: str, database: str) -> ServiceSession:
        return ServiceSession(self.service, user)


class ServiceSession:
    """One client connection (see the module docstring)."""

    def __init__(self, service: Service, user: str) -> None:
        self.service = service
        self.user = user

    # ------------------------------------------------------------------ the interface
    def describe(self, sql: str) -> list[Column] | None:
        item = _parse(sql)
        if isinstance(item, Select):
            return columns_of(self._select_frame(item, describe=True)[0])
        if isinstance(item, Subscribe):
            schema = self._view_schema(item.view)
            return subscription_columns(columns_of(schema), progress=item.progress)
        if isinstance(item, Show):
            return _SHOW_COLUMNS
        if isinstance(item, Explain):
            return [Column("plan", PgType.TEXT)]
        return None

    def execute(self, sql: str) -> Result:
        item = _parse(sql)
        service = self.service
        if isinstance(item, (CreateSource, CreateView, CreateSink, Publish)):
            return Command(service.create(sql, owner=self.user))
        if isinstance(item, Drop):
            tag = service.drop(item.what, item.name, if_exists=item.if_exists, cascade=item.cascade)
            return Command(tag)
        if isinstance(item, Show):
            return self._show(item)
        if isinstance(item, Select):
            schema, frame = self._select_frame(item, describe=False)
            table = _spark_errors(lambda: _to_arrow(frame))
            return Rows(columns_of(table.schema), table.to_batches(), tag="SELECT")
        if isinstance(item, Subscribe):
            return self._subscribe(item)
        if isinstance(item, Explain):
            return self._explain(item)
        raise SqlError(item.statement.kind, "not a statement this service runs")

    def close(self) -> None:
        """Nothing to release: subscriptions end when their streams are closed."""

    # ------------------------------------------------------------------ SHOW
    def _show(self, item: Show) -> Rows:
        service = self.service
        assert service.catalog is not None
        hydrating = service.flow.engine.hydrating()
        names, kinds_out, owners, states, sqls = [], [], [], [], []
        for e in service.catalog.entries():
            if e.kind not in _SHOWN[item.what]:
                continue
            state = "running"
            if e.kind is ObjectKind.VIEW:
                node = tables.lookup(service.flow, e.name)
                state = "hydrating" if node and node.collection.node.id in hydrating else "live"
            names.append(e.name)
            kinds_out.append(e.kind.value)
            owners.append(e.owner)
            states.append(state)
            sqls.append(e.sql)
        batch = pa.record_batch(
            [pa.array(v, pa.string()) for v in (names, kinds_out, owners, states, sqls)],
            names=[c.name for c in _SHOW_COLUMNS],
        )
        return Rows(_SHOW_COLUMNS, [batch], tag="SHOW")

    # ------------------------------------------------------------------ SELECT
    def _table(self, name: str, db: str | None) -> tuple[str, Any]:
        service = self.service
        table = tables.lookup(service.flow, name, db)
        if table is None:
            known = ", ".join(tables.table_names(service.flow)) or "none yet"
            raise NotFoundError(f"no source or view named {name!r} (known: {known})")
        return table.name, table

    def _frontier(self, name: str, table: Any) -> int | None:
        """The frontier of a table: a view's history upper, a source's frontier."""
        service = self.service
        if name.lower() in service.views:
            service.wait_live(name)
            return service.view_state(name).history.durable_upper()
        snap = service.flow.engine.snapshot()
        src = snap.source(table.collection.node.name)
        return None if src is None else src.frontier

    def _select_frame(self, item: Select, *, describe: bool) -> tuple[pa.Schema, Any]:
        """The query's Spark frame over its tables' contents at its time (and its Arrow
        schema). Every table is registered as a temporary view of this call."""
        from pyspark.sql.pandas.types import to_arrow_schema

        service = self.service
        spark = service.flow.spark
        tree = item.query.tree.copy()
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        found = []
        for node in tree.find_all(exp.Table):
            if node.name.lower() in ctes:
                continue
            if not node.name:
                raise item.statement.error(
                    "a table function in an ad-hoc SELECT; define a view with it",
                    construct=f"{item.statement.kind}: table function",
                )
            found.append((node, *self._table(node.name, node.db or None)))
        as_of = item.as_of
        if not describe:
            as_of = self._sealed_time(item, [(n, t) for _, n, t in found], as_of)
        frames = {}
        for node, name, table in found:
            frames[id(node)] = self._contents(name, table, as_of, describe)
        with tables.temp_views(spark) as read_from:
            for node, _, _ in found:
                read_from(node, frames[id(node)], f"__sealtime_{uuid.uuid4().hex}")
            frame = _spark_errors(lambda: spark.sql(tree.sql(dialect="spark")))
            schema = to_arrow_schema(frame.schema, timezone="UTC")
        return schema, frame

    def _sealed_time(self, item: Select, found: list[tuple[str, Any]], as_of: int | None) -> int:
        """`as_of` once every table has sealed it (waiting, up to the statement timeout),
        or the latest time all of them have sealed."""
        deadline = _time.monotonic() + self.service.settings.statement_timeout
        while True:
            frontiers = [self._frontier(n, t) for n, t in found]
            present = [f for f in frontiers if f is not None]
            if as_of is None:
                if not present:
                    return _latest(found, self.service)
                if min(present) <= MIN_TIME + 1:
                    raise StateError(
                        "nothing is sealed yet in "
                        + ", ".join(n for n, _ in found)
                        + "; wait for the first tick (or ask AS OF a time)"
                    )
                return min(present) - 1
            if all(f is None or f > as_of for f in frontiers):
                return as_of
            if _time.monotonic() > deadline:
                raise StateError(
                    f"AS OF {as_of}: not sealed yet (the frontiers are {frontiers}); wait, or "
                    "ask for an earlier time"
                )
            _time.sleep(0.05)

    def _contents(self, name: str, table: Any, as_of: int | None, describe: bool) -> Any:
        """A table's rows at `as_of` as a Spark frame (one row per unit of multiplicity)."""
        from pyspark.sql import functions as F

        service = self.service
        coll = table.collection
        spark = service.flow.spark
        if describe or as_of is None:
            return spark.createDataFrame([], coll.schema)
        if name.lower() in service.views:
            shard = service.view_state(name).history._open()
            updates = shard.snapshot_spark(spark, as_of)
        else:
            updates = service.submit(lambda: _source_updates(service, coll.node, as_of))
            if updates is None:
                return spark.createDataFrame([], coll.schema)
            grouped = updates.groupBy(*coll.columns).agg(F.sum(DIFF).alias(DIFF))
            updates = grouped.filter(F.col(DIFF) > 0)
        rows = updates.withColumn("__n", F.explode(F.sequence(F.lit(1), F.col(DIFF).cast("int"))))
        return rows.select(*coll.columns)

    # ------------------------------------------------------------------ SUBSCRIBE
    def _view_schema(self, view: str) -> pa.Schema:
        from pyspark.sql.pandas.types import to_arrow_schema

        state = self.service.view_state(view)
        del state
        coll = tables.lookup(self.service.flow, view).collection  # type: ignore[union-attr]
        return to_arrow_schema(coll.schema, timezone="UTC")

    def _subscribe(self, item: Subscribe) -> Subscription:
        service = self.service
        if item.view.lower() not in service.views:
            if tables.lookup(service.flow, item.view) is not None:
                raise item.statement.error(
                    f"{item.view} is a source; subscribe to a view of it: "
                    f"CREATE VIEW {item.view}_v AS SELECT * FROM {item.view}"
                )
            raise NotFoundError(f"no view named {item.view!r}; CREATE VIEW it first")
        service.wait_live(item.view)
        state = service.view_state(item.view)
        shard = state.history._open()
        stream, upper = state.hub.register_at(lambda: shard.upper)
        schema = self._view_schema(item.view)
        columns = subscription_columns(columns_of(schema), progress=item.progress)
        if upper is None:  # (the view is finished: its history is all there is)
            upper = None
        as_of = item.as_of if item.as_of is not None else _before(upper)
        events: list[Any] = []
        if as_of is not None and as_of > MIN_TIME:
            if item.snapshot:
                snap = shard.snapshot_arrow(as_of)
                if snap.num_rows:
                    events.append(Update(snap.select([*schema.names, TIME, DIFF])))
            for batch in _history_after(shard, as_of, upper):
                events.append(Update(batch.select([*schema.names, TIME, DIFF])))
        if upper is not None:
            events.append(Progress(upper))
        stream.prepend(events)
        if upper is None:
            stream.end()
        return Subscription(columns, stream, progress=item.progress)

    # ------------------------------------------------------------------ EXPLAIN
    def _explain(self, item: Explain) -> Rows:
        from ..sql import explain

        service = self.service
        if item.view is None:
            assert item.query is not None
            text = service.submit(lambda: explain(service.flow, item.query))
            lines = text.splitlines()
        else:
            lines = service.submit(lambda: _explain_view(service, item.view or ""))
        batch = pa.record_batch([pa.array(lines, pa.string())], names=["plan"])
        return Rows([Column("plan", PgType.TEXT)], [batch], tag="EXPLAIN")


#: the catalog objects each ``SHOW`` lists
_SHOWN = {
    "SOURCES": (ObjectKind.SOURCE,),
    "VIEWS": (ObjectKind.VIEW,),
    "SINKS": (ObjectKind.SINK, ObjectKind.PUBLICATION),
}

_SHOW_COLUMNS = [
    Column("name", PgType.TEXT),
    Column("type", PgType.TEXT),
    Column("owner", PgType.TEXT),
    Column("state", PgType.TEXT),
    Column("sql", PgType.TEXT),
]


def _parse(sql: str) -> Any:
    statements = split(sql)
    if len(statements) != 1:
        raise SqlError("statement", f"one statement at a time (got {len(statements)})")
    return parse_statement(statements[0])


def _before(upper: int | None) -> int | None:
    return None if upper is None else upper - 1


def _latest(found: list[tuple[str, Any]], service: Service) -> int:
    """Every table is finished: the largest time any of them holds."""
    del found
    return service.flow.engine.snapshot().into_time or MIN_TIME


def _source_updates(service: Service, node: Source, as_of: int) -> Any:
    """(on the ticker) The source's logged updates at times up to `as_of`."""
    engine = service.flow.engine
    runtime = engine.sources.get(node.id)
    if runtime is None:
        raise NotFoundError(f"source {node.name!r} is not running")
    return runtime.frame(service.flow.spark, "main", MIN_TIME, as_of + 1, node.columns)


def _history_after(shard: Any, as_of: int, upper: int | None) -> Iterator[pa.Table]:
    """The shard's updates at times in ``(as_of, upper)``, by time."""
    files = [f for b in shard.batches() for f in b.files if b.upper is None or b.upper > as_of]
    if not files:
        return
    rows = shard.read_files(files, pc.field(TIME) > as_of)
    if upper is not None:
        rows = rows.filter(pc.less(rows[TIME], upper))
    if rows.num_rows:
        yield rows.sort_by([(TIME, "ascending"), (DIFF, "ascending")])


def _explain_view(service: Service, view: str) -> list[str]:
    """The view's operators, each with the other views that share it."""
    flow = service.flow
    table = tables.lookup(flow, view)
    if table is None or view.lower() not in service.views:
        raise NotFoundError(f"no view named {view!r}")
    plan = flow.compile()
    mine = plan.upstream([table.collection.node.id])
    others: dict[int, list[str]] = {}
    for name in service.views:
        other = tables.lookup(flow, name)
        if other is None or name == view.lower():
            continue
        for nid in plan.upstream([other.collection.node.id]) & mine:
            others.setdefault(nid, []).append(other.name)
    hydrating = flow.engine.hydrating()
    lines = []
    for node in plan.nodes:
        if node.id not in mine:
            continue
        line = f"{node.describe()} -> {node.columns}"
        if node.id in others:
            line += f"  [shared with {', '.join(sorted(others[node.id]))}]"
        if node.id in hydrating:
            line += "  [hydrating]"
        lines.append(line)
    return lines


def _to_arrow(frame: Any) -> pa.Table:
    from ..spark import frames

    return frames.to_arrow(frame)


def _spark_errors(fn: Any) -> Any:
    """Run `fn`; a Spark error becomes a `QueryError` with Spark's SQLSTATE."""
    try:
        return fn()
    except SealtimeError:
        raise
    except Exception as exc:
        state = None
        getter = getattr(exc, "getSqlState", None)
        if callable(getter):
            try:
                state = getter()
            except Exception:
                state = None
        raise QueryError(
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__, state or "XX000"
        ) from exc
