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

import numpy as np
import pyarrow as pa
import sqlglot
from pyspark.sql import functions as F
from sqlglot import exp

from tests.conftest import spark_conf
from tests.dataflow.oracle import _norm, accumulate, accumulated, as_of, inputs_frame

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
    settings = {"spark.sql.optimizer.excludedRules": BROKEN_RULES, "spark.sql.ansi.enabled": "true"}
    with spark_conf(spark, settings):
        yield


def tagged_inputs(spark, source, times):
    """The source's rows accumulated at each of `times`, time folded into ``ex``."""
    acc = accumulate(as_of(spark, inputs_frame(spark, source), times))
    return acc.withColumn("ex", F.col("ex") + F.col("__asof") * SPREAD).drop("__asof")


def oracle_rows(df, columns) -> dict[int, Counter]:
    """Spark's answer rows per sealed time (``ex`` unfolded), as Counters of tuples."""
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


def _rows(value) -> tuple:
    """A row as a hashable tuple (list values as tuples, floats rounded)."""
    return tuple(_norm(tuple(v) if isinstance(v, list | np.ndarray) else v) for v in value)


@contextlib.contextmanager
def per_time_views(
    spark, tables: dict[str, pa.Table], times, timed: bool = False
) -> Iterator[None]:
    """Each of `tables` (name -> updates with ``_time``, ``_diff``) accumulated to each of
    `times`, registered as temporary view ``{name}_{t}`` (small local relations,
    accumulated in pandas: the queries over them run no shuffle) and dropped after;
    `timed` gives each row its update's time as column ``_t``."""
    names = []
    for name, table in tables.items():
        df = table.to_pandas()
        data = [c for c in table.column_names if c not in ("_time", "_diff")]
        fields = [table.schema.field(c) for c in data]
        if timed:
            df["_t"] = df["_time"]
            data.append("_t")
            fields.append(pa.field("_t", pa.int64()))
        for t in times:
            upto = df[df["_time"] <= t]
            counts = upto.groupby(data, dropna=False, sort=False)["_diff"].sum()
            counts = counts[counts > 0]
            keys = counts.index.to_frame(index=False)
            rows = keys.loc[keys.index.repeat(counts.to_numpy())]
            acc = pa.Table.from_pandas(rows, schema=pa.schema(fields), preserve_index=False)
            spark.createDataFrame(acc).createOrReplaceTempView(f"{name}_{t}")
            names.append(f"{name}_{t}")
    try:
        yield
    finally:
        for name in names:
            spark.catalog.dropTempView(name)


def per_time(spark, query: str, names, times) -> dict[int, Counter]:
    """Spark's answer to `query` over the inputs `names` accumulated to each of `times`
    (`per_time_views`): one job, a branch per time, each the query (``{t}`` in it: that
    time) with its tables renamed to that time's views."""
    branches = []
    for t in times:
        tree = sqlglot.parse_one(query.format(t=t), dialect="spark")
        for table in tree.find_all(exp.Table):
            if table.name in names:
                if not table.alias:
                    table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
                table.set("this", exp.to_identifier(f"{table.name}_{t}"))
        branches.append(f"SELECT {t} AS __t, * FROM ({tree.sql(dialect='spark')})")
    rows = spark.sql(" UNION ALL ".join(branches)).collect()
    out: dict[int, Counter] = {t: Counter() for t in times}
    for r in rows:
        out[r[0]][_rows(r[1:])] += 1
    return out


def check_per_time(label: str, view, oracle: dict[int, Counter], nonempty: bool = True) -> int:
    """At each time of `oracle` the view's accumulated updates equal its rows (and, if
    `nonempty`, there are some); returns the number of updates compared."""
    updates = view.updates()
    assert updates.num_rows > 0 or not nonempty, label
    for t, want in oracle.items():
        got: Counter = Counter()
        for r in updates.to_pylist():  # (list columns: tests.dataflow.oracle hashes rows)
            if r["_time"] <= t:
                got[_rows([r[c] for c in view.columns])] += r["_diff"]
        got = Counter({k: n for k, n in got.items() if n})
        assert got == want, f"{label} at {t}: missing {want - got}, extra {got - want}"
    return updates.num_rows
