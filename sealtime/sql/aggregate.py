"""``GROUP BY`` / ``HAVING`` compiled to `Collection.aggregate`.

A grouped SELECT becomes up to four operators:

1. ``with_columns``: hidden columns for group keys and aggregate arguments that are
   expressions (``GROUP BY upper(k)``, ``SUM(v * 2)``) and ``COUNT(x)``'s non-null flag;
2. ``aggregate(by=keys, __aggN=st.sum(...), ...)``: one aggregate per distinct call
   found in the SELECT list *and* in HAVING (so an aggregate used only in HAVING is a
   hidden column, dropped by the final projection); over a window TVF the window
   columns are part of the key and each window is emitted once, when sealed;
3. ``filter(HAVING)``;
4. ``select``: the SELECT items with every aggregate call and group expression
   replaced by its column (so ``SUM(a) / COUNT(*)`` is an expression over two
   aggregate columns), each aggregate cast to the type Spark gives it.

Aggregates: ``SUM``, ``COUNT(*)``, ``COUNT(x)`` (non-null values: a sum of 0/1),
``COUNT(DISTINCT x)``, ``MIN``, ``MAX``, ``AVG``. A grouped SELECT must have GROUP BY:
Spark answers an aggregate without GROUP BY with one row even over no input, which a
collection of groups cannot give.

>>> from sealtime.sql.parse import parse
>>> p = parse("SELECT k, SUM(v) / COUNT(*) AS mean FROM t GROUP BY k HAVING MAX(v) > 2")
>>> [agg.sql("spark") for agg in aggregate_calls(p.tree, p)]
['SUM(v)', 'COUNT(*)', 'MAX(v)']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from sqlglot import exp

from ..plan import aggregates as A
from .expressions import check_scalar, compile_expr, function_name, quoted, spark_errors
from .parse import Parsed
from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from .translate import Translator

__all__ = ["aggregate_calls", "translate"]

_KINDS = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg", exp.Count: "count"}
_HINT = "Collection.aggregate(by=..., name=st.sum|count|min|max|avg|count_distinct(...))"
_WINDOW_COLS = ("window_start", "window_end")


def aggregate_calls(select: exp.Select, parsed: Parsed) -> list[exp.Expr]:
    """The distinct aggregate calls of the SELECT list and HAVING, in order."""
    found: list[exp.Expr] = []
    places = list(select.expressions)
    having = select.args.get("having")
    if having is not None:
        places.append(having.this)
    for place in places:
        for n in place.walk():
            if isinstance(n, exp.AggFunc) and n.find_ancestor(exp.Window) is None:
                outer = n.parent
                while outer is not None and outer is not place.parent:
                    if isinstance(outer, exp.AggFunc):
                        line, col = parsed.locate(n)
                        from .errors import SqlError

                        raise SqlError(
                            "nested aggregate",
                            f"{n.sql('spark')} inside {outer.sql('spark')}",
                            line=line,
                            col=col,
                        )
                    outer = outer.parent
                if not any(n == f for f in found):
                    found.append(n)
    return found


def translate(tr: Translator, node: exp.Select, rel: Relation) -> Relation:
    """Translate the grouped SELECT `node` over `rel` (its FROM and WHERE applied)."""
    parsed = tr.parsed
    items = list(node.expressions)
    group = node.args.get("group")
    for key in ("rollup", "cube", "grouping_sets", "totals"):
        if group is not None and group.args.get(key):
            raise tr.error(
                f"GROUP BY {key.upper().replace('_', ' ')}",
                "not supported; write one GROUP BY per grouping and UNION ALL them",
                group,
                keyword="GROUP",
            )
    group_exprs = list(group.expressions) if group is not None else []
    for g in group_exprs:
        fname = function_name(g) or ""
        if fname.replace("_", " ") in ("ROLLUP", "CUBE", "GROUPING SETS") or isinstance(
            g, (exp.Rollup, exp.Cube, exp.GroupingSets)
        ):
            raise tr.error(
                f"GROUP BY {fname.replace('_', ' ') or type(g).__name__.upper()}",
                "not supported; write one GROUP BY per grouping and UNION ALL them",
                group,
                keyword="GROUP",
            )
    if not group_exprs:
        anchor = next((n for i in items for n in i.walk() if isinstance(n, exp.AggFunc)), None)
        raise tr.error(
            "aggregate without GROUP BY",
            "Spark returns one row for an aggregate over no rows (COUNT(*) = 0), which a "
            "differential view of groups cannot give; add GROUP BY (e.g. a key column)",
            anchor or node.args.get("having") or node,
            keyword=None,
            fallback=node,
            hint=_HINT,
        )
    aliases = {i.alias.lower(): i.this for i in items if isinstance(i, exp.Alias) and i.alias}
    # ---- group keys
    resolved: list[exp.Expr] = []
    for g in group_exprs:
        if isinstance(g, exp.Literal) and not g.is_string:
            n = int(g.this)
            if not 1 <= n <= len(items):
                raise tr.error("GROUP BY ordinal", f"there is no SELECT item {n}", g)
            target = items[n - 1]
            g = target.this if isinstance(target, exp.Alias) else target
        elif (
            isinstance(g, exp.Column)
            and not g.table
            and not rel.try_resolve(g)
            and g.name.lower() in aliases
        ):
            g = aliases[g.name.lower()]
        if any(isinstance(n, exp.AggFunc) for n in g.walk()):
            raise tr.error("aggregate in GROUP BY", "group by columns or expressions", g)
        check_scalar(g, parsed, "GROUP BY")
        resolved.append(g)
    windowed = rel.window is not None
    pre: dict[str, Column] = {}
    keys: list[tuple[exp.Expr, str]] = []  # (expression, physical column)
    window_keys: set[str] = set()
    for g in resolved:
        if (
            windowed
            and isinstance(g, exp.Column)
            and g.name.lower() in _WINDOW_COLS
            and any(f.physical == g.name.lower() for f in rel.try_resolve(g))
        ):
            window_keys.add(g.name.lower())
            keys.append((g, g.name.lower()))
        elif isinstance(g, exp.Column):
            keys.append((g, rel.resolve(g, parsed).physical))
        else:
            name = tr.fresh("__g", rel.collection.columns)
            pre[name] = compile_expr(g, rel, parsed)
            keys.append((g, name))
    if windowed and window_keys != set(_WINDOW_COLS):
        raise tr.error(
            "GROUP BY over a window",
            "an aggregate over a window TVF must group by window_start and window_end "
            "(each window is emitted once, when it is sealed)",
            group,
            keyword="GROUP",
            hint="collection.window(spec).aggregate(by=...)",
        )
    by = list(dict.fromkeys(p for _, p in keys if p not in _WINDOW_COLS))
    if rel.session:
        wanted = rel.session_keys or []
        if set(by) != set(wanted):
            shown = [f.name for f in rel.fields if f.physical in wanted]
            raise tr.error(
                "GROUP BY over SESSION",
                "sessions are formed per key of the aggregate, so GROUP BY must be "
                "window_start, window_end and exactly the PARTITION BY columns of SESSION "
                f"({', '.join(shown) or 'none'})",
                group,
                keyword="GROUP",
                hint="collection.window(st.Session(gap)).aggregate(by=...)",
            )
    # ---- aggregates
    calls = aggregate_calls(node, parsed)
    aggs: dict[str, A.Aggregate] = {}
    spark_aggs: dict[str, str] = {}
    names: list[tuple[exp.Expr, str]] = []
    taken = set(rel.collection.columns) | set(pre)
    for call in calls:
        kind = next((k for cls, k in _KINDS.items() if type(call) is cls), None)
        fname = function_name(call) or type(call).__name__.upper()
        if kind is None:
            raise tr.error(
                f"aggregate {fname}",
                "not supported; the aggregates are SUM, COUNT, COUNT(DISTINCT), MIN, MAX, AVG",
                call,
                hint=_HINT,
            )
        if isinstance(call.parent, exp.Filter) or call.find_ancestor(exp.Filter) is not None:
            raise tr.error(
                f"{fname}(...) FILTER",
                "aggregate FILTER clauses are not supported; use SUM(CASE WHEN ... END)",
                call,
            )
        arg = call.this
        out = tr.fresh("__agg", taken)
        taken.add(out)
        distinct = isinstance(arg, exp.Distinct)
        if distinct and kind != "count":
            raise tr.error(
                f"{fname}(DISTINCT ...)",
                "only COUNT(DISTINCT x) is supported; for others take DISTINCT rows in a "
                "subquery first",
                call,
                hint=_HINT,
            )
        if kind == "count" and isinstance(arg, exp.Star):
            aggs[out] = A.count()
            spark_aggs[out] = "count(1)"
        else:
            if distinct:
                if len(arg.expressions) != 1:
                    raise tr.error(
                        "COUNT(DISTINCT a, b)",
                        "count the distinct values of one expression (e.g. a struct)",
                        call,
                        hint="st.count_distinct(column)",
                    )
                arg = arg.expressions[0]
            check_scalar(arg, parsed, f"{fname}(...)")
            column: str | None = None
            if isinstance(arg, exp.Column):
                column = _resolve_arg(tr, rel, arg).physical
                arg_col = col_ref(column)
            else:
                arg_col = compile_expr(arg, rel, parsed)
            if kind == "count" and not distinct:
                # COUNT(x) counts non-null values: the sum of a 0/1 flag
                flag = tr.fresh("__a", taken)
                taken.add(flag)
                pre[flag] = F.when(arg_col.isNull(), F.lit(0)).otherwise(F.lit(1))
                aggs[out] = A.sum(flag)
                spark_aggs[out] = "count(1)"
            else:
                if column is None:
                    column = tr.fresh("__a", taken)
                    taken.add(column)
                    pre[column] = arg_col
                agg_kind = "count_distinct" if distinct else kind
                aggs[out] = A.Aggregate(agg_kind, column)
                spark_aggs[out] = (
                    f"count(DISTINCT `{column}`)" if distinct else f"{kind}(`{column}`)"
                )
        names.append((call, out))
    if not aggs:  # GROUP BY without aggregates: the groups (an unused count)
        aggs[tr.fresh("__agg", taken)] = A.count()
    source = rel.collection
    want = {}
    with spark_errors(parsed, group, "GROUP BY"):
        if pre:
            source = source.with_columns(pre)
        if spark_aggs:
            # the type Spark gives each aggregate (cast to it after the aggregate)
            empty = tr.flow.spark.createDataFrame([], source.schema)
            want = {
                f.name: f.dataType
                for f in empty.agg(*[F.expr(t).alias(n) for n, t in spark_aggs.items()]).schema
            }
    try:
        out = source.aggregate(by=by or None, **aggs)
    except (TypeError, ValueError) as e:
        raise tr.error(
            "aggregate", str(e), calls[0] if calls else group, fallback=group, hint=_HINT
        ) from e
    got = {f.name: f.dataType for f in out.schema.fields}
    casts = {n: col_ref(n).cast(t) for n, t in want.items() if got.get(n) != t}
    if casts:
        out = out.with_columns(casts)
    # ---- the relation after the aggregate: group keys and window columns by name
    fields: list[Field] = []
    for g, phys in keys:
        if isinstance(g, exp.Column):
            for f in rel.try_resolve(g):
                if f.physical == phys:
                    fields.append(Field(f.name, phys, f.qualifier, f.in_star, f.qualified_only))
    for f in rel.fields:  # every name of a grouped column (qualified or not) stays valid
        if f.physical in {p for _, p in keys} and f not in fields:
            fields.append(Field(f.name, f.physical, f.qualifier, f.in_star, f.qualified_only))
    post = Relation(out, fields)
    expr_keys = [(g, p) for g, p in keys if not isinstance(g, exp.Column)]

    def rewrite(n: exp.Expr) -> exp.Expr | None:
        if isinstance(n, exp.AggFunc) and n.find_ancestor(exp.Window) is None:
            for call, name in names:
                if n == call:
                    return quoted(name)
        for g, phys in expr_keys:
            if n == g:
                return quoted(phys)
        if isinstance(n, exp.Column) and not isinstance(n.this, exp.Star):
            found = post.try_resolve(n)
            if found:
                return quoted(found[0].physical)
            if rel.try_resolve(n):
                raise tr.error(
                    "column not grouped",
                    f"{n.sql('spark')!r} is neither in GROUP BY nor inside an aggregate",
                    n,
                    hint=_HINT,
                )
            if not n.table and n.name.lower() in aliases and in_having[0]:
                inner = aliases[n.name.lower()]
                return exp.Paren(this=inner.copy().transform(rewrite))
            rel.resolve(n, parsed)  # raises "unknown column"
        return None

    in_having = [False]
    having = node.args.get("having")
    if having is not None:
        check_scalar(having.this, parsed, "HAVING", aggregates=True)
        in_having[0] = True
        cond = compile_expr(having.this, post, parsed, rewrite)
        in_having[0] = False
        with spark_errors(parsed, having.this, "HAVING"):
            out = out.filter(cond)
    columns: list[tuple[exp.Expr, Column]] = []
    out_names: list[str] = []
    for item in items:
        if isinstance(item, exp.Star) or (
            isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
        ):
            raise tr.error(
                "SELECT * with GROUP BY",
                "list the grouped columns and aggregates",
                item,
                keyword="*",
                fallback=item,
            )
        e = item.this if isinstance(item, exp.Alias) else item
        check_scalar(e, parsed, "SELECT", aggregates=True)
        name = _name(item)
        out_names.append(name)
        columns.append((e, compile_expr(e, post, parsed, rewrite).alias(name)))
    tr.check_names(out_names, items)
    with spark_errors(parsed, items[0], "SELECT"):
        final = tr.select_items(out, columns)
    return Relation(final, [Field(n, n) for n in out_names])


def _name(item: exp.Expr) -> str:
    from .expressions import output_name

    return output_name(item)


def _resolve_arg(tr: Translator, rel: Relation, arg: exp.Column) -> Field:
    if rel.session and arg.name.lower() in _WINDOW_COLS:
        raise tr.error(
            "session window column",
            "a session's bounds are known only after the aggregate; aggregate other columns",
            arg,
        )
    return rel.resolve(arg, tr.parsed)
