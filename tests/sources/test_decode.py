"""Lines that are not JSON objects go to `errors`; they never reach pyarrow's reader
(pyarrow 26 crashed the whole process with a segmentation fault on a bare ``null``)."""

from __future__ import annotations

import pyarrow as pa

from sealtime.sources.decode import decode_json_lines

SCHEMA = pa.schema([("k", pa.int64()), ("v", pa.int64())])


def test_non_object_lines_are_errors_and_the_rest_decodes() -> None:
    buf = b'{"k": 1, "v": 2}\nnull\n  42\n[1]\n"s"\ngarbage{\n\n{"k": 3, "v": 4}\n'
    data, errors = decode_json_lines(buf, SCHEMA, where="f:")
    assert data.to_pylist() == [{"k": 1, "v": 2}, {"k": 3, "v": 4}]
    bad = errors.to_pylist()
    assert [r["raw"] for r in bad] == ["null", "  42", "[1]", '"s"', "garbage{"]
    assert all(r["reason"].startswith("f: ") for r in bad)
    assert "not a JSON object" in bad[0]["reason"]
