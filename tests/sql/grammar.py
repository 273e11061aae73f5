"""Random SQL views from a grammar of the supported constructs, for the oracle property.

Tables: ``a(ex, k, v)`` and ``b(ex, k, w)`` (``tests.dataflow.workloads``), plus every
view generated earlier in the same dataflow (``q0``, ``q1``, ...). Every relation keeps
the workload column ``ex`` unchanged and every stateful construct keys on it (GROUP BY
ex, joins ON l.ex = r.ex, PARTITION BY ex, DISTINCT over rows holding ex), so the
oracle can run the *same query text* once over inputs in which ``ex`` also encodes the
sealed time (``ex + 100 * time``): each (time, workload) is an independent group.

Constructs: projection with Spark expressions and aliases, ``*``, WHERE, GROUP BY with
SUM/COUNT(*)/COUNT(x)/MIN/MAX/AVG/COUNT(DISTINCT), expressions over aggregates, HAVING
(also on aggregates not selected), INNER and LEFT equi-joins with WHERE over either
side, UNION ALL, SELECT DISTINCT, CTEs, subqueries in FROM and top-k (ROW_NUMBER() ...
<= k, with and without the rank column; its ORDER BY covers every selected column, so there are no ties
between different rows and Spark's arbitrary tie-breaking cannot matter); and those
of issue 33: RIGHT, FULL and LEFT joins with non-equi conditions, UNION [DISTINCT],
INTERSECT [ALL], EXCEPT [ALL], [NOT] EXISTS, IN and scalar subqueries correlated on
``ex``, window functions (ROW_NUMBER, RANK, DENSE_RANK, LAG, LEAD, SUM/MAX/AVG/COUNT
OVER with default and ROWS frames), aggregates with FILTER (WHERE ...), SUM/AVG(DISTINCT),
STDDEV, VAR_POP, count_if and a sorted collect_list, and temporal filters (``mz_now()``,
which the oracle reads as the time folded into ``ex``: `oracle_text`). Global aggregates,
ORDER BY ... LIMIT [OFFSET], uncorrelated scalar/IN/NOT IN subqueries, CROSS JOIN,
CUMULATE windows and interval joins are not keyed on ``ex``: `unkeyed_views` makes one
random view of each, over random relations of the constructs above, which the oracle
checks over the inputs accumulated to every time (`tests.sql.oracle.per_time`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as hs

NUM = ("long", "double")


@dataclass(frozen=True)
class Rel:
    """A query text and its columns (besides ``ex``): name -> "long"|"double"|"string"."""

    sql: str
    cols: tuple[tuple[str, str], ...]

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.cols]

    def of(self, *types: str) -> list[str]:
        return [n for n, t in self.cols if t in types]

    @property
    def has_k(self) -> bool:
        return "k" in self.names


BASE = {
    "a": Rel("a", (("k", "string"), ("v", "long"))),
    "b": Rel("b", (("k", "string"), ("w", "long"))),
}


def _alias_counter():
    n = [0]

    def fresh(prefix: str = "t") -> str:
        n[0] += 1
        return f"{prefix}{n[0]}"

    return fresh


@hs.composite
def num_expr(draw, rel: Rel, t: str) -> tuple[str, str]:
    """A numeric expression over a column of `rel` and its type."""
    nums = rel.of(*NUM)
    if not nums:
        return "1", "long"
    c = f"{t}.{draw(hs.sampled_from(nums))}"
    typ = dict(rel.cols)[c.split(".")[1]]
    form = draw(hs.integers(0, 6))
    if form == 0:
        return f"{c} + 1", typ
    if form == 1:
        return f"{c} * 2", typ
    if form == 2:
        return f"abs({c})", typ
    if form == 3:
        return f"{c} / 2", "double"
    if form == 4 and len(nums) > 1:
        d = f"{t}.{draw(hs.sampled_from(nums))}"
        types = {typ, dict(rel.cols)[d.split(".")[1]]}
        return f"{c} - {d}", "double" if "double" in types else "long"
    if form == 5:
        return f"CASE WHEN {c} > 2 THEN {c} ELSE 0 END", typ
    return c, typ


@hs.composite
def str_expr(draw, rel: Rel, t: str) -> tuple[str, str]:
    strs = rel.of("string")
    if not strs:
        return "'x'", "string"
    c = f"{t}.{draw(hs.sampled_from(strs))}"
    return draw(
        hs.sampled_from(
            [
                f"upper({c})",
                f"coalesce({c}, 'none')",
                f"concat({c}, '!')",
                f"CASE WHEN {c} IS NULL THEN 'null' ELSE {c} END",
            ]
        )
    ), "string"


@hs.composite
def predicate(draw, rel: Rel, t: str) -> str:
    options = []
    for n in rel.of(*NUM):
        options += [f"{t}.{n} > 1", f"{t}.{n} % 2 = 0", f"{t}.{n} <= 3", f"{t}.{n} IS NOT NULL"]
    for n in rel.of("string"):
        options += [f"{t}.{n} IS NOT NULL", f"{t}.{n} <> 'a'", f"coalesce({t}.{n}, 'z') < 'c'"]
    if not options:
        return "true"
    first = draw(hs.sampled_from(options))
    if draw(hs.booleans()):
        return first
    second = draw(hs.sampled_from(options))
    return f"({first} {draw(hs.sampled_from(['AND', 'OR']))} {second})"


def agg_calls(r: Rel, t: str) -> dict[str, str]:
    """The aggregate calls over `r`'s columns (alias `t`) and their result types."""
    calls = {"COUNT(*)": "long"}
    for n in r.of(*NUM):
        typ = dict(r.cols)[n]
        calls |= {
            f"SUM({t}.{n})": typ,
            f"MIN({t}.{n})": typ,
            f"MAX({t}.{n})": typ,
            f"AVG({t}.{n})": "double",
            f"COUNT(DISTINCT {t}.{n})": "long",
            f"SUM({t}.{n} * 2)": typ,
            f"COUNT(*) FILTER (WHERE {t}.{n} > 1)": "long",
            f"SUM({t}.{n}) FILTER (WHERE {t}.{n} % 2 = 0)": typ,
            f"SUM(DISTINCT {t}.{n})": typ,
            f"AVG(DISTINCT {t}.{n})": "double",
            f"STDDEV({t}.{n})": "double",
            f"VAR_POP({t}.{n})": "double",
            f"count_if({t}.{n} >= 2)": "long",
            # (sorted: a list's order is not a function of the input)
            f"concat_ws(',', sort_array(collect_list(CAST({t}.{n} AS STRING))))": "string",
        }
    for n in r.of("string"):
        calls |= {f"COUNT({t}.{n})": "long", f"MAX({t}.{n})": "string"}
        calls[f"COUNT(DISTINCT {t}.{n})"] = "long"
    return calls


@hs.composite
def relation(draw, views: tuple[Rel, ...], depth: int, fresh) -> Rel:
    """A query over the base tables and `views`."""
    if depth <= 0:
        return draw(hs.sampled_from([*BASE.values(), *views]))
    kind = draw(
        hs.sampled_from(
            [
                "project",
                "filter",
                "aggregate",
                "join",
                "union",
                "distinct",
                "topk",
                "cte",
                "outer_join",
                "setop",
                "subquery",
                "over",
                "temporal",
            ]
        )
    )
    sub = relation(views, depth - 1, fresh)
    r = draw(sub)
    src = r.sql if r.sql.isidentifier() else f"({r.sql})"
    t = fresh()
    if kind in ("outer_join", "setop", "subquery", "over", "temporal"):
        return draw(_more(kind, r, src, t, sub, fresh))
    if kind == "project":
        items, cols = [f"{t}.ex"], []
        if r.has_k and draw(hs.booleans()):
            items.append(f"{t}.k")
            cols.append(("k", "string"))
        for _ in range(draw(hs.integers(1, 3))):
            e, typ = draw(hs.one_of(num_expr(r, t), str_expr(r, t)))
            name = fresh("c")
            items.append(f"{e} AS {name}")
            cols.append((name, typ))
        where = f" WHERE {draw(predicate(r, t))}" if draw(hs.booleans()) else ""
        return Rel(f"SELECT {', '.join(items)} FROM {src} {t}{where}", tuple(cols))
    if kind == "filter":
        star = draw(hs.sampled_from(["*", f"{t}.*"]))
        return Rel(f"SELECT {star} FROM {src} {t} WHERE {draw(predicate(r, t))}", r.cols)
    if kind == "aggregate":
        keys = [f"{t}.ex"] + ([f"{t}.k"] if r.has_k and draw(hs.booleans()) else [])
        items, cols = list(keys), [("k", "string")] if len(keys) > 1 else []
        nums = r.of(*NUM)
        calls = agg_calls(r, t)
        for call in draw(
            hs.lists(hs.sampled_from(list(calls)), min_size=1, max_size=4, unique=True)
        ):
            name = fresh("c")
            items.append(f"{call} AS {name}")
            cols.append((name, calls[call]))
        if nums and draw(hs.booleans()):
            n = draw(hs.sampled_from(nums))
            name = fresh("c")
            items.append(f"SUM({t}.{n}) / COUNT(*) + MIN({t}.{n}) AS {name}")
            cols.append((name, "double"))
        having = ""
        if draw(hs.booleans()):
            options = ["COUNT(*) > 1"]
            options += [f"SUM({t}.{n}) > 0" for n in nums] + [f"MAX({t}.{n}) >= 2" for n in nums]
            having = f" HAVING {draw(hs.sampled_from(options))}"
        group = ", ".join(keys)
        return Rel(
            f"SELECT {', '.join(items)} FROM {src} {t} GROUP BY {group}{having}", tuple(cols)
        )
    if kind == "join":
        r2 = draw(sub)
        src2 = r2.sql if r2.sql.isidentifier() else f"({r2.sql})"
        u = fresh()
        on = f"{t}.ex = {u}.ex"
        if r.has_k and r2.has_k and draw(hs.booleans()):
            on += f" AND {t}.k = {u}.k"
        how = draw(hs.sampled_from(["JOIN", "INNER JOIN", "LEFT JOIN", "LEFT OUTER JOIN"]))
        items = [f"{t}.ex"] + [f"{t}.{n}" for n in r.names]
        cols = list(r.cols)
        for n, typ in r2.cols:
            name = fresh("c")
            items.append(f"{u}.{n} AS {name}")
            cols.append((name, typ))
        extra = ""
        if how in ("JOIN", "INNER JOIN") and r.of(*NUM) and draw(hs.booleans()):
            extra = f" AND {t}.{r.of(*NUM)[0]} > 0"
        # WHERE over either side: below the join for an inner join's sides and a LEFT
        # join's left side, above it for a LEFT join's right side (it drops padding)
        conds = [draw(predicate(r, t))] if draw(hs.booleans()) else []
        conds += [draw(predicate(r2, u))] if draw(hs.booleans()) else []
        where = f" WHERE {' AND '.join(conds)}" if conds else ""
        return Rel(
            f"SELECT {', '.join(items)} FROM {src} {t} {how} {src2} {u} ON {on}{extra}{where}",
            tuple(cols),
        )
    if kind == "union":
        parts = []
        for _ in range(draw(hs.integers(2, 3))):
            ri = draw(sub)
            srci = ri.sql if ri.sql.isidentifier() else f"({ri.sql})"
            ti = fresh()
            k = f"{ti}.k" if ri.has_k else "CAST(NULL AS STRING)"
            e, _typ = draw(num_expr(ri, ti))
            parts.append(f"SELECT {ti}.ex, {k} AS k, CAST({e} AS DOUBLE) AS x FROM {srci} {ti}")
        return Rel(" UNION ALL ".join(parts), (("k", "string"), ("x", "double")))
    if kind == "distinct":
        chosen = (
            draw(hs.lists(hs.sampled_from(r.names), max_size=2, unique=True)) if r.names else []
        )
        items = [f"{t}.ex"] + [f"{t}.{n}" for n in chosen]
        return Rel(
            f"SELECT DISTINCT {', '.join(items)} FROM {src} {t}",
            tuple((n, dict(r.cols)[n]) for n in chosen),
        )
    if kind == "topk":
        # (an input that kept an earlier top-k's `rn` must not give the view two `rn`)
        chosen = [n for n in r.names if n != "rn"][:3]
        part = [f"{t}.ex"] + ([f"{t}.k"] if r.has_k and draw(hs.booleans()) else [])
        rest = [n for n in chosen if f"{t}.{n}" not in part]
        orders = []
        for n in draw(hs.permutations(rest)):
            direction = draw(hs.sampled_from(["", " DESC", " ASC NULLS LAST", " DESC NULLS FIRST"]))
            orders.append(f"{t}.{n}{direction}")
        order = ", ".join(orders) if orders else f"{t}.ex"
        k = draw(hs.integers(1, 3))
        bound = draw(hs.sampled_from([f"rn <= {k}", f"rn < {k + 1}", f"{k} >= rn"]))
        inner = (
            f"SELECT {t}.ex, {', '.join(f'{t}.{n}' for n in chosen) + ', ' if chosen else ''}"
            f"ROW_NUMBER() OVER (PARTITION BY {', '.join(part)} ORDER BY {order}) AS rn "
            f"FROM {src} {t}"
        )
        cols = tuple((n, dict(r.cols)[n]) for n in chosen)
        if draw(hs.booleans()):
            return Rel(f"SELECT * FROM ({inner}) {fresh()} WHERE {bound}", cols + (("rn", "long"),))
        outer = ", ".join(["ex", *chosen])
        return Rel(f"SELECT {outer} FROM ({inner}) {fresh()} WHERE {bound}", cols)
    # cte: the input as a CTE, then a filter or a projection over it
    name = fresh("cte")
    body = draw(predicate(r, name))
    return Rel(
        f"WITH {name} AS ({r.sql if not r.sql.isidentifier() else 'SELECT * FROM ' + r.sql}) "
        f"SELECT * FROM {name} WHERE {body}",
        r.cols,
    )


@hs.composite
def _more(draw, kind: str, r: Rel, src: str, t: str, sub, fresh) -> Rel:
    """The constructs of issue 33: outer and non-equi joins, set operations, subqueries
    in WHERE and SELECT, window functions (OVER) and temporal filters, each keyed on
    ``ex`` like the others."""
    nums = r.of(*NUM)
    if kind == "outer_join":
        r2 = draw(sub)
        src2 = r2.sql if r2.sql.isidentifier() else f"({r2.sql})"
        u = fresh()
        on = f"{t}.ex = {u}.ex"
        if r.has_k and r2.has_k and draw(hs.booleans()):
            on += f" AND {t}.k = {u}.k"
        n2 = r2.of(*NUM)
        if nums and n2 and draw(hs.booleans()):  # (a non-equi condition)
            on += f" AND {t}.{nums[0]} {draw(hs.sampled_from(['<', '>=', '<>']))} {u}.{n2[0]}"
        how = draw(hs.sampled_from(["RIGHT JOIN", "FULL JOIN", "FULL OUTER JOIN", "LEFT JOIN"]))
        # (an unmatched row of either side keeps its workload in ex)
        items = [f"coalesce({t}.ex, {u}.ex) AS ex"]
        cols = []
        for rel, alias in ((r, t), (r2, u)):
            for n, typ in rel.cols:
                name = fresh("c")
                items.append(f"{alias}.{n} AS {name}")
                cols.append((name, typ))
        return Rel(
            f"SELECT {', '.join(items)} FROM {src} {t} {how} {src2} {u} ON {on}", tuple(cols)
        )
    if kind == "setop":
        word = draw(
            hs.sampled_from(
                ["UNION", "INTERSECT", "INTERSECT ALL", "EXCEPT", "EXCEPT ALL", "UNION DISTINCT"]
            )
        )
        parts = []
        for rel in (r, draw(sub)):
            srci = rel.sql if rel.sql.isidentifier() else f"({rel.sql})"
            ti = fresh()
            k = f"{ti}.k" if rel.has_k else "CAST(NULL AS STRING)"
            nn = rel.of(*NUM)
            # (few distinct values, so that the sides share rows)
            x = f"CAST({ti}.{nn[0]} % 3 AS BIGINT)" if nn else "CAST(1 AS BIGINT)"
            parts.append(f"SELECT {ti}.ex, {k} AS k, {x} AS x FROM {srci} {ti}")
        return Rel(f" {word} ".join(parts), (("k", "string"), ("x", "long")))
    if kind == "subquery":
        r2 = draw(sub)
        src2 = r2.sql if r2.sql.isidentifier() else f"({r2.sql})"
        u = fresh()
        n2 = r2.of(*NUM)
        form = draw(hs.sampled_from(["exists", "not exists", "in", "scalar"]))
        inner = f"{u}.ex = {t}.ex"
        if form in ("exists", "not exists"):
            if nums and n2 and draw(hs.booleans()):
                inner += f" AND {u}.{n2[0]} > {t}.{nums[0]}"
            elif n2 and draw(hs.booleans()):
                inner += f" AND {u}.{n2[0]} > 1"
            word = "EXISTS" if form == "exists" else "NOT EXISTS"
            return Rel(
                f"SELECT * FROM {src} {t} WHERE {word} (SELECT 1 FROM {src2} {u} WHERE {inner})",
                r.cols,
            )
        if form == "in" and r.has_k and r2.has_k:
            return Rel(
                f"SELECT * FROM {src} {t} WHERE {t}.k IN (SELECT {u}.k FROM {src2} {u} "
                f"WHERE {inner})",
                r.cols,
            )
        call = draw(
            hs.sampled_from(
                ["COUNT(*)", *[f"MAX({u}.{n})" for n in n2], *[f"SUM({u}.{n})" for n in n2]]
            )
        )
        name = fresh("c")
        typ = "long" if call == "COUNT(*)" else dict(r2.cols)[call.split(".")[1][:-1]]
        return Rel(
            f"SELECT {t}.*, (SELECT {call} FROM {src2} {u} WHERE {inner}) AS {name} FROM {src} {t}",
            (*r.cols, (name, typ)),
        )
    if kind == "over":
        chosen = [n for n, typ in r.cols if typ in (*NUM, "string")][:3]
        part = [f"{t}.ex"] + ([f"{t}.k"] if r.has_k and draw(hs.booleans()) else [])
        # (the order covers every column: rows that tie are equal, so Spark's arbitrary
        # order among them cannot change the answer)
        order = (
            ", ".join(
                f"{t}.{n}{draw(hs.sampled_from(['', ' DESC', ' DESC NULLS LAST']))}" for n in chosen
            )
            or f"{t}.ex"
        )
        window = f"PARTITION BY {', '.join(part)} ORDER BY {order}"
        options = [
            ("ROW_NUMBER()", window, "long"),
            ("RANK()", window, "long"),
            ("DENSE_RANK()", window, "long"),
            ("COUNT(*)", f"PARTITION BY {', '.join(part)}", "long"),
        ]
        for n in [n for n in nums if n in chosen]:  # (values the order determines)
            typ = dict(r.cols)[n]
            options += [
                (f"LAG({t}.{n})", window, typ),
                (f"LEAD({t}.{n}, 2)", window, typ),
                (f"SUM({t}.{n})", window, typ),
                (f"MAX({t}.{n})", f"{window} ROWS BETWEEN 1 PRECEDING AND CURRENT ROW", typ),
                (f"AVG({t}.{n})", f"PARTITION BY {', '.join(part)}", "double"),
            ]
        items, cols = (
            [f"{t}.ex"] + [f"{t}.{n}" for n in chosen],
            [(n, dict(r.cols)[n]) for n in chosen],
        )
        for fn, spec, typ in draw(hs.lists(hs.sampled_from(options), min_size=1, max_size=2)):
            name = fresh("c")
            items.append(f"{fn} OVER ({spec}) AS {name}")
            cols.append((name, typ))
        return Rel(f"SELECT {', '.join(items)} FROM {src} {t}", tuple(cols))
    # temporal: each row visible during an interval of logical time given by its values
    if not nums:
        return Rel(f"SELECT * FROM {src} {t} WHERE mz_now() < 4", r.cols)
    n = draw(hs.sampled_from(nums))
    c = draw(hs.integers(1, 4))
    cond = draw(
        hs.sampled_from(
            [
                f"mz_now() < {t}.{n} + {c}",
                f"mz_now() BETWEEN {t}.{n} AND {t}.{n} + {c}",
                f"{t}.{n} + {c} >= mz_now() AND mz_now() >= {c}",
            ]
        )
    )
    return Rel(f"SELECT * FROM {src} {t} WHERE {cond}", r.cols)


def oracle_text(sql: str) -> str:
    """The text Spark runs for `sql`: ``mz_now()``, the logical time at which the view is
    read, is the time folded into ``ex`` (`tests.sql.oracle`)."""
    return sql.replace("mz_now()", "(ex DIV 100)")


@hs.composite
def queries(draw, n: int, depth: int = 2) -> list[Rel]:
    """`n` views, each over the base tables and the views before it."""
    fresh = _alias_counter()
    views: list[Rel] = []
    out: list[Rel] = []
    for i in range(n):
        d = draw(hs.integers(1, depth))
        rel = draw(relation(tuple(views), d, fresh))
        out.append(rel)
        views.append(Rel(f"q{i}", rel.cols))
    return out


# Views not keyed on ``ex``: their answer at a time mixes the workloads, so the oracle
# runs each one over the inputs accumulated to every checked time
# (`tests.sql.oracle.per_time`) instead of once over ``ex``-folded inputs.

#: event-time tables (``time="ts"``, in order, no retractions) for CUMULATE windows and
#: interval joins, which need an event-time column on each side
EVENT = {
    "l": Rel("l", (("ts", "long"), ("x", "long"))),
    "r": Rel("r", (("ts", "long"), ("y", "long"))),
}

#: one view of each unkeyed construct per example (`unkeyed_views`)
UNKEYED = ("global", "limit", "uncorrelated", "cross", "cumulate", "interval")


@dataclass(frozen=True)
class Unkeyed:
    """A view's text (`sql`) and the text Spark runs over the inputs accumulated to time
    ``{t}`` (`oracle`): the same text, except that ``mz_now()`` is that time and CUMULATE,
    which Spark lacks, is computed by an independent query."""

    kind: str
    sql: str
    oracle: str


def _from(rel: Rel) -> str:
    return rel.sql if rel.sql.isidentifier() else f"({rel.sql})"


@hs.composite
def unkeyed(draw, kind: str, fresh) -> Unkeyed:
    """A view of `kind` (one of `UNKEYED`) over the base tables."""
    if kind == "cumulate":
        return draw(_cumulate(fresh))
    if kind == "interval":
        return draw(_interval())
    r = draw(relation((), draw(hs.integers(0, 1)), fresh))
    src, t = _from(r), fresh()
    nums = r.of(*NUM)
    if kind == "global":
        calls = draw(hs.lists(hs.sampled_from(list(agg_calls(r, t))), min_size=1, max_size=3))
        items = ", ".join(f"{c} AS {fresh('c')}" for c in dict.fromkeys(calls))
        where = f" WHERE {draw(predicate(r, t))}" if draw(hs.booleans()) else ""
        sql = f"SELECT {items} FROM {src} {t}{where}"
    elif kind == "limit":
        # (the order covers every column: rows that tie are equal)
        names = ["ex", *r.names]
        order = ", ".join(
            f"{t}.{n}{draw(hs.sampled_from(['', ' DESC', ' ASC NULLS LAST', ' DESC NULLS FIRST']))}"
            for n in draw(hs.permutations(names))
        )
        offset = f" OFFSET {draw(hs.integers(1, 2))}" if draw(hs.booleans()) else ""
        items = ", ".join(f"{t}.{n}" for n in names)
        sql = f"SELECT {items} FROM {src} {t} ORDER BY {order} LIMIT {draw(hs.integers(1, 4))}{offset}"
    elif kind == "uncorrelated":
        r2 = draw(relation((), draw(hs.integers(0, 1)), fresh))
        src2, u = _from(r2), fresh()
        n2 = r2.of(*NUM)
        forms = ["select"] + (["compare"] if nums and n2 else [])
        forms += ["in", "not in"] if r.has_k and r2.has_k else []
        forms += ["not in numbers"] if nums and n2 else []
        form = draw(hs.sampled_from(forms))
        where = f" WHERE {draw(predicate(r2, u))}" if draw(hs.booleans()) else ""
        if form == "select":
            call = draw(hs.sampled_from(list(agg_calls(r2, u))))
            sql = f"SELECT {t}.*, (SELECT {call} FROM {src2} {u}{where}) AS {fresh('c')} FROM {src} {t}"
        elif form == "compare":
            call = f"{draw(hs.sampled_from(['MIN', 'MAX', 'AVG']))}({u}.{n2[0]})"
            op = draw(hs.sampled_from([">", "<=", "<>"]))
            sql = f"SELECT * FROM {src} {t} WHERE {t}.{nums[0]} {op} (SELECT {call} FROM {src2} {u}{where})"
        else:
            col, col2 = (
                (f"{t}.k", f"{u}.k")
                if form != "not in numbers"
                else (f"{t}.{nums[0]}", f"{u}.{n2[0]}")
            )
            word = "IN" if form == "in" else "NOT IN"
            sql = (
                f"SELECT * FROM {src} {t} WHERE {col} {word} (SELECT {col2} FROM {src2} {u}{where})"
            )
    else:  # cross
        r2 = draw(relation((), draw(hs.integers(0, 1)), fresh))
        src2, u = _from(r2), fresh()
        n2 = r2.of(*NUM)
        if draw(hs.booleans()):
            call = draw(hs.sampled_from(list(agg_calls(r2, u))))
            g = fresh()
            sql = (
                f"SELECT {t}.*, {g}.c FROM {src} {t} CROSS JOIN "
                f"(SELECT {call} AS c FROM {src2} {u}) {g}"
            )
        else:
            cond = f"{t}.{nums[0]} > {u}.{n2[0]} + 3" if nums and n2 else f"{t}.ex + 6 < {u}.ex"
            more = ", ".join(f"{u}.{n} AS {fresh('c')}" for n in r2.names)
            sql = (
                f"SELECT {t}.*, {u}.ex AS {fresh('c')}{', ' + more if more else ''} "
                f"FROM {src} {t} CROSS JOIN {src2} {u} WHERE {cond}"
            )
    return Unkeyed(kind, sql, sql.replace("mz_now()", "{t}"))


@hs.composite
def _cumulate(draw, fresh) -> Unkeyed:
    side = draw(hs.sampled_from(list(EVENT)))
    v = EVENT[side].names[1]
    step = draw(hs.integers(1, 3))
    size = step * draw(hs.integers(2, 4))
    calls = ["COUNT(*)", f"SUM({v})", f"MIN({v})", f"MAX({v})", f"AVG({v})"]
    chosen = draw(hs.lists(hs.sampled_from(calls), min_size=1, max_size=3, unique=True))
    items = ", ".join(f"{c} AS {fresh('c')}" for c in chosen)
    cond = f"{v} > {draw(hs.integers(0, 5))}" if draw(hs.booleans()) else ""
    sql = (
        f"SELECT window_start, window_end, ex, {items} FROM TABLE(CUMULATE(TABLE {side}, "
        f"DESCRIPTOR(ts), INTERVAL '{step}' MILLISECOND, INTERVAL '{size}' MILLISECOND))"
        f"{' WHERE ' + cond if cond else ''} GROUP BY window_start, window_end, ex"
    )
    # the windows [start, start + e) for e = step, 2 step, ... size (start aligned to the
    # size) that hold the row, each once its end has passed: at time end - 1
    oracle = (
        f"SELECT ws AS window_start, ws + e AS window_end, ex, {items} FROM "
        f"(SELECT *, ts - pmod(ts, {size}) AS ws FROM {side}) "
        f"LATERAL VIEW explode(sequence({step}, {size}, {step})) w AS e "
        f"WHERE ts < ws + e AND ws + e - 1 <= {{t}}{' AND ' + cond if cond else ''} "
        f"GROUP BY ws, ws + e, ex"
    )
    return Unkeyed("cumulate", sql, oracle)


@hs.composite
def _interval(draw) -> Unkeyed:
    lo, hi = draw(hs.integers(0, 3)), draw(hs.integers(0, 5))
    if draw(hs.booleans()):
        cond = f"r.ts BETWEEN l.ts - {lo} AND l.ts + {hi}"
    else:
        cond = f"r.ts >= l.ts - {lo} AND l.ts + {hi} >= r.ts"
    extra = draw(hs.sampled_from(["", " AND l.x > r.y", " AND l.x + r.y > 6"]))
    left = "l" if draw(hs.booleans()) else "(SELECT * FROM l WHERE x > 2) l"
    sql = (
        f"SELECT l.ex, l.x, r.y, l.ts AS lt, r.ts AS rt FROM {left} JOIN r "
        f"ON l.ex = r.ex AND {cond}{extra}"
    )
    return Unkeyed("interval", sql, sql)


@hs.composite
def unkeyed_views(draw) -> list[Unkeyed]:
    """One view of each of `UNKEYED`."""
    fresh = _alias_counter()
    return [draw(unkeyed(kind, fresh)) for kind in UNKEYED]
