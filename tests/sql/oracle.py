"""Spark as the oracle of SQL views: the same query text over accumulated inputs.

`tagged_inputs` accumulates a `Rows` workload at every sealed time (the existing
`tests.dataflow.oracle` helpers) and folds the time into the workload column:
``ex + 100 * time``. A query that keys every stateful construct on ``ex`` (see
`tests.sql.grammar`) then computes, in one Spark job, its answer at every sealed time;
`check_view` splits it back and compares it with the view's accumulated updates.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator

from pyspark.sql import functions as F

from tests.dataflow.oracle import accumulate, accumulated, as_of, inputs_frame

SPREAD = 100  # workloads per time in the folded ``ex``


#: an optimizer rule of Spark 4.0 that fails on some valid queries the grammar makes (a
#: window function over INTERSECT over a view holding UNION DISTINCT: "key not found:
#: ex#..." in PushProjectionThroughUnion). Excluding a rule changes the plan, not the
#: answer; only the oracle's queries run without it.
BROKEN_RULES = "org.apache.spark.sql.catalyst.optimizer.PushProjectionThroughUnion"


@contextlib.contextmanager
def oracle_session(spark) -> Iterator[None]:
    """Spark as the oracle: ANSI on (Spark 4's default, as sealtime's views), without
    `BROKEN_RULES`; the session's settings are restored after."""
    keys = ("spark.sql.optimizer.excludedRules", "spark.sql.ansi.enabled")
    saved = {k: spark.conf.get(k, None) for k in keys}
    spark.conf.set("spark.sql.optimizer.excludedRules", BROKEN_RULES)
    spark.conf.set("spark.sql.ansi.enabled", "true")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


def tagged_inputs(spark, source, times):
    """The source's rows accumulated at each of `times`, time folded into ``ex``."""
    acc = accumulate(as_of(spark, inputs_frame(spark, source), times))
    return acc.withColumn("ex", F.col("ex") + F.col("__asof") * SPREAD).drop("__asof")


def oracle_rows(df, columns) -> dict[int, Counter]:
    """Spark's answer rows per sealed time (``ex`` unfolded), as Counters of tuples."""
    from tests.dataflow.oracle import _norm

    pdf = df.toPandas()
    pdf.columns = list(columns)
    out: dict[int, Counter] = {}
    if len(pdf) == 0:
        return out
    times = (pdf["ex"] // SPREAD).astype("int64")
    pdf["ex"] = pdf["ex"] % SPREAD
    for t, row in zip(times, pdf.itertuples(index=False, name=None)):
        out.setdefault(int(t), Counter())[tuple(_norm(v) for v in row)] += 1
    return out


def check_view(label: str, updates, columns, oracle: dict[int, Counter], times) -> None:
    """At every sealed time the view's accumulated updates equal Spark's rows."""
    for t in times:
        got = accumulated(updates, columns, t)
        want = oracle.get(t, Counter())
        if got != want:
            raise AssertionError(
                f"{label}: at sealed time {t}: missing {dict(want - got)} extra {dict(got - want)}"
            )
