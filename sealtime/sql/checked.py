"""Expressions that fail on a row (ANSI mode): the row goes to the view's errors.

Problem. With ``spark.sql.ansi.enabled`` (Spark 4's default) ``amount / 0``,
``CAST('x' AS INT)`` or an overflowing ``+`` raise, and in a stream one such row would
fail every tick from then on; without ANSI they are a silent NULL. Neither is what a
stream may do (docs/sql.md, "Rows an expression cannot evaluate").

Decision. Every SQL operator that evaluates expressions that may fail (`may_fail`)
evaluates them once, inside Spark's own ``TryEval`` (the expression behind Spark's
``try_*`` functions), as one struct: ``CASE WHEN <guard> THEN tryeval(struct(e1, ...))
END``. The struct is NULL exactly when Spark would have raised on that row (the struct
itself is never NULL otherwise), so the operator splits its input in two:

* rows whose struct is not NULL go on, with the values taken out of the struct (the
  same values ANSI Spark computes: nothing is evaluated differently);
* the others become rows of the view's ``errors`` collection: ``view``, ``error``
  (Spark's error class, e.g. ``DIVIDE_BY_ZERO``), ``reason`` (the failing expression)
  and ``raw`` (the input row as JSON). They are updates like any other, so a row
  retracted from the input is retracted from the errors too.

The guard (``_time > MIN``, always true but opaque to the optimizer) keeps Spark's
subexpression elimination from hoisting a shared subexpression (``a div b`` used twice)
out of the ``TryEval``, where it would raise again. The error class is found, on the
failing rows only, by evaluating each failable subexpression alone, innermost first
(`classify`): the first that fails on its own names the class.

>>> from sealtime.sql.parse import parse
>>> [may_fail(e) for e in parse("SELECT a, upper(k), a + 1, a / b, CAST(k AS INT) FROM t").tree.expressions]
[False, False, True, True, True]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql import types as T
from sqlglot import exp

from ..columns import TIME
from ..time.order import MIN_TIME
from .expressions import function_name

__all__ = [
    "ERRORS_SCHEMA",
    "checked_struct",
    "classify",
    "error_struct",
    "failable_nodes",
    "may_fail",
    "only_where",
    "safe",
    "tryeval",
]

#: the columns of a view's errors collection
ERRORS_SCHEMA = T.StructType(
    [
        T.StructField("view", T.StringType(), True),
        T.StructField("error", T.StringType(), True),
        T.StructField("reason", T.StringType(), True),
        T.StructField("raw", T.StringType(), True),
    ]
)

#: functions that cannot raise whatever their (well-typed) arguments
_SAFE_FUNCTIONS = frozenset(
    {
        "UPPER",
        "LOWER",
        "CONCAT",
        "CONCAT_WS",
        "COALESCE",
        "NVL",
        "IFNULL",
        "NULLIF",
        "LENGTH",
        "CHAR_LENGTH",
        "TRIM",
        "LTRIM",
        "RTRIM",
        "SUBSTRING",
        "SUBSTR",
        "LEFT",
        "RIGHT",
        "REPLACE",
        "INITCAP",
        "REVERSE",
        "GREATEST",
        "LEAST",
        "ISNULL",
        "ISNOTNULL",
        "IF",
        "IIF",
        "TRY_CAST",
        "TRY_DIVIDE",
        "TRY_ADD",
        "TRY_SUBTRACT",
        "TRY_MULTIPLY",
        "TRY_MOD",
        "ARRAY_SORT",
        "SORT_ARRAY",
        "SIZE",
        "ARRAY_CONTAINS",
        "STARTSWITH",
        "ENDSWITH",
        "CONTAINS",
        "MD5",
        "SHA1",
        "SHA2",
        "HASH",
        "XXHASH64",
        "TO_JSON",
        "STRUCT",
        "NAMED_STRUCT",
        "ARRAY",
        "FLOOR",
        "CEIL",
        "CEILING",
        "SIGN",
        "SIGNUM",
        "ISNAN",
        "NANVL",
        "TYPEOF",
    }
)
#: node types that never raise on their own (their operands may)
_SAFE_NODES = (
    exp.Column,
    exp.Literal,
    exp.Null,
    exp.Boolean,
    exp.Paren,
    exp.Alias,
    exp.And,
    exp.Or,
    exp.Not,
    exp.Is,
    exp.Case,
    exp.If,
    exp.Coalesce,
    exp.Star,
    exp.Identifier,
    exp.DataType,
    exp.Var,
    exp.Interval,
)
_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.NullSafeEQ)
_ARITHMETIC = (exp.Add, exp.Sub, exp.Mul, exp.Neg)
_DIVISIONS = (exp.Div, exp.IntDiv, exp.Mod)


def tryeval(column: Column) -> Column:
    """`column` evaluated by Spark's ``TryEval``: NULL where it would raise.

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> spark.range(3).select(tryeval(F.lit(6) / F.col("id")).alias("q")).collect()
    [Row(q=None), Row(q=6.0), Row(q=3.0)]
    """
    from pyspark import SparkContext
    from pyspark.sql.classic.column import Column as ClassicColumn

    jvm = SparkContext._active_spark_context._jvm
    utils = jvm.org.apache.spark.sql.classic.ExpressionUtils
    wrapped = jvm.org.apache.spark.sql.catalyst.expressions.TryEval(utils.expression(column._jc))
    return ClassicColumn(utils.column(wrapped))


def guarded(column: Column) -> Column:
    """`column` under a condition that is always true but that Spark cannot see through,
    so that none of its subexpressions is evaluated outside it (see the module
    docstring)."""
    return F.when(F.col(TIME) > F.lit(MIN_TIME - 1), column)


def checked_struct(columns: Sequence[Column]) -> Column:
    """``tryeval(struct(columns))`` under the guard: NULL exactly where one of the
    (named) `columns` raises."""
    return guarded(tryeval(F.struct(*columns)))


def fails(column: Column) -> Column:
    """True where evaluating `column` alone raises."""
    return F.coalesce(guarded(tryeval(column.isNull()).isNull()), F.lit(False))


def safe(node: exp.Expr) -> exp.Expr:
    """`node`, marked as one that cannot raise on its own (a cast sealtime adds between
    types that always convert); returns it.

    >>> from sealtime.sql.parse import parse
    >>> cast = parse("SELECT CAST(n AS BIGINT) FROM t").tree.expressions[0]
    >>> may_fail(cast), may_fail(safe(cast))
    (True, False)
    """
    node.meta[_SAFE_MARK] = True
    return node


_SAFE_MARK = "sealtime_cannot_raise"


def _raises(node: exp.Expr) -> bool:
    """Can `node` itself raise (apart from its operands)?"""
    if node.meta.get(_SAFE_MARK) or isinstance(node, _SAFE_NODES):
        return False
    if isinstance(node, exp.TryCast):
        # (sqlglot's Spark dialect parses CAST as a TryCast too: only TRY_CAST is safe)
        return not node.args.get("safe")
    if isinstance(node, _COMPARISONS + (exp.In, exp.Between)):
        # (an implicit cast of a string operand to the other side's type may raise)
        return any(
            isinstance(o, exp.Literal) and o.is_string
            for o in (node.this, node.args.get("expression"), *node.expressions)
            if o is not None
        ) or not all(
            isinstance(o, (exp.Column, exp.Literal, exp.Null))
            for o in (node.this, node.args.get("expression"))
            if o is not None
        )
    name = function_name(node)
    if name is not None and not isinstance(node, _ARITHMETIC + _DIVISIONS + (exp.Cast,)):
        return name not in _SAFE_FUNCTIONS
    return True


def failable_nodes(node: exp.Expr) -> list[exp.Expr]:
    """The subexpressions of `node` that may raise, innermost first."""
    return [n for n in node.walk(bfs=False) if _raises(n)][::-1]


def may_fail(node: exp.Expr) -> bool:
    """Can evaluating `node` raise in ANSI mode (so that its rows need checking)?"""
    return any(_raises(n) for n in node.walk())


def _class_of(node: exp.Expr, operand_types: Sequence[T.DataType], compile_: Callable) -> Column:
    """Spark's error class when `node` raises on its own (its operands did not)."""
    strings = any(isinstance(t, T.StringType) for t in operand_types)
    if isinstance(node, _DIVISIONS) or function_name(node) == "PMOD":
        if strings:
            return F.lit("CAST_INVALID_INPUT")
        divisor = compile_(
            node.expression if not isinstance(node, exp.Anonymous) else node.expressions[1]
        )
        return F.when(tryeval(divisor.cast("double") == 0), F.lit("DIVIDE_BY_ZERO")).otherwise(
            F.lit("ARITHMETIC_OVERFLOW")
        )
    if isinstance(node, _ARITHMETIC) or function_name(node) in ("ABS", "NEGATIVE"):
        return F.lit("CAST_INVALID_INPUT" if strings else "ARITHMETIC_OVERFLOW")
    if isinstance(node, exp.Cast):
        if strings:
            return F.lit("CAST_INVALID_INPUT")
        return F.lit("CAST_OVERFLOW")
    if isinstance(node, _COMPARISONS + (exp.In, exp.Between)):
        return F.lit("CAST_INVALID_INPUT")
    name = function_name(node) or ""
    known = {
        "ELEMENT_AT": "INVALID_ARRAY_INDEX_IN_ELEMENT_AT",
        "BRACKET": "INVALID_ARRAY_INDEX",
        "TO_DATE": "CANNOT_PARSE_TIMESTAMP",
        "TO_TIMESTAMP": "CANNOT_PARSE_TIMESTAMP",
        "STRTOTIME": "CANNOT_PARSE_TIMESTAMP",
        "STRTODATE": "CANNOT_PARSE_TIMESTAMP",
        "UNIX_TIMESTAMP": "CANNOT_PARSE_TIMESTAMP",
        "TO_UNIX_TIMESTAMP": "CANNOT_PARSE_TIMESTAMP",
        "MAKE_DATE": "DATETIME_FIELD_OUT_OF_BOUNDS",
        "MAKE_TIMESTAMP": "DATETIME_FIELD_OUT_OF_BOUNDS",
        "TIMESTAMP_MILLIS": "ARITHMETIC_OVERFLOW",
        "TIMESTAMP_SECONDS": "ARITHMETIC_OVERFLOW",
        "TO_NUMBER": "INVALID_FORMAT",
        "ASSERT_TRUE": "USER_RAISED_EXCEPTION",
        "RAISE_ERROR": "USER_RAISED_EXCEPTION",
    }
    if isinstance(node, exp.Bracket):
        return F.lit("INVALID_ARRAY_INDEX")
    if strings and name in ("SUM", "AVG"):
        return F.lit("CAST_INVALID_INPUT")
    return F.lit(known.get(name, "EXPRESSION_FAILED"))


def classify(
    nodes: Sequence[exp.Expr],
    compile_: Callable[[exp.Expr], Column],
    types_of: Callable[[list[exp.Expr]], list[T.DataType]],
) -> tuple[Column, Column]:
    """``(error class, failing expression's text)`` as columns over the failing rows:
    the first of `nodes` (innermost first) that raises on its own names them."""
    error: Column = F.lit("EXPRESSION_FAILED")
    text: Column = F.lit(nodes[-1].sql(dialect="spark") if nodes else "")
    for node in reversed(list(nodes)):  # (the innermost is tested first: built last)
        operands = [
            o
            for o in (node.args.get("this"), node.args.get("expression"), *node.expressions)
            if isinstance(o, exp.Expr) and not isinstance(o, (exp.DataType, exp.Identifier))
        ]
        try:
            types = types_of(operands) if operands else []
        except Exception:  # (an operand Spark cannot type alone: classify without it)
            types = []
        try:
            check = fails(compile_(node))
        except Exception:
            continue
        error = F.when(check, _class_of(node, types, compile_)).otherwise(error)
        text = F.when(check, F.lit(node.sql(dialect="spark"))).otherwise(text)
    return error, text


def only_where(condition: Column, row: Column) -> Column:
    """A generator column: the struct `row`'s fields as one output row where `condition`
    holds, no row elsewhere (``inline``): a filter and a projection in one operator."""
    return F.inline(F.when(condition, F.array(row)))


def error_struct(view: str, error: Column, expression: Column, raw: Column) -> Column:
    """One row of a view's errors (`ERRORS_SCHEMA`) as a struct."""
    reason = F.concat(error, F.lit(" in "), expression)
    return F.struct(
        F.lit(view).alias("view"),
        error.alias("error"),
        reason.alias("reason"),
        raw.alias("raw"),
    )
