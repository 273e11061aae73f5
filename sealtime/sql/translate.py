"""Translating a parsed query into dataflow operators on `Collection`.

Each construct becomes the operator that does the same in the Python API:

=========================================  ==============================================
SQL                                        operators
=========================================  ==============================================
``FROM t`` / ``FROM (subquery) a`` / CTE   the table's collection (CTEs are translated
                                           once, on first use)
``WHERE p``                                ``filter(p)``
``SELECT e AS x, *``                       ``select(...)`` (expressions by Spark)
``GROUP BY`` / ``HAVING``                  ``with_columns`` (computed keys/arguments),
                                           ``aggregate(by=..., ...)``, ``filter``,
                                           ``select`` (see `sealtime.sql.aggregate`)
``a [LEFT] JOIN b ON a.x = b.y AND ...``   ``select`` (key columns, renames) on each
                                           side, ``join(on=..., how=...)``
``q1 UNION ALL q2 ...``                    ``union(q2, ..., priority_column=...)``
``SELECT DISTINCT``                        ``distinct()``
``TUMBLE/HOP/SESSION(TABLE t, ...)``       ``window(st.Tumbling|Sliding|Session)``
``ROW_NUMBER() OVER (...) <= k``           ``top_k(by=..., order_by=..., k=...)``
=========================================  ==============================================

Anything else raises `SqlError` naming the construct and its position.

>>> # flow.sql("SELECT k, SUM(v) AS total FROM s WHERE v > 0 GROUP BY k")
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..columns import SYSTEM_COLUMNS, TIME
from . import catalog
from .errors import SqlError
from .expressions import (
    check_scalar,
    compile_expr,
    conjuncts,
    output_name,
    spark_errors,
)
from .parse import Parsed
from .relation import Field, Relation
from .tvf import WindowCall, window_call

if TYPE_CHECKING:
    from ..dataflow.collection import Collection
    from ..dataflow.dataflow import Dataflow

__all__ = ["Translator", "col_ref"]


#: clauses a view cannot have, with what to say about them
_MODIFIERS = {
    "order": (
        "ORDER BY",
        "ORDER",
        "a view is an unordered multiset; for the first k rows per group use "
        "ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) <= k",
        "Collection.top_k(by=..., order_by=..., k=...)",
    ),
    "limit": (
        "LIMIT",
        "LIMIT",
        "a view is an unordered multiset; for the first k rows use "
        "ROW_NUMBER() OVER (ORDER BY ...) <= k",
        "Collection.top_k(order_by=..., k=...)",
    ),
    "offset": ("OFFSET", "OFFSET", "a view is an unordered multiset", None),
    "sort": ("SORT BY", "SORT", "a view is an unordered multiset", None),
    "cluster": ("CLUSTER BY", "CLUSTER", "a view is an unordered multiset", None),
    "distribute": (
        "DISTRIBUTE BY",
        "DISTRIBUTE",
        "partitioning is the engine's business",
        None,
    ),
    "qualify": (
        "QUALIFY",
        "QUALIFY",
        "write the top-k pattern with a subquery: SELECT * FROM (SELECT ..., "
        "ROW_NUMBER() OVER (...) AS rn FROM t) WHERE rn <= k",
        "Collection.top_k(by=..., order_by=..., k=...)",
    ),
    "windows": ("WINDOW clause", "WINDOW", "named windows are not supported", None),
    "laterals": (
        "LATERAL VIEW",
        "LATERAL",
        "not supported in SQL views",
        "Collection.flat_map(name=F.explode(...))",
    ),
    "prewhere": ("PREWHERE", "PREWHERE", "not Spark SQL", None),
    "connect": ("CONNECT BY", "CONNECT", "not supported", None),
    "match": ("MATCH_RECOGNIZE", "MATCH_RECOGNIZE", "not supported", None),
    "locks": ("FOR UPDATE", "FOR", "not supported", None),
    "sample": ("TABLESAMPLE", "TABLESAMPLE", "sampling is not a function of the input", None),
}


def col_ref(physical: str) -> Column:
    """``F.col`` of a physical column name taken literally (dots are not struct access)."""
    return F.col("`" + physical.replace("`", "``") + "`")


@dataclass
class CteScope:
    """A CTE: translated on first use, in the scope it was defined in."""

    name: str
    query: exp.Expr
    chain: list[dict[str, CteScope]]
    relation: Relation | None = None
    busy: bool = False


@dataclass
class Translator:
    """Translates queries of one `Parsed` text into operators of `flow`."""

    flow: Dataflow
    parsed: Parsed
    scopes: list[dict[str, CteScope]] = field(default_factory=list)
    #: the tables (sources, subsources, views) the query reads, by their names
    reads: set[str] = field(default_factory=set)
    _counter: int = 0

    # ------------------------------------------------------------------ helpers
    def fresh(self, base: str, taken: Any = ()) -> str:
        """A new physical column name starting with `base` not in `taken`."""
        taken_l = {t.lower() for t in taken}
        while True:
            self._counter += 1
            name = f"{base}{self._counter}"
            if name.lower() not in taken_l:
                return name

    def error(
        self,
        construct: str,
        reason: str,
        node: exp.Expr | None,
        *,
        keyword: str | None = None,
        hint: str | None = None,
        fallback: exp.Expr | None = None,
    ) -> SqlError:
        line, col = self.parsed.locate(node, keyword=keyword, fallback=fallback)
        return SqlError(construct, reason, line=line, col=col, hint=hint)

    def select_items(
        self, collection: Collection, items: list[tuple[exp.Expr, Column]]
    ) -> Collection:
        """``collection.select`` of the columns of `items` (node, column); when Spark
        rejects it, the error names the first item Spark rejects on its own."""
        from pyspark.errors import PySparkException

        try:
            return collection.select(*[c for _, c in items])
        except PySparkException:
            for node, column in items:
                with spark_errors(self.parsed, node, "expression"):
                    self.probe_schema(collection.schema, [column])
            raise

    def probe_schema(self, schema: T.StructType, columns: list[Column]) -> T.StructType:
        """The schema `columns` would have over a frame of `schema` (no Spark job)."""
        empty = self.flow.spark.createDataFrame([], schema)
        return empty.select(*columns).schema

    # ------------------------------------------------------------------ queries
    def query(self, node: exp.Expr) -> Relation:
        """Translate a query (SELECT, set operation, parenthesized query)."""
        with_ = node.args.get("with_")
        if with_ is not None:
            if with_.args.get("recursive"):
                raise self.error(
                    "WITH RECURSIVE",
                    "recursive CTEs are not supported",
                    with_,
                    keyword="WITH",
                )
            scope: dict[str, CteScope] = {}
            for cte in with_.expressions:
                name = cte.alias
                if cte.args["alias"].columns:
                    raise self.error(
                        "CTE column list",
                        f"WITH {name}(cols) is not supported; alias the columns in its SELECT",
                        cte,
                        fallback=cte.this,
                    )
                scope[name.lower()] = CteScope(name, cte.this, [*self.scopes, dict(scope)])
            self.scopes.append(scope)
            try:
                return self._query(node)
            finally:
                self.scopes.pop()
        return self._query(node)

    def _query(self, node: exp.Expr) -> Relation:
        if isinstance(node, exp.Select):
            return self.select(node)
        if isinstance(node, exp.Subquery):
            self.check_modifiers(node)
            return self.query(node.this)
        if isinstance(node, exp.Union):
            return self.union(node)
        if isinstance(node, (exp.Intersect, exp.Except)):
            word = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
            raise self.error(
                word,
                f"{word} is not supported",
                node.expression,
                keyword=word if word != "EXCEPT" else "EXCEPT",
                hint="Collection.join / Collection.negate + union"
                if word == "EXCEPT"
                else "Collection.join",
            )
        raise self.error(
            f"{type(node).__name__} statement",
            "a view is defined by a query (SELECT ...)",
            node,
        )

    def check_modifiers(self, node: exp.Expr) -> None:
        for key, (construct, keyword, reason, hint) in _MODIFIERS.items():
            value = node.args.get(key)
            if value:
                target = value[0] if isinstance(value, list) else value
                raise self.error(construct, reason, target, keyword=keyword, hint=hint)

    # ------------------------------------------------------------------ set operations
    def union(self, node: exp.Union) -> Relation:
        self.check_modifiers(node)
        branches: list[exp.Expr] = []

        def flatten(n: exp.Expr) -> None:
            if isinstance(n, exp.Union) and not n.args.get("with_"):
                self.check_modifiers(n)
                if n.args.get("distinct"):
                    raise self.error(
                        "UNION",
                        "UNION (without ALL) removes duplicates; write UNION ALL, and SELECT "
                        "DISTINCT * FROM (... UNION ALL ...) if duplicates must go",
                        n.expression,
                        keyword="UNION",
                        hint="Collection.union(...).distinct()",
                    )
                if n.args.get("by_name"):
                    raise self.error(
                        "UNION BY NAME",
                        "not supported; select the columns in the same order",
                        n.expression,
                        keyword="UNION",
                    )
                flatten(n.this)
                flatten(n.expression)
            else:
                branches.append(n)

        flatten(node)
        rels = [self.query(b) for b in branches]
        first = rels[0]
        names = [f.name for f in first.visible]
        columns: list[list[Column]] = [[] for _ in rels]
        for i, (branch, rel) in enumerate(zip(branches, rels)):
            if len(rel.visible) != len(names):
                raise self.error(
                    "UNION ALL",
                    f"branch {i + 1} has {len(rel.visible)} columns, the first has "
                    f"{len(names)}; UNION ALL matches columns by position",
                    branch,
                    fallback=branch,
                )
        # column types: Spark widens to a common type; so does this (or refuses)
        all_types: list[list[T.DataType]] = []
        common_types: list[T.DataType] = []
        for j, name in enumerate(names):
            types = []
            for rel in rels:
                f = rel.visible[j]
                types.append({x.name: x.dataType for x in rel.collection.schema.fields}[f.physical])
            common = types[0]
            if any(t != common for t in types):
                fields = [T.StructField(f"c{i}", t, True) for i, t in enumerate(types)]
                try:
                    common = (
                        self.probe_schema(
                            T.StructType(fields),
                            [F.expr(f"coalesce({', '.join(f'c{i}' for i in range(len(types)))})")],
                        )
                        .fields[0]
                        .dataType
                    )
                except Exception as e:
                    raise self.error(
                        "UNION ALL",
                        f"column {j + 1} ({name!r}) has types "
                        f"{', '.join(t.simpleString() for t in types)} with no common type; "
                        "CAST them",
                        node.expression,
                        keyword="UNION",
                    ) from e
            all_types.append(types)
            common_types.append(common)
            for i, rel in enumerate(rels):
                f = rel.visible[j]
                c = col_ref(f.physical)
                if types[i] != common:
                    c = c.cast(common)
                columns[i].append(c.alias(name))
        colls = []
        for rel, cols, branch_types in zip(rels, columns, zip(*all_types)):
            identical = (
                rel.collection.columns == names and [f.physical for f in rel.visible] == names
            )
            if identical and all(t == c for t, c in zip(branch_types, common_types)):
                colls.append(rel.collection)  # already these columns, in this order
            else:
                colls.append(rel.collection.select(*cols))
        priority = self.fresh("__prio", names)
        out = colls[0].union(*colls[1:], priority_column=priority)
        time = None
        time_names = {
            (rel.visible.index(f) if f in rel.visible else None)
            for rel in rels
            for f in rel.fields
            if f.physical == rel.time_column
        }
        if all(rel.time_column for rel in rels) and len(time_names) == 1:
            (pos,) = time_names
            if pos is not None:
                time = names[pos]
        return Relation(out, [Field(n, n) for n in names], time_column=time, priority=priority)

    # ------------------------------------------------------------------ SELECT
    def select(
        self,
        node: exp.Select,
        *,
        prebuilt: Relation | None = None,
        where: exp.Expr | None | bool = True,
    ) -> Relation:
        """Translate a SELECT. `prebuilt` replaces its FROM clause, `where` (if not
        True) its WHERE condition (the top-k pattern uses both)."""
        from . import aggregate, topk

        self.check_modifiers(node)
        distinct = node.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            raise self.error("DISTINCT ON", "not Spark SQL", distinct.args["on"])
        if node.args.get("kind"):
            raise self.error(f"SELECT {node.args['kind']}", "not supported", node, keyword="SELECT")
        if prebuilt is not None:
            rel = prebuilt
        else:
            from_ = node.args.get("from_")
            if from_ is None:
                raise self.error(
                    "SELECT without FROM",
                    "a view reads sources or views; constant rows need a source (st.sources.Rows)",
                    node,
                    keyword="SELECT",
                )
            joins = node.args.get("joins") or []
            inner = None if joins else topk.candidate(self, from_.this)
            if inner is not None:
                return topk.translate(self, node, from_.this, inner)
            rel = self.from_item(from_.this)
            for j in joins:
                rel = self.join(rel, j)
        if where is True:
            w = node.args.get("where")
            condition = w.this if w is not None else None
        else:
            condition = where or None
        if condition is not None:
            rel = self.filter(rel, condition, "WHERE")
        items = list(node.expressions)
        group = node.args.get("group")
        having = node.args.get("having")
        is_agg = (
            group is not None
            or having is not None
            or any(
                isinstance(n, exp.AggFunc) and not n.find_ancestor(exp.Window)
                for i in items
                for n in i.walk()
            )
        )
        if is_agg:
            rel = aggregate.translate(self, node, rel)
        else:
            rel = self.project(items, rel)
        if distinct is not None:
            rel = self.distinct(rel)
        return rel

    def filter(self, rel: Relation, condition: exp.Expr, context: str) -> Relation:
        check_scalar(condition, self.parsed, context)
        cond = compile_expr(condition, rel, self.parsed)
        with spark_errors(self.parsed, condition, context):
            out = rel.collection.filter(cond)
        return Relation(out, rel.fields, rel.time_column, rel.priority, rel.session_keys)

    def expand(self, items: list[exp.Expr], rel: Relation) -> list[tuple[str, exp.Expr]]:
        """SELECT items with ``*`` and ``t.*`` expanded: (output name, expression)."""
        out: list[tuple[str, exp.Expr]] = []
        for item in items:
            if isinstance(item, exp.Star) or (
                isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
            ):
                for k in ("except_", "except", "replace", "rename"):
                    if item.args.get(k) or (
                        isinstance(item.this, exp.Expr) and item.this.args.get(k)
                    ):
                        raise self.error("SELECT * EXCEPT", "not supported", item, keyword="*")
                qualifier = item.table if isinstance(item, exp.Column) else None
                fields = [
                    f
                    for f in rel.visible
                    if qualifier is None
                    or (f.qualifier is not None and f.qualifier.lower() == qualifier.lower())
                ]
                if qualifier and not fields:
                    raise self.error(
                        "unknown table",
                        f"{qualifier}.* names no table of this FROM clause",
                        item,
                        fallback=item,
                    )
                for f in fields:
                    if f.virtual:
                        continue
                    col = exp.Column(
                        this=exp.Identifier(this=f.name, quoted=True),
                        table=exp.Identifier(this=f.qualifier, quoted=True)
                        if f.qualifier
                        else None,
                    )
                    out.append((f.name, col))
            else:
                out.append((output_name(item), item.this if isinstance(item, exp.Alias) else item))
        return out

    def check_names(self, names: list[str], items: list[exp.Expr]) -> None:
        seen: dict[str, int] = {}
        for i, name in enumerate(names):
            item = items[min(i, len(items) - 1)] if items else None
            if name.lower() in SYSTEM_COLUMNS:
                raise self.error(
                    "reserved column name",
                    f"{name!r} is a system column of every collection; alias it",
                    item,
                    fallback=item,
                )
            if name.lower() in seen:
                raise self.error(
                    "duplicate column name",
                    f"the view would have two columns named {name!r}; alias one of them",
                    item,
                    fallback=item,
                )
            seen[name.lower()] = i

    def project(self, items: list[exp.Expr], rel: Relation) -> Relation:
        """SELECT items (no aggregates) over `rel`: one ``select``."""
        expanded = self.expand(items, rel)
        names = [n for n, _ in expanded]
        self.check_names(names, items)
        columns: list[tuple[exp.Expr, Column]] = []
        time = None
        for name, e in expanded:
            check_scalar(e, self.parsed, "SELECT")
            if isinstance(e, exp.Column):
                f = rel.resolve(e, self.parsed)
                columns.append((e, col_ref(f.physical).alias(name)))
                if f.physical == rel.time_column and time is None:
                    time = name
            else:
                columns.append((e, compile_expr(e, rel, self.parsed).alias(name)))
        priority = rel.priority
        if priority is not None:
            if priority.lower() in {n.lower() for n in names}:
                priority = None
            else:
                columns.append((items[0], col_ref(priority)))
        with spark_errors(self.parsed, items[0] if items else None, "SELECT"):
            out = self.select_items(rel.collection, columns)
        return Relation(out, [Field(n, n) for n in names], time, priority)

    def strip(self, rel: Relation) -> Relation:
        """`rel` without its hidden priority column (before set-based operators)."""
        if rel.priority is None:
            return rel
        keep = [c for c in rel.collection.columns if c != rel.priority]
        out = rel.collection.select(*[col_ref(c) for c in keep])
        return Relation(out, rel.fields, rel.time_column, None)

    def distinct(self, rel: Relation) -> Relation:
        rel = self.strip(rel)
        return Relation(rel.collection.distinct(), rel.fields)

    # ------------------------------------------------------------------ FROM
    def from_item(self, node: exp.Expr) -> Relation:
        if isinstance(node, exp.Table):
            for key in ("pivots", "laterals", "joins"):
                if node.args.get(key):
                    raise self.error(key.upper().rstrip("S"), "not supported", node)
            if node.args.get("sample"):
                raise self.error(
                    "TABLESAMPLE",
                    "sampling is not a function of the input",
                    node.args["sample"],
                    keyword="TABLESAMPLE",
                )
            call = window_call(node, self.parsed)
            if call is not None:
                return self.window_table(call, node.alias or call.table.name)
            if not isinstance(node.this, exp.Identifier):
                what = node.this.sql(dialect="spark") if node.this is not None else "?"
                raise self.error(
                    "table function",
                    f"{what} is not a table; FROM takes tables, subqueries and the window "
                    "functions TUMBLE, HOP and SESSION",
                    node.this,
                    fallback=node,
                )
            if node.args.get("catalog"):
                raise self.error(
                    "catalog-qualified table", "use the table's name", node, fallback=node
                )
            rel = self.table(node.name, node.args.get("db") and node.db, node)
            return rel.requalified(node.alias or node.name)
        if isinstance(node, exp.Subquery):
            if node.args.get("pivots"):
                raise self.error("PIVOT", "not supported", node.args["pivots"][0])
            rel = self.query(node.this)
            self.check_modifiers(node)
            alias = node.alias or None
            if node.args.get("alias") is not None and node.args["alias"].columns:
                raise self.error(
                    "subquery column list",
                    "alias the columns inside the subquery instead",
                    node.args["alias"],
                    fallback=node,
                )
            return rel.requalified(alias)
        if isinstance(node, exp.Values):
            raise self.error(
                "VALUES",
                "constant tables are not supported; put the rows in a source (st.sources.Rows)",
                node,
                keyword="VALUES",
            )
        construct = {exp.Unnest: "UNNEST", exp.Lateral: "LATERAL"}.get(type(node), "FROM item")
        raise self.error(
            construct,
            f"{node.sql(dialect='spark')!r} is not supported in FROM",
            node,
            fallback=node,
        )

    def table(self, name: str, db: str | None, node: exp.Expr) -> Relation:
        """The relation of a table name: a CTE in scope, a view or a source."""
        if not db:
            for scope in reversed(self.scopes):
                cte = scope.get(name.lower())
                if cte is not None:
                    return self.cte(cte, node)
        table = catalog.lookup(self.flow, name, db)
        if table is None:
            full = f"{db}.{name}" if db else name
            known = catalog.table_names(self.flow)
            ctes = sorted({c.name for s in self.scopes for c in s.values()})
            raise self.error(
                "unknown table",
                f"no table {full!r}; the tables are {', '.join(known + ctes) or '(none)'} "
                "(sources by their names, views made with create_view)",
                node,
                fallback=node,
            )
        self.reads.add(table.name)
        col = table.collection
        fields = [Field(c, c, table.name) for c in col.columns]
        return Relation(col, fields, time_column=table.time_column)

    def cte(self, cte: CteScope, node: exp.Expr) -> Relation:
        if cte.relation is None:
            if cte.busy:
                raise self.error(
                    "recursive CTE", f"{cte.name!r} refers to itself", node, fallback=node
                )
            cte.busy = True
            saved, self.scopes = self.scopes, cte.chain
            try:
                cte.relation = self.query(cte.query)
            finally:
                self.scopes = saved
                cte.busy = False
        return cte.relation

    def window_table(self, call: WindowCall, qualifier: str) -> Relation:
        """``TUMBLE/HOP/SESSION(TABLE t, DESCRIPTOR(ts), ...)`` -> ``t.window(spec)``."""
        hint = {
            "TUMBLE": "collection.window(st.Tumbling(size))",
            "HOP": "collection.window(st.Sliding(size, slide))",
            "SESSION": "collection.window(st.Session(gap))",
        }[call.kind]
        rel = self.from_item(call.table)
        if rel.window is not None:
            raise self.error(
                f"{call.kind} window",
                f"table {call.table.name!r} is windowed already",
                call.table,
                fallback=call.node,
            )
        if call.descriptor.lower() != TIME:
            found = rel.try_resolve(exp.Column(this=exp.Identifier(this=call.descriptor)))
            if not found:
                rel.resolve(call.descriptor_node, self.parsed)  # raises "unknown column"
            if found[0].physical != rel.time_column:
                if rel.time_column is None:
                    why = (
                        f"table {call.table.name!r} has no event-time column (an ingestion-time "
                        "source, or a view whose rows' times are not a column of theirs)"
                    )
                else:
                    tname = next(
                        (f.name for f in rel.fields if f.physical == rel.time_column),
                        rel.time_column,
                    )
                    why = f"the event-time column of table {call.table.name!r} is {tname!r}"
                raise self.error(
                    f"{call.kind} window DESCRIPTOR",
                    f"windows are assigned from the rows' logical time; {call.descriptor!r} is "
                    f"not it: {why}. Use DESCRIPTOR of the source's time= column, or "
                    "DESCRIPTOR(_time) for the logical time itself",
                    call.descriptor_node,
                    hint=hint,
                )
        session_keys: list[str] | None = None
        if call.kind == "SESSION":
            session_keys = [rel.resolve(c, self.parsed).physical for c in call.partition]
        rel = self.strip(rel)
        out = rel.collection.window(call.spec)
        fields = [f for f in rel.fields if f.name.lower() not in ("window_start", "window_end")]
        fields += [
            Field("window_start", "window_start", None, virtual=call.kind == "SESSION"),
            Field("window_end", "window_end", None, virtual=call.kind == "SESSION"),
        ]
        result = Relation(out, fields, rel.time_column, None, session_keys)
        return result.requalified(qualifier)

    # ------------------------------------------------------------------ JOIN
    def join(self, left: Relation, node: exp.Join) -> Relation:
        side = (node.side or "").upper()
        kind = (node.kind or "").upper()
        right_node = node.this
        if node.method:
            raise self.error(
                f"{node.method.upper()} JOIN",
                "name the join columns with USING (...) or ON",
                right_node,
                keyword=node.method.upper(),
                hint="Collection.join(other, on=[...])",
            )
        if kind in ("SEMI", "ANTI"):
            raise self.error(
                f"{side + ' ' if side else ''}{kind} JOIN",
                "not supported; an INNER JOIN with a DISTINCT subquery of the other side "
                "does a semi-join",
                right_node,
                keyword=side or kind,
                hint="Collection.join(other.select(keys).distinct(), on=keys)",
            )
        if side in ("RIGHT", "FULL"):
            hint = (
                "swap the tables and use LEFT JOIN; Collection.join(other, on=..., how='left')"
                if side == "RIGHT"
                else None
            )
            raise self.error(
                f"{side} JOIN",
                f"{side} OUTER joins are not supported; INNER and LEFT are",
                right_node,
                keyword=side,
                hint=hint,
            )
        on = node.args.get("on")
        using = node.args.get("using")
        start = self.parsed.start_of(right_node)
        before = [tok for tok in self.parsed.tokens if start is not None and tok.start < start]
        if kind == "CROSS" and before and before[-1].text == ",":
            raise self.error(
                "comma join",
                "FROM a, b is a cross join; only equi-joins are supported: "
                "JOIN ... ON a.x = b.y [AND ...] or USING (...)",
                right_node,
                keyword=",",
                hint="Collection.join(other, on=[...])",
            )
        if kind == "CROSS" or (on is None and not using):
            raise self.error(
                "CROSS JOIN" if kind == "CROSS" else "join without ON",
                "only equi-joins are supported: JOIN ... ON a.x = b.y [AND ...] or USING (...)",
                right_node,
                keyword="CROSS" if kind == "CROSS" else "JOIN",
                fallback=right_node,
                hint="Collection.join(other, on=[...])",
            )
        how = "left" if side == "LEFT" else "inner"
        right = self.from_item(right_node)
        left = self.strip(left)
        right = self.strip(right)
        pairs: list[tuple[exp.Expr, exp.Expr]] = []
        post: list[exp.Expr] = []
        pre_right: list[exp.Expr] = []
        using_right: set[str] = set()
        if using:
            for ident in using:
                c = exp.Column(this=ident.copy())
                lf = left.resolve(c, self.parsed)
                rf = right.resolve(c, self.parsed)
                pairs.append(
                    (
                        exp.Column(this=exp.Identifier(this=lf.name), table=_ident(lf.qualifier)),
                        exp.Column(this=exp.Identifier(this=rf.name), table=_ident(rf.qualifier)),
                    )
                )
                using_right.add(rf.physical)
        else:
            for c in conjuncts(on):
                check_scalar(c, self.parsed, "JOIN ... ON")
                sides = self._sides(c, left, right)
                if isinstance(c, exp.EQ):
                    ls = self._sides(c.this, left, right)
                    rs = self._sides(c.expression, left, right)
                    if ls == {"L"} and rs == {"R"}:
                        pairs.append((c.this, c.expression))
                        continue
                    if ls == {"R"} and rs == {"L"}:
                        pairs.append((c.expression, c.this))
                        continue
                if how == "inner":
                    post.append(c)
                elif sides <= {"R"}:
                    pre_right.append(c)
                else:
                    raise self.error(
                        "LEFT JOIN condition",
                        f"{c.sql(dialect='spark')!r} is not an equality between the two "
                        "sides nor a condition on the right side alone; a LEFT JOIN keeps "
                        "every left row, so it cannot be applied as a filter",
                        c,
                        fallback=c,
                        hint="Collection.join(other, on=[...], how='left')",
                    )
            if not pairs:
                raise self.error(
                    "non-equi join",
                    "the ON condition has no equality between a column expression of each "
                    "side; only equi-joins are supported",
                    on,
                    keyword="ON",
                    hint="Collection.join(other, on=[...])",
                )
        for c in pre_right:
            right = self.filter(right, c, "JOIN ... ON")
        # physical names: left keeps its own; right renames clashes; keys are fresh
        left_phys = list(dict.fromkeys(f.physical for f in left.fields))
        right_phys = list(dict.fromkeys(f.physical for f in right.fields))
        taken = set(left_phys) | set(right_phys)
        rename = {}
        for p in right_phys:
            rename[p] = self.fresh(f"{p}_", taken | set(rename.values())) if p in left_phys else p
        keys = [self.fresh("__k", taken | set(rename.values())) for _ in pairs]
        lkeys, rkeys = [], []
        for le, re_ in pairs:
            lkeys.append(compile_expr(le, left, self.parsed))
            rkeys.append(compile_expr(re_, right, self.parsed))
        ltypes = self.probe_schema(left.collection.schema, lkeys)
        rtypes = self.probe_schema(right.collection.schema, rkeys)
        for i, (lt, rt) in enumerate(zip(ltypes.fields, rtypes.fields)):
            common = lt.dataType
            if lt.dataType != rt.dataType:
                numeric = isinstance(lt.dataType, T.NumericType) and isinstance(
                    rt.dataType, T.NumericType
                )
                if not numeric:
                    le, _ = pairs[i]
                    raise self.error(
                        "join key types",
                        f"{pairs[i][0].sql(dialect='spark')} is {lt.dataType.simpleString()} "
                        f"and {pairs[i][1].sql(dialect='spark')} is "
                        f"{rt.dataType.simpleString()}; CAST one side to the other's type",
                        le,
                        fallback=le,
                    )
                common = (
                    self.probe_schema(
                        T.StructType(
                            [T.StructField("a", lt.dataType), T.StructField("b", rt.dataType)]
                        ),
                        [F.expr("coalesce(a, b)")],
                    )
                    .fields[0]
                    .dataType
                )
            lkeys[i] = (lkeys[i] if lt.dataType == common else lkeys[i].cast(common)).alias(keys[i])
            rkeys[i] = (rkeys[i] if rt.dataType == common else rkeys[i].cast(common)).alias(keys[i])
        lcol = left.collection.select(*[col_ref(p) for p in left_phys], *lkeys)
        rcol = right.collection.select(*[col_ref(p).alias(rename[p]) for p in right_phys], *rkeys)
        joined = lcol.join(rcol, on=keys, how=how)
        fields = list(left.fields)
        for f in right.fields:
            g = Field(f.name, rename[f.physical], f.qualifier, f.in_star, f.qualified_only)
            if f.physical in using_right:
                g = Field(g.name, g.physical, g.qualifier, in_star=False, qualified_only=True)
            fields.append(g)
        rel = Relation(joined, fields)
        for c in post:
            rel = self.filter(rel, c, "JOIN ... ON")
        return rel

    def _sides(self, node: exp.Expr, left: Relation, right: Relation) -> set[str]:
        sides: set[str] = set()
        for c in node.find_all(exp.Column):
            if isinstance(c.this, exp.Star):
                continue
            in_l = bool(left.try_resolve(c))
            in_r = bool(right.try_resolve(c))
            if in_l and in_r:
                raise self.error(
                    "ambiguous column",
                    f"{c.sql(dialect='spark')!r} is a column of both sides; qualify it",
                    c,
                    fallback=c,
                )
            if not in_l and not in_r:
                both = Relation(left.collection, left.fields + right.fields)
                both.resolve(c, self.parsed)  # raises "unknown column"
            sides.add("L" if in_l else "R")
        return sides


def _ident(name: str | None) -> exp.Identifier | None:
    return exp.Identifier(this=name, quoted=True) if name else None
