"""`Relation`: a `Collection` seen from SQL — its columns by SQL name and qualifier.

A relation maps the names a query may write (``price``, ``b.price``) to the physical
columns of a collection (which can differ: a join renames a clashing column of its right
side, a ``GROUP BY`` expression becomes a hidden column). It also carries what SQL
needs to know about the collection's logical time:

* `time_column`: the physical column whose value is every row's logical time (the
  event-time column of a source, kept by projections and filters); a window TVF's
  ``DESCRIPTOR`` must name it (or ``_time``, the logical time itself).
* `priority`: the hidden union-priority column of a ``UNION ALL`` (input 0 first), so a
  top-k downstream in the same query breaks ties by input order.

>>> f = Field("price", "price", "bids")
>>> f.matches("PRICE", None), f.matches("price", "b"), f.matches("price", "BIDS")
(True, False, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp

from ..dataflow.collection import Collection
from ..plan.windows import Session, WindowSpec
from .errors import SqlError
from .parse import Parsed

__all__ = ["Field", "Relation"]


@dataclass(frozen=True)
class Field:
    """One column a query can name."""

    name: str
    physical: str
    qualifier: str | None = None
    #: expanded by ``*`` (False for hidden helper columns and USING's right key)
    in_star: bool = True
    #: only ``q.name`` finds it (USING's right key), not ``name`` alone
    qualified_only: bool = False
    #: exists only after the aggregate/top-k that follows (SESSION's window columns)
    virtual: bool = False

    def matches(self, name: str, qualifier: str | None) -> bool:
        if self.name.lower() != name.lower():
            return False
        if qualifier is None:
            return not self.qualified_only
        return self.qualifier is not None and self.qualifier.lower() == qualifier.lower()


@dataclass
class Relation:
    """A collection with SQL names (see the module docstring)."""

    collection: Collection
    fields: list[Field]
    time_column: str | None = None
    priority: str | None = None
    #: SESSION(TABLE t PARTITION BY ...) keys (physical names); None = no session TVF
    session_keys: list[str] | None = field(default=None)

    @property
    def window(self) -> WindowSpec | None:
        """The window spec of the collection (set by a window TVF), or None."""
        return self.collection.node.window

    @property
    def session(self) -> bool:
        return isinstance(self.window, Session)

    @property
    def visible(self) -> list[Field]:
        return [f for f in self.fields if f.in_star]

    def requalified(self, qualifier: str | None) -> Relation:
        """The same relation with every column qualified by `qualifier` (a FROM alias)."""
        fields = [replace(f, qualifier=qualifier, qualified_only=False) for f in self.fields]
        return replace(self, fields=fields)

    def resolve(self, column: exp.Column, parsed: Parsed) -> Field:
        """The field `column` names; an unknown or ambiguous name is a `SqlError`."""
        name = column.name
        qualifier = column.table or None
        found = [f for f in self.fields if f.matches(name, qualifier)]
        # USING keys and the like: the same physical column under two qualifiers
        if len(found) > 1 and qualifier is None and len({f.physical for f in found}) == 1:
            found = found[:1]
        line, col = parsed.locate(column)
        shown = f"{qualifier}.{name}" if qualifier else name
        if not found:
            names = sorted(
                {f"{f.qualifier}.{f.name}" if f.qualifier else f.name for f in self.visible}
            )
            raise SqlError(
                "unknown column",
                f"no column {shown!r}; the columns here are {', '.join(names) or '(none)'}",
                line=line,
                col=col,
            )
        if len(found) > 1:
            where = ", ".join(sorted(f"{f.qualifier}.{f.name}" for f in found))
            raise SqlError(
                "ambiguous column",
                f"{shown!r} could be {where}; qualify it",
                line=line,
                col=col,
            )
        f = found[0]
        if f.virtual:
            raise SqlError(
                "session window column",
                f"{shown!r} of a SESSION window exists only after the GROUP BY (or top-k) "
                "that forms the sessions; use it in GROUP BY and the SELECT list of that "
                "aggregate",
                line=line,
                col=col,
                hint="collection.window(st.Session(gap)).aggregate(by=...)",
            )
        return f

    def try_resolve(self, column: exp.Column) -> list[Field]:
        """The fields `column` could name (no error)."""
        return [f for f in self.fields if f.matches(column.name, column.table or None)]
