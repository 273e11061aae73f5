"""Window table-valued functions in Flink's syntax, compiled to `Collection.window`.

* ``TUMBLE(TABLE t, DESCRIPTOR(ts), size [, offset])`` -> ``st.Tumbling(size, offset)``
* ``HOP(TABLE t, DESCRIPTOR(ts), slide, size)`` -> ``st.Sliding(size, slide)`` (Flink's
  argument order: the slide comes before the size)
* ``CUMULATE(TABLE t, DESCRIPTOR(ts), step, size)`` -> ``collection.cumulate(size,
  step)`` (Flink's order: the step, then the largest size; the size a multiple of it)
* ``SESSION(TABLE t [PARTITION BY k | (k1, k2)], DESCRIPTOR(ts), gap)`` ->
  ``st.Session(gap)``; sessions are formed per key by the ``GROUP BY`` (or top-k) that
  follows, so its keys must be the ``PARTITION BY`` keys

Either form ``FROM TUMBLE(...)`` or ``FROM TABLE(TUMBLE(...))`` is accepted. Sizes are
``INTERVAL '10' SECOND`` (units MILLISECOND, SECOND, MINUTE, HOUR, DAY, singular or
plural) or ``INTERVAL '1 minute 30 seconds'``: the grammar of every duration setting
(`sealtime.durations`). The result has the table's columns plus
``window_start`` and ``window_end``: ``bigint`` milliseconds of logical time, the end
exclusive (``timestamp_millis(window_start)`` gives a timestamp).

Windows are a function of a row's *logical time*, so ``DESCRIPTOR`` must name the
table's event-time column (the ``time=`` column of its source, passed unchanged
through the views in between) or ``_time`` (the logical time itself, which also works
for ingestion-time sources).

>>> from sealtime.sql.parse import parse
>>> p = parse("SELECT * FROM HOP(TABLE bids, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECONDS)")
>>> call = window_call(p.tree.args["from_"].this, p)
>>> call.kind, call.table.name, call.descriptor, call.spec
('HOP', 'bids', 'ts', Sliding(size=10000, slide=2000))
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp

from ..durations import parse_duration
from ..errors import ConfigError
from ..plan.cumulate import Cumulating
from ..plan.windows import Session, Sliding, Tumbling, WindowSpec
from .errors import SqlError
from .parse import Parsed

__all__ = ["WindowCall", "interval_ms", "window_call"]

_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")
_HINTS = {
    "TUMBLE": "collection.window(st.Tumbling(size))",
    "HOP": "collection.window(st.Sliding(size, slide))",
    "SESSION": "collection.window(st.Session(gap))",
    "CUMULATE": "collection.cumulate(size, step)",
}


@dataclass
class WindowCall:
    """A parsed window TVF call."""

    kind: str
    table: exp.Table
    #: the column DESCRIPTOR names
    descriptor: str
    descriptor_node: exp.Expr
    spec: WindowSpec
    #: SESSION's PARTITION BY columns (empty otherwise)
    partition: list[exp.Column]
    node: exp.Expr


def interval_ms(node: exp.Expr, parsed: Parsed, what: str, *, allow_zero: bool = False) -> int:
    """Milliseconds of an ``INTERVAL`` literal (`what` names the argument in errors).

    >>> from sealtime.sql.parse import parse
    >>> p = parse("SELECT INTERVAL '1.5' SECOND, INTERVAL '250 milliseconds'")
    >>> [interval_ms(e, p, "size") for e in p.tree.expressions]
    [1500, 250]
    """
    line, col = parsed.locate(node, keyword="INTERVAL" if isinstance(node, exp.Interval) else None)
    bad = SqlError(
        f"window {what}",
        f"{node.sql(dialect='spark')!r} is not a positive whole number of milliseconds; "
        "write e.g. INTERVAL '10' SECOND",
        line=line,
        col=col,
    )
    if not isinstance(node, exp.Interval):
        raise bad
    value = node.this
    unit = node.args.get("unit")
    if not isinstance(value, exp.Literal):
        raise bad
    text = str(value.this).strip()
    if unit is not None:  # INTERVAL '10' SECOND: the number, then the unit
        name = unit.name if isinstance(unit, (exp.Var, exp.Identifier)) else unit.sql()
        if not _NUMBER.fullmatch(text):
            raise bad
        text = f"{text} {name}"
    elif _NUMBER.fullmatch(text):  # INTERVAL '10' alone: no unit, not milliseconds
        raise bad
    try:
        ms = parse_duration(text, f"window {what}")
    except ConfigError:
        raise bad from None
    if ms < 0 or (ms == 0 and not allow_zero):
        raise bad
    return ms


def window_call(node: exp.Expr, parsed: Parsed) -> WindowCall | None:
    """The window TVF a FROM item calls, or None if it calls none."""
    fn = node.this if isinstance(node, exp.Table) else node
    if isinstance(fn, exp.Anonymous) and str(fn.name).upper() == "TABLE" and fn.expressions:
        fn = fn.expressions[0]
    if not isinstance(fn, exp.Anonymous):
        return None
    kind = str(fn.name).upper()
    if kind not in ("TUMBLE", "HOP", "SESSION", "CUMULATE"):
        return None
    line, col = parsed.locate(fn)
    args = list(fn.expressions)
    sizes = {"TUMBLE": (3, 4), "HOP": (4, 4), "SESSION": (3, 3), "CUMULATE": (4, 4)}[kind]
    usage = {
        "TUMBLE": "TUMBLE(TABLE t, DESCRIPTOR(ts), INTERVAL '10' SECOND)",
        "HOP": "HOP(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)",
        "SESSION": "SESSION(TABLE t [PARTITION BY k], DESCRIPTOR(ts), INTERVAL '30' SECOND)",
        "CUMULATE": "CUMULATE(TABLE t, DESCRIPTOR(ts), INTERVAL '2' SECOND, INTERVAL '10' SECOND)",
    }[kind]

    def bad_argument(arg: exp.Expr, what: str) -> SqlError:
        at_line, at_col = parsed.locate(arg, fallback=fn)
        return SqlError(
            f"{kind} window", f"{what}; {usage}", line=at_line, col=at_col, hint=_HINTS[kind]
        )

    if not sizes[0] <= len(args) <= sizes[1] or any(
        isinstance(a, (exp.PropertyEQ, exp.Kwarg)) for a in args
    ):
        raise SqlError(f"{kind} window", f"write {usage}", line=line, col=col, hint=_HINTS[kind])
    table = args[0]
    if isinstance(table, exp.Column) and not table.table:
        table = exp.Table(this=table.this.copy())
    if not isinstance(table, exp.Table) or not isinstance(table.this, exp.Identifier):
        raise bad_argument(
            args[0], "the first argument must be TABLE <name> (a source, view or CTE)"
        )
    desc = args[1]
    if not (
        isinstance(desc, exp.Anonymous)
        and str(desc.name).upper() == "DESCRIPTOR"
        and len(desc.expressions) == 1
        and isinstance(desc.expressions[0], exp.Column)
    ):
        raise bad_argument(desc, "the second argument must be DESCRIPTOR(<time column>)")
    descriptor = desc.expressions[0].name
    try:
        if kind == "TUMBLE":
            size = interval_ms(args[2], parsed, "size")
            offset = interval_ms(args[3], parsed, "offset") if len(args) > 3 else 0
            spec: WindowSpec = Tumbling(size, offset)
        elif kind == "HOP":
            slide = interval_ms(args[2], parsed, "slide")
            size = interval_ms(args[3], parsed, "size")
            spec = Sliding(size, slide)
        elif kind == "CUMULATE":
            step = interval_ms(args[2], parsed, "step")
            size = interval_ms(args[3], parsed, "size")
            spec = Cumulating(size, step)
        else:
            spec = Session(interval_ms(args[2], parsed, "gap"))
    except SqlError:
        raise
    except ValueError as e:
        raise SqlError(f"{kind} window", str(e), line=line, col=col, hint=_HINTS[kind]) from e
    partition_node = table.args.get("partition")
    partition = list(partition_node.expressions) if partition_node is not None else []
    if partition and kind != "SESSION":
        raise SqlError(
            f"{kind} window",
            "PARTITION BY applies to SESSION windows only",
            line=line,
            col=col,
        )
    return WindowCall(kind, table, descriptor, desc.expressions[0], spec, partition, fn)
