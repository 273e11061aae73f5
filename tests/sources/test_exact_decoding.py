"""Exact decoding (issue 32, item 3): every message becomes exactly one data row or
exactly one ``errors`` row carrying its own raw bytes, however messages fall into batches.

The oracle is a reference decoder written independently of `sealtime.sources.decode`:
``json.loads`` of one message and the schema's conversion (JSON), Python's ``csv``
module on one line (CSV). Properties, over arbitrary byte strings mixed with valid and
nearly valid records, cut into arbitrary batches:

* data rows + error rows == records (a blank line of a file is no record);
* each error row's ``raw`` is its record (as text; bytes that are not UTF-8 show as
  U+FFFD and the reason carries the exact bytes in base64);
* each data row equals the reference decoder's row, and a record is an error exactly
  when the reference refuses it;
* the result (rows and errors, reasons included) does not depend on the cuts.

The pure decoders are checked with many examples; Files (JSON lines and CSV) through
the source with cuts by rows and bytes; NATS and Redis through the real brokers
(tests/sources/test_exact_decoding_brokers.py).
"""

from __future__ import annotations

import base64
import csv
import io
import json
import math
import os
import re
import tempfile
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealtime.sources.decode import decode_csv, decode_json_lines, decode_json_messages
from sealtime.sources.files import Files

#: the declared columns of every test here
SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("f", pa.float64()), ("b", pa.bool_())])
CSV_SCHEMA = pa.schema([("k", pa.string()), ("v", pa.int64()), ("b", pa.bool_())])
SKIP = "skip"  # a blank line: no record

# --------------------------------------------------------------------------- reference


class _Refused(Exception):
    pass


class _Object(dict):
    """A decoded JSON object that remembers the keys it saw twice."""

    repeated: set[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object(pairs)
    seen: set[str] = set()
    obj.repeated = {k for k, _ in pairs if k in seen or seen.add(k)}  # type: ignore[func-returns-value]
    return obj


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):  # (1e999: a number no double holds)
        raise _Refused(text)
    return value


def _int(text: str) -> int:
    value = int(text)
    float(value)  # OverflowError: no double holds it
    return value


def _check_strings(value: Any) -> None:
    """Lone surrogates (``"\\ud800"``) are not Unicode text."""
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for k, v in items if isinstance(value, dict | list) else ():
        for s in (k, v):
            if isinstance(s, str) and re.search("[\ud800-\udfff]", s):
                raise _Refused("surrogate")
        if isinstance(v, dict | list):
            _check_strings(v)


def _convert_json(name: str, value: Any) -> Any:
    """The declared type's conversion of one JSON value (None: null or missing)."""
    if value is None:
        return None
    typ = SCHEMA.field(name).type
    if pa.types.is_string(typ) and isinstance(value, str):
        return value
    if pa.types.is_boolean(typ) and isinstance(value, bool):
        return value
    if isinstance(value, bool):
        raise _Refused(name)
    if pa.types.is_int64(typ) and isinstance(value, int) and -(2**63) <= value < 2**63:
        return value
    if pa.types.is_float64(typ) and isinstance(value, int | float):
        return float(value)
    raise _Refused(name)


def reference_json(record: bytes) -> dict[str, Any] | None:
    """The row of one JSON record, or None when it must be an error."""
    try:
        text = record.decode("utf-8")
        obj = json.loads(text, object_pairs_hook=_pairs, parse_float=_float, parse_int=_int)
        if not isinstance(obj, dict):
            return None
        if obj.repeated & set(SCHEMA.names):  # a column named twice
            return None
        _check_strings(obj)
        return {f.name: _convert_json(f.name, obj.get(f.name)) for f in SCHEMA}
    except (ValueError, _Refused, OverflowError, RecursionError):
        return None


def _convert_csv(name: str, text: str) -> Any:
    typ = CSV_SCHEMA.field(name).type
    if pa.types.is_string(typ):
        return text
    text = text.strip()
    if text == "":
        return None
    if pa.types.is_boolean(typ):
        out = {"true": True, "1": True, "false": False, "0": False}.get(text.lower())
        if out is None:
            raise _Refused(name)
        return out
    if re.fullmatch("-?[0-9]+", text, flags=re.ASCII) and -(2**63) <= int(text) < 2**63:
        return int(text)
    raise _Refused(name)


def reference_csv(line: bytes, names: Sequence[str]) -> dict[str, Any] | None | str:
    """The row of one CSV line (None: an error; SKIP: an empty line)."""
    if line in (b"", b"\r"):
        return SKIP
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return None
    body = text[:-1] if text.endswith("\r") else text
    if "\r" in body:
        return None
    rows = list(csv.reader(io.StringIO(body + "\n"), strict=False))
    if len(rows) != 1 or len(rows[0]) != len(names) or any("\n" in v for v in rows[0]):
        return None  # wrong field count, or a quote not closed in the line
    values = dict(zip(names, rows[0], strict=True))
    try:
        return {f.name: _convert_csv(f.name, values[f.name]) for f in CSV_SCHEMA}
    except (_Refused, ValueError):
        return None


def blank_json_line(line: bytes) -> bool:
    return not line.strip(b" \t\r")


def shown(raw: bytes) -> str:
    """What an errors row's ``raw`` holds for this record."""
    return raw.decode("utf-8", errors="replace")


def normal(row: dict[str, Any]) -> dict[str, Any]:
    """A row with NaN made comparable."""
    return {k: ("NaN" if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}


# --------------------------------------------------------------------------- strategies

values = st.one_of(
    st.none(),
    st.text(max_size=6),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(),
    st.booleans(),
    st.lists(st.integers(0, 3), max_size=2),
    st.dictionaries(st.sampled_from(["k", "x"]), st.integers(0, 3), max_size=2),
)
objects = st.dictionaries(st.sampled_from(["k", "v", "f", "b", "x", "y"]), values, max_size=5)


@st.composite
def json_texts(draw: st.DrawFn) -> bytes:
    """A valid JSON object, pretty-printed or not, sometimes with ASCII escapes."""
    obj = draw(objects)
    indent = draw(st.sampled_from([None, None, 0, 2]))
    text = json.dumps(obj, indent=indent, ensure_ascii=draw(st.booleans()), allow_nan=True)
    pad = draw(st.sampled_from(["", " ", "\t", "\r\n", "\n"]))
    return (pad + text + draw(st.sampled_from(["", " ", "\n"]))).encode()


#: pieces that make JSON nearly valid: two values, a null, a newline inside a string...
TOKENS = [
    b"{", b"}", b"[", b"]", b'"k"', b'"v"', b'"f"', b":", b",", b"1", b"-0", b"1.5",
    b"1e999", b"null", b"true", b"NaN", b'"x"', b'"\\ud800"', b'"a\nb"', b" ", b"\t",
    b"\n", b"\r", b"\xff", b"\xc3", b"\xef\xbb\xbf", b"\x00", b"{}", b'{"k": "a"}',
]  # fmt: skip
nasty = st.lists(st.sampled_from(TOKENS), max_size=8).map(b"".join)
pairs = st.tuples(json_texts(), st.sampled_from([b" ", b"\n", b"", b" null", b"x"]), json_texts())
messages = st.one_of(
    st.binary(max_size=12),
    nasty,
    json_texts(),
    json_texts(),
    pairs.map(lambda p: p[0] + p[1] + p[2]),
)


def cuts_of(n: int) -> st.SearchStrategy[list[int]]:
    """Batch boundaries: sorted cut points in (0, n)."""
    return st.lists(st.integers(1, max(1, n - 1)), max_size=6).map(
        lambda c: sorted({x for x in c if 0 < x < n})
    )


def batches(items: Sequence[Any], cuts: list[int]) -> list[Sequence[Any]]:
    bounds = [0, *cuts, len(items)]
    return [items[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


# --------------------------------------------------------------------------- messages


def decode_batches(msgs: list[bytes], cuts: list[int]) -> tuple[list[dict], list[bool], list[dict]]:
    rows: list[dict] = []
    ok: list[bool] = []
    errors: list[dict] = []
    for batch in batches(msgs, cuts):
        data, errs, mask = decode_json_messages(list(batch), SCHEMA, where="S:")
        assert data.schema.equals(SCHEMA)
        rows += data.to_pylist()
        ok += mask.tolist()
        errors += errs.to_pylist() if errs is not None else []
    return rows, ok, errors


def check_exact(
    records: list[bytes],
    rows: list[dict],
    errors: list[dict],
    reference: Any,
) -> None:
    """One output per record (blank lines of a file: none), each as the reference says."""
    expected = [reference(r) for r in records]
    kept = [r for r, e in zip(records, expected, strict=True) if e != SKIP]
    want_rows = [normal(e) for e in expected if e not in (None, SKIP)]
    want_errors = [shown(r) for r, e in zip(records, expected, strict=True) if e is None]
    assert len(rows) + len(errors) == len(kept)
    assert [normal(r) for r in rows] == want_rows
    assert [e["raw"] for e in errors] == want_errors
    for e, raw in zip(errors, [r for r, x in zip(records, expected, strict=True) if x is None]):
        assert e["reason"]
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError:  # the exact bytes are in the reason
            b64 = re.search(r"in base64: ([A-Za-z0-9+/=]*)\)$", e["reason"])
            assert b64 is not None and base64.b64decode(b64.group(1)) == raw


@settings(max_examples=400, deadline=None)
@given(msgs=st.lists(messages, max_size=14), data=st.data())
def test_every_message_is_one_row_or_one_error_whatever_the_batches(msgs, data):
    cuts = data.draw(cuts_of(len(msgs)))
    rows, ok, errors = decode_batches(msgs, cuts)
    assert len(ok) == len(msgs)
    assert ok == [reference_json(m) is not None for m in msgs]
    check_exact(msgs, rows, errors, reference_json)
    assert all(e["reason"].startswith("S: ") for e in errors)
    # The same rows and errors, reasons included, as in one batch (NaN made comparable).
    whole_rows, whole_ok, whole_errors = decode_batches(msgs, [])
    assert [normal(r) for r in rows] == [normal(r) for r in whole_rows]
    assert (ok, errors) == (whole_ok, whole_errors)


def test_issue_32_examples():
    """The issue's example: an empty message and a message with two JSON values."""
    schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
    data, errors, ok = decode_json_messages([b"", b'{"k":"two","v":1} null'], schema)
    assert data.num_rows == 0 and ok.tolist() == [False, False]
    assert errors.column("raw").to_pylist() == ["", '{"k":"two","v":1} null']
    for msgs in (
        [b'{"k":"a\nb"}'],  # a raw newline inside a string: invalid, never "a b"
        [b'{"k":"a"}\n{"k":"b"}'],  # two objects on two lines
        [b'{"k": "a"}\r\n\r\n'],  # whitespace around one object: valid
        [b'{\n  "k": "p",\n  "v": 2\n}'],  # pretty-printed: valid
    ):
        data, errors, ok = decode_json_messages(msgs, schema)
        assert data.num_rows + (errors.num_rows if errors is not None else 0) == 1
        assert ok.tolist() == [reference_json(msgs[0]) is not None]


def test_a_failing_batch_keeps_its_good_messages_once():
    """A large batch with a few bad messages: every good one once, in order (the error
    path cuts the batch into parts and halves the failing parts)."""
    msgs = [json.dumps({"k": str(i), "v": i}).encode() for i in range(10_000)]
    for i in (0, 17, 4095, 4096, 9999):
        msgs[i] = b'{"k": "bad", "v": 1.5}'
    msgs[5000] = b"null"
    data, errors, ok = decode_json_messages(msgs, SCHEMA)
    bad = {0, 17, 4095, 4096, 9999, 5000}
    assert data.column("v").to_pylist() == [i for i in range(10_000) if i not in bad]
    assert sorted(i for i, x in enumerate(ok.tolist()) if not x) == sorted(bad)
    assert errors.num_rows == len(bad)


# --------------------------------------------------------------------------- lines

lines_json = st.one_of(messages, st.sampled_from([b"", b"  ", b"\r", b"\t \r"])).map(
    lambda b: b.replace(b"\n", b" ")
)
csv_fields = st.one_of(
    st.sampled_from(["a", "", " 7 ", "-3", "0x10", "1.5", "true", "FALSE", "0", "x y"]),
    st.text(max_size=4),
)


@st.composite
def csv_lines(draw: st.DrawFn) -> bytes:
    """A CSV line: well formed (quoted or not), or arbitrary bytes and quote soup."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        fields = draw(st.lists(csv_fields, min_size=1, max_size=4))
        out = io.StringIO()
        quoting = draw(st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_ALL]))
        csv.writer(out, quoting=quoting, lineterminator="").writerow(fields)
        line = out.getvalue().encode("utf-8", errors="surrogatepass")
    elif kind == 1:
        line = draw(st.binary(max_size=10))
    elif kind == 2:
        parts = [b'"', b",", b"a", b"1", b"\r", b" ", b'""', b"\xff", b"true", b"\x00"]
        line = b"".join(draw(st.lists(st.sampled_from(parts), max_size=8)))
    else:
        line = draw(st.sampled_from([b"", b"\r", b"a,1,true", b'"a,b",2,0', b"a,1,true\r"]))
    return line.replace(b"\n", b" ")


def read_file_in_cuts(path: str, fmt: str, schema: pa.Schema, **cut: Any) -> tuple[list, list]:
    """Rows and errors of a `Files` source reading the directory with cuts `cut`."""
    src = Files(path, format=fmt, schema=schema, settle=0, finite=True, header=False, **cut)
    reader = src.open()
    rows: list[dict] = []
    errors: list[dict] = []
    for _ in range(10_000):
        b = reader.read()
        rows += b.data.to_pylist()
        errors += b.errors.to_pylist() if b.errors is not None else []
        if b.exhausted:
            return rows, errors
    raise AssertionError("the source never ended")


def files_property(
    fmt: str,
    schema: pa.Schema,
    lines: list[bytes],
    file_cuts: list[int],
    rows_per_read: int,
    bytes_per_read: int,
    newline_at_end: bool,
    reference: Any,
) -> None:
    with tempfile.TemporaryDirectory() as d:
        files = [f for f in batches(lines, file_cuts) if f]
        for k, part in enumerate(files):
            text = b"\n".join(part) + (b"\n" if newline_at_end or k < len(files) - 1 else b"")
            with open(os.path.join(d, f"{k:03d}.{fmt}"), "wb") as fh:
                fh.write(text)
        records = [line for part in files for line in part]
        whole = read_file_in_cuts(d, fmt, schema)
        cut = read_file_in_cuts(d, fmt, schema, max_per_read=rows_per_read)
        small = read_file_in_cuts(d, fmt, schema, max_bytes_per_read=bytes_per_read)
    rows, errors = whole
    check_exact(records, rows, errors, reference)
    assert all(re.match(r"\d{3}\.\w+\[byte \d+\]: ", e["reason"]) for e in errors)
    assert cut == whole and small == whole  # reasons name each line's own byte offset


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(lines_json, max_size=14),
    data=st.data(),
    rows_per_read=st.integers(1, 5),
    bytes_per_read=st.integers(1, 40),
    newline_at_end=st.booleans(),
)
def test_files_jsonl_every_line_is_one_row_or_one_error(
    lines, data, rows_per_read, bytes_per_read, newline_at_end
):
    file_cuts = data.draw(cuts_of(len(lines)))
    files_property(
        "jsonl",
        SCHEMA,
        lines,
        file_cuts,
        rows_per_read,
        bytes_per_read,
        newline_at_end,
        lambda line: SKIP if blank_json_line(line) else reference_json(line),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    lines=st.lists(csv_lines(), max_size=14),
    data=st.data(),
    rows_per_read=st.integers(1, 5),
    bytes_per_read=st.integers(1, 40),
    newline_at_end=st.booleans(),
)
def test_files_csv_every_line_is_one_row_or_one_error(
    lines, data, rows_per_read, bytes_per_read, newline_at_end
):
    file_cuts = data.draw(cuts_of(len(lines)))
    files_property(
        "csv",
        CSV_SCHEMA,
        lines,
        file_cuts,
        rows_per_read,
        bytes_per_read,
        newline_at_end,
        lambda line: reference_csv(line, CSV_SCHEMA.names),
    )


@settings(max_examples=250, deadline=None)
@given(lines=st.lists(lines_json, max_size=14), data=st.data())
def test_json_lines_decoder_is_exact_whatever_the_chunks(lines, data):
    """The decoder alone, with many more examples than through files."""
    cuts = data.draw(cuts_of(len(lines)))
    out = []
    for chunk in batches(lines, cuts):
        buf = b"".join(line + b"\n" for line in chunk)
        rows, errors = decode_json_lines(buf, SCHEMA)
        out.append((rows.to_pylist(), errors.to_pylist() if errors is not None else []))
    rows = [r for o in out for r in o[0]]
    errors = [e for o in out for e in o[1]]
    check_exact(lines, rows, errors, lambda x: SKIP if blank_json_line(x) else reference_json(x))


@settings(max_examples=250, deadline=None)
@given(lines=st.lists(csv_lines(), max_size=14), data=st.data())
def test_csv_decoder_is_exact_whatever_the_chunks(lines, data):
    cuts = data.draw(cuts_of(len(lines)))
    rows: list[dict] = []
    errors: list[dict] = []
    for chunk in batches(lines, cuts):
        buf = b"".join(line + b"\n" for line in chunk)
        data_, errs = decode_csv(None, buf, CSV_SCHEMA)
        rows += data_.to_pylist()
        errors += errs.to_pylist() if errs is not None else []
    check_exact(lines, rows, errors, lambda x: reference_csv(x, CSV_SCHEMA.names))


def test_csv_examples():
    """Named cases: quoting, a quote left open, a \\r inside a line, hex, CRLF."""
    lines = [
        b'"a,b",1,true',  # a quoted delimiter
        b'"x""y",2,0',  # an escaped quote
        b'a,"3,true',  # a quote left open: runs past its line
        b"b,4,true\r",  # CRLF
        b"c,5\r,true",  # a \r inside the line
        b"d,0x10,true",  # hex is not a decimal integer
        b"",  # empty: no record
        b"e,6",  # a field short
    ]
    data, errors = decode_csv(None, b"\n".join(lines) + b"\n", CSV_SCHEMA)
    assert data.to_pylist() == [
        {"k": "a,b", "v": 1, "b": True},
        {"k": 'x"y', "v": 2, "b": False},
        {"k": "b", "v": 4, "b": True},
    ]
    assert errors.column("raw").to_pylist() == ['a,"3,true', "c,5\r,true", "d,0x10,true", "e,6"]
    reasons = errors.column("reason").to_pylist()
    # (the open quote takes the rest of the line: one field short, or a value with "\n")
    assert re.search("not closed|expected 3 fields, found 2", reasons[0])
    assert "carriage return" in reasons[1]
    assert "decimal integer" in reasons[2] and "expected 3 fields, found 2" in reasons[3]
