"""``ORDER BY ... LIMIT n [OFFSET m]`` in a view: a top-k over the whole view.

A view is a multiset, so ``ORDER BY`` alone changes nothing and is left out (as
Materialize does); with ``LIMIT n`` it is ``top_k(order_by=..., k=n)``, and ``OFFSET
m`` removes the first ``m``: ``top_k(k=n+m) − top_k(k=m)`` (each a prefix of one
deterministic order, so the second is inside the first). ``ORDER BY`` may name output
columns, their ordinals or expressions over them (hidden columns); ``NULLS FIRST/LAST``
other than Spark's default orders by a hidden null flag first. Ties are broken as
`Collection.top_k` does (then by the other columns), so the view never depends on
arrival order; Spark breaks them arbitrarily, so ``LIMIT`` agrees with ``spark.sql``
when the order has no ties between different rows (and ``LIMIT`` without ``ORDER BY``
orders by every column).

>>> from sealtime.sql.parse import parse
>>> parse("SELECT k FROM t ORDER BY k DESC LIMIT 3").tree.args["limit"].expression.sql()
'3'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from sqlglot import exp

from .expressions import check_scalar, compile_expr
from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from .translate import Translator

__all__ = ["translate"]

_HINT = "Collection.top_k(order_by=..., k=...)"


def _count(tr: Translator, node: exp.Expr | None, what: str) -> int | None:
    if node is None:
        return None
    value = node.expression if isinstance(node, (exp.Limit, exp.Offset)) else node
    if isinstance(value, exp.Literal) and not value.is_string and str(value.this).isdigit():
        return int(str(value.this))
    raise tr.error(what, f"{what} takes a whole number (a literal)", node, keyword=what)


def _passed_through(node: exp.Expr, e: exp.Column, rel: Relation) -> str | None:
    """The output column of a qualified ``ORDER BY t.c`` that the select list passes
    through unchanged (``t.c``, aliased or not, or inside ``t.*``/``*``), as Spark
    resolves it; None if it does not."""
    if not e.table or not isinstance(node, exp.Select):
        return None
    items = node.expressions
    for i, item in enumerate(items):
        inner = item.this if isinstance(item, exp.Alias) else item
        same = isinstance(inner, exp.Column) and (inner.table, inner.name) == (e.table, e.name)
        if same and not any(_star(x) for x in items[:i]):
            return rel.visible[i].physical
    if any(_star(x) and (isinstance(x, exp.Star) or x.table == e.table) for x in items):
        fields = rel.try_resolve(exp.column(e.name))
        if len(fields) == 1:
            return fields[0].physical
    return None


def _star(item: exp.Expr) -> bool:
    return isinstance(item, exp.Star) or (
        isinstance(item, exp.Column) and isinstance(item.this, exp.Star)
    )


def translate(tr: Translator, node: exp.Expr) -> Relation:
    """The query `node` with its ORDER BY / LIMIT / OFFSET (see the module docstring)."""
    order = node.args.get("order")
    limit = _count(tr, node.args.get("limit"), "LIMIT")
    offset = _count(tr, node.args.get("offset"), "OFFSET")
    bare = node.copy()
    for key in ("order", "limit", "offset"):
        bare.set(key, None)
    rel = tr.strip(tr.query(bare))
    if limit is None and not offset:
        return rel  # (a view has no order)
    visible = rel.visible
    taken = set(rel.collection.columns)
    hidden: dict[str, object] = {}
    order_by: list[str] = []
    keys = list(order.expressions) if order is not None else []
    for o in keys:
        e = o.this
        desc = bool(o.args.get("desc"))
        if isinstance(e, exp.Literal) and not e.is_string:
            n = int(str(e.this))
            if not 1 <= n <= len(visible):
                raise tr.error("ORDER BY ordinal", f"there is no output column {n}", e)
            column = visible[n - 1].physical
        elif isinstance(e, exp.Column) and rel.try_resolve(e):
            column = rel.resolve(e, tr.parsed).physical
        elif isinstance(e, exp.Column) and (passed := _passed_through(node, e, rel)):
            column = passed
        else:
            check_scalar(e, tr.parsed, "ORDER BY")
            column = tr.fresh("__o", taken)
            taken.add(column)
            hidden[column] = compile_expr(e, rel, tr.parsed)
        nulls_first = o.args.get("nulls_first")
        if nulls_first is not None and bool(nulls_first) == desc:
            flag = tr.fresh("__n", taken)
            taken.add(flag)
            hidden[flag] = (
                F.col(f"`{column}`").isNull().cast("int")
                if column not in hidden
                else (
                    hidden[column].isNull().cast("int")  # type: ignore[attr-defined]
                )
            )
            order_by.append(("-" if desc else "") + flag)
        order_by.append(("-" if desc else "") + column)
    if not order_by:  # LIMIT without ORDER BY: any n rows; these are the first in all columns
        order_by = [f.physical for f in visible]
    coll = rel.collection
    if hidden:
        items = [(None, col_ref(c)) for c in coll.columns]
        items += [(None, c.alias(n)) for n, c in hidden.items()]  # type: ignore[attr-defined]
        coll = tr.evaluate(rel, items)
    total = (limit if limit is not None else 0) + (offset or 0)
    if limit is None:
        raise tr.error(
            "OFFSET without LIMIT",
            "a view keeps every row but the first m of an order only with a bound: add LIMIT",
            node.args.get("offset"),
            keyword="OFFSET",
            hint=_HINT,
        )
    if total == 0:
        out = coll.filter(F.lit(False))
    else:
        try:
            out = coll.top_k(order_by=order_by, k=total)
        except (TypeError, ValueError) as e:
            raise tr.error("ORDER BY ... LIMIT", str(e), order, keyword="ORDER", hint=_HINT) from e
        if offset:
            first = coll.top_k(order_by=order_by, k=offset)
            out = out.union(first.negate())
    out = out.select(*[col_ref(f.physical) for f in visible])
    return Relation(out, [Field(f.name, f.physical, f.qualifier) for f in visible])
