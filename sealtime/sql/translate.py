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

from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..columns import SYSTEM_COLUMNS, TIME
from . import catalog
from .checked import (
    checked_struct,
    classify,
    error_struct,
    failable_nodes,
    may_fail,
    only_where,
)
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
    #: the view's name (in its errors' ``view`` column)
    view: str = "sql"
    #: the rows its expressions failed on, per operator (`sealtime.sql.checked`)
    error_parts: list[Collection] = field(default_factory=list)
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

    # ------------------------------------------------------------------ checked evaluation
    def raw_of(self, rel: Relation) -> Column:
        """The row of `rel` as JSON (an error row's ``raw``)."""
        fields = [f for f in rel.visible if not f.virtual] or rel.fields
        named = [col_ref(f.physical).alias(f.name) for f in fields]
        return F.to_json(F.struct(*named)) if named else F.lit("{}")

    def compiler(self, rel: Relation, substitute: Any = None) -> Callable[[exp.Expr], Column]:
        """Compiles a node of this query over `rel` (errors at the node's position)."""
        return lambda n: compile_expr(n, rel, self.parsed, substitute)

    def _route_errors(
        self,
        rel: Relation,
        failed: Column,
        nodes: list[exp.Expr],
        compile_: Callable[[exp.Expr], Column],
    ) -> None:
        """Add to the view's errors the rows of `rel` where `failed` holds, classified by
        the first of the failable `nodes` that raises on its own."""
        schema = rel.collection.schema
        inner = [n for node in nodes for n in failable_nodes(node)]

        def types_of(operands: list[exp.Expr]) -> list[T.DataType]:
            return [f.dataType for f in self.probe_schema(schema, [compile_(o) for o in operands])]

        error, text = classify(inner, compile_, types_of)
        row = error_struct(self.view, error, text, self.raw_of(rel))
        self.error_parts.append(rel.collection.select(only_where(failed, row)))

    def evaluate(
        self,
        rel: Relation,
        items: list[tuple[exp.Expr | None, Column]],
        compile_: Callable[[exp.Expr], Column] | None = None,
    ) -> Collection:
        """``select`` of the named columns of `items` ``(node, column)`` over `rel`. When
        a node may raise (ANSI), the rows it raises on go to the view's errors and the
        others on, with Spark's values (`sealtime.sql.checked`)."""
        risky = [n for n, _ in items if n is not None and may_fail(n)]
        if not risky:
            return self.select_items(rel.collection, items)
        self.select_items(rel.collection, items)  # (Spark's analysis errors, at the item)
        s = checked_struct([c for _, c in items])
        out = rel.collection.select(only_where(s.isNotNull(), s))
        self._route_errors(rel, s.isNull(), risky, compile_ or self.compiler(rel))
        return out

    def checked_filter(
        self,
        rel: Relation,
        node: exp.Expr,
        condition: Column,
        compile_: Callable[[exp.Expr], Column] | None = None,
    ) -> Collection:
        """``filter(condition)`` over `rel`; rows the condition raises on go to the
        view's errors."""
        if not may_fail(node):
            return rel.collection.filter(condition)
        s = checked_struct([condition.alias("p")])
        out = rel.collection.filter(F.coalesce(s.getField("p"), F.lit(False)))
        self._route_errors(rel, s.isNull(), [node], compile_ or self.compiler(rel))
        return out

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
        if any(node.args.get(k) for k in ("order", "limit", "offset")) and isinstance(
            node, (exp.Select, exp.SetOperation, exp.Subquery)
        ):
            from . import limits

            return limits.translate(self, node)
        if isinstance(node, exp.Select):
            return self.select(node)
        if isinstance(node, exp.Subquery):
            self.check_modifiers(node)
            return self.query(node.this)
        if isinstance(node, exp.Union) and node.args.get("distinct"):
            self.check_modifiers(node)
            return self.distinct(self.union(node))
        if isinstance(node, exp.Union):
            return self.union(node)
        if isinstance(node, (exp.Intersect, exp.Except)):
            from . import setops

            self.check_modifiers(node)
            return setops.translate(self, node)
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
        """``UNION ALL`` chains (and the two sides of a ``UNION``, distinct after)."""
        self.check_modifiers(node)
        branches: list[exp.Expr] = []

        def flatten(n: exp.Expr, top: bool = False) -> None:
            if (
                isinstance(n, exp.Union)
                and not n.args.get("with_")
                and (top or not n.args.get("distinct"))
                and not any(n.args.get(k) for k in ("order", "limit", "offset"))
            ):
                self.check_modifiers(n)
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

        flatten(node, top=True)
        rels = [self.query(b) for b in branches]
        word = "UNION" if node.args.get("distinct") else "UNION ALL"
        names, colls, time = self.aligned(word, node, branches, rels)
        priority = self.fresh("__prio", names)
        out = colls[0].union(*colls[1:], priority_column=priority)
        return Relation(out, [Field(n, n) for n in names], time_column=time, priority=priority)

    def aligned(
        self, word: str, node: exp.Expr, branches: list[exp.Expr], rels: list[Relation]
    ) -> tuple[list[str], list[Collection], str | None]:
        """The branches of a set operation with the first one's column names and types
        Spark widens them to (or a refusal): their names, collections and common time
        column (None unless every branch has its time column at the same position)."""
        first = rels[0]
        names = [f.name for f in first.visible]
        columns: list[list[Column]] = [[] for _ in rels]
        for i, (branch, rel) in enumerate(zip(branches, rels)):
            if len(rel.visible) != len(names):
                raise self.error(
                    word,
                    f"branch {i + 1} has {len(rel.visible)} columns, the first has "
                    f"{len(names)}; {word} matches columns by position",
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
                        word,
                        f"column {j + 1} ({name!r}) has types "
                        f"{', '.join(t.simpleString() for t in types)} with no common type; "
                        "CAST them",
                        node.expression if isinstance(node.expression, exp.Expr) else node,
                        keyword=word.split()[0],
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
        return names, colls, time

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
            if inner is not None and topk.applies(self, node, inner):
                return topk.translate(self, node, from_.this, inner)
        if where is True:
            w = node.args.get("where")
            condition = w.this if w is not None else None
        else:
            condition = where or None
        pushed: set[int] = set()
        if prebuilt is None:
            rel, pushed = self.joined(node, condition if where is True else None)
        if condition is not None:
            rel = self.where(rel, condition, pushed)
        items = list(node.expressions)
        group = node.args.get("group")
        having = node.args.get("having")
        is_agg = (
            group is not None
            or having is not None
            or any(aggregate.is_aggregate(n) for i in items for n in aggregate.outer_nodes(i))
        )
        if is_agg:
            rel = aggregate.translate(self, node, rel)
        else:
            from . import over, subqueries

            rel, items = subqueries.scalars(self, rel, items)
            if any(isinstance(n, exp.Window) for i in items for n in i.walk()):
                rel, items = over.translate(self, rel, items)
            rel = self.project(items, rel)
        if distinct is not None:
            rel = self.distinct(rel)
        return rel

    def from_clause(self, node: exp.Select) -> Relation:
        """The relation of a SELECT's FROM item and its joins."""
        return self.joined(node, None)[0]

    def joined(self, node: exp.Select, condition: exp.Expr | None) -> tuple[Relation, set[int]]:
        """The relation of a SELECT's FROM item and its joins, each WHERE conjunct of
        `condition` that reads one side of a join applied to that side before the join
        (`pushable`); returns the relation and the ids of the conjuncts applied. Fewer
        rows reach the join and its arrangements keep fewer, with the same result: a
        conjunct on the left side of an inner or LEFT join, or on the right side of an
        inner join, filters the same rows before the join as after it. None is pushed
        when a RIGHT or FULL join pads a side with NULLs after it."""
        from_ = node.args["from_"]
        rel = self.from_item(from_.this)
        joins = node.args.get("joins") or []
        pending: list[exp.Expr] = []
        if all((j.side or "").upper() in ("", "LEFT") for j in joins):
            pending = [c for c in conjuncts(condition) if pushable(c)]
        pushed: set[int] = set()
        for j in joins:
            rel = self.join(rel, j, [c for c in pending if id(c) not in pushed], pushed)
        return rel, pushed

    def where(self, rel: Relation, condition: exp.Expr, pushed: Collection[int] = ()) -> Relation:
        """``WHERE condition``: plain conjuncts as one (checked) filter, subquery
        predicates as semi/anti-joins (`sealtime.sql.subqueries`), temporal conjuncts
        (``mz_now()``) as one temporal filter (`sealtime.sql.temporal`), in that order.
        The conjuncts whose ids are in `pushed` were applied below a join (`joined`)."""
        from . import subqueries, temporal

        plain: list[exp.Expr] = []
        predicates: list[exp.Expr] = []
        bounds: list[exp.Expr] = []
        for c in conjuncts(condition):
            if id(c) in pushed:
                continue
            if temporal.is_temporal(c):
                bounds.append(c)
            elif subqueries.is_predicate(c):
                predicates.append(c)
            else:
                plain.append(c)
        if plain:
            rel, plain = subqueries.scalars(self, rel, plain)
            if len(plain) == 1 or predicates or bounds:
                cond = plain[0]
                for c in plain[1:]:
                    cond = exp.and_(cond, c)
            else:
                cond = condition  # (the text as written: errors point into it)
                if pushed or any(s is not o for s, o in zip(plain, conjuncts(condition))):
                    cond = exp.and_(*plain)
            rel = self.filter(rel, cond, "WHERE")
        for c in predicates:
            rel = subqueries.predicate(self, rel, c)
        if bounds:
            rel = temporal.translate(self, rel, bounds)
        return rel

    def filter(self, rel: Relation, condition: exp.Expr, context: str) -> Relation:
        check_scalar(condition, self.parsed, context)
        cond = compile_expr(condition, rel, self.parsed)
        with spark_errors(self.parsed, condition, context):
            out = self.checked_filter(rel, condition, cond)
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
            # A second check with its own message: alike only in form to the one above.
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
            out = self.evaluate(rel, columns)
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
            "CUMULATE": "collection.cumulate(size, step)",
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
        if call.kind == "CUMULATE":
            out = rel.collection.cumulate(call.spec.size, call.spec.step)  # type: ignore[attr-defined]
        else:
            out = rel.collection.window(call.spec)
        fields = [f for f in rel.fields if f.name.lower() not in ("window_start", "window_end")]
        fields += [
            Field("window_start", "window_start", None, virtual=call.kind == "SESSION"),
            Field("window_end", "window_end", None, virtual=call.kind == "SESSION"),
        ]
        result = Relation(out, fields, rel.time_column, None, session_keys)
        return result.requalified(qualifier)

    # ------------------------------------------------------------------ JOIN
    def join(
        self,
        left: Relation,
        node: exp.Join,
        where: list[exp.Expr] = [],  # noqa: B006 (read only)
        pushed: set[int] | None = None,
    ) -> Relation:
        """``left <kind> JOIN <node>``: every kind (`sealtime.sql.joins`). The WHERE
        conjuncts `where` that read only one side it may filter (`joined`) filter that
        side first; their ids are added to `pushed`."""
        from . import joins

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
        on = node.args.get("on")
        using = node.args.get("using")
        how = {"LEFT": "left", "RIGHT": "right", "FULL": "full"}.get(side, "inner")
        if kind in ("SEMI", "ANTI") and how != "left" and side:
            raise self.error(
                f"{side} {kind} JOIN", f"write LEFT {kind} JOIN", right_node, keyword=side
            )
        right = self.from_item(right_node)
        left = self.strip(left)
        right = self.strip(right)
        cond = joins.Condition()
        using_right: set[str] = set()
        pre_left: list[exp.Expr] = []
        pre_right: list[exp.Expr] = []
        if using:
            for ident in using:
                c = exp.Column(this=ident.copy())
                lf = left.resolve(c, self.parsed)
                rf = right.resolve(c, self.parsed)
                cond.pairs.append(
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
                        cond.pairs.append((c.this, c.expression))
                        continue
                    if ls == {"R"} and rs == {"L"}:
                        cond.pairs.append((c.expression, c.this))
                        continue
                if sides <= {"R"} and how in ("left", "inner") and kind not in ("ANTI",):
                    pre_right.append(c)  # (a condition on the right side alone filters it)
                elif sides <= {"L"} and how in ("right", "inner") and kind not in ("SEMI", "ANTI"):
                    pre_left.append(c)
                else:
                    cond.residual.append(c)
            if how == "inner" and kind not in ("SEMI", "ANTI"):
                cond.interval = self._interval(cond, left, right)
        for c in pre_right:
            right = self.filter(right, c, "JOIN ... ON")
        for c in pre_left:
            left = self.filter(left, c, "JOIN ... ON")
        inner = how == "inner" and kind not in ("SEMI", "ANTI")
        for c in where:
            sides = self._reads(c, left, right)
            if sides is not None and sides <= {"L"}:
                left = self.filter(left, c, "WHERE")
            elif sides == {"R"} and inner:
                right = self.filter(right, c, "WHERE")
            else:
                continue
            if pushed is not None:
                pushed.add(id(c))
        if kind in ("SEMI", "ANTI"):
            return joins.semi_join(self, left, right, cond, anti=kind == "ANTI")
        rel = joins.join(self, left, right, cond, how, using_right)
        if using and how in ("right", "full"):
            rel = self._using_keys(rel, using, left, right, how)
        return rel

    def _using_keys(
        self, rel: Relation, using: list[exp.Expr], left: Relation, right: Relation, how: str
    ) -> Relation:
        """After a RIGHT or FULL JOIN ... USING: the unqualified key is the right side's
        (RIGHT) or the first non-NULL of both (FULL), as in Spark."""
        fields = list(rel.fields)
        extra: dict[str, Column] = {}
        n_left = len(left.fields)
        for ident in using:
            name = ident.name
            li = next(i for i, f in enumerate(fields[:n_left]) if f.matches(name, None))
            ri = n_left + next(
                i for i, f in enumerate(fields[n_left:]) if f.name.lower() == name.lower()
            )
            lf, rf = fields[li], fields[ri]
            if how == "right":
                target = rf.physical
            else:
                target = self.fresh("__u", rel.collection.columns + list(extra))
                extra[target] = F.coalesce(col_ref(lf.physical), col_ref(rf.physical))
            fields[li] = Field(lf.name, lf.physical, lf.qualifier, False, True)
            fields[ri] = Field(rf.name, rf.physical, rf.qualifier, False, True)
            fields.insert(li, Field(name, target, None))
            n_left += 1
        out = rel.collection.with_columns(extra) if extra else rel.collection
        return Relation(out, fields)

    def _interval(self, cond: Any, left: Relation, right: Relation) -> Any:
        """The interval-join bounds the residual conditions give, when they bound one
        side's time column by the other's on both sides (else None)."""
        from .joins import IntervalBounds
        from .tvf import interval_ms

        if left.time_column is None or right.time_column is None:
            return None
        lower: int | None = None
        upper: int | None = None

        def side_time(e: exp.Expr) -> str | None:
            """ "L"/"R" when `e` is that side's time column."""
            if not isinstance(e, exp.Column):
                return None
            for tag, rel in (("L", left), ("R", right)):
                found = rel.try_resolve(e)
                if len(found) == 1 and found[0].physical == rel.time_column:
                    return tag
            return None

        def offset(e: exp.Expr) -> tuple[str, int] | None:
            """``t``, ``t + x`` or ``t - x`` with `t` a time column, x ms or an interval."""
            if side_time(e) is not None:
                return side_time(e), 0  # type: ignore[return-value]
            if isinstance(e, (exp.Add, exp.Sub)) and side_time(e.this) is not None:
                amount = e.expression
                if isinstance(amount, exp.Literal) and not amount.is_string:
                    try:
                        ms = int(str(amount.this))
                    except ValueError:
                        return None
                else:
                    try:
                        ms = interval_ms(amount, self.parsed, "bound", allow_zero=True)
                    except SqlError:
                        return None
                return side_time(e.this), ms if isinstance(e, exp.Add) else -ms  # type: ignore[return-value]
            return None

        def bound(lhs: exp.Expr, rhs: exp.Expr, op: str) -> None:
            """Record ``lhs op rhs`` (op: <=, <, >=, >) when it bounds R's time by L's."""
            nonlocal lower, upper
            a, b = offset(lhs), offset(rhs)
            if a is None or b is None or a[0] == b[0]:
                return
            if a[0] == "L":  # flip to R on the left
                a, b = b, a
                op = {"<=": ">=", "<": ">", ">=": "<=", ">": "<"}[op]
            # R.t + a1 op L.t + b1  ->  R.t op L.t + (b1 - a1)
            d = b[1] - a[1]
            if op == "<=":
                upper = d if upper is None else min(upper, d)
            elif op == "<":
                upper = d - 1 if upper is None else min(upper, d - 1)
            elif op == ">=":
                lower = d if lower is None else max(lower, d)
            else:
                lower = d + 1 if lower is None else max(lower, d + 1)

        for c in cond.residual:
            if isinstance(c, exp.Between):
                bound(c.this, c.args["low"], ">=")
                bound(c.this, c.args["high"], "<=")
            elif isinstance(c, (exp.LTE, exp.LT, exp.GTE, exp.GT)):
                op = {exp.LTE: "<=", exp.LT: "<", exp.GTE: ">=", exp.GT: ">"}[type(c)]
                bound(c.this, c.expression, op)
        if lower is None or upper is None or lower > upper:
            return None
        return IntervalBounds(lower, upper)

    def _reads(self, node: exp.Expr, left: Relation, right: Relation) -> set[str] | None:
        """The sides (``L``, ``R``) whose columns `node` reads, or None when a column is
        of neither side (a later join's, an outer query's, a lambda's variable) or of
        both (the WHERE reports it)."""
        sides: set[str] = set()
        for c in node.find_all(exp.Column):
            in_l = bool(left.try_resolve(c))
            if isinstance(c.this, exp.Star) or in_l == bool(right.try_resolve(c)):
                return None
            sides.add("L" if in_l else "R")
        return sides

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


def pushable(node: exp.Expr) -> bool:
    """May WHERE conjunct `node` filter a join's input instead of its output? Only a
    plain, deterministic condition that cannot raise: a subquery, an aggregate, a
    window, ``mz_now()`` or a random function keeps its place, and so does a condition
    that may fail, whose errors name the joined row."""
    from .temporal import mentions_now

    kept = (
        exp.Subquery,
        exp.Select,
        exp.Exists,
        exp.AggFunc,
        exp.Window,
        exp.Rand,
        exp.Randn,
        exp.Uuid,
    )
    return node.find(*kept) is None and not mentions_now(node) and not may_fail(node)


def _ident(name: str | None) -> exp.Identifier | None:
    return exp.Identifier(this=name, quoted=True) if name else None
