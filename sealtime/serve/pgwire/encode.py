"""Arrow batches to PostgreSQL wire messages, a whole batch at a time.

Rows leave the service as Arrow and are turned into ``DataRow`` (or ``CopyData``)
messages with Arrow compute and numpy, column by column: each column becomes a binary
array of its values in the text or binary format, a second one of their 4-byte length
prefixes, and ``binary_join_element_wise`` lays the rows out one after the other, so the
joined array's data buffer *is* the bytes to send. No Python object is made per row
(numeric values of more than 18 digits are the one exception: they are converted one
by one).

Text format follows PostgreSQL's output functions with ``DateStyle ISO`` and ``TimeZone
UTC``: booleans ``t``/``f``, floats in the shortest form that reads back exactly
(``Infinity``, ``NaN``), timestamps ``2024-01-01 12:00:00.5+00``, bytea ``\\x0a1b``.
Binary format is PostgreSQL's ``*send`` format (big-endian integers and floats, days
and microseconds since 2000-01-01, numeric in base-10000 digits).

>>> import pyarrow as pa
>>> from sealtime.serve.backend import columns_of
>>> b = pa.record_batch({"a": [1, None], "s": ["x", "y"]})
>>> data_rows(b, columns_of(b.schema), [0, 0])
b'D\\x00\\x00\\x00\\x10\\x00\\x02\\x00\\x00\\x00\\x011\\x00\\x00\\x00\\x01xD\\x00\\x00\\x00\\x0f\\x00\\x02\\xff\\xff\\xff\\xff\\x00\\x00\\x00\\x01y'
>>> copy_rows(b, columns_of(b.schema))
b'd\\x00\\x00\\x00\\x081\\tx\\nd\\x00\\x00\\x00\\t\\\\N\\ty\\n'
>>> text_values(pa.array([1.5, float("inf"), None]), PgType.FLOAT8).to_pylist()
[b'1.5', b'Infinity', None]
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..backend import Column, PgType

__all__ = ["binary_values", "copy_rows", "data_rows", "text_values"]

_EPOCH_2000_DAYS = 10957  # days from 1970-01-01 to 2000-01-01
_EPOCH_2000_US = _EPOCH_2000_DAYS * 86_400 * 1_000_000
_EMPTY = pa.scalar(b"", pa.binary())
_NULL = pa.scalar(None, pa.binary())


def _fixed(values: np.ndarray, source: pa.Array) -> pa.Array:
    """A binary array of the fixed-width big-endian `values`, null where `source` is."""
    out = _be(values, values.dtype.str)
    if source.null_count:
        out = pc.if_else(pc.is_valid(source), out, _NULL)
    return out


def _numbers(arr: pa.Array, dtype: str) -> np.ndarray:
    arr = arr.cast(np.dtype(dtype.lstrip(">")).name) if dtype[1] != "f" else arr
    if arr.null_count:
        arr = arr.fill_null(0)
    return arr.to_numpy(zero_copy_only=False).astype(dtype)


def _hex(arr: pa.Array) -> pa.Array:
    """bytea's text format: ``\\x`` + two hex digits per byte."""
    arr = arr.cast(pa.binary())
    if arr.offset:
        arr = pa.concat_arrays([arr])  # offset 0: buffers line up with the offsets
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32, count=len(arr) + 1)
    data = arr.buffers()[2]
    raw = (
        np.frombuffer(data, dtype=np.uint8)[offsets[0] : offsets[-1]]
        if data
        else np.zeros(0, np.uint8)
    )
    digits = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
    pairs = np.empty((len(raw), 2), dtype=np.uint8)
    pairs[:, 0] = digits[raw >> 4]
    pairs[:, 1] = digits[raw & 15]
    hexed = pa.BinaryArray.from_buffers(
        pa.binary(),
        len(arr),
        [None, pa.py_buffer(((offsets - offsets[0]) * 2).astype(np.int32)), pa.py_buffer(pairs)],
    )
    out = pc.binary_join_element_wise(pa.scalar(b"\\x"), hexed, b"")
    if arr.null_count:
        out = pc.if_else(pc.is_valid(arr), out, _NULL)
    return out


def _timestamp_text(arr: pa.Array, tz: bool) -> pa.Array:
    utc = arr.cast(pa.timestamp("us", tz="UTC") if arr.type.tz else pa.timestamp("us"))
    naive = utc.cast(pa.timestamp("us")) if arr.type.tz else utc
    text = pc.strftime(naive, format="%Y-%m-%d %H:%M:%S")  # with 6 fraction digits
    text = pc.replace_substring_regex(text, pattern=r"\.?0+$", replacement="")
    if tz:
        text = pc.binary_join_element_wise(text, pa.scalar("+00"), "")
    return _as_binary(text)


def text_values(arr: pa.Array, pgtype: PgType) -> pa.Array:
    """The values of `arr` in PostgreSQL's text format (binary array, null kept)."""
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.binary())
    if pgtype is PgType.BOOL:
        return pc.if_else(arr, pa.scalar(b"t"), pa.scalar(b"f"))
    if pgtype in (PgType.FLOAT4, PgType.FLOAT8):
        text = arr.cast(pa.string())
        if arr.null_count < len(arr) and not pc.all(pc.is_finite(arr)).as_py():
            text = pc.replace_substring_regex(text, pattern="^(-?)inf$", replacement=r"\1Infinity")
            text = pc.replace_substring_regex(text, pattern="^nan$", replacement="NaN")
        return _as_binary(text)
    if pgtype is PgType.BYTEA:
        return _hex(arr)
    if pgtype in (PgType.TIMESTAMP, PgType.TIMESTAMPTZ):
        return _timestamp_text(arr, pgtype is PgType.TIMESTAMPTZ)
    if pa.types.is_binary(arr.type):
        return arr
    if not pa.types.is_string(arr.type):
        arr = arr.cast(pa.string())
    return _as_binary(arr)


def _numeric_binary_small(unscaled: np.ndarray, scale: int, source: pa.Array) -> pa.Array:
    """numeric's binary format for values ``unscaled / 10**scale`` whose
    ``|unscaled| * 10**pad`` fits an int64 (pad aligns the scale to 4 digits)."""
    pad = (-scale) % 4
    frac_groups = (scale + pad) // 4
    mag = np.abs(unscaled).astype(np.uint64) * np.uint64(10**pad)
    groups = np.empty((len(mag), 5), dtype=np.uint16)
    rest = mag.copy()
    for j in range(4, -1, -1):  # most significant group first
        groups[:, j] = (rest % np.uint64(10000)).astype(np.uint16)
        rest //= np.uint64(10000)
    nonzero = groups != 0
    anyn = nonzero.any(axis=1)
    first = np.where(anyn, nonzero.argmax(axis=1), 0)
    last = np.where(anyn, 4 - nonzero[:, ::-1].argmax(axis=1), -1)
    ndigits = np.where(anyn, last - first + 1, 0).astype(np.int64)
    weight = np.where(anyn, 4 - frac_groups - first, 0)
    # digits shifted left so that the first non-zero group is at column 0
    idx = np.clip(first[:, None] + np.arange(5)[None, :], 0, 4)
    shifted = np.take_along_axis(groups, idx, axis=1).astype(">u2")
    header = np.empty((len(mag), 4), dtype=">i2")
    header[:, 0] = ndigits
    header[:, 1] = weight
    header[:, 2] = np.where(unscaled < 0, 0x4000, 0)
    header[:, 3] = scale
    matrix = np.concatenate([header.view(np.uint8), shifted.view(np.uint8)], axis=1)
    widths = 8 + 2 * ndigits
    mask = np.arange(18)[None, :] < widths[:, None]
    offsets = np.zeros(len(mag) + 1, dtype=np.int32)
    np.cumsum(widths, out=offsets[1:])
    out = pa.BinaryArray.from_buffers(
        pa.binary(), len(mag), [None, pa.py_buffer(offsets), pa.py_buffer(matrix[mask])]
    )
    if source.null_count:
        out = pc.if_else(pc.is_valid(source), out, _NULL)
    return out


def _numeric_binary_one(value: Decimal) -> bytes:
    sign, digits, exp = value.as_tuple()
    scale = max(0, -int(exp))
    text = "".join(map(str, digits))
    int_digits = len(text) + int(exp)
    # pad on both sides to whole groups of 4 around the decimal point
    left = (-int_digits) % 4 if int_digits > 0 else 0
    frac = max(0, -int(exp))
    right = (-frac) % 4
    if int_digits <= 0:
        text = "0" * (-int_digits) + text
        int_digits = 0
    text = "0" * left + text + "0" * right
    groups = [int(text[i : i + 4]) for i in range(0, len(text), 4)]
    weight = (int_digits + left) // 4 - 1
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
    head = np.array([len(groups), weight, 0x4000 if sign else 0, scale], dtype=">i2")
    return head.tobytes() + np.array(groups, dtype=">u2").tobytes()


def _numeric_binary(arr: pa.Array) -> pa.Array:
    t = arr.type
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        return _numeric_binary_small(_numbers(arr, ">i8").astype(np.int64), 0, arr)
    if pa.types.is_decimal128(t) and t.precision + (-t.scale) % 4 <= 18 and t.scale >= 0:
        # a decimal of <= 18 digits is the low (little-endian) int64 of its int128
        raw = np.frombuffer(arr.buffers()[1], dtype="<i8")[2 * arr.offset :: 2][: len(arr)]
        return _numeric_binary_small(raw, t.scale, arr)
    values = [None if v is None else _numeric_binary_one(Decimal(v)) for v in arr.to_pylist()]
    return pa.array(values, pa.binary())


def binary_values(arr: pa.Array, pgtype: PgType) -> pa.Array:
    """The values of `arr` in PostgreSQL's binary format (binary array, null kept)."""
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), pa.binary())
    if pgtype is PgType.BOOL:
        return _fixed(_numbers(arr.cast(pa.uint8()), ">u1"), arr)
    if pgtype is PgType.INT2:
        return _fixed(_numbers(arr, ">i2"), arr)
    if pgtype is PgType.INT4:
        return _fixed(_numbers(arr, ">i4"), arr)
    if pgtype is PgType.INT8:
        return _fixed(_numbers(arr, ">i8"), arr)
    if pgtype is PgType.FLOAT4:
        return _fixed(_numbers(arr.cast(pa.float32()), ">f4"), arr)
    if pgtype is PgType.FLOAT8:
        return _fixed(_numbers(arr.cast(pa.float64()), ">f8"), arr)
    if pgtype is PgType.DATE:
        days = _numbers(arr.cast(pa.date32()).cast(pa.int32()), ">i4") - _EPOCH_2000_DAYS
        return _fixed(days.astype(">i4"), arr)
    if pgtype in (PgType.TIMESTAMP, PgType.TIMESTAMPTZ):
        us = arr.cast(pa.timestamp("us", tz=arr.type.tz)).cast(pa.int64())
        return _fixed((_numbers(us, ">i8") - _EPOCH_2000_US).astype(">i8"), arr)
    if pgtype is PgType.NUMERIC:
        return _numeric_binary(arr)
    if pgtype is PgType.BYTEA:
        return arr if pa.types.is_binary(arr.type) else arr.cast(pa.binary())
    return _as_binary(arr if pa.types.is_string(arr.type) else arr.cast(pa.string()))


def _be(values: np.ndarray, dtype: str) -> pa.Array:
    """A binary array of `values` as fixed-width `dtype` (e.g. ``>i4``) bytes each."""
    data = np.ascontiguousarray(values.astype(dtype, copy=False))
    width = data.dtype.itemsize
    offsets = np.arange(0, (len(data) + 1) * width, width, dtype=np.int32)
    return pa.BinaryArray.from_buffers(
        pa.binary(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(data.view(np.uint8))]
    )


def _rows_of(matrix: np.ndarray) -> pa.Array:
    """A binary array whose i-th value is row i of a 2-d uint8 `matrix`."""
    n, width = matrix.shape
    offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
    return pa.BinaryArray.from_buffers(
        pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(np.ascontiguousarray(matrix))]
    )


def _as_binary(arr: pa.Array) -> pa.Array:
    """A string array's bytes as binary, without a copy (a view)."""
    return arr.view(pa.binary()) if pa.types.is_string(arr.type) else arr.cast(pa.binary())


def _joined_bytes(joined: pa.Array) -> bytes:
    """The data buffer of a binary array: its values laid end to end."""
    if len(joined) == 0:
        return b""
    offsets = np.frombuffer(joined.buffers()[1], dtype=np.int32)[joined.offset :]
    start, end = int(offsets[0]), int(offsets[len(joined)])
    return joined.buffers()[2].slice(start, end - start).to_pybytes()


def data_rows(batch: pa.RecordBatch, columns: Sequence[Column], formats: Sequence[int]) -> bytes:
    """``DataRow`` messages of every row of `batch`; `formats[i]` is 0 (text) or 1
    (binary) for column i."""
    n = batch.num_rows
    if n == 0:
        return b""
    parts: list[pa.Array] = []
    total = np.full(n, 4 + 2, dtype=np.int64)
    for i, col in enumerate(columns):
        arr = batch.column(i)
        values = (binary_values if formats[i] else text_values)(arr, col.type)
        lengths = pc.binary_length(values).fill_null(-1).to_numpy(zero_copy_only=False)
        total += 4 + np.maximum(lengths, 0)
        parts.append(_be(lengths, ">i4"))
        parts.append(values)
    header = np.empty((n, 7), dtype=np.uint8)
    header[:, 0] = ord("D")
    header[:, 1:5] = total.astype(">i4").view(np.uint8).reshape(n, 4)
    header[:, 5:7] = np.frombuffer(np.array([len(columns)], dtype=">i2").tobytes(), np.uint8)
    head = _rows_of(header)
    joined = pc.binary_join_element_wise(
        head, *parts, b"", null_handling="replace", null_replacement=b""
    )
    return _joined_bytes(joined)


def _copy_escape(values: pa.Array) -> pa.Array:
    for raw, escaped in (("\\", "\\\\"), ("\t", "\\t"), ("\n", "\\n"), ("\r", "\\r")):
        values = pc.replace_substring(values, pattern=raw, replacement=escaped)
    return values


def copy_rows(batch: pa.RecordBatch, columns: Sequence[Column]) -> bytes:
    """``CopyData`` messages, one per row of `batch`, in COPY's text format (tab
    separated, ``\\N`` for NULL, backslash escapes)."""
    n = batch.num_rows
    if n == 0:
        return b""
    cols = []
    for i, col in enumerate(columns):
        values = text_values(batch.column(i), col.type)
        if col.type in (PgType.TEXT, PgType.BYTEA, PgType.UNKNOWN):
            values = _copy_escape(values)
        cols.append(values)
    lines = pc.binary_join_element_wise(
        *cols, b"\t", null_handling="replace", null_replacement=b"\\N"
    )
    lengths = pc.binary_length(lines).to_numpy(zero_copy_only=False).astype(np.int64)
    header = np.empty((n, 5), dtype=np.uint8)
    header[:, 0] = ord("d")
    header[:, 1:5] = (lengths + 5).astype(">i4").view(np.uint8).reshape(n, 4)
    head = _rows_of(header)
    joined = pc.binary_join_element_wise(head, lines, pa.scalar(b"\n"), b"")
    return _joined_bytes(joined)
