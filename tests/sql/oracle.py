"""Spark as the oracle of SQL views: the same query text over accumulated inputs.

`tagged_inputs` accumulates a `Rows` workload at every sealed time (the existing
`tests.dataflow.oracle` helpers) and folds the time into the workload column:
``ex + 100 * time``. A query that keys every stateful construct on ``ex`` (see
`tests.sql.grammar`) then computes, in one Spark job, its answer at every sealed time;
`check_view` splits it back and compares it with the view's accumulated updates.
"""

from __future__ import annotations

from collections import Counter

from pyspark.sql import functions as F

from tests.dataflow.oracle import accumulate, accumulated, as_of, inputs_frame

SPREAD = 100  # workloads per time in the folded ``ex``


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
