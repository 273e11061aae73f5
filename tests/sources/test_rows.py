"""`Rows`: the in-memory source with explicit times, and its errors."""

from __future__ import annotations

import pytest

from sealtime.errors import SchemaError
from sealtime.sources.rows import Rows


def test_rows_in_time_order_one_time_per_read():
    src = Rows({"k": "string"}, [(2, {"k": "b"}), (1, {"k": "a"})])
    reader = src.open()
    first, second = reader.read(), reader.read()
    assert first.data.column("k").to_pylist() == ["a"] and first.event_frontier == 2
    assert second.data.column("k").to_pylist() == ["b"] and second.exhausted


@pytest.mark.parametrize(
    ("value", "shown"),
    [("seven", "v='seven' (str)"), (2**70, f"v={2**70} (int)"), ([1], "v=[1] (list)")],
)
def test_wrong_typed_value_names_column_item_and_value(value, shown):
    rows = [(1, {"k": "a", "v": 1}), (1, {"k": "b", "v": 2}), (2, {"k": "c", "v": value})]
    with pytest.raises(SchemaError) as info:
        Rows({"k": "string", "v": "long"}, rows)
    message = str(info.value)
    assert f"item 2 has {shown}" in message
    assert "int64" in message and "change the schema" in message
