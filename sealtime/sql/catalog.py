"""Tables SQL can name in a dataflow: its sources, their subsources and its views.

* a source added with ``flow.source("bids", ...)`` is table ``bids``; its event-time
  column (``time=``) is the table's time attribute;
* a subsource of a source with several outputs (`Nexmark`) is ``source.subsource``,
  e.g. ``nexmark.bid``;
* ``flow.create_view("name", "SELECT ...")`` registers ``name`` (a `Collection` may be
  registered too: ``flow.create_view("bids", nexmark["bid"])``);
* ``source.errors`` and ``source.late`` are a source's rejected and late records
  (``raw``, ``reason`` / the source's columns and ``reason``), ``view.errors`` the rows
  a view's expressions failed on (``view``, ``error``, ``reason``, ``raw``): relations
  like the others, for SELECT, views, sinks and SUBSCRIBE.

Names are case-insensitive, as in Spark. The registry lives on the `Dataflow` object.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..dataflow.collection import Collection
from ..errors import PlanError
from ..plan import Source

if TYPE_CHECKING:
    from ..dataflow.dataflow import Dataflow

__all__ = ["Table", "lookup", "register", "register_errors", "table_names", "temp_views"]


@dataclass
class Table:
    """A named collection and its time attribute (the column holding the logical time
    of every row, or None)."""

    name: str
    collection: Collection
    time_column: str | None = None
    #: the tables its query reads (a view's dependencies), by name
    reads: frozenset[str] = frozenset()


def _registry(flow: Dataflow) -> dict[str, Table]:
    return flow.sql_views


def _sources(flow: Dataflow) -> dict[str, Table]:
    from ..dataflow.dataflow import SourceCollection

    out = {}
    for node in flow.nodes:
        if isinstance(node, Source):
            collection = SourceCollection(flow, node)
            out[node.name.lower()] = Table(node.name, collection, node.time_column)
    return out


def _subsources(table: Table) -> list[str]:
    """The subsource names of a source's table (none for a view)."""
    node = table.collection.node
    return list((node.source.subsources or {}) if isinstance(node, Source) else ())


def register(
    flow: Dataflow,
    name: str,
    collection: Collection,
    time_column: str | None,
    reads: frozenset[str] = frozenset(),
) -> None:
    """Register a view; a name already used by a source or view is refused."""
    key = name.lower()
    if key in _registry(flow) or key in _sources(flow):
        raise PlanError(
            f"create_view({name!r}): a source or view with that name exists already "
            "(table names are case-insensitive)"
        )
    _registry(flow)[key] = Table(name, collection, time_column, reads)


def lookup(flow: Dataflow, name: str, db: str | None = None) -> Table | None:
    """The table ``name`` (or subsource ``db.name``), or None."""
    reg = _registry(flow)
    if db:
        key = f"{db.lower()}.{name.lower()}"
        if key in reg:
            return reg[key]
        source = _sources(flow).get(db.lower())
        if source is None:
            return None
        match = [s for s in _subsources(source) if s.lower() == name.lower()]
        if not match and name.lower() in ("errors", "late"):
            side = getattr(source.collection, name.lower())
            reg[key] = Table(f"{source.name}.{name.lower()}", side, None, frozenset({source.name}))
            return reg[key]
        if not match:
            return None
        sub = source.collection.subsource(match[0])
        time = source.time_column if source.time_column in sub.columns else None
        reg[key] = Table(f"{source.name}.{match[0]}", sub, time)
        return reg[key]
    if name.lower() in reg:
        return reg[name.lower()]
    return _sources(flow).get(name.lower())


def table_names(flow: Dataflow) -> list[str]:
    """Every name SQL can use in this dataflow (sources, subsources, views, and their
    errors and late records)."""
    names = [t.name for t in _sources(flow).values()]
    for t in _sources(flow).values():
        names += [f"{t.name}.{s}" for s in _subsources(t)]
        names += [f"{t.name}.errors", f"{t.name}.late"]
    names += [t.name for k, t in _registry(flow).items() if not k.startswith("#")]
    return sorted(set(names))


def register_errors(flow: Dataflow, view: str, errors: Collection) -> None:
    """Register `errors` as table ``view.errors`` (the rows the view's expressions
    failed on); an unnamed query's (``#<node id>``) is reachable through
    `sealtime.sql.errors_of` only."""
    name = f"{view}.errors"
    _registry(flow)[name.lower()] = Table(name, errors, None, frozenset({view}))


@contextmanager
def temp_views(spark: Any) -> Iterator[Callable[[exp.Table, Any, str], None]]:
    """For an ad-hoc query: ``read_from(node, frame, temp)`` registers the DataFrame
    `frame` as Spark's temporary view `temp` and points the table reference `node` at
    it (its old name kept as the alias); the views are dropped on leaving."""
    registered: list[str] = []

    def read_from(node: exp.Table, frame: Any, temp: str) -> None:
        frame.createOrReplaceTempView(temp)
        registered.append(temp)
        alias = node.alias or node.name
        node.replace(
            exp.Table(
                this=exp.to_identifier(temp),
                alias=exp.TableAlias(this=exp.to_identifier(alias)),
            )
        )

    try:
        yield read_from
    finally:
        for temp in registered:
            spark.catalog.dropTempView(temp)
