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

The constructs not keyed on ``ex`` (global aggregates, ORDER BY ... LIMIT, uncorrelated
subqueries, CROSS JOIN, CUMULATE, interval joins) have a property of their own: one random
view of each per example, checked over the inputs accumulated to every time
(`tests.sql.oracle.per_time`), 1 example in the default tier and 2 in the full tier.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import assume, given
from hypothesis import strategies as hs

import sealtime as st
from sealtime.sql import explain
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import sealed_times
from tests.sql import grammar
from tests.sql.oracle import (
    check_per_time,
    check_view,
    oracle_rows,
    oracle_session,
    per_time,
    per_time_views,
    tagged_inputs,
)

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


def _event_side(value: str):
    """In-order records (ex, ts, value) of an event-time table: none is late."""
    row = hs.fixed_dictionaries(
        {"ex": hs.integers(0, 2), "ts": hs.integers(0, 40), value: hs.integers(0, 9)}
    )
    return hs.lists(row, min_size=4, max_size=25).map(lambda rs: sorted(rs, key=lambda r: r["ts"]))


@spark_settings(examples(ci=2, dev=1, default=1))
@given(
    a=A,
    b=B,
    left=_event_side("x"),
    right=_event_side("y"),
    views=grammar.unkeyed_views(),
)
def test_unkeyed_views_equal_spark_sql_at_every_time(spark, make_flow, a, b, left, right, views):
    """The constructs not keyed on ``ex`` (`grammar.UNKEYED`: global aggregates, ORDER BY
    ... LIMIT [OFFSET], uncorrelated scalar/IN/NOT IN subqueries, CROSS JOIN, CUMULATE
    windows and interval joins), one random view of each over random relations, equal
    ``spark.sql`` of the same text (CUMULATE: an independent query) over the inputs
    accumulated to every time at which they change, and after."""
    assume(a.table.num_rows > 8 and b.table.num_rows > 8)
    flow = make_flow()
    flow.source("a", a)
    flow.source("b", b)
    records = {"l": left, "r": right}
    base = Path(tempfile.mkdtemp(prefix="events"))
    for name, rows in records.items():
        (base / name).mkdir()
        (base / name / "0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        schema = {c: "long" for c in rows[0]}
        src = st.sources.Files(
            str(base / name), format="jsonl", schema=schema, finite=True, settle=0
        )
        flow.source(name, src, time="ts", lateness="0s", max_rows_per_tick=8)
    made = [flow.sql(v.sql) for v in views]
    for v in views:  # (bounds on both sides' event times: state for the interval only)
        assert v.kind != "interval" or "interval_join" in explain(flow, v.sql), v.sql
    flow.run()

    last = max(sealed_times(a, b))
    times = sorted({*sealed_times(a, b), *range(last + 1, last + 6)})
    # (a sample of the times at which they change, the oracle costs a Spark branch a time)
    changes = sorted({r["ts"] for rs in records.values() for r in rs})
    event_times = sorted({*changes[:: max(1, len(changes) // 6)], changes[-1], 41, 45})
    events = {
        name: pa.Table.from_pylist([{**r, "_time": r["ts"], "_diff": 1} for r in rows])
        for name, rows in records.items()
    }
    compared = 0
    with (
        oracle_session(spark),
        per_time_views(spark, {"a": a.table, "b": b.table}, times),
        per_time_views(spark, events, event_times),
    ):
        for v, view in zip(views, made):
            if v.kind in ("cumulate", "interval"):
                oracle = per_time(spark, v.oracle, tuple(events), event_times)
            else:
                oracle = per_time(spark, v.oracle, ("a", "b"), times)
            compared += check_per_time(f"{v.kind}: {v.sql}", view, oracle, nonempty=False)
    assert compared > 0  # the views did produce rows
