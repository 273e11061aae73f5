"""Window functions (``... OVER (PARTITION BY ... ORDER BY ... [frame])``) in a SELECT.

Every window function of a SELECT without GROUP BY becomes a hidden column computed by
`Collection.over` (one operator per distinct ``PARTITION BY`` / ``ORDER BY``), and the
SELECT item reads that column, so ``SUM(v) OVER (...) / 2`` is an expression over it.
Partition and order expressions that are not columns are hidden columns first;
``NULLS FIRST/LAST`` other than Spark's default orders by a hidden null flag first.

Functions: ``ROW_NUMBER``, ``RANK``, ``DENSE_RANK``, ``PERCENT_RANK``, ``CUME_DIST``,
``NTILE(n)``, ``LAG``/``LEAD(x [, n [, default]])``, ``FIRST_VALUE``/``LAST_VALUE``,
and ``COUNT``, ``SUM``, ``AVG``, ``MIN``, ``MAX`` over a frame: ``ROWS BETWEEN
{UNBOUNDED PRECEDING | n PRECEDING | CURRENT ROW | n FOLLOWING} AND {...}`` or ``RANGE
BETWEEN {UNBOUNDED PRECEDING | CURRENT ROW} AND {CURRENT ROW | UNBOUNDED FOLLOWING}``
(Spark's default frames when none is given). Ties in the ORDER BY are broken by the
row's other columns, so results never depend on arrival order; Spark breaks them
arbitrarily, so ``ROW_NUMBER``, ``LAG``, ``LEAD`` and ``ROWS`` frames agree with it when
the order has no ties between rows that differ.

>>> from sealtime.sql.parse import parse
>>> w = parse("SELECT SUM(v) OVER (ORDER BY v ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t").tree.expressions[0]
>>> frame_of(w, None)
('rows', -2, 0)
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pyspark.sql import Column
from sqlglot import exp

from ..plan.over import OverFunction
from .expressions import check_scalar, compile_expr, quoted, spark_errors, user_name
from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from .parse import Parsed
    from .translate import Translator

__all__ = ["frame_of", "translate"]

_HINT = "Collection.over(by=..., order_by=..., name=(kind, column))"
_RANKING = {
    exp.RowNumber: "row_number",
    exp.Rank: "rank",
    exp.DenseRank: "dense_rank",
    exp.PercentRank: "percent_rank",
    exp.CumeDist: "cume_dist",
    exp.Ntile: "ntile",
}
_VALUES = {
    exp.Lag: "lag",
    exp.Lead: "lead",
    exp.FirstValue: "first_value",
    exp.LastValue: "last_value",
    exp.First: "first_value",
    exp.Last: "last_value",
    exp.Count: "count",
    exp.Sum: "sum",
    exp.Avg: "avg",
    exp.Min: "min",
    exp.Max: "max",
}


def _bound(value: Any, side: str | None, parsed: Parsed | None) -> int | None | str:
    """A frame bound as an offset (None: unbounded; "?" when it is not a whole number)."""
    if value is None or (isinstance(value, str) and value.upper() == "CURRENT ROW"):
        return 0
    if isinstance(value, str) and value.upper() == "UNBOUNDED":
        return None
    text = value.sql() if isinstance(value, exp.Expr) else str(value)
    if not text.isdigit():
        return "?"
    n = int(text)
    return -n if (side or "").upper() == "PRECEDING" else n


def frame_of(window: exp.Window, tr: Translator | None) -> tuple[str, int | None, int | None]:
    """The frame ``(unit, start, end)`` of `window` (Spark's default when none is given:
    the partition up to the current row's peers with ORDER BY, all of it without)."""
    spec = window.args.get("spec")
    if spec is None:
        return ("range", None, 0) if window.args.get("order") else ("rows", None, None)
    unit = str(spec.args.get("kind") or "ROWS").lower()
    start = _bound(spec.args.get("start"), spec.args.get("start_side"), None)
    end = _bound(spec.args.get("end"), spec.args.get("end_side"), None)
    if start is None and spec.args.get("start_side", "").upper() == "FOLLOWING":
        start = "?"
    if (
        spec.args.get("exclude")
        or start == "?"
        or end == "?"
        or (unit == "range" and (start not in (None, 0) or end not in (None, 0)))
    ):
        if tr is not None:
            raise tr.error(
                "window frame",
                f"{spec.sql(dialect='spark')!r}: frames are ROWS BETWEEN {{UNBOUNDED "
                "PRECEDING | n PRECEDING | CURRENT ROW | n FOLLOWING}} AND {...}, or RANGE "
                "BETWEEN {UNBOUNDED PRECEDING | CURRENT ROW} AND {CURRENT ROW | UNBOUNDED "
                "FOLLOWING}",
                spec,
                fallback=window,
                hint=_HINT,
            )
        return ("rows", None, None)
    return unit, start, end  # type: ignore[return-value]


def _int_arg(tr: Translator, node: exp.Expr | None, what: str, default: int) -> int:
    if node is None:
        return default
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(str(node.this))
    raise tr.error("window function", f"{what} must be a whole number literal", node, hint=_HINT)


def _literal(tr: Translator, node: exp.Expr | None) -> Any:
    """The Python value of a literal default (LAG's third argument)."""
    if node is None or isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal):
        value = _literal(tr, node.this)
        return -value
    if isinstance(node, exp.Literal):
        if node.is_string:
            return str(node.this)
        text = str(node.this)
        return float(text) if any(c in text for c in ".eE") else int(text)
    if isinstance(node, exp.Boolean):
        return bool(node.this)
    raise tr.error("LAG/LEAD default", "the default must be a literal", node, hint=_HINT)


def translate(
    tr: Translator, rel: Relation, items: list[exp.Expr]
) -> tuple[Relation, list[exp.Expr]]:
    """`rel` with a hidden column per window function of `items`, and `items` reading
    those columns instead (see the module docstring)."""
    parsed = tr.parsed
    windows = [
        n
        for item in items
        for n in item.walk()
        if isinstance(n, exp.Window) and n.find_ancestor(exp.Window) is None
    ]
    groups: dict[str, list[exp.Window]] = {}
    for w in windows:
        if w.args.get("alias"):
            raise tr.error("named window", "write the window's definition in OVER (...)", w)
        fn = w.this
        if isinstance(fn, (exp.IgnoreNulls, exp.RespectNulls)):
            raise tr.error(
                f"{user_name(fn.this, parsed)} IGNORE/RESPECT NULLS", "not supported", w, hint=_HINT
            )
        parts = [p.sql(dialect="spark") for p in w.args.get("partition_by") or []]
        order = w.args.get("order")
        key = repr((parts, order.sql(dialect="spark") if order is not None else None))
        groups.setdefault(key, []).append(w)
    replace: dict[int, str] = {}
    coll = rel.collection
    current = rel
    for members in groups.values():
        first = members[0]
        taken = set(current.collection.columns)
        hidden: dict[str, tuple[exp.Expr, Column]] = {}
        by: list[str] = []
        for p in first.args.get("partition_by") or []:
            check_scalar(p, parsed, "PARTITION BY")
            if isinstance(p, exp.Column):
                by.append(current.resolve(p, parsed).physical)
            else:
                name = tr.fresh("__p", taken)
                taken.add(name)
                hidden[name] = (p, compile_expr(p, current, parsed))
                by.append(name)
        order_by: list[str] = []
        order = first.args.get("order")
        for o in order.expressions if order is not None else []:
            e = o.this
            check_scalar(e, parsed, "ORDER BY")
            desc = bool(o.args.get("desc"))
            if isinstance(e, exp.Column):
                column = current.resolve(e, parsed).physical
                value = col_ref(column)
            else:
                column = tr.fresh("__o", taken)
                taken.add(column)
                value = compile_expr(e, current, parsed)
                hidden[column] = (e, value)
            nulls_first = o.args.get("nulls_first")
            if nulls_first is not None and bool(nulls_first) == desc:
                flag = tr.fresh("__n", taken)
                taken.add(flag)
                hidden[flag] = (e, value.isNull().cast("int"))
                order_by.append(("-" if desc else "") + flag)
            # (a partition column orders nothing, but keeps the window ordered: peers)
            order_by.append(("-" if desc else "") + column)
        functions: dict[str, OverFunction] = {}
        for w in members:
            fn = w.this
            name = tr.fresh("__w", taken)
            taken.add(name)
            functions[name] = _function(tr, current, w, fn, name, hidden, taken)
            replace[id(w)] = name
        coll = current.collection
        if hidden:
            items_in = [(None, col_ref(c)) for c in coll.columns]
            items_in += [(node, c.alias(n)) for n, (node, c) in hidden.items()]
            coll = tr.evaluate(current, items_in)
        with spark_errors(parsed, first, "window function"):
            try:
                coll = coll.over(by=by or None, order_by=order_by, **functions)
            except (TypeError, ValueError) as e:
                if hasattr(e, "construct"):
                    raise
                raise tr.error(
                    f"window function {user_name(first.this, parsed)} OVER",
                    str(e),
                    first,
                    hint=_HINT,
                ) from e
        fields = list(current.fields) + [Field(n, n, in_star=False) for n in functions]
        current = Relation(coll, fields, current.time_column, current.priority)

    out = [_swapped(item, replace) for item in items]
    # (a row's value can change at any later time: the time column no longer holds)
    return Relation(current.collection, current.fields, None, current.priority), out


def _swapped(item: exp.Expr, replace: dict[int, str]) -> exp.Expr:
    """A copy of `item` with each window call whose id is in `replace` swapped for its
    hidden column (the copy, not the parsed text, changes: errors still point into it).

    >>> from sealtime.sql.parse import parse
    >>> item = parse("SELECT RANK() OVER (ORDER BY v) + 1 AS r FROM t").tree.expressions[0]
    >>> window = next(item.find_all(exp.Window))
    >>> _swapped(item, {id(window): "__w1"}).sql(), item.sql()
    ('"__w1" + 1 AS r', 'RANK() OVER (ORDER BY v) + 1 AS r')
    """
    if not any(id(n) in replace for n in item.walk()):
        return item
    copy = item.copy()
    # (a copy walks in the same order as its original: pair the nodes up by position)
    targets = [
        (new, replace[id(old)]) for old, new in zip(item.walk(), copy.walk()) if id(old) in replace
    ]
    for node, name in targets:
        if node is copy:
            return quoted(name)
        node.replace(quoted(name))
    return copy


def _function(
    tr: Translator,
    rel: Relation,
    window: exp.Window,
    fn: exp.Expr,
    name: str,
    hidden: dict[str, tuple[exp.Expr, Column]],
    taken: set[str],
) -> OverFunction:
    """The `OverFunction` of one window function call (arguments that are expressions
    become hidden columns)."""
    parsed = tr.parsed
    uname = user_name(fn, parsed)

    def column(arg: exp.Expr | None) -> str | None:
        if arg is None or isinstance(arg, exp.Star):
            return None
        check_scalar(arg, parsed, f"{uname}(...)")
        if isinstance(arg, exp.Column):
            return rel.resolve(arg, parsed).physical
        hid = tr.fresh("__x", taken)
        taken.add(hid)
        hidden[hid] = (arg, compile_expr(arg, rel, parsed))
        return hid

    kind = _RANKING.get(type(fn))
    if kind is not None:
        if window.args.get("order") is None:
            raise tr.error(
                f"{uname}() OVER",
                f"{uname} needs an order: OVER ([PARTITION BY ...] ORDER BY ...)",
                window,
                hint=_HINT,
            )
        offset = _int_arg(tr, fn.this, "NTILE's bucket count", 1) if kind == "ntile" else 1
        return OverFunction(name, kind, None, offset)
    kind = _VALUES.get(type(fn))
    if kind is None and isinstance(fn, exp.Anonymous):
        kind = {"FIRST_VALUE": "first_value", "LAST_VALUE": "last_value"}.get(str(fn.name).upper())
    if kind is None:
        raise tr.error(
            f"window function {uname}",
            "not supported; the window functions are ROW_NUMBER, RANK, DENSE_RANK, "
            "PERCENT_RANK, CUME_DIST, NTILE, LAG, LEAD, FIRST_VALUE, LAST_VALUE, COUNT, "
            "SUM, AVG, MIN and MAX",
            window,
            hint=_HINT,
        )
    arg = fn.this
    if isinstance(arg, exp.Distinct):
        raise tr.error(f"{uname}(DISTINCT ...) OVER", "not supported", window, hint=_HINT)
    if kind in ("lag", "lead"):
        if window.args.get("order") is None:
            raise tr.error(
                f"{uname}() OVER", f"{uname} needs ORDER BY in its window", window, hint=_HINT
            )
        offset = _int_arg(tr, fn.args.get("offset"), f"{uname}'s offset", 1)
        default = _literal(tr, fn.args.get("default"))
        return OverFunction(name, kind, column(arg), offset, default)
    return OverFunction(name, kind, column(arg), 1, None, frame_of(window, tr))
