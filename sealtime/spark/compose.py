"""Per-row functions as one filter and one projection, so that many can share one pass.

A live service runs many views over one collection, each a per-row chain (filters,
projections, the columns a keyed operator prepares) ending in its own aggregate. Run
apart, every view is a Spark job of its own each tick. `row_function` reduces such a
chain to a `RowFunction` over its upstream's columns: Spark's optimiser collapses the
chain (``CollapseProject``, ``PushDownPredicates``) into ``Project(Filter(leaf))`` over
an opaque leaf (`opaque_frame`: an RDD, so no rule can fold it away), and the condition
and columns are kept as Catalyst expressions whose column references are re-bound by
name (so they apply to any frame with the leaf's columns). Expressions are kept, not
their SQL text, because some have no text Spark parses back (``TryEval``, which SQL
views use for rows that fail in ANSI mode: `sealtime.sql.checked`). A function is
accepted only when applying it to the leaf gives a plan with the same result as the
chain (``sameResult``, which compares canonical plans): it is refused, never changed.

`TaggedRows` then evaluates several functions in one projection: each input row
becomes one row per function whose condition it passes, tagged with the function's
index (``inline`` of an array of structs), as Flink's multi-query optimisation and
Materialize's shared dataflow fragments do for common subexpressions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .plans import Projection

__all__ = ["RowFunction", "TaggedRows", "opaque_frame", "row_function", "same_result"]


@dataclass(frozen=True, eq=False)
class RowFunction:
    """A per-row function of a frame: keep the rows where `condition` holds (None: all),
    then compute `columns` (unnamed, in order; both resolved by column name against the
    frame they are applied to). `text` is the SQL of each, for plans and explanations.

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> f = RowFunction.of("id > 1", ["id * 10"])
    >>> [r.x for r in f.apply(spark.range(4), ["x"]).collect()], f.text
    ([20, 30], ('id > 1', 'id * 10'))
    """

    condition: Column | None
    columns: tuple[Column, ...]
    text: tuple[str, ...]

    @classmethod
    def of(cls, condition: str | None, columns: Sequence[str]) -> RowFunction:
        """A function from SQL text."""
        return cls(
            None if condition is None else F.expr(condition),
            tuple(F.expr(c) for c in columns),
            tuple(([] if condition is None else [condition]) + list(columns)),
        )

    def keep(self) -> Column:
        """The condition as a column (true when there is none)."""
        return self.condition if self.condition is not None else F.lit(True)

    def apply(self, frame: DataFrame, names: Sequence[str]) -> DataFrame:
        """The function applied to `frame`, its columns named `names`."""
        if self.condition is not None:
            frame = frame.filter(self.condition)
        return frame.select(*[c.alias(n) for c, n in zip(self.columns, names)])


def opaque_frame(spark: SparkSession, schema: T.StructType) -> DataFrame:
    """An empty frame of `schema` that the optimiser cannot see through (an RDD leaf:
    an empty local relation would let it fold whole plans away)."""
    return spark.createDataFrame(spark.sparkContext.emptyRDD(), schema)


def _by_name(jvm: Any, expression: Any, replace: dict[int, Any] | None = None) -> Any:
    """`expression` (Catalyst) with each attribute reference replaced by an unresolved
    reference to the column of that name, or by ``replace[its expression id]``; an
    alias is dropped for its child."""
    catalyst = expression.getClass().getSimpleName()  # (a Catalyst class name)
    if catalyst == "Alias":
        return _by_name(jvm, expression.child(), replace)
    if catalyst == "AttributeReference":
        if replace and expression.exprId().id() in replace:
            return replace[expression.exprId().id()]
        return jvm.org.apache.spark.sql.catalyst.analysis.UnresolvedAttribute.quoted(
            expression.name()
        )
    children = expression.children()
    if children.size() == 0:
        return expression
    rebound = jvm.java.util.ArrayList()
    for i in range(children.size()):
        rebound.add(_by_name(jvm, children.apply(i), replace))
    seq = jvm.scala.jdk.javaapi.CollectionConverters.asScala(rebound).toIndexedSeq()
    return expression.withNewChildren(seq)


def _one_row_inline(jvm: Any, generate: Any) -> tuple[Any, dict[int, Any]] | None:
    """A ``Generate`` of ``inline(CASE WHEN c THEN array(s) END)`` (at most one row per
    input row, the form of SQL views' checked expressions, `sealtime.sql.checked`) as
    the condition ``c`` and its output columns as fields of ``s``; None for others."""
    generator = generate.generator()
    if generator.getClass().getSimpleName() != "Inline" or generate.outer():
        return None
    case = generator.child()
    if case.getClass().getSimpleName() != "CaseWhen" or case.elseValue().isDefined():
        return None
    if case.branches().size() != 1:
        return None
    branch = case.branches().apply(0)
    array = branch._2()
    if array.getClass().getSimpleName() != "CreateArray" or array.children().size() != 1:
        return None
    struct = _by_name(jvm, array.children().apply(0))
    output = generate.generatorOutput()
    fields = {
        output.apply(i).exprId().id(): jvm.org.apache.spark.sql.catalyst.expressions.GetStructField(
            struct, i, jvm.scala.Option.apply(output.apply(i).name())
        )
        for i in range(output.size())
    }
    return _by_name(jvm, branch._1()), fields


def _column(jvm: Any, expression: Any) -> Column:
    return Column(jvm.org.apache.spark.sql.classic.ExpressionUtils.column(expression))


def row_function(frame: DataFrame, leaf: DataFrame) -> RowFunction | None:
    """`frame`, built from `leaf` (an `opaque_frame`) by per-row operators, as one
    `RowFunction` over `leaf`'s columns; None when the optimiser does not reduce it to a
    filter and a projection over `leaf`, when an expression is not deterministic, or
    when the function applied to `leaf` does not give a plan with the same result. A
    ``Generate`` of a one-row inline (`_one_row_inline`) under the projection becomes
    part of the condition and the columns.

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> leaf = opaque_frame(spark, T.StructType([T.StructField("x", T.LongType())]))
    >>> f = row_function(leaf.filter("x > 2").select((F.col("x") % 7).alias("y")), leaf)
    >>> f.text[1:], "x > 2" in f.text[0]
    (('(x % 7L)',), True)
    >>> row_function(leaf.select(F.rand().alias("r")), leaf) is None
    True
    """
    jvm = frame.sparkSession._jvm
    plan = frame._jdf.queryExecution().optimizedPlan()
    base = leaf._jdf.queryExecution().optimizedPlan()
    if plan.getClass().getSimpleName() != "Project":
        return None
    projected = plan.projectList()
    below = plan.child()
    conditions: list[Any] = []
    replace: dict[int, Any] = {}
    if below.getClass().getSimpleName() == "Generate":
        inline = _one_row_inline(jvm, below)
        if inline is None:
            return None
        conditions.append(inline[0])
        replace = inline[1]
        below = below.child()
    if below.getClass().getSimpleName() == "Filter":
        conditions.insert(0, _by_name(jvm, below.condition()))
        below = below.child()
    if not below.sameResult(base):
        return None
    exprs = [_by_name(jvm, projected.apply(i), replace) for i in range(projected.size())]
    if not all(e.deterministic() for e in [*conditions, *exprs]):
        return None
    condition = None
    for c in conditions:
        condition = (
            c
            if condition is None
            else jvm.org.apache.spark.sql.catalyst.expressions.And(condition, c)
        )
    function = RowFunction(
        None if condition is None else _column(jvm, condition),
        tuple(_column(jvm, e) for e in exprs),
        tuple(str(e.sql()) for e in ([condition] if condition is not None else []) + exprs),
    )
    try:
        again = function.apply(leaf, frame.columns)
    except Exception:  # (an expression that does not resolve again: not composable)
        return None
    if again.schema != frame.schema:
        return None
    # (a one-row inline is rewritten by its definition — one row of the struct's fields
    # when the condition holds, none otherwise — so only the rest is compared)
    if not replace and not same_result(again, frame):
        return None
    return function


def same_result(a: DataFrame, b: DataFrame) -> bool:
    """Do the two frames compute the same rows (their optimised plans are equal up to
    names, Spark's ``sameResult``)?"""
    pa_ = a._jdf.queryExecution().optimizedPlan()
    return bool(pa_.sameResult(b._jdf.queryExecution().optimizedPlan()))


class TaggedRows:
    """One projection that evaluates every function of `functions` on each row: a row
    per (input row, function whose condition holds), with the function's index in
    column `tag` and its values in columns `names`. The functions must give values of
    the same types, in the same order. Built once; `apply` is two py4j calls.

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> fs = [RowFunction.of("id % 2 = 0", ["id"]), RowFunction.of(None, ["id * 10"])]
    >>> rows = TaggedRows(fs, "v", ["x"]).apply(spark.range(3)).collect()
    >>> sorted((r.v, r.x) for r in rows)
    [(0, 0), (0, 2), (1, 0), (1, 10), (1, 20)]
    """

    def __init__(self, functions: Sequence[RowFunction], tag: str, names: Sequence[str]) -> None:
        # Per function, its struct when its condition holds, else null (`inline` makes a
        # row of nulls of it, which the filter on the tag drops). A function's values
        # are computed only for the rows it keeps, as in filter-then-project, and
        # nothing falls back to interpreted evaluation: an array ``filter`` with a
        # lambda did, for every function on every row (the first stage of a fused
        # group at 200 views, BENCHMARKS.md "200 views profiled").
        structs = [
            F.when(
                f.keep(),
                F.struct(F.lit(i).alias(tag), *[c.alias(n) for c, n in zip(f.columns, names)]),
            )
            for i, f in enumerate(functions)
        ]
        self._inline = Projection([F.inline(F.array(*structs))])
        self._tagged = F.col(tag).isNotNull()
        self._values = Projection([tag, *names])

    def apply(self, frame: DataFrame) -> DataFrame:
        """The tagged rows of `frame`."""
        return self._values.apply(self._inline.apply(frame).filter(self._tagged))
