"""`FakeBackend`: the `Backend` interface over in-memory Arrow tables, for the wire
front end's tests and the examples of docs/pgwire.md. It is test support, not a query
engine: it runs what those need, the way the service will, and refuses the rest.

* A **view** is a table of updates: its columns plus ``_time`` and ``_diff``; its
  `frontier` says which times are sealed. ``SELECT ... FROM v [AS OF t]`` reads its
  contents at ``t`` (default: the latest sealed time), consolidated
  (`sealtime.columns.consolidate`). A table without ``_time`` is static.
* ``SELECT`` takes one table (no joins), ``*``, columns, literals, arithmetic,
  comparisons, ``AND``/``OR``/``NOT``, ``CAST``, aliases, and ``WHERE``; a division by
  zero is 22012, as Spark's ANSI mode says. ``SELECT`` without ``FROM`` reads one row.
* ``SUBSCRIBE v [WITH (PROGRESS, SNAPSHOT false)] [AS OF t]``: the snapshot at ``t``
  (default: the latest sealed time), the history after it, then what `advance` adds,
  until `finish`. Every stream handed out is in `streams`, so a test can see it closed.
* ``CREATE VIEW v AS SELECT ...`` (the query's result becomes a static view), ``DROP VIEW
  [IF EXISTS] v [CASCADE]`` (42P01 unknown, 2BP01 with dependents), ``SHOW VIEWS``,
  ``EXPLAIN SELECT ...``.

>>> import pyarrow as pa
>>> backend = FakeBackend({"t": pa.table({"a": [1, 2, 3]})})
>>> s = backend.open_session("sealtime", "sealtime")
>>> rows = s.execute("SELECT a * 10 AS b FROM t WHERE a > 1")
>>> [c.name for c in rows.columns], [b.to_pydict() for b in rows.batches]
(['b'], [{'b': [20, 30]}])
>>> s.execute("SELECT 1/0")
Traceback (most recent call last):
...
sealtime.serve.backend.QueryError: [DIVIDE_BY_ZERO] Division by zero.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from ..columns import DIFF, TIME, consolidate
from ..errors import NotFoundError
from ..sql.errors import SqlError

# The names session.py imports too, on purpose: both implement Backend.
from ..sql.statements import (
    CreateView,
    Drop,
    Explain,
    Select,
    Show,
    Subscribe,
    parse_statement,
    split,
)
from .backend import (
    Column,
    Command,
    DependentObjectsError,
    Event,
    ObjectExistsError,
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

__all__ = ["FakeBackend", "FakeEventStream", "FakeSession"]


class FakeEventStream:
    """A subscription's events: a queue the backend appends to, read by one thread;
    `close` (any thread) ends a blocked `__next__` at once."""

    def __init__(self, view: str) -> None:
        self.view = view
        self._items: deque[Event | None] = deque()
        self._cond = threading.Condition()
        self.closed = threading.Event()

    def put(self, event: Event | None) -> None:
        """Append an event (None: the end)."""
        with self._cond:
            self._items.append(event)
            self._cond.notify()

    def __iter__(self) -> Iterator[Event]:
        return self

    def __next__(self) -> Event:
        with self._cond:
            while not self._items and not self.closed.is_set():
                self._cond.wait()
            if self.closed.is_set():
                raise StopIteration
            item = self._items.popleft()
        if item is None:
            raise StopIteration
        return item

    def close(self) -> None:
        with self._cond:
            self.closed.set()
            self._items.clear()
            self._cond.notify_all()


class FakeBackend:
    """The fake service: `views` by name (Arrow tables; with ``_time``/``_diff`` columns
    they are update histories sealed up to `frontiers[name]`)."""

    def __init__(
        self,
        views: dict[str, pa.Table] | None = None,
        frontiers: dict[str, int | None] | None = None,
    ) -> None:
        self.views: dict[str, pa.Table] = {k.lower(): v for k, v in (views or {}).items()}
        self.frontiers: dict[str, int | None] = {k.lower(): v for k, v in (frontiers or {}).items()}
        self.depends: dict[str, set[str]] = {}
        self.streams: list[FakeEventStream] = []
        self.sessions: list[FakeSession] = []
        self._lock = threading.Lock()

    def open_session(self, user: str, database: str) -> FakeSession:
        session = FakeSession(self, user, database)
        with self._lock:
            self.sessions.append(session)
        return session

    # ------------------------------------------------------------------ scripting
    def advance(self, view: str, updates: pa.Table | None, frontier: int | None) -> None:
        """Add `updates` (view columns, ``_time``, ``_diff``) to `view` and seal times
        below `frontier` (None: the view is finished); open subscriptions get them."""
        view = view.lower()
        with self._lock:
            if updates is not None and updates.num_rows:
                updates = updates.select(self.views[view].schema.names)
                self.views[view] = pa.concat_tables([self.views[view], updates])
            self.frontiers[view] = frontier
            streams = [s for s in self.streams if s.view == view and not s.closed.is_set()]
        for s in streams:
            if updates is not None and updates.num_rows:
                s.put(Update(_ordered(updates)))
            s.put(Progress(frontier) if frontier is not None else None)

    def finish(self, view: str) -> None:
        """The view's sources ended: its subscriptions end."""
        self.advance(view, None, None)

    def table(self, name: str) -> pa.Table:
        try:
            return self.views[name.lower()]
        except KeyError:
            known = ", ".join(sorted(self.views)) or "none"
            raise NotFoundError(f"no source or view named {name!r} (known: {known})") from None

    def contents(self, name: str, as_of: int | None) -> pa.Table:
        """The view's rows at `as_of` (default: the latest sealed time), one per copy."""
        table = self.table(name)
        if TIME not in table.schema.names:
            return table
        if as_of is None:
            frontier = self.frontiers.get(name.lower())
            as_of = frontier - 1 if frontier is not None else None
        upto = table if as_of is None else table.filter(pc.field(TIME) <= as_of)
        counted = consolidate(upto.drop_columns([TIME]))
        copies = np.maximum(counted[DIFF].to_numpy(), 0)  # a row with count n, n times
        return counted.drop_columns([DIFF]).take(np.repeat(np.arange(counted.num_rows), copies))


def _ordered(updates: pa.Table) -> pa.Table:
    """By time, retractions first, then by the columns (the shell's order)."""
    keys = [(TIME, "ascending"), (DIFF, "ascending")]
    keys += [(c, "ascending") for c in updates.schema.names if c not in (TIME, DIFF)]
    return updates.sort_by(keys)


class FakeSession:
    """One connection's session of `FakeBackend`."""

    def __init__(self, backend: FakeBackend, user: str, database: str) -> None:
        self.backend = backend
        self.user = user
        self.database = database
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def describe(self, sql: str) -> list[Column] | None:
        result = self._run(sql, describe=True)
        return None if isinstance(result, Command) else result.columns

    def execute(self, sql: str) -> Result:
        return self._run(sql, describe=False)

    def _run(self, sql: str, describe: bool) -> Result:
        statements = split(sql)
        if len(statements) != 1:
            raise SqlError("statement", "one statement at a time")
        item = parse_statement(statements[0])
        run = _STATEMENTS.get(type(item))
        if run is None:
            return Command(statements[0].kind)
        return run(self, item, describe)

    def _show(self, item: Show, describe: bool) -> Rows:
        names = sorted(self.backend.views) if item.what == "VIEWS" else []
        return Rows(
            [Column("name", PgType.TEXT)],
            [pa.record_batch({"name": pa.array(names, pa.string())})],
            tag="SHOW",
        )

    def _create_view(self, item: CreateView, describe: bool) -> Command:
        name = item.name.lower()
        if name in self.backend.views:
            raise ObjectExistsError(
                f"CREATE VIEW {name}: a view named {name!r} exists; DROP it first"
            )
        if describe:
            return Command("CREATE VIEW")
        result = self._select(item.query.tree, None)
        self.backend.views[name] = pa.Table.from_batches(list(result.batches))
        self.backend.depends[name] = {t.name.lower() for t in item.query.tree.find_all(exp.Table)}
        return Command("CREATE VIEW")

    def _explain(self, item: Explain, describe: bool) -> Rows:
        return Rows(
            [Column("plan", PgType.TEXT)],
            [pa.record_batch({"plan": ["fake: scan, filter, project"]})],
            tag="EXPLAIN",
        )

    def _run_select(self, item: Select, describe: bool) -> Rows:
        return self._select(item.query.tree, item.as_of, empty=describe)

    def _run_drop(self, item: Drop, describe: bool) -> Command:
        if item.what != "VIEW":
            return Command(f"DROP {item.what}")
        return self._drop(item.name.lower(), item.if_exists, item.cascade, describe)

    def _drop(self, name: str, if_exists: bool, cascade: bool, describe: bool) -> Command:
        views = self.backend.views
        if name not in views:
            if if_exists or describe:
                return Command("DROP VIEW")
            raise NotFoundError(f"DROP VIEW {name}: no view named {name!r}")
        users = sorted(v for v, deps in self.backend.depends.items() if name in deps)
        if users and not cascade:
            raise DependentObjectsError(
                f"DROP VIEW {name}: {', '.join(users)} depend(s) on it; drop them first or "
                "add CASCADE"
            )
        if not describe:
            for v in [name, *users]:
                views.pop(v, None)
                self.backend.depends.pop(v, None)
        return Command("DROP VIEW")

    def _select(self, tree: exp.Expression, as_of: int | None, empty: bool = False) -> Rows:
        if not isinstance(tree, exp.Select) or tree.args.get("joins"):
            raise QueryError("the fake backend runs one-table SELECTs only", "0A000")
        source = tree.args.get("from_")
        if source is None:
            table = pa.table({"_one": [1]})
        else:
            table = self.backend.contents(source.this.name, as_of)
        if empty:
            table = table.slice(0, 0)
        if where := tree.args.get("where"):
            table = table.filter(_eval(where.this, table))
        arrays, names = [], []
        for item in tree.expressions:
            if isinstance(item, exp.Star):
                for name in table.schema.names:
                    if name != "_one":
                        arrays.append(table[name])
                        names.append(name)
                continue
            value = _eval(item.unalias() if isinstance(item, exp.Alias) else item, table)
            if isinstance(value, pa.Scalar):
                value = pa.array([value.as_py()] * table.num_rows, value.type)
            arrays.append(value)
            names.append(item.alias_or_name)
        out = pa.Table.from_arrays(arrays, names=names)
        return Rows(columns_of(out.schema), out.to_batches(), tag=f"SELECT {out.num_rows}")

    def _subscribe(self, item: Subscribe, describe: bool) -> Subscription:
        backend = self.backend
        history = backend.table(item.view)
        view_cols = [c for c in columns_of(history.schema) if c.name not in (TIME, DIFF)]
        columns = subscription_columns(view_cols, progress=item.progress)
        stream = FakeEventStream(item.view.lower())
        if describe:
            return Subscription(columns, stream, item.progress)
        with backend._lock:
            frontier = backend.frontiers.get(item.view.lower())
            at = (
                item.as_of
                if item.as_of is not None
                else (frontier - 1 if frontier is not None else None)
            )
            if at is None:
                at = max(history[TIME].to_pylist(), default=0)
            if item.snapshot:
                snap = consolidate(history.filter(pc.field(TIME) <= at), as_of=at)
                if snap.num_rows:
                    stream.put(Update(_ordered(snap)))
            later = history.filter(pc.field(TIME) > at)
            if later.num_rows:
                stream.put(Update(_ordered(later)))
            if frontier is None:
                stream.put(None)
            else:
                stream.put(Progress(max(frontier, at + 1)))
                backend.streams.append(stream)
        return Subscription(columns, stream, item.progress)


#: how the fake session runs each parsed statement (others: their tag, no effect)
_STATEMENTS = {
    Show: FakeSession._show,
    Drop: FakeSession._run_drop,
    CreateView: FakeSession._create_view,
    Explain: FakeSession._explain,
    Select: FakeSession._run_select,
    Subscribe: FakeSession._subscribe,
}

_BINARY = {
    exp.Add: pc.add_checked,
    exp.Sub: pc.subtract_checked,
    exp.Mul: pc.multiply_checked,
    exp.EQ: pc.equal,
    exp.NEQ: pc.not_equal,
    exp.GT: pc.greater,
    exp.GTE: pc.greater_equal,
    exp.LT: pc.less,
    exp.LTE: pc.less_equal,
    exp.And: pc.and_kleene,
    exp.Or: pc.or_kleene,
}
_CASTS = {
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "DOUBLE": pa.float64(),
    "STRING": pa.string(),
    "BOOLEAN": pa.bool_(),
}


def _eval(node: exp.Expression, table: pa.Table) -> pa.ChunkedArray | pa.Array | pa.Scalar:
    """`node` over `table`, column-wise with Arrow compute."""
    if isinstance(node, exp.Paren):
        return _eval(node.this, table)
    if isinstance(node, exp.Column):
        if node.name not in table.schema.names:
            raise SqlError(node.sql(), f"unknown column {node.name!r}")
        return table[node.name]
    if isinstance(node, exp.Literal):
        return pa.scalar(
            node.this
            if node.is_string
            else (float(node.this) if "." in node.this else int(node.this))
        )
    if isinstance(node, exp.Boolean):
        return pa.scalar(bool(node.this))
    if isinstance(node, exp.Null):
        return pa.scalar(None)
    if isinstance(node, exp.Neg):
        return pc.negate_checked(_eval(node.this, table))
    if isinstance(node, exp.Not):
        return pc.invert(_eval(node.this, table))
    if isinstance(node, exp.Div):
        left, right = _eval(node.this, table), _eval(node.expression, table)
        zero = pc.equal(right, 0)
        if (pc.any(zero).as_py() if not isinstance(zero, pa.Scalar) else zero.as_py()) and (
            isinstance(left, pa.Scalar) or len(left)
        ):
            raise QueryError("[DIVIDE_BY_ZERO] Division by zero.", "22012")
        return pc.divide(pc.cast(left, pa.float64()), pc.cast(right, pa.float64()))
    if isinstance(node, (exp.Cast, exp.TryCast)):
        target = _CASTS.get(node.to.this.name)
        if target is None:
            raise QueryError(f"the fake backend does not cast to {node.to.sql()}", "0A000")
        return pc.cast(_eval(node.this, table), target)
    for cls, fn in _BINARY.items():
        if type(node) is cls:
            return fn(_eval(node.this, table), _eval(node.expression, table))
    raise QueryError(f"the fake backend does not evaluate {node.sql()!r}", "0A000")
