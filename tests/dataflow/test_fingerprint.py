"""A resumed data dir must have been written by the same graph, parameters included
(issue 10, bug 1: a changed aggregate function corrupted an exactly-once sink)."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import functions as F

import sealtime as st
from sealtime.engine.bindings import PlanChangedError
from sealtime.plan.fingerprint import canonical

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])
ROWS = [(1, {"k": 1, "v": 10}), (2, {"k": 1, "v": 5}), (3, {"k": 2, "v": 7})]


def flow_with(spark, data_dir, shape) -> st.Dataflow:
    flow = st.Dataflow("fp", data_dir=str(data_dir), spark=spark, record=False)
    src = flow.source("s", st.sources.Rows(SCHEMA, ROWS))
    shape(src).sink(st.sinks.Parquet(str(data_dir / "out")))
    return flow


@pytest.mark.parametrize(
    ("before", "after", "differs"),
    [
        (
            lambda s: s.aggregate(by="k", n=st.count()),
            lambda s: s.aggregate(by="k", n=st.sum("v")),
            "sum",
        ),
        (lambda s: s.filter(F.col("v") > 1), lambda s: s.filter(F.col("v") > 6), "6"),
        (
            lambda s: s.window(st.Tumbling("10s")).aggregate(by="k", n=st.count()),
            lambda s: s.window(st.Tumbling("20s")).aggregate(by="k", n=st.count()),
            "20000",
        ),
        (
            lambda s: s.top_k(by="k", order_by="v", k=1),
            lambda s: s.top_k(by="k", order_by="-v", k=1),
            "top_k",
        ),
    ],
    ids=["aggregate-function", "filter-expression", "window-size", "top-k-order"],
)
def test_a_changed_parameter_is_refused_naming_it(spark, tmp_path, before, after, differs):
    first = flow_with(spark, tmp_path, before)
    first.run(ticks=1)
    first.close()
    again = flow_with(spark, tmp_path, after)
    with pytest.raises(PlanChangedError, match=differs) as err:
        again.run(ticks=1)
    assert "new data_dir" in str(err.value)
    again.close()


def test_the_same_graph_resumes(spark, tmp_path):
    shape = lambda s: s.filter(F.col("v") > 1).aggregate(by="k", n=st.sum("v"))  # noqa: E731
    first = flow_with(spark, tmp_path, shape)
    first.run(ticks=1)
    first.close()
    again = flow_with(spark, tmp_path, shape)
    again.run()  # resumes: same fingerprint
    again.close()


def test_canonical_text_of_columns_has_no_expression_ids(spark):
    df = spark.range(3).select(F.col("id").alias("v"))
    text = canonical({"c": F.col("v") + 1, "df": df.filter(F.col("v") > 1)})
    assert "#" not in text and "Filter" in text
    # the same expressions built again (new ids) give the same text; others do not
    again = spark.range(3).select(F.col("id").alias("v"))
    assert canonical({"c": F.col("v") + 1, "df": again.filter(F.col("v") > 1)}) == text
    assert canonical({"c": F.col("v") + 1, "df": again.filter(F.col("v") > 2)}) != text


def test_checked_expressions_that_differ_have_different_texts(spark):
    """A SQL view's failable expressions run inside Spark's TryEval, whose column prints
    its insides as ``columnnodeexpression()``: two views differing in a constant must
    still differ (equal texts made the live service share one view's nodes for both)."""
    from sealtime.sql.checked import tryeval

    a = canonical(tryeval(F.struct(F.expr("v % 2 = 1"))))
    b = canonical(tryeval(F.struct(F.expr("v % 2 = 0"))))
    assert a != b and "v % 2 = 1" in a and "Origin" not in a
    assert canonical(tryeval(F.struct(F.expr("v % 2 = 1")))) == a  # (no call sites)
