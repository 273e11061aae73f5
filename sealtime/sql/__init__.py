"""SQL views (Spark SQL dialect) compiled to the dataflow API.

``flow.sql("SELECT ...")`` returns a `Collection`; ``flow.create_view("name", "SELECT
...")`` also registers it as table ``name`` for later SQL. Sources are tables by their
names. The query is parsed by sqlglot's Spark dialect (`sealtime.sql.parse`),
translated to differential operators (`sealtime.sql.translate`), and its scalar
expressions are evaluated by Spark, so they mean what they mean in Spark SQL. What
cannot be translated with that meaning raises `SqlError` (line, column, construct and
the Python API that does the same); a failed translation leaves the dataflow as it was.
See ``docs/sql.md``.

>>> import tempfile, sealtime as st
>>> from sealtime.sources.rows import Rows
>>> flow = st.Dataflow("doc", data_dir=tempfile.mkdtemp())
>>> _ = flow.source("s", Rows({"k": "string", "v": "long"}, [(1, {"k": "a", "v": 2}), (2, {"k": "a", "v": 3})]))
>>> totals = flow.create_view("totals", "SELECT k, SUM(v) AS total FROM s GROUP BY k")
>>> flow.sql("SELECT k, rand() AS r FROM s")
Traceback (most recent call last):
...
sealtime.sql.errors.SqlError: non-deterministic function at line 1, column 11: RAND() ...
>>> _ = flow.run()
>>> [r["total"] for r in totals.to_spark(as_of=1).collect()], totals.to_spark().collect()[0]["total"]
([2], 5)
>>> flow.close()
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..errors import ConfigError, NotFoundError, PlanError, StateError
from .errors import SqlError
from .parse import Parsed, parse
from .relation import Relation

if TYPE_CHECKING:
    from ..dataflow.collection import Collection
    from ..dataflow.dataflow import Dataflow

__all__ = ["SqlError", "create_view", "errors_of", "explain", "query", "sql"]


@contextlib.contextmanager
def _atomic(flow: Dataflow, *, keep: bool = True) -> Iterator[list[Any]]:
    """Undo the operators (and registered views) a failed translation added; with
    ``keep=False`` undo them in any case (EXPLAIN). Yields the added nodes (filled when
    the block ends)."""
    registry = dict(flow.sql_views)
    kept = False
    try:
        with flow.provisional(keep=keep) as added:
            yield added
        kept = keep
    finally:
        if not kept:
            flow.sql_views.clear()
            flow.sql_views.update(registry)


def _translate(
    flow: Dataflow, text: str | Parsed, view: str = "sql"
) -> tuple[Collection, str | None, frozenset[str], Collection]:
    """The collection `text` defines, its time column, the tables it reads, and its
    errors (the rows its expressions failed on: `sealtime.sql.checked`)."""
    from .checked import ERRORS_SCHEMA
    from .translate import Translator, col_ref

    parsed = parse(text) if isinstance(text, str) else text
    tree = parsed.tree
    if not isinstance(tree, exp.Query):
        line, col = parsed.locate(tree, fallback=tree)
        raise SqlError(
            f"{type(tree).__name__} statement",
            "a view is defined by a query (SELECT ...)",
            line=line or 1,
            col=col or 1,
        )
    _check_ansi(flow)
    tr = Translator(flow, parsed, view=view)
    rel: Relation = tr.query(tree)
    names = [f.name for f in rel.visible]
    coll = rel.collection
    time = next((f.name for f in rel.visible if f.physical == rel.time_column), None)
    if coll.columns != names or [f.physical for f in rel.visible] != names:
        coll = coll.select(*[col_ref(f.physical).alias(f.name) for f in rel.visible])
    parts = tr.error_parts
    if parts:
        errors = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]
    else:  # (no expression can fail: an errors relation that stays empty)
        from pyspark.sql import functions as F

        errors = coll.filter(F.lit(False)).select(
            *[F.lit(None).cast(f.dataType).alias(f.name) for f in ERRORS_SCHEMA.fields]
        )
    return coll, time, frozenset(tr.reads), errors


def _check_ansi(flow: Dataflow) -> None:
    """SQL views evaluate expressions with Spark 4's ANSI semantics (docs/sql.md): a
    session with ``spark.sql.ansi.enabled=false`` would silently give NULLs instead."""
    enabled = flow.spark.conf.get("spark.sql.ansi.enabled", "true")
    if str(enabled).lower() != "true":
        raise ConfigError(
            "SQL views need spark.sql.ansi.enabled=true (Spark 4's default: an expression "
            "that fails sends its row to the view's errors instead of giving NULL); set it "
            "on the SparkSession given to the Dataflow, or let sealtime create the session"
        )


def _label(nodes: list[Any], view: str) -> None:
    """Name the operators a view added after it (``totals: reduce``), for the web
    view, metrics and EXPLAIN. A node's name is a label, not part of what it computes;
    the nodes are new and belong to no running plan yet, so renaming them is safe."""
    for node in nodes:
        if not node.name.startswith(f"{view}: "):
            object.__setattr__(node, "name", f"{view}: {node.name}")


def errors_of(flow: Dataflow, view: str | Collection) -> Collection:
    """The errors of a view (by name) or of a collection `flow.sql` returned: the rows
    its expressions failed on, with ``view``, ``error`` (Spark's error class), ``reason``
    and ``raw`` (the input row as JSON). The same as ``SELECT * FROM view.errors``."""
    from . import catalog

    key = view if isinstance(view, str) else f"#{view.node.id}"
    table = catalog.lookup(flow, "errors", key)
    if table is None:
        raise NotFoundError(f"no view {key!r} made by SQL in dataflow {flow.name!r}")
    return table.collection


def sql(flow: Dataflow, text: str) -> Collection:
    """The collection a query defines over `flow`'s sources and views."""
    if flow.started and not flow.live:
        raise StateError(
            "sql(): views must be defined before the first run() (or build the dataflow "
            "with Dataflow(live=True))"
        )
    from . import catalog

    with _atomic(flow) as added:
        coll, _, _, errors = _translate(flow, text)
        catalog.register_errors(flow, f"#{coll.node.id}", errors)
    _label(added, "sql")
    return coll


query = sql


def create_view(flow: Dataflow, name: str, text: str | Collection) -> Collection:
    """Define (from SQL text, or register an existing `Collection`) view `name`."""
    from ..dataflow.collection import Collection
    from . import catalog

    if not isinstance(name, str) or not name.isidentifier():
        raise ConfigError(
            f"create_view(name={name!r}): a view name is an identifier (letters, digits, _)"
        )
    if flow.started and not flow.live:
        raise StateError(
            "create_view(): views must be defined before the first run() (or build the "
            "dataflow with Dataflow(live=True))"
        )
    if catalog.lookup(flow, name) is not None:
        raise PlanError(
            f"create_view({name!r}): a source or view with that name exists already "
            "(table names are case-insensitive)"
        )
    with _atomic(flow) as added:
        if isinstance(text, Collection):
            if text.flow is not flow:
                raise PlanError(
                    f"create_view({name!r}): the collection belongs to another dataflow"
                )
            coll, time, reads = text, None, frozenset()
        else:
            coll, time, reads, errors = _translate(flow, text, name)
            catalog.register_errors(flow, name, errors)
        catalog.register(flow, name, coll, time, reads)
    if not isinstance(text, Collection):
        _label(added, name)
    return coll


def explain(flow: Dataflow, text: str) -> str:
    """The operators a query becomes, one per line. They are added and removed again,
    so `flow` is unchanged (and a running dataflow may be asked too)."""
    with _atomic(flow, keep=False) as added:
        coll = _translate(flow, text)[0]
    lines = [node.describe() + f" -> {node.columns}" for node in added]
    if not lines:
        lines = [coll.node.describe() + f" -> {coll.columns}"]
    return "\n".join(lines)
