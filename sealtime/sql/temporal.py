"""Temporal filters: ``WHERE mz_now() < ts + INTERVAL '1' HOUR`` (Materialize's form).

``mz_now()`` is the logical time at which the view is read. A WHERE conjunct comparing
it with an expression of the row — ``mz_now() < e``, ``<=``, ``>``, ``>=``, ``=``,
either side, or ``mz_now() BETWEEN a AND b`` — makes the row visible only during an
interval of logical time: the conjuncts become the bounds of one
`Collection.temporal_filter` (``since``: the greatest lower bound, ``until``: the least
upper bound, exclusive), which inserts each row when the interval starts and retracts it
when the frontier passes its end. No clock is read (docs/time.md, "Temporal filters").

Bounds are logical times in ms: a timestamp expression counts in ms since the epoch
(``unix_micros``, rounded as the comparison needs), a number is ms (fractions rounded as
the comparison needs); a row whose bound is NULL is never visible (the comparison is
NULL). ``mz_now()`` anywhere else is refused.

>>> from sealtime.sql.parse import parse
>>> [is_temporal(c) for c in parse("SELECT * FROM t WHERE mz_now() < ts + 5 AND v > 1").tree.args["where"].this.flatten()]
[True, False]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from .checked import may_fail
from .expressions import check_scalar, compile_expr
from .relation import Relation
from .translate import col_ref

if TYPE_CHECKING:
    from .translate import Translator

__all__ = ["is_temporal", "translate"]

_HINT = "Collection.temporal_filter(since=..., until=...)"
_OPS = {exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">=", exp.EQ: "="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


def _is_now(node: exp.Expr) -> bool:
    while isinstance(node, exp.Paren):
        node = node.this
    return (
        isinstance(node, exp.Anonymous)
        and str(node.name).upper() == "MZ_NOW"
        and not node.expressions
    )


def mentions_now(node: exp.Expr) -> bool:
    """Does `node` call ``mz_now()`` anywhere?"""
    return any(_is_now(n) for n in node.walk())


def is_temporal(node: exp.Expr) -> bool:
    """Is `node` (a WHERE conjunct) a comparison of ``mz_now()`` with an expression?"""
    if isinstance(node, exp.Between):
        return _is_now(node.this)
    if type(node) in _OPS:
        return _is_now(node.this) or _is_now(node.expression)
    return False


def _ms(tr: Translator, rel: Relation, e: exp.Expr, rounding: str) -> Column:
    """`e` as a logical time in ms (long), rounded up (``"ceil"``) or down."""
    check_scalar(e, tr.parsed, "a temporal filter bound")
    if any(_is_now(n) for n in e.walk()):
        raise tr.error(
            "mz_now()", "compare mz_now() with an expression of the row", e, fallback=e, hint=_HINT
        )
    c = compile_expr(e, rel, tr.parsed)
    dtype = tr.probe_schema(rel.collection.schema, [c]).fields[0].dataType
    if isinstance(dtype, (T.TimestampType, T.TimestampNTZType, T.DateType)):
        micros = F.unix_micros(c.cast("timestamp"))
        down = F.floor(micros / F.lit(1000))
        up = F.ceil(micros / F.lit(1000))
        return (up if rounding == "ceil" else down).cast("long")
    if isinstance(dtype, (T.ByteType, T.ShortType, T.IntegerType, T.LongType)):
        return c.cast("long")
    if isinstance(dtype, T.NumericType):
        return (F.ceil(c) if rounding == "ceil" else F.floor(c)).cast("long")
    raise tr.error(
        "mz_now()",
        f"{e.sql(dialect='spark')!r} is {dtype.simpleString()}; compare mz_now() with a "
        "timestamp or a number of ms",
        e,
        fallback=e,
        hint=_HINT,
    )


def translate(tr: Translator, rel: Relation, conds: list[exp.Expr]) -> Relation:
    """`rel` filtered by the temporal conjuncts `conds` (see the module docstring)."""
    lower: list[Column] = []  # visible from (inclusive)
    upper: list[Column] = []  # visible until (exclusive)
    nodes: list[exp.Expr] = []
    for c in conds:
        if isinstance(c, exp.Between):
            lower.append(_ms(tr, rel, c.args["low"], "ceil"))
            upper.append(_ms(tr, rel, c.args["high"], "floor") + F.lit(1))
            nodes += [c.args["low"], c.args["high"]]
            continue
        op = _OPS[type(c)]
        other = c.expression if _is_now(c.this) else c.this
        if not _is_now(c.this):
            op = _FLIP[op]
        nodes.append(other)
        if op == "<":  # now < e  <=>  now < ceil(e)
            upper.append(_ms(tr, rel, other, "ceil"))
        elif op == "<=":
            upper.append(_ms(tr, rel, other, "floor") + F.lit(1))
        elif op == ">":
            lower.append(_ms(tr, rel, other, "floor") + F.lit(1))
        elif op == ">=":
            lower.append(_ms(tr, rel, other, "ceil"))
        else:
            lower.append(_ms(tr, rel, other, "ceil"))
            upper.append(_ms(tr, rel, other, "floor") + F.lit(1))
    taken = set(rel.collection.columns)
    since = tr.fresh("__since", taken) if lower else None
    until = tr.fresh("__until", taken | {since or ""}) if upper else None
    items: list[tuple[exp.Expr | None, Column]] = [
        (None, col_ref(c)) for c in rel.collection.columns
    ]
    risky = next((n for n in nodes if may_fail(n)), None)
    if since:
        items.append((risky, (F.greatest(*lower) if len(lower) > 1 else lower[0]).alias(since)))
    if until:
        items.append((risky, (F.least(*upper) if len(upper) > 1 else upper[0]).alias(until)))
    bounded = Relation(tr.evaluate(rel, items), rel.fields)
    # (a NULL bound makes the comparison NULL: the row is never visible)
    present = [col_ref(c).isNotNull() for c in (since, until) if c]
    coll = bounded.collection.filter(present[0] & present[-1])
    out = coll.temporal_filter(since=since, until=until)
    kept = [col_ref(c) for c in rel.collection.columns]
    # (rows now enter and leave at times other than their event time)
    return Relation(out.select(*kept), rel.fields, None, rel.priority, rel.session_keys)
