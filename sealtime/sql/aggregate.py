"""``GROUP BY`` / ``HAVING`` (and aggregates without ``GROUP BY``) compiled to operators.

A grouped SELECT becomes:

1. a projection (checked: rows an expression raises on go to the view's errors) adding
   hidden columns for group keys and aggregate arguments that are expressions
   (``GROUP BY upper(k)``, ``SUM(v * 2)``), ``COUNT(x)``'s non-null flag, the ``CASE``
   of a ``FILTER (WHERE ...)`` and the squares of ``STDDEV``/``VARIANCE``;
2. one aggregate per *family* of calls, joined on the group keys when there are several:
   the plain aggregates (``Collection.aggregate``), the aggregates of ``DISTINCT`` values
   (``SUM(DISTINCT x)``: an aggregate over ``distinct()`` of the keys and ``x``) and the
   lists (``collect_list``/``collect_set``: `Collection.collect`); over a window TVF the
   window columns are part of the key and each window is emitted once, when sealed;
3. without ``GROUP BY``: the one row Spark gives even over no input, as Materialize
   lowers it: ``aggregate ∪ (defaults − aggregate's defaults)`` where *defaults* is a
   constant row (``COUNT`` 0, ``collect_list`` ``[]``, the others NULL);
4. ``filter(HAVING)`` and the final ``select`` of the SELECT items, with every aggregate
   call replaced by an expression over the hidden columns, cast to the type Spark gives
   the call.

Calls and what they become (families: plain, distinct, list):

=================================  ==================================================
``COUNT(*)``, ``COUNT(x)``         ``count()``; ``sum`` of a 0/1 non-null flag
``SUM``, ``AVG``, ``MIN``, ``MAX``  themselves (``MIN``/``MAX(DISTINCT x)`` = without)
``COUNT(DISTINCT x)``              ``count_distinct(x)``
``SUM``/``AVG(DISTINCT x)``        ``sum``/``avg`` over the distinct (keys, x)
``STDDEV[_SAMP|_POP]``,            ``sum`` of a non-null flag, of ``x`` and of ``x * x``
``VARIANCE``, ``VAR_SAMP|POP``     (exact decimals for integers), the formula after
``COUNT_IF(p)``                    ``sum(CASE WHEN p THEN 1 ELSE 0 END)``
``BOOL_AND``/``EVERY``, ``BOOL_OR`` ``min``/``max`` of the boolean
``collect_list``/``collect_set``   `Collection.collect` (values in ascending order)
``agg(...) FILTER (WHERE p)``      the argument becomes ``CASE WHEN p THEN arg END``
=================================  ==================================================

>>> from sealtime.sql.parse import parse
>>> p = parse("SELECT k, SUM(v) / COUNT(*) AS mean FROM t GROUP BY k HAVING MAX(v) > 2")
>>> [agg.sql("spark") for agg in aggregate_calls(p.tree, p)]
['SUM(v)', 'COUNT(*)', 'MAX(v)']
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..plan import aggregates as A
from .checked import safe
from .errors import SqlError
from .expressions import (
    check_scalar,
    compile_expr,
    output_name,
    quoted,
    spark_errors,
    user_name,
)
from .parse import Parsed
from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from ..dataflow.collection import Collection
    from .translate import Translator

__all__ = ["AGGREGATE_NAMES", "aggregate_calls", "is_aggregate", "outer_nodes", "translate"]

_HINT = "Collection.aggregate(by=..., name=st.sum|count|min|max|avg|count_distinct(...))"
_WINDOW_COLS = ("window_start", "window_end")
#: aggregates sqlglot parses as plain functions (by their Spark names)
AGGREGATE_NAMES = frozenset({"EVERY", "SOME", "BOOL_AND", "BOOL_OR", "COLLECT_LIST", "COLLECT_SET"})
_STATS = {
    exp.Stddev: ("samp", True),
    exp.StddevSamp: ("samp", True),
    exp.StddevPop: ("pop", True),
    exp.Variance: ("samp", False),
    exp.VariancePop: ("pop", False),
}
_SIMPLE = {exp.Sum: "sum", exp.Min: "min", exp.Max: "max", exp.Avg: "avg"}


def is_aggregate(node: exp.Expr) -> bool:
    """Is `node` an aggregate call (not inside ``OVER``)?"""
    if isinstance(node, exp.Window) or node.find_ancestor(exp.Window) is not None:
        return False
    if isinstance(node, exp.AggFunc):
        return True
    return isinstance(node, exp.Anonymous) and str(node.name).upper() in AGGREGATE_NAMES


def outer_nodes(node: exp.Expr) -> list[exp.Expr]:
    """The nodes of `node` outside its subqueries (whose aggregates are their own).

    >>> from sealtime.sql.parse import parse
    >>> item = parse("SELECT v, (SELECT MAX(w) FROM b) AS m FROM a").tree.expressions[1]
    >>> any(is_aggregate(n) for n in outer_nodes(item)), any(is_aggregate(n) for n in item.walk())
    (False, True)
    """

    def inner(n: exp.Expr) -> bool:
        return isinstance(n, (exp.Subquery, exp.Exists)) or (
            isinstance(n, exp.Select) and n is not node
        )

    return [n for n in node.walk(prune=inner) if not inner(n)]


def aggregate_calls(select: exp.Select, parsed: Parsed) -> list[exp.Expr]:
    """The distinct aggregate calls of the SELECT list and HAVING, in order (a call with
    ``FILTER (WHERE ...)`` is the ``Filter`` node around it)."""
    found: list[exp.Expr] = []
    places = list(select.expressions)
    having = select.args.get("having")
    if having is not None:
        places.append(having.this)
    for place in places:
        for n in outer_nodes(place):
            if not is_aggregate(n):
                continue
            call = n.parent if isinstance(n.parent, exp.Filter) else n
            outer = call.parent
            while outer is not None and outer is not place.parent:
                if is_aggregate(outer):
                    line, col = parsed.locate(n)
                    raise SqlError(
                        "nested aggregate",
                        f"{n.sql('spark')} inside {outer.sql('spark')}",
                        line=line,
                        col=col,
                    )
                outer = outer.parent
            if not any(call == f for f in found):
                found.append(call)
    return found


@dataclass
class _Family:
    """Aggregates computed by one operator over one input."""

    kind: str  # "plain", "distinct" or "list"
    argument: str | None = None  # (distinct: the column whose distinct values it reads)
    aggs: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Calls:
    """What the calls of one grouped SELECT need: hidden input columns, aggregates by
    family, each hidden aggregate's value over no rows, and each call's expression."""

    pre: dict[str, Column] = field(default_factory=dict)
    pre_nodes: dict[str, exp.Expr] = field(default_factory=dict)
    families: dict[str, _Family] = field(default_factory=dict)
    defaults: dict[str, Any] = field(default_factory=dict)
    #: (call, the same call in Spark over the hidden columns: what gives its type)
    exprs: list[tuple[exp.Expr, str]] = field(default_factory=list)
    #: id of a call -> the expression over the aggregates' columns that replaces it
    values: dict[int, exp.Expr] = field(default_factory=dict)

    def family(self, kind: str, argument: str | None = None) -> _Family:
        key = f"{kind}:{argument}"
        if key not in self.families:
            self.families[key] = _Family(kind, argument)
        return self.families[key]


def _unsupported(tr: Translator, call: exp.Expr, name: str) -> SqlError:
    return tr.error(
        f"aggregate {name}",
        "not supported; the aggregates are COUNT, SUM, AVG, MIN, MAX, COUNT(DISTINCT), "
        "SUM/AVG(DISTINCT), STDDEV[_SAMP|_POP], VARIANCE/VAR_SAMP/VAR_POP, COUNT_IF, "
        "BOOL_AND/EVERY, BOOL_OR, collect_list and collect_set, each with FILTER (WHERE ...)",
        call,
        hint=_HINT,
    )


def _plan_calls(tr: Translator, rel: Relation, calls: list[exp.Expr], taken: set[str]) -> _Calls:
    """Hidden columns and aggregates for `calls` over `rel`."""
    parsed = tr.parsed
    out = _Calls()

    def fresh(base: str) -> str:
        name = tr.fresh(base, taken)
        taken.add(name)
        return name

    def column_of(node: exp.Expr) -> str:
        """A physical column holding `node`'s value (a hidden column unless it is one)."""
        if isinstance(node, exp.Column) and not isinstance(node.this, exp.Star):
            if rel.session and node.name.lower() in _WINDOW_COLS:
                raise tr.error(
                    "session window column",
                    "a session's bounds are known only after the aggregate; aggregate "
                    "other columns",
                    node,
                )
            return rel.resolve(node, parsed).physical
        name = fresh("__a")
        out.pre[name] = compile_expr(node, rel, parsed)
        out.pre_nodes[name] = node
        return name

    def flag(node: exp.Expr) -> str:
        """A hidden 0/1 column: 1 where `node` (a condition) holds."""
        name = fresh("__a")
        case = exp.Case(ifs=[exp.If(this=node.copy(), true=exp.Literal.number(1))])
        case.set("default", exp.Literal.number(0))
        out.pre[name] = compile_expr(case, rel, parsed)
        out.pre_nodes[name] = node
        return name

    def hidden(family: _Family, agg: Any, default: Any = None) -> str:
        name = fresh("__agg")
        family.aggs[name] = agg
        out.defaults[name] = default
        return name

    for call in calls:
        condition = None
        inner = call
        if isinstance(call, exp.Filter):
            inner = call.this
            condition = call.expression.this if isinstance(call.expression, exp.Where) else None
        uname = user_name(inner, parsed)
        if condition is not None:
            check_scalar(condition, parsed, f"{uname}(...) FILTER")
        arg = (
            inner.this
            if not isinstance(inner, exp.Anonymous)
            else (inner.expressions[0] if inner.expressions else None)
        )
        for a in [*(arg.expressions if isinstance(arg, exp.Distinct) else [arg])]:
            if isinstance(a, exp.Expr) and not isinstance(a, exp.Star):
                check_scalar(a, parsed, f"{uname}(...)")
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            if len(arg.expressions) != 1:
                raise tr.error(
                    f"{uname}(DISTINCT a, b)",
                    "aggregate the distinct values of one expression (e.g. a struct)",
                    inner,
                    hint="st.count_distinct(column)",
                )
            arg = arg.expressions[0]
        if isinstance(inner, exp.Anonymous) and len(inner.expressions) != 1:
            raise tr.error(f"aggregate {uname}", "takes one argument", inner)

        def filtered(node: exp.Expr, condition: exp.Expr | None = condition) -> exp.Expr:
            """`node`, or NULL where the FILTER condition does not hold."""
            if condition is None:
                return node
            case = exp.Case(ifs=[exp.If(this=condition.copy(), true=node.copy())])
            return case

        star = isinstance(inner, exp.Count) and isinstance(arg, exp.Star)
        plain = out.family("plain")
        kind = type(inner)
        name = str(inner.name).upper() if isinstance(inner, exp.Anonymous) else None
        if isinstance(inner, exp.Count):
            if star:
                if condition is None:
                    value = quoted(hidden(plain, A.count(), 0))
                else:
                    value = quoted(hidden(plain, A.sum(flag(condition)), 0))
            elif distinct:
                col = column_of(filtered(arg))
                value = quoted(hidden(plain, A.count_distinct(col), 0))
            else:
                test = exp.Not(this=exp.Is(this=filtered(arg).copy(), expression=exp.Null()))
                value = quoted(hidden(plain, A.sum(flag(test)), 0))
            text = "count(1)"
        elif isinstance(inner, exp.CountIf):
            cond = inner.this
            if condition is not None:
                cond = exp.and_(condition.copy(), cond.copy())
            value = quoted(hidden(plain, A.sum(flag(cond)), 0))
            text = "count(1)"
        elif (
            kind in _SIMPLE
            or isinstance(inner, (exp.LogicalAnd, exp.LogicalOr))
            or name
            in (
                "EVERY",
                "SOME",
                "BOOL_AND",
                "BOOL_OR",
            )
        ):
            if kind in _SIMPLE:
                what = _SIMPLE[kind]
            else:
                what = (
                    "min"
                    if isinstance(inner, exp.LogicalAnd) or name in ("EVERY", "BOOL_AND")
                    else "max"
                )
            col = column_of(filtered(arg))
            if distinct and what in ("sum", "avg"):
                family = out.family("distinct", col)
            else:
                family = plain
            agg = A.Aggregate(what, col)
            value = quoted(hidden(family, agg))
            text = f"{what}(`{col}`)" if what in _SIMPLE.values() else f"min(`{col}`)"
            if what in ("min", "max") and kind not in _SIMPLE:
                text = f"{'bool_and' if what == 'min' else 'bool_or'}(`{col}`)"
        elif kind in _STATS:
            population, root = _STATS[kind]
            target = filtered(arg)
            x = (
                col_ref(rel.resolve(target, parsed).physical)
                if isinstance(target, exp.Column)
                else compile_expr(target, rel, parsed)
            )
            dtype = tr.probe_schema(rel.collection.schema, [x]).fields[0].dataType
            integral = isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType))
            xv = x.cast("decimal(38,0)") if integral else x.cast("double")
            xs, sq, nn = fresh("__a"), fresh("__a"), fresh("__a")
            out.pre[xs], out.pre[sq] = xv, xv * xv
            out.pre[nn] = F.when(x.isNull(), F.lit(0)).otherwise(F.lit(1))
            for name_ in (xs, sq, nn):
                out.pre_nodes[name_] = target
            family = out.family("distinct", xs) if distinct else plain
            n = quoted(hidden(family, A.sum(nn), 0))
            s1 = quoted(hidden(family, A.sum(xs)))
            s2 = quoted(hidden(family, A.sum(sq)))
            value = _variance(n, s1, s2, population, root, integral)
            text = f"{'stddev' if root else 'var'}_{population}(`{xs}`)"
        elif isinstance(inner, (exp.ArrayAgg, exp.ArrayUniqueAgg)) or name in (
            "COLLECT_LIST",
            "COLLECT_SET",
        ):
            col = column_of(filtered(arg))
            unique = isinstance(inner, exp.ArrayUniqueAgg) or name == "COLLECT_SET" or distinct
            family = out.family("list")
            value = quoted(hidden(family, ("set" if unique else "list", col), []))
            text = f"{'collect_set' if unique else 'collect_list'}(`{col}`)"
        else:
            raise _unsupported(tr, inner, uname)
        out.exprs.append((call, text))
        out.values[id(call)] = value
    return out


def _variance(
    n: exp.Expr, s1: exp.Expr, s2: exp.Expr, population: str, root: bool, integral: bool
) -> exp.Expr:
    """``VAR_SAMP``/``VAR_POP`` (``STDDEV_*`` with `root`) from the count, the sum and
    the sum of squares: ``(n * s2 - s1 * s1) / (n * (n - 1))`` (``n * n`` for the
    population); exact before the division for integers. NULL where Spark gives NULL
    (no value; one value for the sample forms)."""
    n_, s1_, s2_ = (e.sql(dialect="spark") for e in (n, s1, s2))
    num = (
        f"(CAST({n_} AS DECIMAL(38,0)) * {s2_} - {s1_} * {s1_})"
        if integral
        else (f"(CAST({n_} AS DOUBLE) * {s2_} - {s1_} * {s1_})")
    )
    den = f"({n_} * ({n_} - 1))" if population == "samp" else f"({n_} * {n_})"
    least = 2 if population == "samp" else 1
    var = f"greatest(CAST({num} AS DOUBLE) / CAST({den} AS DOUBLE), 0D)"
    value = f"sqrt({var})" if root else var
    text = f"CASE WHEN {n_} >= {least} THEN {value} END"
    return exp.maybe_parse(text, dialect="spark")


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
    groupings = {exp.Rollup: "ROLLUP", exp.Cube: "CUBE", exp.GroupingSets: "GROUPING SETS"}
    for g in group_exprs:
        if type(g) in groupings or (
            user_name(g, parsed).upper().replace("_", " ") in ("ROLLUP", "CUBE", "GROUPING SETS")
        ):
            shown = groupings.get(type(g)) or user_name(g, parsed).upper().replace("_", " ")
            raise tr.error(
                f"GROUP BY {shown}",
                "not supported; write one GROUP BY per grouping and UNION ALL them",
                group,
                keyword="GROUP",
            )
    windowed = rel.window is not None
    if not group_exprs and windowed:
        raise tr.error(
            "GROUP BY over a window",
            "an aggregate over a window TVF must group by window_start and window_end "
            "(each window is emitted once, when it is sealed)",
            node,
            keyword="SELECT",
            hint="collection.window(spec).aggregate(by=...)",
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
        if any(is_aggregate(n) for n in g.walk()):
            raise tr.error("aggregate in GROUP BY", "group by columns or expressions", g)
        check_scalar(g, parsed, "GROUP BY")
        resolved.append(g)
    taken = set(rel.collection.columns)
    pre: dict[str, Column] = {}
    pre_nodes: dict[str, exp.Expr] = {}
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
            name = tr.fresh("__g", taken)
            taken.add(name)
            pre[name] = compile_expr(g, rel, parsed)
            pre_nodes[name] = g
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
    plan = _plan_calls(tr, rel, calls, taken)
    pre.update(plan.pre)
    pre_nodes.update(plan.pre_nodes)
    if not any(f.aggs for f in plan.families.values()):  # GROUP BY alone: the groups
        plan.family("plain").aggs[tr.fresh("__agg", taken)] = A.count()
    source = rel
    with spark_errors(parsed, group, "GROUP BY"):
        if pre:
            items_in = [(None, col_ref(c)) for c in rel.collection.columns]
            items_in += [(pre_nodes.get(n), c.alias(n)) for n, c in pre.items()]
            source = Relation(
                tr.evaluate(rel, items_in),
                rel.fields,
                rel.time_column,
                rel.priority,
                rel.session_keys,
            )
    out, group_cols = _aggregate(tr, source, by, plan, calls, group)
    keyed = [p for _, p in keys]
    if not keys:
        out = _with_default_row(out, plan)
    # the type Spark gives each call (the final expressions are cast to it)
    want: dict[int, T.DataType] = {}
    empty = tr.flow.spark.createDataFrame([], source.collection.schema)
    if plan.exprs:
        with spark_errors(parsed, group, "GROUP BY"):
            texts = [F.expr(text).alias(f"c{i}") for i, (_, text) in enumerate(plan.exprs)]
            typed = empty.agg(*texts)
        for (call, _), f in zip(plan.exprs, typed.schema.fields):
            want[id(call)] = f.dataType
    # ---- the relation after the aggregate: group keys and window columns by name
    fields: list[Field] = []
    for g, phys in keys:
        if isinstance(g, exp.Column):
            for f in rel.try_resolve(g):
                if f.physical == phys:
                    fields.append(Field(f.name, phys, f.qualifier, f.in_star, f.qualified_only))
    for f in rel.fields:  # every name of a grouped column (qualified or not) stays valid
        if f.physical in set(keyed) and f not in fields:
            fields.append(Field(f.name, f.physical, f.qualifier, f.in_star, f.qualified_only))
    raw_fields = [f for f in fields if f.in_star]
    for call, _ in plan.exprs:
        value = plan.values[id(call)]
        if isinstance(value, exp.Column):
            raw_fields.append(Field(call.sql("spark"), value.name))
    post = Relation(out, fields)
    raw_rel = Relation(out, raw_fields)
    expr_keys = [(g, p) for g, p in keys if not isinstance(g, exp.Column)]

    def rewrite(n: exp.Expr) -> exp.Expr | None:
        for call, _ in plan.exprs:
            if n == call and (isinstance(n, exp.Filter) or n.find_ancestor(exp.Window) is None):
                value = plan.values[id(call)]
                cast = exp.DataType.build(want[id(call)].simpleString(), dialect="spark")
                node = exp.Cast(this=value.copy(), to=cast)
                # (to Spark's own type for the call, from the value that computes it)
                return safe(node)
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

    def rewritten(n: exp.Expr) -> exp.Expr:
        """A copy of `n` over the aggregate's columns (what `compile_post` compiles)."""
        return n.transform(lambda m: _or(rewrite(m), m))

    def compile_post(n: exp.Expr) -> Column:
        """Compiles a node with its aggregate calls and keys already rewritten (which
        read the aggregate's physical columns): what the error path evaluates, so that
        only the expressions over the aggregates are checked, not the calls."""
        physical = Relation(out, [Field(c, c) for c in out.columns])
        return compile_expr(n, physical, parsed)

    in_having = [False]
    having = node.args.get("having")
    if having is not None:
        check_scalar(having.this, parsed, "HAVING", aggregates=True)
        in_having[0] = True
        cond = compile_expr(having.this, post, parsed, rewrite)
        having_post = rewritten(having.this)
        with spark_errors(parsed, having.this, "HAVING"):
            out = tr.checked_filter(raw_rel, having_post, cond, compile_post)
        in_having[0] = False
        post = Relation(out, fields)
        raw_rel = Relation(out, raw_fields)
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
        name = output_name(item)
        out_names.append(name)
        columns.append((rewritten(e), compile_expr(e, post, parsed, rewrite).alias(name)))
    tr.check_names(out_names, items)
    with spark_errors(parsed, items[0], "SELECT"):
        final = tr.evaluate(raw_rel, columns, compile_post)
    return Relation(final, [Field(n, n) for n in out_names])


def _or(value: exp.Expr | None, default: exp.Expr) -> exp.Expr:
    return default if value is None else value


def _aggregate(
    tr: Translator,
    source: Relation,
    by: list[str],
    plan: _Calls,
    calls: list[exp.Expr],
    group: exp.Expr | None,
) -> tuple[Collection, list[str]]:
    """One operator per family over `source`, joined on the group keys (and window
    columns) when there are several."""
    coll = source.collection
    windowed = source.window is not None
    group_cols = ([*_WINDOW_COLS] if windowed else []) + by
    outs: list[Collection] = []
    anchor = calls[0] if calls else group
    for family in plan.families.values():
        if not family.aggs:
            continue
        if windowed and family.kind != "plain":
            raise tr.error(
                "aggregate over a window",
                "SUM/AVG/STDDEV(DISTINCT ...) and collect_list/collect_set are not supported "
                "over a window TVF; COUNT, SUM, AVG, MIN, MAX and COUNT(DISTINCT) are",
                anchor,
                fallback=group,
                hint=_HINT,
            )
        try:
            if family.kind == "plain":
                part = coll.aggregate(by=by or None, **family.aggs)
            elif family.kind == "distinct":
                keep = [*group_cols, family.argument]
                part = coll.select(*[col_ref(c) for c in dict.fromkeys(keep)]).distinct()
                part = part.aggregate(by=by or None, **family.aggs)
            else:
                part = coll.collect(
                    by=by or None,
                    **{name: (kind, column) for name, (kind, column) in family.aggs.items()},
                )
        except (TypeError, ValueError) as e:
            if isinstance(e, SqlError):
                raise
            raise tr.error("aggregate", str(e), anchor, fallback=group, hint=_HINT) from e
        outs.append(part)
    if len(outs) == 1:
        return outs[0], group_cols
    # several families: join them on the group (NULL keys match, as GROUP BY groups them)
    key = tr.fresh("__gk", [c for o in outs for c in o.columns])
    gk = F.to_json(F.struct(*[col_ref(c) for c in group_cols])) if group_cols else F.lit(0)
    joined = outs[0].with_columns({key: gk})
    for part in outs[1:]:
        rest = [c for c in part.columns if c not in group_cols]
        joined = joined.join(part.select(gk.alias(key), *[col_ref(c) for c in rest]), on=key)
    return joined.select(*[col_ref(c) for c in joined.columns if c != key]), group_cols


def _with_default_row(out: Collection, plan: _Calls) -> Collection:
    """`out` (at most one row: an aggregate without keys) and, while it is empty, the
    row of every aggregate's value over no input."""
    schema = out.schema
    values = [plan.defaults.get(f.name) for f in schema.fields]
    fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields]
    defaults = out.constant(T.StructType(fields), [values])
    literal = [
        (F.array() if isinstance(v, list) else F.lit(v)).cast(f.dataType).alias(f.name)
        for v, f in zip(values, schema.fields)
    ]
    present = out.select(*literal).negate()
    return out.union(defaults.select(*[col_ref(f.name) for f in schema.fields]), present)
