"""`sealtime.columns.consolidate`: the one Arrow consolidation of updates."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealtime.columns import DIFF, TIME, consolidate
from sealtime.errors import SchemaError

updates = st.lists(
    st.tuples(
        st.sampled_from(["a", "b", None]), st.integers(0, 3), st.integers(-3, 3).filter(bool)
    ),
    max_size=30,
)


def table(rows):
    k, t, d = zip(*rows) if rows else ((), (), ())
    return pa.table(
        {
            "k": pa.array(k, pa.string()),
            TIME: pa.array(t, pa.int64()),
            DIFF: pa.array(d, pa.int64()),
        }
    )


def accumulated(rows, key):
    """Sum of the diffs per key, zero sums dropped: the definition, in plain Python."""
    sums = Counter()
    for row in rows:
        sums[key(row)] += row[2]
    return {k: v for k, v in sums.items() if v}


def as_dict(t: pa.Table, key):
    out = {}
    for row in t.to_pylist():
        assert key(row) not in out  # each row once
        out[key(row)] = row[DIFF]
    return out


@given(updates)
def test_sums_diffs_per_row_and_time(rows):
    got = consolidate(table(rows))
    assert got.schema == table(rows).schema
    assert as_dict(got, lambda r: (r["k"], r[TIME])) == accumulated(rows, lambda r: (r[0], r[1]))


@given(updates, st.integers(3, 9))
def test_as_of_collapses_times(rows, as_of):
    got = consolidate(table(rows), as_of=as_of)
    assert set(got.column(TIME).to_pylist()) <= {as_of}
    assert as_dict(got, lambda r: r["k"]) == accumulated(rows, lambda r: r[0])


def test_needs_the_update_columns():
    with pytest.raises(SchemaError, match="_diff"):
        consolidate(pa.table({"k": [1]}))
    with pytest.raises(SchemaError, match="_time"):
        consolidate(pa.table({"k": [1], DIFF: [1]}), as_of=3)
