"""A canonical text of everything in a plan node that changes its output.

The engine records a dataflow's fingerprint with its log and refuses to resume a data
dir with a different one: the log, the arrangements and an exactly-once sink's commits
only make sense for the graph that wrote them. So the fingerprint must cover every
parameter that changes output — aggregate functions, filter and map expressions,
window specs, join kinds, top-k orders — and nothing that changes from run to run
(object addresses, Spark's expression ids).

* A Spark ``Column`` is its expression text.
* A per-row operator given as a function of the delta frame (``filter``, ``select``,
  ``with_columns``, ``map`` ...) is the logical plan the function builds over an empty
  frame of the input's schema (`frame_text`): the expressions it applies, with
  expression ids and addresses removed.
* Dataclasses (aggregates, window specs, order keys) are their type and fields; a
  source is its type (its data is the log's concern, not the plan's); other callables
  are their qualified name.

>>> from sealtime.plan.aggregates import Aggregate
>>> canonical({"n": Aggregate("sum", "v"), "by": ["k"]})
"{'by': ['k'], 'n': Aggregate(kind=AggregateKind.SUM, column='v')}"
>>> strip_ids("Filter (v#12L > 1) +- LocalRelation <empty>, [k#10, v#12L] @ 0x7f00ab")
'Filter (v > 1) +- LocalRelation <empty>, [k, v] @ 0x'
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
from collections.abc import Mapping
from operator import attrgetter
from typing import Any

__all__ = ["canonical", "frame_text", "strip_ids"]

_IDS = re.compile(r"#\d+L?")
_ADDRESSES = re.compile(r"0x[0-9a-fA-F]+")


def strip_ids(text: str) -> str:
    """`text` without Spark expression ids (``#12``, ``#12L``) and object addresses."""
    return _ADDRESSES.sub("0x", _IDS.sub("", text))


def frame_text(df: Any) -> str:
    """The unresolved logical plan of a Spark DataFrame, without ids: what it computes,
    stable across sessions and processes."""
    return strip_ids(str(df._jdf.queryExecution().logical().toString()))


def column_text(column: Any) -> str:
    """A Spark ``Column``'s expression text, without ids. A column built around a
    Catalyst expression (``TryEval``: `sealtime.sql.checked`) prints its inner columns as
    ``columnnodeexpression()``, which would make different columns one text: those are
    rendered from the expression tree instead, without the call sites Spark records."""
    text = str(column)
    if "columnnodeexpression()" not in text:
        return strip_ids(text)
    from pyspark import SparkContext

    gateway = SparkContext._active_spark_context._jvm  # type: ignore[union-attr]
    tree = str(gateway.org.apache.spark.sql.classic.ExpressionUtils.expression(column._jc))
    return strip_ids(_without_origins(tree))


def _without_origins(text: str) -> str:
    """`text` without its ``Origin(...)`` parts (call sites and object addresses).

    >>> _without_origins("f(a,Origin(None,Some((col,x.py:3)),None),b)")
    'f(a,b)'
    """
    out, i = [], 0
    while True:
        j = text.find("Origin(", i)
        if j < 0:
            out.append(text[i:])
            break
        out.append(text[i:j])
        depth, k = 0, j + len("Origin")
        while k < len(text):
            depth += {"(": 1, ")": -1}.get(text[k], 0)
            k += 1
            if depth == 0:
                break
        i = k + 1 if text[k : k + 1] == "," else k
        if text[k : k + 1] != "," and out and out[-1].endswith(","):
            out[-1] = out[-1][:-1]
    return "".join(out)


def canonical(value: Any) -> str:
    """A deterministic text of a plan parameter (see the module docstring)."""
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType

    if isinstance(value, enum.Enum):  # (before str: a str enum is a str)
        return f"{type(value).__name__}.{value.name}"
    if value is None or isinstance(value, (bool, int, float, str, bytes)):
        return repr(value)
    if isinstance(value, Column):
        return f"Column({column_text(value)})"
    if isinstance(value, DataFrame):
        return f"DataFrame({frame_text(value)})"
    if isinstance(value, Mapping):
        items = sorted((str(k), canonical(v)) for k, v in value.items())
        return "{" + ", ".join(f"{k!r}: {v}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(canonical(v) for v in value) + "]"
    if isinstance(value, (set, frozenset)):
        return "{" + ", ".join(sorted(canonical(v) for v in value)) + "}"
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = ", ".join(
            f"{f.name}={canonical(attrgetter(f.name)(value))}" for f in dataclasses.fields(value)
        )
        return f"{type(value).__name__}({fields})"
    if isinstance(value, DataType):
        return value.simpleString()
    if isinstance(value, (types.FunctionType, types.MethodType)):
        return f"function {value.__module__}.{value.__qualname__}"
    return type(value).__name__
