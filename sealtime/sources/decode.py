"""Decoding helpers shared by the built-in sources: bytes and strings to typed Arrow columns.

The hot path is one vectorised call per chunk: `decode_json_lines` hands a whole chunk of
a file to `pyarrow.json.read_json`, `decode_json_messages` joins the payloads of a
fetched broker batch with newlines and decodes them in one call, `decode_csv` parses a
chunk with `pyarrow.csv` and casts every column at once (`cast_strings`).

Only when a chunk fails does the error path run: it bisects the chunk (halves that
decode are kept whole, halves that fail are split again) until each bad line, message
or row is isolated, so *k* bad records in *n* cost about ``2 k log2(n / k)`` decoder
calls, not *n*. Each bad record becomes a row of the `errors` table (``raw``: the
record as text, ``reason``: why) and decoding continues with the rest.

A problem that is not about one record, such as a Parquet file whose column has another
type than the declared schema or a CSV header without a declared column, raises
`SchemaMismatchError` instead: reading on would turn every record into an error.

Sources with several outputs put them in one table with a `SUBSOURCE_COLUMN`
(``_subsource``) naming the output of each row; `split_subsources` takes it apart.

>>> schema = pa.schema([("k", pa.string()), ("v", pa.int64())])
>>> data, errors = decode_json_lines(b'{"k": "a", "v": 1}\\n{"k": "b", "v": "x"}\\n', schema)
>>> data.to_pylist()
[{'k': 'a', 'v': 1}]
>>> errors.column("raw").to_pylist()
['{"k": "b", "v": "x"}']
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pcsv
import pyarrow.json as pj

from ..columns import SUBSOURCE
from ..errors import SchemaError

__all__ = [
    "ERRORS_SCHEMA",
    "SUBSOURCE_COLUMN",
    "SchemaMismatchError",
    "cast_strings",
    "conform",
    "decode_csv",
    "decode_json_lines",
    "decode_json_messages",
    "empty_table",
    "errors_table",
    "split_subsources",
]

#: Schema of `ReadBatch.errors`.
ERRORS_SCHEMA = pa.schema([pa.field("raw", pa.string()), pa.field("reason", pa.string())])
#: Column naming the output (subsource) of each row of a multi-output source.
SUBSOURCE_COLUMN = SUBSOURCE  # (sealtime.columns)

_MIN_BLOCK = 1 << 20  # pyarrow.json block size floor (bytes)


class SchemaMismatchError(SchemaError):
    """The data's own schema disagrees with the declared one (not a per-record problem).

    The message names the source, the column, the expected and found types and the fix.

    >>> e = SchemaMismatchError("Files('/in')", "v", pa.int64(), pa.string(), where="in a.parquet")
    >>> print(e)
    Files('/in'): column 'v' in a.parquet has type string, but the declared schema says int64; \
change the declared type of 'v' to string, or rewrite the data with int64
    >>> isinstance(e, ValueError), e.column
    (True, 'v')
    """

    def __init__(
        self,
        source: str,
        column: str,
        expected: Any,
        found: Any,
        *,
        where: str = "",
        fix: str | None = None,
    ) -> None:
        self.source = source
        self.column = column
        self.expected = expected
        self.found = found
        self.where = where
        if fix is None:
            if found is None:
                fix = (
                    f"add the column {column!r} to the data, or remove it from the declared schema"
                )
            else:
                fix = (
                    f"change the declared type of {column!r} to {found}, "
                    f"or rewrite the data with {expected}"
                )
        self.fix = fix
        place = f" {where}" if where else ""
        if found is None:
            what = (
                f"column {column!r} is missing{place}, but the declared schema has it ({expected})"
            )
        else:
            what = (
                f"column {column!r}{place} has type {found}, "
                f"but the declared schema says {expected}"
            )
        super().__init__(f"{source}: {what}; {fix}")


# --------------------------------------------------------------------------- tables


def empty_table(schema: pa.Schema) -> pa.Table:
    """A zero-row table of `schema`.

    >>> empty_table(pa.schema([("x", pa.int64())])).num_rows
    0
    """
    return pa.Table.from_batches([], schema=schema)


def errors_table(raws: Sequence[str], reasons: Sequence[str]) -> pa.Table | None:
    """The `errors` table for these records, or None when there are none.

    >>> errors_table(["{"], ["bad JSON"]).to_pylist()
    [{'raw': '{', 'reason': 'bad JSON'}]
    >>> errors_table([], []) is None
    True
    """
    if not raws:
        return None
    return pa.table(
        [pa.array(list(raws), pa.string()), pa.array(list(reasons), pa.string())],
        schema=ERRORS_SCHEMA,
    )


def _concat_errors(parts: Sequence[pa.Table | None]) -> pa.Table | None:
    tables = [p for p in parts if p is not None and p.num_rows]
    if not tables:
        return None
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", errors="replace")


def _message(exc: BaseException) -> str:
    """The first line of an exception's message, without pyarrow's " in row N" (the row
    number of the isolated piece, always 0, which would only confuse)."""
    text = str(exc).strip()
    if not text:
        return type(exc).__name__
    return re.sub(r" in row \d+$", "", text.splitlines()[0])


# --------------------------------------------------------------------------- schemas


def _allowed(found: pa.DataType, expected: pa.DataType) -> bool:
    """True when `found` converts to `expected` without loss of meaning."""
    if found.equals(expected):
        return True
    if pa.types.is_null(found):
        return True
    if pa.types.is_integer(found) and pa.types.is_integer(expected):
        if pa.types.is_signed_integer(found) == pa.types.is_signed_integer(expected):
            return found.bit_width <= expected.bit_width
        return pa.types.is_unsigned_integer(found) and found.bit_width < expected.bit_width
    if pa.types.is_floating(found) and pa.types.is_floating(expected):
        return found.bit_width <= expected.bit_width
    if pa.types.is_integer(found) and pa.types.is_floating(expected):
        return found.bit_width <= 32 and expected.bit_width == 64
    stringy = (pa.types.is_string, pa.types.is_large_string, pa.types.is_string_view)
    if any(f(found) for f in stringy) and any(f(expected) for f in stringy):
        return True
    if pa.types.is_dictionary(found):
        return _allowed(found.value_type, expected)
    if pa.types.is_timestamp(found) and pa.types.is_timestamp(expected):
        return True  # unit and zone are normalised (naive = UTC)
    return bool(pa.types.is_date(found) and pa.types.is_date(expected))


def conform(table: pa.Table, schema: pa.Schema, *, source: str, where: str = "") -> pa.Table:
    """Select and cast `table`'s columns to `schema`, or raise `SchemaMismatchError`.

    Lossless conversions are applied (narrower ints and floats, large strings,
    dictionaries, timestamps of another unit or zone — naive ones are taken as UTC);
    anything else, and a missing column, is a mismatch. Extra columns are dropped.

    >>> t = pa.table({"v": pa.array([1], pa.int32()), "extra": ["x"]})
    >>> conform(t, pa.schema([("v", pa.int64())]), source="demo").schema
    v: int64
    >>> conform(pa.table({"v": ["1"]}), pa.schema([("v", pa.int64())]), source="demo")
    Traceback (most recent call last):
    ...
    sealtime.sources.decode.SchemaMismatchError: demo: column 'v' has type string, but the \
declared schema says int64; change the declared type of 'v' to string, or rewrite the data with int64
    """
    columns = []
    for f in schema:
        if f.name not in table.column_names:
            raise SchemaMismatchError(source, f.name, f.type, None, where=where)
        col = table.column(f.name)
        if not _allowed(col.type, f.type):
            raise SchemaMismatchError(source, f.name, f.type, col.type, where=where)
        if not col.type.equals(f.type):
            col = _convert(col, f.type)
        columns.append(col)
    return pa.Table.from_arrays(columns, schema=schema)


def _convert(col: pa.ChunkedArray, typ: pa.DataType) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type):
        col = col.cast(col.type.value_type)
    if pa.types.is_timestamp(col.type) and pa.types.is_timestamp(typ):
        if col.type.tz is None and typ.tz is not None:
            col = col.cast(pa.timestamp(col.type.unit, tz="UTC"))
        elif col.type.tz is not None and typ.tz is None:
            col = col.cast(pa.timestamp(col.type.unit))  # UTC wall time
        return col.cast(typ, safe=False)  # sub-unit digits are truncated
    return col.cast(typ)


# --------------------------------------------------------------------------- isolation

Decoder = Callable[[list[bytes]], pa.Table]


def _isolate(
    items: list[bytes],
    decode: Decoder,
    *,
    one_row_each: bool,
    blank_reason: str | None,
) -> tuple[list[pa.Table], list[str], list[str]]:
    """Bisect `items` into pieces that decode; return (good tables, bad raws, reasons).

    With `one_row_each`, a piece must decode to exactly one row per item that is not
    blank (a blank line gives none); otherwise any row count is fine. Order is kept.
    """
    good: list[pa.Table] = []
    raws: list[str] = []
    reasons: list[str] = []
    stack: list[tuple[int, int]] = [(0, len(items))]
    while stack:  # depth-first, left half first: keeps the input order
        lo, hi = stack.pop()
        if lo >= hi:
            continue
        piece = items[lo:hi]
        if hi - lo == 1 and not piece[0].strip():
            if blank_reason is not None:
                raws.append(_text(piece[0]))
                reasons.append(blank_reason)
            continue
        reason = None
        try:
            table = decode(piece)
            expected = sum(1 for item in piece if item.strip()) if one_row_each else None
            if expected is not None and table.num_rows != expected:
                reason = (
                    f"decodes to {table.num_rows} records, expected exactly one JSON object"
                    if hi - lo == 1
                    else "row count mismatch"
                )
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError) as exc:
            reason = _message(exc)
        if reason is None:
            good.append(table)
        elif hi - lo == 1:
            raws.append(_text(piece[0]))
            reasons.append(reason)
        else:
            mid = (lo + hi) // 2
            stack.append((mid, hi))
            stack.append((lo, mid))
    return good, raws, reasons


# --------------------------------------------------------------------------- JSON


# A line that is not blank and does not start with "{": pyarrow's JSON reader must never
# see one (pyarrow 26 crashes the process with a segmentation fault on a bare `null`).
_NOT_AN_OBJECT = re.compile(rb"(?m)^[ \t\r]*[^{ \t\r\n]")


def _read_json(buf: bytes, schema: pa.Schema, *, single_block: bool = False) -> pa.Table:
    if _NOT_AN_OBJECT.search(buf):
        raise pa.ArrowInvalid("not a JSON object (each line must be one {...} object)")
    block = len(buf) + 1 if single_block else max(_MIN_BLOCK, len(buf) // 4 + 1)
    return pj.read_json(
        io.BytesIO(buf),
        read_options=pj.ReadOptions(block_size=block),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


# A line holding a JSON value (not only blanks): one record each.
_RECORD_LINE = re.compile(rb"(?m)^[ \t\r]*[^ \t\r\n]")


def _one_row_per_line(buf: bytes, table: pa.Table) -> bool:
    """Did every non-blank line give exactly one row? A line like ``{"k": 1} null`` gives
    two (the second all null) and ``{"a": 1} {"b": 2}`` two records on one line: both
    are errors, not rows. Counting newlines (no allocation) settles the usual case of no
    blank lines; only otherwise are the non-blank lines counted."""
    lines = buf.count(b"\n") + (0 if buf.endswith(b"\n") else 1)
    if table.num_rows == lines:
        return True
    return table.num_rows == sum(1 for _ in _RECORD_LINE.finditer(buf))


def _json_chunk(buf: bytes, schema: pa.Schema) -> pa.Table:
    """Decode a whole chunk; retry once as a single block (lines longer than a block)."""
    try:
        return _read_json(buf, schema)
    except pa.ArrowInvalid:
        if len(buf) < _MIN_BLOCK:
            raise
        return _read_json(buf, schema, single_block=True)


def decode_json_lines(
    buf: bytes, schema: pa.Schema, *, where: str = ""
) -> tuple[pa.Table, pa.Table | None]:
    """Decode newline-delimited JSON objects; bad lines go to the errors table.

    Blank lines are skipped. Each other line must hold exactly one JSON object: a line
    that is `null`, an array, a number, a string, or several values, is an error (it
    never reaches pyarrow's reader alone: pyarrow 26 crashes on a bare ``null``). Fields
    not in `schema` are ignored, missing ones are null (a missing event time is routed
    to `errors` by the engine). A value that does not convert to its declared type, e.g.
    ``"not-a-time"`` for a timestamp column, makes its line an error naming the column
    type and the value.
    Timestamps are ISO 8601 strings (``"2015-07-15T00:00:00Z"``); declare an int64
    column for epoch milliseconds. `where` prefixes each error reason (e.g. a file name).

    >>> s = pa.schema([("v", pa.int64())])
    >>> data, errors = decode_json_lines(b'{"v": 1}\\n\\n{"v": 2.5}\\n{"v": 3}', s, where="f:")
    >>> data.column("v").to_pylist(), errors.to_pylist()[0]["reason"]
    ([1, 3], "f: Failed to convert JSON to int64, couldn't parse:2.5")
    """
    if not buf.strip():
        return empty_table(schema), None
    try:
        table = _json_chunk(buf, schema)
        if _one_row_per_line(buf, table):
            return table, None
    except pa.ArrowInvalid:
        pass
    lines = buf.split(b"\n")
    good, raws, reasons = _isolate(
        lines,
        lambda piece: _read_json(b"\n".join(piece), schema, single_block=True),
        one_row_each=True,
        blank_reason=None,
    )
    prefix = f"{where} " if where else ""
    data = pa.concat_tables(good) if good else empty_table(schema)
    return data, errors_table(raws, [prefix + r for r in reasons])


def decode_json_messages(
    payloads: Sequence[bytes], schema: pa.Schema, *, where: str = ""
) -> tuple[pa.Table, pa.Table | None, np.ndarray]:
    """Decode one JSON object per message, all messages in one call when they are good.

    Returns ``(data, errors, ok)`` where `ok` is a boolean mask over `payloads` telling
    which messages produced the rows of `data` (in order). Newlines inside a payload are
    JSON whitespace (a raw newline cannot occur inside a JSON string) and are replaced
    by spaces first, so pretty-printed payloads decode too. An empty payload, one that
    is not a JSON object, or one holding several objects is an error.

    >>> s = pa.schema([("v", pa.int64())])
    >>> data, errors, ok = decode_json_messages([b'{"v": 1}', b'{\\n "v": 2\\n}', b'', b'[1]'], s)
    >>> data.column("v").to_pylist(), ok.tolist(), errors.column("reason").to_pylist()
    ([1, 2], [True, True, False, False], ['empty message', 'not a JSON object (each line must be one {...} object)'])
    """
    n = len(payloads)
    if n == 0:
        return empty_table(schema), None, np.zeros(0, dtype=bool)
    clean = [p.replace(b"\n", b" ").replace(b"\r", b" ") for p in payloads]
    blank = [not p.strip() for p in clean]
    if not any(blank):
        try:
            table = _json_chunk(b"\n".join(clean), schema)
            if table.num_rows == n:
                return table, None, np.ones(n, dtype=bool)
        except pa.ArrowInvalid:
            pass
    # Error path: bisect, keeping track of which messages survived.
    ok = np.ones(n, dtype=bool)
    good: list[pa.Table] = []
    raws: list[str] = []
    reasons: list[str] = []
    prefix = f"{where} " if where else ""
    stack: list[tuple[int, int]] = [(0, n)]
    while stack:
        lo, hi = stack.pop()
        if lo >= hi:
            continue
        if hi - lo == 1 and blank[lo]:
            ok[lo] = False
            raws.append(_text(payloads[lo]))
            reasons.append(prefix + "empty message")
            continue
        reason = None
        try:
            table = _read_json(b"\n".join(clean[lo:hi]), schema, single_block=True)
            if table.num_rows != hi - lo:
                reason = f"decodes to {table.num_rows} records, expected exactly one JSON object"
        except (pa.ArrowInvalid, pa.ArrowTypeError, ValueError) as exc:
            reason = _message(exc)
        if reason is None:
            good.append(table)
        elif hi - lo == 1:
            ok[lo] = False
            raws.append(_text(payloads[lo]))
            reasons.append(prefix + reason)
        else:
            mid = (lo + hi) // 2
            stack.append((mid, hi))
            stack.append((lo, mid))
    data = pa.concat_tables(good) if good else empty_table(schema)
    return data, errors_table(raws, reasons), ok


# --------------------------------------------------------------------------- strings


_OFFSET_RE = r"(?:[Zz]|[+-]\d\d(?::?\d\d)?)$"
_DIGITS_RE = r"^[+-]?\d+$"


def _cast_text(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    """Cast a string array (nulls allowed) to `typ`; raises on any bad value."""
    if pa.types.is_boolean(typ):
        return pc.cast(pc.utf8_lower(arr), typ)
    if pa.types.is_timestamp(typ):
        digits = pc.fill_null(pc.match_substring_regex(arr, _DIGITS_RE), False)
        with_zone = pc.fill_null(pc.match_substring_regex(arr, _OFFSET_RE), False)
        null = pa.scalar(None, pa.string())
        parts = []
        naive_type = pa.timestamp(typ.unit)
        zoned_type = pa.timestamp(typ.unit, tz=typ.tz or "UTC")
        if pc.any(digits).as_py():  # epoch milliseconds
            ms = pc.cast(pc.if_else(digits, arr, null), pa.int64())
            parts.append((digits, pc.cast(pc.cast(ms, pa.timestamp("ms", tz="UTC")), zoned_type)))
        zoned = pc.and_(with_zone, pc.invert(digits))
        if pc.any(zoned).as_py():
            parts.append((zoned, pc.cast(pc.if_else(zoned, arr, null), zoned_type)))
        naive = pc.and_(pc.invert(with_zone), pc.invert(digits))
        if pc.any(pc.and_(naive, pc.is_valid(arr))).as_py():
            values = pc.cast(pc.if_else(naive, arr, null), naive_type)
            parts.append((naive, pc.cast(values, zoned_type)))  # naive = UTC
        out = pa.nulls(len(arr), zoned_type)
        for mask, values in parts:
            out = pc.if_else(mask, values, out)
        return out if typ.tz is not None else pc.cast(out, naive_type)
    return pc.cast(arr, typ)


def _bad_values(arr: pa.Array, typ: pa.DataType) -> dict[int, str]:
    """Indices of values of `arr` that do not cast to `typ`, with the reasons (bisection)."""
    bad: dict[int, str] = {}
    stack = [(0, len(arr))]
    while stack:
        lo, hi = stack.pop()
        if lo >= hi:
            continue
        try:
            _cast_text(arr.slice(lo, hi - lo), typ)
            continue
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError) as exc:
            if hi - lo == 1:
                bad[lo] = _message(exc)
                continue
        mid = (lo + hi) // 2
        stack.append((mid, hi))
        stack.append((lo, mid))
    return bad


RawText = pa.Array | Callable[[np.ndarray], Sequence[str]] | None


def cast_strings(
    table: pa.Table, schema: pa.Schema, raw: RawText = None, *, where: str = ""
) -> tuple[pa.Table, pa.Table | None, np.ndarray]:
    """Cast string columns to `schema`; rows with a value that does not cast are errors.

    Missing columns are null. For non-string columns, surrounding whitespace is trimmed
    and an empty string is null; booleans accept true/false/1/0 in any case; timestamps
    accept ISO 8601 with a zone (``Z``, ``+02:00``), without one (taken as UTC), or
    epoch milliseconds. `raw` gives the text of the bad rows for the errors table: a
    string array over all rows, or a function from the bad row indices to their texts
    (so it runs only on the error path); default: the row's values joined by ``,``.
    Returns ``(data, errors, ok)``; `ok` is the boolean mask of the rows kept.

    >>> t = pa.table({"k": ["a", "b", "c"], "v": ["1", "x", " 3 "]})
    >>> data, errors, ok = cast_strings(t, pa.schema([("k", pa.string()), ("v", pa.int64())]))
    >>> data.to_pylist(), ok.tolist()
    ([{'k': 'a', 'v': 1}, {'k': 'c', 'v': 3}], [True, False, True])
    >>> errors.to_pylist()
    [{'raw': 'b,x', 'reason': "column 'v': Failed to parse string: 'x' as a scalar of type int64"}]
    """
    n = table.num_rows
    columns: dict[str, pa.Array] = {}
    for name in table.column_names:
        col = table.column(name).combine_chunks()
        if not pa.types.is_string(col.type):
            col = pc.cast(col, pa.string())
        columns[name] = col
    bad: dict[int, str] = {}
    prepared: dict[str, pa.Array] = {}
    for f in schema:
        col = columns.get(f.name)
        if col is None:
            continue
        if pa.types.is_string(f.type) or pa.types.is_large_string(f.type):
            prepared[f.name] = col
            continue
        col = pc.utf8_trim_whitespace(col)
        col = pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)
        prepared[f.name] = col
        try:
            _cast_text(col, f.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
            for i, why in _bad_values(col, f.type).items():
                bad.setdefault(i, f"column {f.name!r}: {why}")
    keep = None
    errors = None
    mask = np.ones(n, dtype=bool)
    if bad:
        idx = np.fromiter(sorted(bad), dtype=np.int64, count=len(bad))
        mask[idx] = False
        keep = pa.array(mask)
        if raw is None:
            names = list(columns)
            joined = (
                pc.binary_join_element_wise(*[pc.fill_null(columns[c], "") for c in names], ",")
                if names
                else pa.array([""] * n)
            )
            raw = joined
        prefix = f"{where} " if where else ""
        raws = list(raw(idx)) if callable(raw) else pc.take(raw, pa.array(idx)).to_pylist()
        errors = errors_table(raws, [prefix + bad[i] for i in idx.tolist()])
    length = n - len(bad)
    out = []
    for f in schema:
        col = prepared.get(f.name)
        if col is None:
            out.append(pa.nulls(length, f.type))
            continue
        if keep is not None:
            col = pc.filter(col, keep)
        out.append(col if col.type.equals(f.type) else _cast_text(col, f.type))
    return pa.Table.from_arrays(out, schema=schema), errors, mask


# --------------------------------------------------------------------------- CSV


def decode_csv(
    header: bytes | None,
    buf: bytes,
    schema: pa.Schema,
    *,
    delimiter: str = ",",
    source: str = "csv",
    where: str = "",
) -> tuple[pa.Table, pa.Table | None]:
    """Decode CSV rows (one row per line) under a header line; bad rows are errors.

    `header` is the file's first line (columns are matched by name; extra columns are
    ignored; a declared column missing from the header raises `SchemaMismatchError`), or
    None when the file has no header (columns are the schema's, in order). A row with
    the wrong number of fields or a value that does not cast is an error row.

    >>> s = pa.schema([("k", pa.string()), ("v", pa.int64())])
    >>> data, errors = decode_csv(b"v,k\\n", b"1,a\\n2\\nx,c\\n3,d\\n", s)
    >>> data.to_pylist()
    [{'k': 'a', 'v': 1}, {'k': 'd', 'v': 3}]
    >>> [e["reason"] for e in errors.to_pylist()]
    ['expected 2 fields, found 1', "column 'v': Failed to parse string: 'x' as a scalar of type int64"]
    """
    if not buf.strip():
        return empty_table(schema), None
    if header is not None:
        names = _csv_header(header, delimiter)
        for f in schema:
            if f.name not in names:
                raise SchemaMismatchError(
                    source,
                    f.name,
                    f.type,
                    None,
                    where=f"from the CSV header {where}".rstrip(),
                    fix=f"add a {f.name!r} column to the CSV, or remove it from the declared schema",
                )
    else:
        names = list(schema.names)
    raws: list[str] = []
    reasons: list[str] = []
    prefix = f"{where} " if where else ""

    def invalid(row: Any) -> str:
        raws.append(row.text)
        reasons.append(
            f"{prefix}expected {row.expected_columns} fields, found {row.actual_columns}"
        )
        return "skip"

    table = pcsv.read_csv(
        io.BytesIO(buf),
        read_options=pcsv.ReadOptions(column_names=names, block_size=max(_MIN_BLOCK, len(buf) + 1)),
        parse_options=pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=invalid),
        convert_options=pcsv.ConvertOptions(
            column_types={c: pa.string() for c in names},
            strings_can_be_null=False,
            null_values=[],
            quoted_strings_can_be_null=False,
        ),
    )
    raw = None
    if table.num_rows and names:
        raw = pc.binary_join_element_wise(*[table.column(c) for c in names], delimiter)
    wanted = [c for c in schema.names if c in table.column_names]
    data, cast_errors, _ = cast_strings(table.select(wanted), schema, raw, where=where)
    return data, _concat_errors([errors_table(raws, reasons), cast_errors])


def _csv_header(header: bytes, delimiter: str) -> list[str]:
    table = pcsv.read_csv(
        io.BytesIO(header),
        read_options=pcsv.ReadOptions(autogenerate_column_names=True),
        parse_options=pcsv.ParseOptions(delimiter=delimiter),
        convert_options=pcsv.ConvertOptions(strings_can_be_null=False),
    )
    if table.num_rows == 0:
        return []
    return [str(table.column(i)[0].as_py()).strip() for i in range(table.num_columns)]


# --------------------------------------------------------------------------- subsources


def split_subsources(table: pa.Table, subsources: dict[str, pa.Schema]) -> dict[str, pa.Table]:
    """Split a multi-output batch by its `SUBSOURCE_COLUMN` into one table per output.

    Each output keeps the rows naming it, in order, with the columns of its schema.

    >>> t = pa.table({"_subsource": ["a", "b", "a"], "x": [1, None, 3], "y": [None, "q", None]})
    >>> parts = split_subsources(t, {"a": pa.schema([("x", pa.int64())]),
    ...                              "b": pa.schema([("y", pa.string())])})
    >>> parts["a"].to_pydict(), parts["b"].to_pydict()
    ({'x': [1, 3]}, {'y': ['q']})
    """
    col = table.column(SUBSOURCE_COLUMN)
    out = {}
    for name, schema in subsources.items():
        part = table.filter(pc.equal(col, name))
        out[name] = pa.Table.from_arrays(
            [part.column(f.name).cast(f.type) for f in schema], schema=schema
        )
    return out
