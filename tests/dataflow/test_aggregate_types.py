"""Aggregates are type-checked when the graph is built (issue 10, bug 4: ``st.sum`` of
a string column returned nulls with no error)."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sealtime as st

SCHEMA = pa.schema([("k", pa.int64()), ("name", pa.string()), ("tags", pa.list_(pa.string()))])


@pytest.fixture
def src(spark, tmp_path):
    flow = st.Dataflow("types", data_dir=str(tmp_path), spark=spark)
    return flow.source("s", st.sources.Rows(SCHEMA, [(1, {"k": 1, "name": "a", "tags": []})]))


@pytest.mark.parametrize("kind", ["sum", "avg"])
def test_sum_and_avg_of_a_string_column_are_refused_naming_the_fix(src, kind):
    pattern = rf"st\.{kind}\('name'\).*string.*cast\('double'\)"
    with pytest.raises(TypeError, match=pattern):
        src.aggregate(by="k", total=getattr(st, kind)("name"))


def test_min_of_an_array_column_is_refused(src):
    with pytest.raises(TypeError, match=r"'tags' is array<string>"):
        src.aggregate(by="k", m=st.min("tags"))


def test_a_missing_column_is_refused(src):
    with pytest.raises(ValueError, match=r"no column 'price'"):
        src.aggregate(by="k", total=st.sum("price"))


def test_valid_aggregates_still_build(src):
    out = src.aggregate(by="k", n=st.count(), m=st.max("name"), d=st.count_distinct("name"))
    assert out.columns == ["k", "n", "m", "d"]
