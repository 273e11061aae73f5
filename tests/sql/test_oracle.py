"""Oracle property: random SQL views == ``spark.sql`` of the same text, at every sealed time.

One hypothesis example = one dataflow with `QUERIES` views (each over the sources and
the views before it) over two sources carrying `WORKLOADS` independent workloads
(column ``ex``), run once. Each view is then checked against Spark running the *same
query text* over temporary views of the inputs accumulated to every sealed time (time
folded into ``ex``, see `tests.sql.oracle`), so an example checks QUERIES x WORKLOADS
query/workload pairs at every sealed time (and at the times after the last input, when
temporal filters still retract rows). Spark runs with ANSI on (Spark 4's default, as
sealtime's views).

Tiers (docs/testing.md): the default tier runs one example of `QUERIES` = 8 views (80
query/workload pairs; the grammar's constructs of issue 33 made a view several times
the operators it was, ~5 min an example of 12 on the shared 2-core machine); the full
tier runs 2 examples x 12 views x 10 workloads = 240 pairs.
"""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as hs

from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import sealed_times
from tests.sql import grammar
from tests.sql.oracle import check_view, oracle_rows, oracle_session, tagged_inputs

QUERIES = 8
FULL_QUERIES = 12
WORKLOADS = 10

A = W.source(workloads=WORKLOADS, times_per_tick=hs.sampled_from([4, 7]))
B = W.source(schema=W.KW, value="w", workloads=WORKLOADS, times_per_tick=7)


@spark_settings(examples(ci=1, dev=1))
@given(a=A, b=B, queries=grammar.queries(QUERIES))
def test_views_equal_spark_sql_of_the_same_text(spark, make_flow, a, b, queries):
    check_queries(spark, make_flow, a, b, queries)


@pytest.mark.full
@spark_settings(examples(ci=2, dev=1))
@given(a=A, b=B, queries=grammar.queries(FULL_QUERIES))
def test_more_views_equal_spark_sql_of_the_same_text(spark, make_flow, a, b, queries):
    check_queries(spark, make_flow, a, b, queries)


def check_queries(spark, make_flow, a, b, queries) -> None:
    # (not the all-empty workload hypothesis starts with: there would be nothing to check)
    assume(a.table.num_rows > 8 and b.table.num_rows > 8)
    flow = make_flow()
    flow.source("a", a)
    flow.source("b", b)
    views = [flow.create_view(f"q{i}", q.sql) for i, q in enumerate(queries)]
    flow.run()
    # (and after the last input: temporal filters retract rows at times of their own)
    last = max(sealed_times(a, b))
    times = sorted({*sealed_times(a, b), *range(last + 1, last + 6)})
    tagged_inputs(spark, a, times).createOrReplaceTempView("a")
    tagged_inputs(spark, b, times).createOrReplaceTempView("b")
    compared = 0
    try:
        with oracle_session(spark):
            for i, (q, view) in enumerate(zip(queries, views)):
                expected = spark.sql(grammar.oracle_text(q.sql))
                expected.createOrReplaceTempView(f"q{i}")
                assert len(expected.columns) == len(view.columns), (q.sql, view.columns)
                oracle = oracle_rows(expected, view.columns)
                updates = view.updates()
                compared += updates.num_rows
                check_view(f"q{i} = {q.sql}", updates, view.columns, oracle, times)
    finally:
        for name in ["a", "b", *(f"q{i}" for i in range(len(queries)))]:
            spark.catalog.dropTempView(name)
    assert compared > 0  # the views did produce rows
