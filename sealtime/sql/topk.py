"""Top-k: the ``ROW_NUMBER()`` pattern compiled to `Collection.top_k`.

The supported form (also through a CTE, and over a window TVF, where the PARTITION BY
must include ``window_start`` and ``window_end``)::

    SELECT ... FROM (
      SELECT ..., ROW_NUMBER() OVER (PARTITION BY p ORDER BY o [DESC]) AS rn FROM t
    ) [alias] WHERE rn <= k [AND other conditions]

becomes ``top_k(by=p, order_by=o, k=k)`` over the inner SELECT (partition and order
expressions are hidden columns; ``NULLS FIRST/LAST`` other than Spark's default adds a
hidden null flag to the order). The bound may be ``rn <= k``, ``rn < k``, ``rn = 1``,
``k >= rn``, ``k > rn`` or ``rn BETWEEN 1 AND k``.

`top_k` has no rank column. When the outer query reads ``rn`` (by name or through
``*``), it is computed from ``k`` top-k operators: the rows of rank ``r`` are
``top_k(k=r)`` minus ``top_k(k=r-1)`` (a top-k is a prefix of one deterministic order,
so each is contained in the next); this is allowed up to ``k = 20``. Ties in the ORDER
BY are broken as `Collection.top_k` does (union priority, then the other columns); Spark
breaks them arbitrarily, so only queries whose order has no ties between rows that
differ in selected columns give the same rows as Spark.

>>> from sealtime.sql.parse import parse
>>> p = parse("SELECT * FROM (SELECT k, ROW_NUMBER() OVER (ORDER BY v) AS rn FROM t) WHERE rn < 4")
>>> rank_bound(p.tree.args["where"].this, "rn", None, p)
3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from sqlglot import exp

from .expressions import conjuncts, window_name
from .parse import Parsed
from .relation import Field, Relation

if TYPE_CHECKING:
    from .translate import CteScope, Translator

__all__ = ["MAX_RANKED", "Candidate", "applies", "candidate", "rank_bound", "translate"]

#: the largest k for which the ``rn`` column is computed (k top-k operators)
MAX_RANKED = 20
_HINT = "Collection.top_k(by=..., order_by=..., k=...)"


@dataclass
class Candidate:
    """A FROM item whose SELECT list has a window function."""

    select: exp.Select
    alias: str | None
    cte: CteScope | None = None


def _has_window(select: exp.Expr) -> bool:
    return isinstance(select, exp.Select) and any(
        isinstance(n, exp.Window) for item in select.expressions for n in item.walk()
    )


def candidate(tr: Translator, item: exp.Expr) -> Candidate | None:
    """The ranked SELECT a FROM item reads (a subquery or a CTE), or None."""
    if isinstance(item, exp.Subquery) and _has_window(item.this):
        return Candidate(item.this, item.alias or None)
    if isinstance(item, exp.Table) and isinstance(item.this, exp.Identifier) and not item.db:
        for scope in reversed(tr.scopes):
            cte = scope.get(item.name.lower())
            if cte is not None:
                if _has_window(cte.query) and cte.relation is None:
                    return Candidate(cte.query, item.alias or item.name, cte)
                return None
    return None


def _is_rn(node: exp.Expr, rn: str, alias: str | None) -> bool:
    return (
        isinstance(node, exp.Column)
        and node.name.lower() == rn.lower()
        and (not node.table or (alias is not None and node.table.lower() == alias.lower()))
    )


def _int(node: exp.Expr) -> int | None:
    if isinstance(node, exp.Literal) and not node.is_string:
        try:
            return int(str(node.this))
        except ValueError:
            return None
    return None


def rank_bound(cond: exp.Expr, rn: str, alias: str | None, parsed: Parsed) -> int | None:
    """The k of a bound on the row number (``rn <= k`` ...), None if `cond` is none."""
    flip = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT, exp.EQ: exp.EQ}
    if isinstance(cond, exp.Between) and _is_rn(cond.this, rn, alias):
        lo, hi = _int(cond.args["low"]), _int(cond.args["high"])
        if lo == 1 and hi is not None:
            return hi
        return None
    if type(cond) not in flip:
        return None
    left, right = cond.this, cond.expression
    op = type(cond)
    if _is_rn(right, rn, alias) and not _is_rn(left, rn, alias):
        left, right, op = right, left, flip[op]
    n = _int(right)
    if not _is_rn(left, rn, alias) or n is None:
        return None
    if op is exp.LTE:
        return n
    if op is exp.LT:
        return n - 1
    if op is exp.EQ and n == 1:
        return 1
    return None


def applies(tr: Translator, outer: exp.Select, cand: Candidate) -> bool:
    """Is `outer` over `cand` the top-k pattern: one ``ROW_NUMBER() OVER (... ORDER BY
    ...) AS rn`` bounded by one upper bound on ``rn`` in the outer WHERE? (Other window
    functions, and row numbers used otherwise, are computed in full: `sealtime.sql.over`.)"""
    windows = [
        it for it in cand.select.expressions if any(isinstance(n, exp.Window) for n in it.walk())
    ]
    if len(windows) != 1 or not isinstance(windows[0], exp.Alias):
        return False
    win = windows[0].this
    if not isinstance(win, exp.Window) or not isinstance(win.this, exp.RowNumber):
        return False
    order = win.args.get("order")
    if order is None or not order.expressions or win.args.get("spec") or win.args.get("alias"):
        return False
    rn = windows[0].alias
    where = outer.args.get("where")
    conds = conjuncts(where.this if where is not None else None)
    ranked = [c for c in conds if any(_is_rn(n, rn, cand.alias) for n in c.walk())]
    if len(ranked) != 1:
        return False
    k = rank_bound(ranked[0], rn, cand.alias, tr.parsed)
    return k is not None and k >= 1


def translate(tr: Translator, outer: exp.Select, item: exp.Expr, cand: Candidate) -> Relation:
    """Translate `outer`, whose FROM item `item` is the ranked SELECT of `cand`."""
    parsed = tr.parsed
    inner = cand.select
    windows = [
        (i, it)
        for i, it in enumerate(inner.expressions)
        if any(isinstance(n, exp.Window) for n in it.walk())
    ]
    if len(windows) > 1:
        raise tr.error(
            "several window functions",
            "one ROW_NUMBER() per ranked subquery",
            windows[1][1],
            hint=_HINT,
        )
    index, win_item = windows[0]
    win = win_item.this if isinstance(win_item, exp.Alias) else win_item
    if not isinstance(win, exp.Window) or not isinstance(win.this, exp.RowNumber):
        fn = win.this if isinstance(win, exp.Window) else win
        name = window_name(fn) if isinstance(win, exp.Window) else "an expression over OVER"
        raise tr.error(
            f"window function {name} OVER",
            "only ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) AS rn bounded by "
            "rn <= k in the outer query is supported",
            win,
            hint=_HINT,
        )
    if not isinstance(win_item, exp.Alias):
        raise tr.error(
            "ROW_NUMBER() OVER",
            "name the row number (AS rn) and bound it in the outer query: WHERE rn <= k",
            win,
            hint=_HINT,
        )
    if win.args.get("spec") is not None:
        raise tr.error("window frame", "ROW_NUMBER() takes no frame", win.args["spec"])
    if win.args.get("alias"):
        raise tr.error("named window", "not supported", win)
    rn = win_item.alias
    order = win.args.get("order")
    if order is None or not order.expressions:
        raise tr.error(
            "ROW_NUMBER() without ORDER BY",
            "the rank needs an order: OVER (PARTITION BY ... ORDER BY ...)",
            win,
            hint=_HINT,
        )
    where = outer.args.get("where")
    conds = conjuncts(where.this if where is not None else None)
    alias = cand.alias
    ranked = [c for c in conds if any(_is_rn(n, rn, alias) for n in c.walk())]
    rest = [c for c in conds if c not in ranked]
    if not ranked:
        raise tr.error(
            "ROW_NUMBER() OVER",
            f"a ranked subquery needs a bound on its row number in the outer WHERE "
            f"({rn} <= k); other uses of window functions are not supported",
            win,
            hint=_HINT,
        )
    if len(ranked) > 1:
        raise tr.error(
            "row number condition",
            f"one bound on {rn} (e.g. {rn} <= k) is supported, found {len(ranked)} "
            "conditions on it",
            ranked[1],
            hint=_HINT,
        )
    k = rank_bound(ranked[0], rn, alias, parsed)
    if k is None:
        raise tr.error(
            "row number condition",
            f"{ranked[0].sql('spark')!r}: only an upper bound is supported: {rn} <= k, "
            f"{rn} < k, {rn} = 1 or {rn} BETWEEN 1 AND k",
            ranked[0],
            hint=_HINT,
        )
    if k < 1:
        raise tr.error(
            "row number condition", f"{ranked[0].sql('spark')!r} keeps no row", ranked[0]
        )
    # the inner SELECT without the row number, with hidden partition/order columns
    new_inner = inner.copy()
    new_inner.expressions.pop(index)
    new_inner.set("expressions", list(new_inner.expressions))
    taken = {it.alias_or_name.lower() for it in new_inner.expressions}
    hidden: list[str] = []
    window_parts: list[str] = []
    by: list[str] = []
    for p in win.args.get("partition_by") or []:
        if isinstance(p, exp.Column) and p.name.lower() in ("window_start", "window_end"):
            window_parts.append(p.name.lower())
            continue
        name = tr.fresh("__p", taken)
        new_inner.expressions.append(exp.alias_(p.copy(), name, quoted=True))
        hidden.append(name)
        by.append(name)
    order_by: list[str] = []
    for o in order.expressions:
        desc = bool(o.args.get("desc"))
        nulls_first = o.args.get("nulls_first")
        if nulls_first is not None and bool(nulls_first) == desc:
            # not Spark's default (ASC NULLS FIRST, DESC NULLS LAST): order by a null flag
            flag = tr.fresh("__n", taken)
            is_null = exp.Case(
                ifs=[
                    exp.If(
                        this=exp.Is(this=o.this.copy(), expression=exp.Null()),
                        true=exp.Literal.number(1),
                    )
                ],
                default=exp.Literal.number(0),
            )
            new_inner.expressions.append(exp.alias_(is_null, flag, quoted=True))
            hidden.append(flag)
            order_by.append(("-" if desc else "") + flag)
        name = tr.fresh("__o", taken)
        new_inner.expressions.append(exp.alias_(o.this.copy(), name, quoted=True))
        hidden.append(name)
        order_by.append(("-" if desc else "") + name)
    if cand.cte is not None:
        saved, tr.scopes = tr.scopes, cand.cte.chain
        try:
            rel = tr.select(new_inner)
        finally:
            tr.scopes = saved
    else:
        rel = tr.select(new_inner)
    if rel.session:
        raise tr.error(
            "top-k over SESSION",
            "ranking within session windows is not supported in SQL",
            win,
            hint="collection.window(st.Session(gap)).top_k(by=..., order_by=..., k=...)",
        )
    if rel.window is not None:
        if set(window_parts) != {"window_start", "window_end"}:
            raise tr.error(
                "top-k over a window",
                "over a window TVF the PARTITION BY must include window_start and "
                "window_end (each window's top k is emitted once, when it is sealed)",
                win,
                hint="collection.window(spec).top_k(by=..., order_by=..., k=...)",
            )
    else:
        for w in window_parts:
            found = rel.try_resolve(exp.Column(this=exp.Identifier(this=w)))
            if not found:
                raise tr.error(
                    "top-k over a window",
                    f"PARTITION BY {w}: select {w} in the ranked subquery",
                    win,
                )
            by.append(found[0].physical)
    try:
        top = rel.collection.top_k(by=by or None, order_by=order_by, k=k)
    except (TypeError, ValueError) as e:
        raise tr.error("ROW_NUMBER() OVER", str(e), win, hint=_HINT) from e
    fields = [
        Field(f.name, f.physical, f.qualifier, f.name not in hidden and f.in_star)
        for f in rel.fields
    ]
    out = Relation(top, fields, None, rel.priority)
    if _reads_rank(outer, ranked[0], rn, alias):
        if k > MAX_RANKED:
            raise tr.error(
                "row number column",
                f"the outer query reads {rn}, which is computed for k <= {MAX_RANKED} "
                f"(here k = {k}); select the other columns only",
                ranked[0],
                hint=_HINT,
            )
        physical = tr.fresh("__rn", top.columns)
        tops = [
            rel.collection.top_k(by=by or None, order_by=order_by, k=r) for r in range(1, k)
        ] + [top]
        parts = [tops[0].with_columns({physical: F.lit(1).cast("int")})]
        for r in range(2, k + 1):
            exactly_r = tops[r - 1].union(tops[r - 2].negate())
            parts.append(exactly_r.with_columns({physical: F.lit(r).cast("int")}))
        ranked_col = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]
        out = Relation(ranked_col, fields + [Field(rn, physical)], None, None)
    out = out.requalified(alias)
    condition: exp.Expr | None = None
    for c in rest:
        condition = c.copy() if condition is None else exp.and_(condition, c.copy())
    return tr.select(outer, prebuilt=out, where=condition)


def _reads_rank(outer: exp.Select, bound: exp.Expr, rn: str, alias: str | None) -> bool:
    for item in outer.expressions:
        if isinstance(item, exp.Star):
            return True
        if (
            isinstance(item, exp.Column)
            and isinstance(item.this, exp.Star)
            and (not item.table or (alias and item.table.lower() == alias.lower()))
        ):
            return True
    for key, value in outer.args.items():
        if key in ("where", "from_", "with_"):
            continue
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, exp.Expr) and any(_is_rn(n, rn, alias) for n in v.walk()):
                return True
    where = outer.args.get("where")
    if where is not None:
        for c in conjuncts(where.this):
            if c is not bound and any(_is_rn(n, rn, alias) for n in c.walk()):
                return True
    return False
