"""Subqueries in expressions: ``EXISTS``, ``IN``, their negations and scalar subqueries.

Each is decorrelated into joins (`sealtime.sql.joins`), as Materialize does:

==========================================  ============================================
SQL (a WHERE conjunct)                      operators
==========================================  ============================================
``EXISTS (SELECT ... FROM s WHERE s.k =     semi-join of the outer rows with ``s`` on the
a.k AND p(s) AND q(s, a))``                 equalities (``s.k = a.k``), ``p`` filtering
                                            ``s`` first, ``q`` over the joined row
``x IN (SELECT y FROM s ...)``              the same with the pair ``(x, y)``
``NOT EXISTS (...)``                        anti-join: the rows without a match
``x NOT IN (SELECT y FROM s)``              SQL's three-valued rule: every row while ``s``
(uncorrelated)                              is empty; else the rows with ``x`` not NULL,
                                            no match, and no NULL among the ``y`` (counts
                                            of ``s`` in a one-row aggregate)
==========================================  ============================================

A subquery that references no outer column may be any query (it is translated whole).
A correlated one is a plain ``SELECT ... FROM ... WHERE`` (no ``GROUP BY``, aggregate,
``DISTINCT`` or ``LIMIT``), whose WHERE conjuncts are split by the columns they read:
inner only (a filter of the subquery's rows), or inner and outer (join conditions).

Scalar subqueries (``(SELECT MAX(w) FROM b)``) in WHERE or in the SELECT list of a query
without GROUP BY become a column joined to every outer row: an uncorrelated one must
return at most one row (an aggregate without GROUP BY, or ``LIMIT 1``), joined on a
constant key (NULL when it has no row); a correlated one is an aggregate without GROUP
BY whose conjuncts ``inner = outer`` become its group keys: the outer rows are joined to
the groups (a left join), and a row without a group gets the aggregate's value over no
rows (``COUNT`` 0), computed by the same query over an empty input.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

import sealtime.plan.aggregates as A

from .expressions import compile_expr, conjuncts
from .joins import Condition, join, semi_join
from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from .translate import Translator

__all__ = ["is_predicate", "predicate", "scalars"]

_HINT = "Collection.join(other, on=..., how='inner'|'left')"


def _unwrap(node: exp.Expr) -> tuple[exp.Expr, bool]:
    """(the predicate without NOT and parentheses, whether it was negated)."""
    negated = False
    while isinstance(node, (exp.Not, exp.Paren)):
        if isinstance(node, exp.Not):
            negated = not negated
        node = node.this
    return node, negated


def is_predicate(node: exp.Expr) -> bool:
    """Is `node` (a WHERE conjunct) ``[NOT] EXISTS (...)`` or ``x [NOT] IN (SELECT ...)``?"""
    inner, _ = _unwrap(node)
    if isinstance(inner, exp.Exists):
        return True
    return isinstance(inner, exp.In) and inner.args.get("query") is not None


@dataclass
class _Split:
    """A correlated subquery taken apart: its rows (FROM and inner conditions) and the
    conditions that join it to the outer rows."""

    rows: Relation
    cond: Condition = field(default_factory=Condition)


def _sides_of(tr: Translator, node: exp.Expr, inner: Relation, outer: Relation) -> set[str]:
    """Which relations the columns of `node` come from: "I" (the subquery's, which win
    when both have the name, as SQL scoping says) and/or "O"."""
    sides = set()
    for c in node.find_all(exp.Column):
        if isinstance(c.this, exp.Star):
            continue
        if inner.try_resolve(c):
            sides.add("I")
        elif outer.try_resolve(c):
            sides.add("O")
        else:
            Relation(inner.collection, inner.fields + outer.fields).resolve(c, tr.parsed)
    return sides


def _correlated(tr: Translator, query: exp.Expr, outer: Relation) -> _Split | None:
    """`query` as rows + join conditions when it reads outer columns (None when it
    reads none: translate it whole)."""
    if not isinstance(query, exp.Select) or query.args.get("from_") is None:
        return None
    inner = tr.from_clause(query)
    where = query.args.get("where")
    conds = conjuncts(where.this if where is not None else None)
    sides = [_sides_of(tr, c, inner, outer) for c in conds]
    items = [i.this if isinstance(i, exp.Alias) else i for i in query.expressions]
    item_sides: set[str] = set()
    for i in items:
        if not isinstance(i, exp.Star) and not (
            isinstance(i, exp.Column) and isinstance(i.this, exp.Star)
        ):
            item_sides |= _sides_of(tr, i, inner, outer)
    if not any("O" in s for s in sides) and "O" not in item_sides:
        return None
    for key in ("group", "having", "distinct", "limit", "order", "offset", "qualify"):
        if query.args.get(key):
            raise tr.error(
                "correlated subquery",
                f"a subquery that reads outer columns may not have {key.upper()}; "
                "write the aggregate as a JOIN with a GROUP BY subquery",
                query.args[key] if isinstance(query.args[key], exp.Expr) else query,
                fallback=query,
                hint=_HINT,
            )
    if "O" in item_sides:
        raise tr.error(
            "correlated subquery",
            "the subquery's SELECT list reads outer columns; compare them in its WHERE",
            query,
            keyword="SELECT",
        )
    split = _Split(inner)
    for c, s in zip(conds, sides):
        if s <= {"I"}:
            split.rows = tr.filter(split.rows, c, "subquery WHERE")
            continue
        if isinstance(c, exp.EQ):
            a = _sides_of(tr, c.this, inner, outer)
            b = _sides_of(tr, c.expression, inner, outer)
            if a == {"O"} and b == {"I"}:
                split.cond.pairs.append((c.this, c.expression))
                continue
            if a == {"I"} and b == {"O"}:
                split.cond.pairs.append((c.expression, c.this))
                continue
        split.cond.residual.append(c)
    return split


def _one_column(tr: Translator, rel: Relation, query: exp.Expr) -> Field:
    if len(rel.visible) != 1:
        raise tr.error(
            "subquery",
            f"the subquery returns {len(rel.visible)} columns; it must return one",
            query,
            keyword="SELECT",
        )
    return rel.visible[0]


def _column_ref(f: Field) -> exp.Column:
    return exp.Column(
        this=exp.Identifier(this=f.name, quoted=True),
        table=exp.Identifier(this=f.qualifier, quoted=True) if f.qualifier else None,
    )


def predicate(tr: Translator, rel: Relation, node: exp.Expr) -> Relation:
    """The rows of `rel` satisfying the subquery predicate `node` (`is_predicate`)."""
    pred, negated = _unwrap(node)
    query = pred.this if isinstance(pred, exp.Exists) else pred.args["query"]
    if isinstance(query, exp.Subquery):
        query = query.this
    split = _correlated(tr, query, rel)
    if isinstance(pred, exp.Exists):
        if split is None:
            rows = tr.query(query)
            return semi_join(tr, rel, rows, Condition(), anti=negated)
        return semi_join(tr, rel, split.rows, split.cond, anti=negated)
    # x [NOT] IN (SELECT y ...)
    x = pred.this
    if split is None:
        rows = tr.strip(tr.query(query))
        y = _one_column(tr, rows, query)
        cond = Condition(pairs=[(x, _column_ref(y))])
        if negated:
            return _not_in(tr, rel, rows, y, cond)
        return semi_join(tr, rel, rows, cond)
    if negated:
        raise tr.error(
            "NOT IN (correlated subquery)",
            "NOT IN over a subquery that reads outer columns is not supported (its NULL "
            "rules are per outer row); write NOT EXISTS (... AND inner = outer)",
            pred,
            fallback=pred,
            hint=_HINT,
        )
    items = query.expressions
    if len(items) != 1:
        raise tr.error("subquery", "the subquery of IN must return one column", query)
    y = items[0].this if isinstance(items[0], exp.Alias) else items[0]
    split.cond.pairs.append((x, y))
    return semi_join(tr, rel, split.rows, split.cond)


def _not_in(tr: Translator, rel: Relation, rows: Relation, y: Field, cond: Condition) -> Relation:
    """``x NOT IN (rows)`` with SQL's NULL rules (see the module docstring)."""
    taken = set(rel.collection.columns)
    n, nulls = tr.fresh("__n", taken), tr.fresh("__nn", taken)
    flag = tr.fresh("__f", set(rows.collection.columns))
    counted = rows.collection.with_columns(
        {flag: F.when(col_ref(y.physical).isNull(), F.lit(1)).otherwise(F.lit(0))}
    ).aggregate(**{n: A.count(), nulls: A.sum(flag)})
    schema = counted.schema
    fields = [T.StructField(f.name, f.dataType, True) for f in schema.fields]
    defaults = counted.constant(T.StructType(fields), [(0, 0)])
    zero = counted.select(F.lit(0).cast("long").alias(n), F.lit(0).cast("long").alias(nulls))
    stats = counted.union(defaults, zero.negate())  # (one row: the counts, 0 when empty)
    anti = semi_join(tr, rel, rows, cond, anti=True)
    x = cond.pairs[0][0]
    stats_rel = Relation(stats, [Field(n, n, in_star=False), Field(nulls, nulls, in_star=False)])
    base = tr.strip(rel)
    with_all = join(tr, base, stats_rel, Condition(), "inner")
    empty = tr.filter(with_all, exp.EQ(this=_hidden(n), expression=exp.Literal.number(0)), "NOT IN")
    with_anti = join(tr, anti, stats_rel, Condition(), "inner")
    clean = exp.and_(
        exp.GT(this=_hidden(n), expression=exp.Literal.number(0)),
        exp.EQ(this=_hidden(nulls), expression=exp.Literal.number(0)),
        exp.Not(this=exp.Is(this=x.copy(), expression=exp.Null())),
    )
    kept = tr.filter(with_anti, clean, "NOT IN")
    keep = [col_ref(c) for c in dict.fromkeys(f.physical for f in base.fields)]
    out = empty.collection.select(*keep).union(kept.collection.select(*keep))
    return Relation(out, base.fields, base.time_column, None, base.session_keys)


def _hidden(name: str) -> exp.Column:
    return exp.Column(this=exp.Identifier(this=name, quoted=True))


def scalars(
    tr: Translator, rel: Relation, nodes: list[exp.Expr]
) -> tuple[Relation, list[exp.Expr]]:
    """`nodes` with every scalar subquery replaced by a column of the returned relation
    (`rel` joined with each subquery's value; see the module docstring)."""
    found = [
        s
        for node in nodes
        # (the outermost ones: a subquery inside another is that one's business)
        for s in node.walk(prune=lambda n: isinstance(n, (exp.Subquery, exp.Exists, exp.Select)))
        if isinstance(s, exp.Subquery)
        and not isinstance(s.parent, (exp.In, exp.Exists, exp.From, exp.Join))
    ]
    if not found:
        return rel, nodes
    replace: dict[int, str] = {}
    for sub in found:
        rel, column = _scalar(tr, rel, sub)
        replace[id(sub)] = column

    # (on a copy: the parsed text may be translated again, e.g. a NOT IN's rows twice)
    out = []
    for node in nodes:
        copy = node.copy()
        for original, twin in [
            (o, c) for o, c in zip(node.walk(), copy.walk()) if id(o) in replace
        ]:
            if twin is copy:
                copy = _hidden(replace[id(original)])
            else:
                twin.replace(_hidden(replace[id(original)]))
        out.append(copy)
    return rel, out


def _scalar(tr: Translator, rel: Relation, sub: exp.Subquery) -> tuple[Relation, str]:
    """`rel` joined with the value of the scalar subquery `sub` (the hidden column)."""
    from .aggregate import is_aggregate

    query = sub.this
    split = _correlated(tr, query, rel) if isinstance(query, exp.Select) else None
    if split is None:
        single = isinstance(query, exp.Select) and (
            (
                not query.args.get("group")
                and any(is_aggregate(n) for i in query.expressions for n in i.walk())
            )
            or _limit_one(query)
        )
        if not single:
            raise tr.error(
                "scalar subquery",
                "a scalar subquery must return at most one row: an aggregate without GROUP "
                "BY (SELECT MAX(x) FROM t) or ... LIMIT 1",
                sub,
                fallback=sub,
                hint=_HINT,
            )
        rows = tr.strip(tr.query(query))
        value = _one_column(tr, rows, query)
        name = tr.fresh("__s", rel.collection.columns)
        rows = Relation(
            rows.collection.select(col_ref(value.physical).alias(name)),
            [Field(name, name, in_star=False)],
        )
        return _attach(tr, rel, rows, Condition(), name), name
    # correlated: an aggregate without GROUP BY, grouped by the inner sides of its pairs
    if split.cond.residual or not split.cond.pairs:
        raise tr.error(
            "correlated subquery",
            "a correlated scalar subquery may compare inner and outer columns only with "
            "inner = outer",
            sub,
            fallback=sub,
            hint=_HINT,
        )
    return _correlated_scalar(tr, rel, sub, query, split)


def _correlated_scalar(
    tr: Translator, rel: Relation, sub: exp.Subquery, query: exp.Select, split: _Split
) -> tuple[Relation, str]:
    """``(SELECT agg(...) FROM s WHERE s.k = outer.k AND p(s))``: the aggregate grouped
    by the inner sides of the equalities, left-joined to the outer rows on them; a row
    without a group gets the aggregate's value over no rows (Spark's own answer over an
    empty input: ``COUNT`` 0, the others NULL), as SQL defines the subquery's value."""
    from .aggregate import is_aggregate, outer_nodes

    items = query.expressions
    if len(items) != 1 or not any(is_aggregate(n) for n in outer_nodes(items[0])):
        raise tr.error(
            "correlated scalar subquery",
            "a scalar subquery that reads outer columns must compute one aggregate "
            "(SELECT MAX(x) FROM t WHERE t.k = outer.k): it then has one row per outer row",
            sub,
            fallback=sub,
            hint=_HINT,
        )
    item = items[0].this if isinstance(items[0], exp.Alias) else items[0]
    taken = set(rel.collection.columns) | set(split.rows.collection.columns)
    keys = [tr.fresh("__ck", taken) for _ in split.cond.pairs]
    value = tr.fresh("__s", taken | set(keys))
    grouped = exp.Select(
        expressions=[
            *(
                exp.alias_(inner.copy(), k, quoted=True)
                for (_, inner), k in zip(split.cond.pairs, keys)
            ),
            exp.alias_(item.copy(), value, quoted=True),
        ]
    )
    grouped.set("group", exp.Group(expressions=[inner.copy() for _, inner in split.cond.pairs]))
    groups = tr.select(grouped, prebuilt=split.rows, where=None)
    groups = Relation(
        groups.collection, [Field(f.name, f.physical, None, False) for f in groups.fields]
    )
    cond = Condition(pairs=[(outer, _hidden(k)) for (outer, _), k in zip(split.cond.pairs, keys)])
    joined = join(tr, tr.strip(rel), groups, cond, "left")
    physical = {f.name: f.physical for f in joined.fields if f.name in (*keys, value)}
    # the aggregate over no rows, by Spark (a constant of the query, computed once)
    empty = tr.flow.spark.createDataFrame([], split.rows.collection.schema)
    default = empty.agg(compile_expr(item, split.rows, tr.parsed).alias("d"))
    dtype = default.schema.fields[0].dataType
    none = default.collect()[0]["d"]
    name = tr.fresh("__s", set(joined.collection.columns))
    matched = col_ref(physical[keys[0]]).isNotNull()
    filled = F.when(matched, col_ref(physical[value])).otherwise(F.lit(none).cast(dtype))
    keep = [
        f.physical for f in joined.fields if f.physical not in (physical[k] for k in (*keys, value))
    ]
    out = joined.collection.select(*[col_ref(c) for c in dict.fromkeys(keep)], filled.alias(name))
    fields = [f for f in joined.fields if f.physical in keep] + [Field(name, name, in_star=False)]
    return Relation(out, fields, None, None), name


def _limit_one(query: exp.Select) -> bool:
    limit = query.args.get("limit")
    if limit is None:
        return False
    value = limit.expression
    return isinstance(value, exp.Literal) and str(value.this) in ("0", "1")


def _attach(tr: Translator, rel: Relation, rows: Relation, cond: Condition, name: str) -> Relation:
    """`rel` left-joined with `rows` (at most one row per join key)."""
    out = join(tr, rel, rows, cond, "left")
    fields = [f for f in out.fields if f.physical != name] + [Field(name, name, in_star=False)]
    return Relation(out.collection, fields, None, None)
