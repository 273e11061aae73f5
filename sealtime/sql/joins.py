"""Joins of every kind, composed from the one differential join (inner, on equal keys).

=========================================  ==============================================
SQL                                        operators
=========================================  ==============================================
``a [INNER] JOIN b ON a.x = b.y AND p``     ``join(on=keys)`` (keys computed, cast to a
                                           common type), then ``filter(p)``
``a CROSS JOIN b``, ``FROM a, b``,          ``join`` on a constant key (every pair),
a condition with no equality                then ``filter``
``a LEFT JOIN b ON ...``                    the inner join ∪ the rows of ``a`` without a
                                           match, padded with NULLs: ``a − semi(a)``
``a RIGHT JOIN b``, ``a FULL JOIN b``       the same for ``b`` / for both sides
``a LEFT SEMI JOIN b``, ``EXISTS``, ``IN``  ``semi(a)``: ``a ⋈ distinct(keys of b)``
``a LEFT ANTI JOIN b``, ``NOT EXISTS``      ``a − semi(a)``
=========================================  ==============================================

Which rows of ``a`` have a match: without other conditions, those whose keys are among
the distinct keys of ``b`` (a join with ``distinct()``); with other conditions (``a.x =
b.y AND b.t > a.t``), those among the distinct row identities (``to_json`` of the row)
of the filtered inner join — rows equal in every column are one identity, and each
copy of such a row is matched or not together, as in SQL. NULL keys never match.

When the ``ON`` condition bounds one side's event time by the other's (``b.ts BETWEEN
a.ts AND a.ts + INTERVAL '1' HOUR``, both the rows' time columns), an inner join is an
interval join (`Collection.interval_join`): same result, but each side keeps a row
only while a row of the other side arriving later could still match it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from .expressions import compile_expr
from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from ..dataflow.collection import Collection
    from .translate import Translator

__all__ = ["Condition", "IntervalBounds", "join", "semi_join"]


@dataclass
class IntervalBounds:
    """``right_time BETWEEN left_time + lower AND left_time + upper`` (ms): an interval
    join's bounds."""

    lower: int
    upper: int


@dataclass
class Condition:
    """A join condition, split: equality pairs (left expression, right expression) and
    the rest (filters over the joined row)."""

    pairs: list[tuple[exp.Expr, exp.Expr]] = field(default_factory=list)
    residual: list[exp.Expr] = field(default_factory=list)
    interval: IntervalBounds | None = None


@dataclass
class _Sides:
    """Both sides projected for the inner join: their collections, the join keys, the
    right side's renames, the row-identity columns (or None) and the output fields."""

    left: Collection
    right: Collection
    keys: list[str]
    fields: list[Field]
    lid: str | None
    rid: str | None
    left_cols: list[str]
    right_cols: list[str]
    #: the right side's physical columns -> their names in the join
    rename: dict[str, str]


def _prepare(
    tr: Translator,
    left: Relation,
    right: Relation,
    cond: Condition,
    *,
    left_ids: bool,
    right_ids: bool,
    using_right: set[str] = frozenset(),  # type: ignore[assignment]
) -> _Sides:
    """Project both sides: their columns (right's renamed where they clash), the join
    keys (cast to a common type; a constant when there is no equality) and the row
    identities asked for."""
    left = tr.strip(left)
    right = tr.strip(right)
    left_phys = list(dict.fromkeys(f.physical for f in left.fields))
    right_phys = list(dict.fromkeys(f.physical for f in right.fields))
    taken = set(left_phys) | set(right_phys)
    rename: dict[str, str] = {}
    for p in right_phys:
        rename[p] = tr.fresh(f"{p}_", taken | set(rename.values())) if p in left_phys else p
    taken |= set(rename.values())
    pairs = cond.pairs
    lkeys: list[Column] = []
    rkeys: list[Column] = []
    for le, re_ in pairs:
        lkeys.append(compile_expr(le, left, tr.parsed))
        rkeys.append(compile_expr(re_, right, tr.parsed))
    if pairs:
        ltypes = tr.probe_schema(left.collection.schema, lkeys)
        rtypes = tr.probe_schema(right.collection.schema, rkeys)
        for i, (lt, rt) in enumerate(zip(ltypes.fields, rtypes.fields)):
            if lt.dataType == rt.dataType:
                continue
            numeric = isinstance(lt.dataType, T.NumericType) and isinstance(
                rt.dataType, T.NumericType
            )
            if not numeric:
                le, re_ = pairs[i]
                raise tr.error(
                    "join key types",
                    f"{le.sql(dialect='spark')} is {lt.dataType.simpleString()} and "
                    f"{re_.sql(dialect='spark')} is {rt.dataType.simpleString()}; CAST one "
                    "side to the other's type",
                    le,
                    fallback=le,
                )
            both = T.StructType([T.StructField("a", lt.dataType), T.StructField("b", rt.dataType)])
            common = tr.probe_schema(both, [F.expr("coalesce(a, b)")]).fields[0].dataType
            if lt.dataType != common:
                lkeys[i] = lkeys[i].cast(common)
            if rt.dataType != common:
                rkeys[i] = rkeys[i].cast(common)
        keys = [tr.fresh("__k", taken) for _ in pairs]
        nodes: list[exp.Expr | None] = [le for le, _ in pairs]
        rnodes: list[exp.Expr | None] = [re_ for _, re_ in pairs]
    else:  # every pair of rows: one constant key
        keys = [tr.fresh("__k", taken)]
        lkeys, rkeys = [F.lit(0)], [F.lit(0)]
        nodes, rnodes = [None], [None]
    taken |= set(keys)
    lid = tr.fresh("__lid", taken) if left_ids else None
    rid = tr.fresh("__rid", taken | {lid or ""}) if right_ids else None

    def identity(columns: list[str]) -> Column:
        return F.to_json(F.struct(*[col_ref(c) for c in columns]))

    litems: list[tuple[exp.Expr | None, Column]] = [(None, col_ref(p)) for p in left_phys]
    litems += [(n, c.alias(k)) for n, c, k in zip(nodes, lkeys, keys)]
    if lid:
        litems.append((None, identity(left_phys).alias(lid)))
    ritems: list[tuple[exp.Expr | None, Column]] = [
        (None, col_ref(p).alias(rename[p])) for p in right_phys
    ]
    ritems += [(n, c.alias(k)) for n, c, k in zip(rnodes, rkeys, keys)]
    if rid:
        ritems.append((None, identity(right_phys).alias(rid)))
    lcol = tr.evaluate(left, litems)
    rcol = tr.evaluate(right, ritems)
    fields = list(left.fields)
    for f in right.fields:
        g = Field(f.name, rename[f.physical], f.qualifier, f.in_star, f.qualified_only)
        if f.physical in using_right:
            g = Field(g.name, g.physical, g.qualifier, in_star=False, qualified_only=True)
        fields.append(g)
    return _Sides(
        lcol, rcol, keys, fields, lid, rid, left_phys, [rename[p] for p in right_phys], rename
    )


def _unmatched(side: Collection, matched: Collection, on: list[str]) -> Collection:
    """The rows of `side` without a match: ``side − (side ⋈ matched)`` (`matched`: the
    distinct keys or identities of the matched rows, columns `on`)."""
    return side.union(side.join(matched.select(*[col_ref(c) for c in on]), on=on).negate())


def join(
    tr: Translator,
    left: Relation,
    right: Relation,
    cond: Condition,
    how: str,
    using_right: set[str] = frozenset(),  # type: ignore[assignment]
) -> Relation:
    """``left <how> JOIN right ON cond`` (`how`: inner, left, right or full)."""
    outer_ids = bool(cond.residual)
    sides = _prepare(
        tr,
        left,
        right,
        cond,
        left_ids=outer_ids and how in ("left", "full"),
        right_ids=outer_ids and how in ("right", "full"),
        using_right=using_right,
    )
    if cond.interval is not None and how == "inner":
        # (the bounds are on both sides' time columns: the rows' logical times)
        matched = sides.left.interval_join(
            sides.right, on=sides.keys, lower=cond.interval.lower, upper=cond.interval.upper
        )
        joined = [*sides.keys, *sides.left.columns, *sides.right.columns]
        matched = matched.select(*[col_ref(c) for c in dict.fromkeys(joined)])
    else:
        matched = sides.left.join(sides.right, on=sides.keys)
    rel = Relation(matched, sides.fields)
    for c in cond.residual:
        rel = tr.filter(rel, c, "JOIN ... ON")
    inner = rel.collection
    columns = inner.columns
    parts = [inner]
    types = {f.name: f.dataType for f in inner.schema.fields}
    for kind, side, ident in (
        ("left", sides.left, sides.lid),
        ("right", sides.right, sides.rid),
    ):
        if how not in (kind, "full"):
            continue
        other = sides.right if kind == "left" else sides.left
        if ident is not None:
            matched_ids = inner.select(col_ref(ident)).distinct()
            rest = _unmatched(side, matched_ids, [ident])
        else:
            matched_keys = other.select(*[col_ref(k) for k in sides.keys]).distinct()
            rest = _unmatched(side, matched_keys, sides.keys)
        present = set(rest.columns)
        padded = rest.select(
            *[col_ref(c) if c in present else F.lit(None).cast(types[c]).alias(c) for c in columns]
        )
        parts.append(padded)
    out = parts[0].union(*parts[1:]) if len(parts) > 1 else parts[0]
    hidden = {sides.lid, sides.rid} - {None}
    if hidden:
        out = out.select(*[col_ref(c) for c in columns if c not in hidden])
    return Relation(out, sides.fields)


def semi_join(
    tr: Translator, left: Relation, right: Relation, cond: Condition, *, anti: bool = False
) -> Relation:
    """The rows of `left` with a match in `right` (`anti`: without one), each with its
    own multiplicity; `left`'s columns only."""
    sides = _prepare(tr, left, right, cond, left_ids=bool(cond.residual), right_ids=False)
    if cond.residual:
        rel = Relation(sides.left.join(sides.right, on=sides.keys), sides.fields)
        for c in cond.residual:
            rel = tr.filter(rel, c, "subquery condition")
        on = [sides.lid]
        matched = rel.collection.select(col_ref(sides.lid)).distinct()
    else:
        on = sides.keys
        matched = sides.right.select(*[col_ref(k) for k in on]).distinct()
    keep = [col_ref(c) for c in sides.left_cols]
    hit = sides.left.join(matched, on=on)  # type: ignore[arg-type]
    if anti:
        out = sides.left.union(hit.negate()).select(*keep)
    else:
        out = hit.select(*keep)
    base = tr.strip(left)
    return Relation(out, base.fields, base.time_column, None, base.session_keys)
