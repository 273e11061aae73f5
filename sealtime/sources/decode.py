"""Decoding helpers shared by the built-in sources: bytes and strings to typed Arrow columns.

**Exact decoding**: every record — a broker message, a non-blank line of a file — becomes
exactly one data row or exactly one row of the `errors` table (``raw``: the record as
text, ``reason``: why), whatever batch or chunk it came in; no row is ever invented or
merged (docs/sources.md, "Decoding").

The hot path is one vectorised pass and one reader call per batch: the records lie end
to end in one buffer (`_Records`); numpy checks that each starts with ``{`` and ends with
``}`` and Arrow that the buffer is UTF-8 (`_json_shapes`); `pyarrow.json.read_json`
decodes them all, and one row per record proves that each record gave its own row
(`_decode_json`). `decode_csv` parses a chunk with `pyarrow.csv` (counted the same way)
and casts every column at once (`cast_strings`).

Only when a batch fails does the error path run (`_isolate`): the batch is cut into the
runs between records known to be bad, large runs into parts, failing parts into halves,
until each bad record is alone; *k* bad records among *n* cost about ``n / 2048 + 22 k``
decoder calls, never a Python step per record.

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

import base64
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
    "bisect_failures",
    "cast_strings",
    "conform",
    "decode_csv",
    "decode_json_lines",
    "decode_json_messages",
    "empty_table",
    "errors_table",
    "invalid_utf8",
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

    # Parameters stored as attributes: alike only in form to other constructors.
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


# --------------------------------------------------------------------------- records
#
# A batch of records (broker messages, lines of a file) is decoded as one buffer in which
# the records lie end to end, one ``\n`` between two of them. Every record gets exactly
# one outcome: a data row (OK), an errors row (BAD), or, for a blank line of a file,
# nothing (SKIP: a blank line holds no record).

OK, BAD, SKIP = 1, 0, -1

# JSON whitespace once ``\n`` and ``\r`` are tabs (`_join`, `_lines`).
_BLANK = np.zeros(256, dtype=bool)
_BLANK[[ord(" "), ord("\t")]] = True
# A raw ``\n`` or ``\r`` is JSON whitespace outside a string and invalid inside one; so is
# a raw tab. Turning them into tabs keeps every record exactly as valid as it was, and
# makes ``\n`` the record separator alone.
_NEWLINES_TO_TABS = bytes.maketrans(b"\n\r", b"\t\t")
_CR_TO_TAB = bytes.maketrans(b"\r", b"\t")


@dataclass(frozen=True)
class _Records:
    """`n` records in one buffer: record *i* is ``buf[start[i]:end[i]]``, followed by one
    ``\\n`` (but the last); no record holds a ``\\n``.

    >>> r = _lines(b'{"a": 1}\\n\\nx')
    >>> r.start.tolist(), r.end.tolist(), bytes(r.piece(0, 3))
    ([0, 9, 10], [8, 9, 11], b'{"a": 1}\\n\\nx')
    """

    buf: bytes | bytearray
    start: np.ndarray  # int64
    end: np.ndarray  # int64

    @property
    def n(self) -> int:
        """Number of records."""
        return len(self.start)

    def piece(self, lo: int, hi: int) -> pa.Buffer:
        """Records ``[lo, hi)`` with the separators between them (no copy)."""
        a, b = int(self.start[lo]), int(self.end[hi - 1])
        return pa.py_buffer(self.buf).slice(a, b - a)


def _join(payloads: Sequence[bytes]) -> _Records:
    """Broker messages as `_Records`: joined by ``\\n``, with the newlines inside a message
    made tabs (one pass over the bytes, and only when a message holds one).

    >>> r = _join([b'{"a":\\n1}', b"", b"x"])
    >>> bytes(r.buf), r.start.tolist(), r.end.tolist()
    (b'{"a":\\t1}\\n\\nx', [0, 9, 10], [8, 9, 11])
    """
    n = len(payloads)
    buf: bytes | bytearray = b"\n".join(payloads)
    lengths = np.fromiter(map(len, payloads), dtype=np.int64, count=n)
    end = np.cumsum(lengths + 1) - 1
    start = end - lengths
    if buf.count(b"\n") != n - 1 or b"\r" in buf:
        buf = bytearray(buf.translate(_NEWLINES_TO_TABS))
        np.frombuffer(buf, dtype=np.uint8)[end[:-1]] = ord("\n")  # the separators again
    return _Records(buf, start, end)


def _lines(buf: bytes) -> _Records:
    """The lines of a chunk of a file as `_Records` (a last line without ``\\n`` counts;
    nothing after a final ``\\n`` does). Records keep their ``\\r``: `decode_json_lines`
    makes it a tab, `decode_csv` takes it as part of a ``\\r\\n`` line end or an error.

    >>> _lines(b"a\\n\\nbc\\n").end.tolist(), _lines(b"").n
    ([1, 2, 5], 0)
    """
    arr = np.frombuffer(buf, dtype=np.uint8)
    newlines = np.flatnonzero(arr == ord("\n"))
    end = newlines if buf.endswith(b"\n") or not buf else np.append(newlines, len(buf))
    start = np.empty(len(end), dtype=np.int64)
    if len(end):
        start[0] = 0
        start[1:] = end[:-1] + 1
    return _Records(buf, start, end.astype(np.int64, copy=False))


def _trimmed(arr: np.ndarray, start: np.ndarray, end: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per record: the index of its first and of its last non-blank byte, and whether it
    is blank (only spaces and tabs). Vectorised: one step per blank byte of the longest
    run of leading (trailing) blanks, over the records that still have one.

    >>> a = np.frombuffer(b" {x}\\t\\n\\t", dtype=np.uint8)
    >>> [v.tolist() for v in _trimmed(a, np.array([0, 6]), np.array([5, 7]))]
    [[1, 7], [3, 6], [False, True]]
    """
    first = start.copy()
    last = end - 1
    i = np.flatnonzero(first < end)
    i = i[_BLANK[arr[first[i]]]]
    while i.size:
        first[i] += 1
        i = i[first[i] < end[i]]
        i = i[_BLANK[arr[first[i]]]]
    blank = first >= end
    i = np.flatnonzero(~blank)
    i = i[_BLANK[arr[last[i]]]]
    while i.size:  # (stops at the first non-blank byte at the latest)
        last[i] -= 1
        i = i[_BLANK[arr[last[i]]]]
    return first, last, blank


def _valid_utf8(buf: bytes | bytearray | pa.Buffer) -> bool:
    """Is `buf` valid UTF-8 (Arrow's vectorised check, no copy)?

    >>> _valid_utf8(b"caf\\xc3\\xa9"), _valid_utf8(b"\\xff"), _valid_utf8(b"\\xed\\xa0\\x80")
    (True, False, False)
    """
    data = buf if isinstance(buf, pa.Buffer) else pa.py_buffer(buf)
    offsets = pa.py_buffer(np.array([0, data.size], dtype=np.int64))
    try:
        pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, data]).validate(full=True)
    except pa.ArrowInvalid:
        return False
    return True


def _invalid_utf8(recs: _Records) -> np.ndarray:
    """Indices of the records that are not valid UTF-8: one check of the whole buffer,
    then `invalid_utf8` over the records (a record spans to the next one's start: its
    separator is ASCII and cannot complete a sequence).

    >>> _invalid_utf8(_join([b"a", b"\\xff", b"b", b"\\xc3"])).tolist()
    [1, 3]
    """
    if recs.n == 0 or _valid_utf8(recs.buf):
        return np.zeros(0, dtype=np.int64)
    offsets = np.append(recs.start, recs.end[-1])
    return invalid_utf8(
        pa.Array.from_buffers(
            pa.large_binary(), recs.n, [None, pa.py_buffer(offsets), pa.py_buffer(recs.buf)]
        )
    )


def invalid_utf8(values: pa.Array) -> np.ndarray:
    """Indices of the values of a binary array that are not valid UTF-8 (nulls are
    fine): Arrow's vectorised check over halves, down to the bad values only.

    >>> invalid_utf8(pa.array([b"ok", None, b"\\xff", "é".encode()], pa.binary())).tolist()
    [2]
    """
    typ = pa.large_string() if pa.types.is_large_binary(values.type) else pa.string()
    texts = pa.Array.from_buffers(typ, len(values), values.buffers(), offset=values.offset)

    def check(lo: int, hi: int) -> None:
        texts.slice(lo, hi - lo).validate(full=True)

    return np.array(sorted(bisect_failures(len(values), check, (pa.ArrowInvalid,))), np.int64)


def bisect_failures(
    n: int, check: Callable[[int, int], None], errors: tuple[type[Exception], ...]
) -> dict[int, Exception]:
    """The indices in ``[0, n)`` whose value alone fails `check`, with the error: `check(lo,
    hi)` raises one of `errors` when a value in ``[lo, hi)`` is bad, and is tried on
    halves down to single values, so b bad values among n cost O(b log n) vectorised
    checks. The one search of the decoders' error path (invalid UTF-8, failed casts).

    >>> values = [1, -2, 3, -4]
    >>> def check(lo, hi):
    ...     if min(values[lo:hi]) < 0:
    ...         raise ValueError(f"negative in [{lo}, {hi})")
    >>> {i: str(e) for i, e in bisect_failures(len(values), check, (ValueError,)).items()}
    {1: 'negative in [1, 2)', 3: 'negative in [3, 4)'}
    """
    bad: dict[int, Exception] = {}
    stack = [(0, n)]
    while stack:
        lo, hi = stack.pop()
        if lo >= hi:
            continue
        try:
            check(lo, hi)
            continue
        except errors as exc:
            if hi - lo == 1:
                bad[lo] = exc
                continue
        mid = (lo + hi) // 2
        stack += [(mid, hi), (lo, mid)]
    return bad


def _utf8_reason(raw: bytes, what: str) -> str:
    """Why `raw` is not UTF-8, and its exact bytes (``raw`` can only show them as U+FFFD).

    >>> _utf8_reason(b"ab\\xff", "message")
    "not valid UTF-8: byte 0xff at offset 2: invalid start byte (raw shows invalid bytes as U+FFFD; the message's bytes in base64: YWL/)"
    """
    try:
        raw.decode("utf-8")
        detail = "unknown"  # (not reached: the caller found it invalid)
    except UnicodeDecodeError as exc:
        detail = f"byte 0x{raw[exc.start]:02x} at offset {exc.start}: {exc.reason}"
    b64 = base64.b64encode(raw).decode("ascii")
    return (
        f"not valid UTF-8: {detail} (raw shows invalid bytes as U+FFFD; the {what}'s bytes "
        f"in base64: {b64})"
    )


def _isolate(
    status: np.ndarray,
    reasons: dict[int, str],
    attempt: Callable[[int, int, int], Any],
) -> list[Any]:
    """Decode the OK records in pieces and return the pieces' results in record order.

    ``attempt(lo, hi, want)`` decodes records ``[lo, hi)`` (no BAD one among them;
    `want` of them OK, the rest SKIP) and returns ``(result, {index: reason})`` — the
    second part: records it found bad itself — or a reason string when the piece fails.
    A piece is first the whole batch, else the runs between records known to be BAD;
    a run that fails is bisected until the record that fails alone is found: it becomes
    BAD with that reason: a large run is first cut into parts of `_PART` records, then a
    part that fails is halved. *k* bad records among *n* cost about ``n / _PART + 2 k
    log2(_PART)`` attempts over about ``2 n + 2 k _PART`` records, never a Python step
    per record.

    >>> status = np.array([OK, OK, BAD, OK]); reasons = {2: "no"}
    >>> def attempt(lo, hi, want):
    ...     return "odd" if lo <= 1 < hi else ((lo, hi), {})
    >>> _isolate(status, reasons, attempt), status.tolist(), reasons
    ([(0, 1), (3, 4)], [1, 0, 0, 1], {2: 'no', 1: 'odd'})
    """
    # Counts of OK and BAD records before each index (not needed when all are OK: then a
    # range [lo, hi) holds hi - lo OK records). Statuses change only inside ranges done
    # with, so the counts stay right for the ranges still to do.
    wanted = known_bad = None
    if not (status == OK).all():
        wanted = np.concatenate(([0], np.cumsum(status == OK)))
        known_bad = np.concatenate(([0], np.cumsum(status == BAD)))
    out: list[Any] = []
    stack = [(0, len(status))]
    while stack:  # depth-first, left first: results come in record order
        lo, hi = stack.pop()
        want = hi - lo if wanted is None else int(wanted[hi] - wanted[lo])
        if want == 0:
            continue
        if known_bad is not None and known_bad[hi] != known_bad[lo]:
            # The runs between the bad records, each as a piece of its own.
            edges = [lo - 1, *(np.flatnonzero(status[lo:hi] == BAD) + lo).tolist(), hi]
            runs = [(edges[j] + 1, edges[j + 1]) for j in range(len(edges) - 1)]
            stack += [(a, b) for a, b in reversed(runs) if b > a]
            continue
        # (without blank records at its ends: a record decoded alone is decoded the same
        # way whatever its neighbours, so its reason does not depend on the cuts)
        if status[lo] != OK or status[hi - 1] != OK:
            oks = np.flatnonzero(status[lo:hi] == OK)
            lo, hi = lo + int(oks[0]), lo + int(oks[-1]) + 1
        got = attempt(lo, hi, want)
        if not isinstance(got, str):
            result, found = got
            out.append(result)
            for i, reason in found.items():
                status[i] = BAD
                reasons[i] = reason
            continue
        if want == 1:
            i = lo  # (the range is that record alone)
            status[i] = BAD
            reasons[i] = got
            continue
        # A large piece is cut into parts of `_PART` records (each part decoded once more
        # costs as much as the piece again, whatever the number of bad records in it);
        # a small one in halves.
        step = _PART if hi - lo > 2 * _PART else (hi - lo + 1) // 2
        stack += [(a, min(a + step, hi)) for a in reversed(range(lo, hi, step))]
    return out


#: records per part when a large piece that failed is cut up (`_isolate`)
_PART = 2048


def _errors(
    status: np.ndarray,
    reasons: dict[int, str],
    raw: Callable[[int], bytes],
    prefix: Callable[[int], str],
) -> pa.Table | None:
    """The errors table of the BAD records, in record order: ``raw`` the record's text,
    ``reason`` its reason after `prefix`."""
    bad = sorted(reasons)
    assert all(status[i] == BAD for i in bad) and len(bad) == int((status == BAD).sum())
    return errors_table([_text(raw(i)) for i in bad], [prefix(i) + reasons[i] for i in bad])


def _prefix(where: str, at: int | None, recs: _Records) -> Callable[[int], str]:
    """What each reason starts with: `where` (e.g. a stream name) or, when `at` (the
    chunk's byte offset in its file) is given, ``where[byte p]:`` with the record's own
    offset — the same whatever chunk the record was read in.

    >>> _prefix("a.jsonl", 100, _lines(b"x\\ny"))(1), _prefix("S:", None, _lines(b"x"))(0)
    ('a.jsonl[byte 102]: ', 'S: ')
    """
    if at is None:
        text = f"{where} " if where else ""
        return lambda i: text
    return lambda i: f"{where}[byte {at + int(recs.start[i])}]: "


# --------------------------------------------------------------------------- JSON


def _read_json(data: pa.Buffer, schema: pa.Schema, *, single_block: bool = False) -> pa.Table:
    block = data.size + 1 if single_block else max(_MIN_BLOCK, data.size // 4 + 1)
    return pj.read_json(
        pa.BufferReader(data),
        read_options=pj.ReadOptions(block_size=block),
        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore"),
    )


def _json_shapes(
    recs: _Records,
    status: np.ndarray,
    reasons: dict[int, str],
    what: str,
    blank: str | None,
    raw: Callable[[int], bytes],
) -> None:
    """Mark BAD the records that cannot be one JSON object: blank ones (SKIP when `blank`
    is None), those not starting with ``{`` or not ending with ``}``, and those that are
    not UTF-8 (`raw` gives a record's own bytes for the reason). Vectorised; pyarrow's
    reader never sees them (a bare ``null`` crashes pyarrow 26 with SIGSEGV)."""
    arr = np.frombuffer(recs.buf, dtype=np.uint8)
    first, last, empty = _trimmed(arr, recs.start, recs.end)
    if empty.any():
        status[empty] = SKIP if blank is None else BAD
        if blank is not None:
            reasons.update(dict.fromkeys(np.flatnonzero(empty).tolist(), blank))
    full = np.flatnonzero(~empty)
    opens = arr[first[full]] == ord("{")
    closes = arr[last[full]] == ord("}")
    for i in full[~opens].tolist():
        status[i] = BAD
        reasons[i] = f"not a JSON object (each {what} must be exactly one {{...}} object)"
    for i in full[opens & ~closes].tolist():
        status[i] = BAD
        reasons[i] = (
            f"expected exactly one JSON object: the {what} does not end with '}}' "
            "(a truncated object, or more data after it)"
        )
    for i in _invalid_utf8(recs).tolist():  # (the reason that wins: raw cannot show it)
        status[i] = BAD
        reasons[i] = _utf8_reason(raw(i), what)


def _decode_json(
    recs: _Records, schema: pa.Schema, status: np.ndarray, reasons: dict[int, str]
) -> pa.Table:
    """The rows of the OK records, in order; a record that does not decode to exactly one
    row becomes BAD with pyarrow's reason.

    Why a piece that gives one row per OK record is exact: every OK record starts with
    ``{`` and ends with ``}`` and holds no newline. A value cannot run on from one record
    into the next — after the closing ``}`` the reader can only end the value or expect
    ``,``/``]``/``}``, never the ``{`` that starts the next record (and a ``}`` inside a
    string would leave the string open across a newline: invalid). So each record gives
    at least one row, and a piece with as many rows as records gives exactly one each.
    """

    # (timestamps are read as text and converted as CSV's are: Arrow's JSON reader
    # refuses fractions finer than the column's unit)
    texts = pa.schema(
        [pa.field(f.name, pa.string()) if pa.types.is_timestamp(f.type) else f for f in schema]
    )
    stamps = [f for f in schema if pa.types.is_timestamp(f.type)]

    def attempt(lo: int, hi: int, want: int) -> Any:
        data = recs.piece(lo, hi)
        try:
            try:
                table = _read_json(data, texts, single_block=hi - lo < recs.n)
            except pa.ArrowInvalid:
                if hi - lo < recs.n or data.size < _MIN_BLOCK:
                    raise
                table = _read_json(data, texts, single_block=True)  # a record > a block
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            return _message(exc)
        if table.num_rows != want:
            return f"holds {table.num_rows} JSON values; expected exactly one JSON object"
        for f in stamps:
            text = table.column(f.name).combine_chunks()
            try:
                value = _cast_text(text, f.type)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError):
                first = min(_bad_values(text, f.type))
                return f"Failed to convert JSON to {f.type}, couldn't parse:{text[first].as_py()}"
            table = table.set_column(table.schema.get_field_index(f.name), f, value)
        return table, {}

    tables = _isolate(status, reasons, attempt)
    if not tables:
        return empty_table(schema)
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


def decode_json_lines(
    buf: bytes, schema: pa.Schema, *, where: str = "", at: int | None = None
) -> tuple[pa.Table, pa.Table | None]:
    """Decode newline-delimited JSON objects; every line that is not blank becomes
    exactly one data row or exactly one errors row (``raw``: the line, without its
    ``\\n``), whatever the chunk it was read in.

    Blank lines (spaces, tabs, ``\\r``) hold no record. Each other line must hold exactly
    one JSON object: ``null``, an array, a number, a string, several values, trailing
    garbage, a truncated object, or bytes that are not UTF-8 make the line an error.
    Fields not in `schema` are ignored, missing ones are null (a missing event time is
    routed to `errors` by the engine); a value that does not convert to its column's
    type (``"not-a-time"`` for a timestamp, ``1.5`` for a long) makes the line an error
    naming the type and the value; so does a column named twice. Timestamps are ISO 8601
    strings (``"2015-07-15T00:00:00Z"``); declare an int64 column for epoch milliseconds.
    Reasons start with `where`, and with each line's byte offset in its file when `at`
    (the offset of `buf`) is given.

    >>> s = pa.schema([("v", pa.int64())])
    >>> data, errors = decode_json_lines(b'{"v": 1}\\n\\n{"v": 2.5}\\n{"v": 3}', s, where="f")
    >>> data.column("v").to_pylist()
    [1, 3]
    >>> errors.to_pylist()[0]["reason"]
    "f Failed to convert JSON to int64, couldn't parse:2.5"
    >>> decode_json_lines(b'{"v": 4}\\n{"v": 5} x\\n', s, where="a.jsonl", at=100)[1].to_pylist()
    [{'raw': '{"v": 5} x', 'reason': "a.jsonl[byte 109]: expected exactly one JSON object: \
the line does not end with '}' (a truncated object, or more data after it)"}]
    """
    recs = _lines(buf)
    if b"\r" in buf:
        recs = _Records(buf.translate(_CR_TO_TAB), recs.start, recs.end)
    status = np.full(recs.n, OK, dtype=np.int8)
    reasons: dict[int, str] = {}

    def raw(i: int) -> bytes:
        return buf[recs.start[i] : recs.end[i]]

    _json_shapes(recs, status, reasons, "line", None, raw)
    data = _decode_json(recs, schema, status, reasons)
    return data, _errors(status, reasons, raw, _prefix(where, at, recs))


def decode_json_messages(
    payloads: Sequence[bytes], schema: pa.Schema, *, where: str = ""
) -> tuple[pa.Table, pa.Table | None, np.ndarray]:
    """Decode one JSON object per message: every message becomes exactly one data row or
    exactly one errors row (``raw``: the message), whatever the batch it came in.

    Returns ``(data, errors, ok)`` where `ok` is a boolean mask over `payloads` telling
    which messages produced the rows of `data` (in order). A message may span lines
    (pretty-printed JSON). An empty message, one that is not a JSON object, one holding
    several values (also on separate lines), trailing garbage, and bytes that are not
    UTF-8 are errors; values convert as in `decode_json_lines`. All good messages of a
    batch are decoded in one `pyarrow.json` call.

    >>> s = pa.schema([("v", pa.int64())])
    >>> data, errors, ok = decode_json_messages([b'{"v": 1}', b'{\\n "v": 2\\n}', b'', b'[1]'], s)
    >>> data.column("v").to_pylist(), ok.tolist(), errors.column("reason").to_pylist()
    ([1, 2], [True, True, False, False], ['empty message', 'not a JSON object (each message must be exactly one {...} object)'])
    >>> decode_json_messages([b'', b'{"v": 1} null'], s)[0].num_rows
    0
    """
    n = len(payloads)
    if n == 0:
        return empty_table(schema), None, np.zeros(0, dtype=bool)
    recs = _join(payloads)
    status = np.full(n, OK, dtype=np.int8)
    reasons: dict[int, str] = {}
    _json_shapes(recs, status, reasons, "message", "empty message", payloads.__getitem__)
    data = _decode_json(recs, schema, status, reasons)
    errors = _errors(status, reasons, payloads.__getitem__, _prefix(where, None, recs))
    return data, errors, status == OK


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
            parts.append((zoned, _iso(pc.if_else(zoned, arr, null), zoned_type)))
        naive = pc.and_(pc.invert(with_zone), pc.invert(digits))
        if pc.any(pc.and_(naive, pc.is_valid(arr))).as_py():
            values = _iso(pc.if_else(naive, arr, null), naive_type)
            parts.append((naive, pc.cast(values, zoned_type)))  # naive = UTC
        out = pa.nulls(len(arr), zoned_type)
        for mask, values in parts:
            out = pc.if_else(mask, values, out)
        return out if typ.tz is not None else pc.cast(out, naive_type)
    out = pc.cast(arr, typ)
    if pa.types.is_integer(typ) and _may_hold_x(arr):
        # Arrow also reads "0x10" as 16 (and "0xFFFFFFFFFFFFFFFF" as -1): numbers are decimal.
        hex_ = pc.match_substring(arr, "x", ignore_case=True)
        if pc.any(hex_).as_py():
            bad = pc.filter(arr, hex_)[0].as_py()
            raise pa.ArrowInvalid(f"Failed to parse string: {bad!r} as a decimal integer")
    return out


#: a fraction of a second with more digits than milliseconds
_FINE_FRACTION_RE = r"[.,]\d{4,}"


def _iso(arr: pa.Array, typ: pa.DataType) -> pa.Array:
    """ISO 8601 strings to timestamps of `typ`. Arrow parses a fraction only up to the
    unit's digits, so values with finer fractions (``12:00:00.121000+00:00``, as Python's
    ``isoformat()`` and most loggers write) are parsed in nanoseconds and truncated to
    the unit; the others directly (the nanosecond range ends in 2262).

    >>> _iso(pa.array(["2024-01-01T12:00:00.121999+01:00", "9999-12-31T00:00:00Z"]),
    ...      pa.timestamp("ms", tz="UTC")).to_pylist()[0].isoformat()
    '2024-01-01T11:00:00.121000+00:00'
    """
    fine = pc.fill_null(pc.match_substring_regex(arr, _FINE_FRACTION_RE), False)
    if not pc.any(fine).as_py():
        return pc.cast(arr, typ)
    null = pa.scalar(None, pa.string())
    coarse = pc.cast(pc.if_else(fine, null, arr), typ)
    ns = pc.cast(pc.if_else(fine, arr, null), pa.timestamp("ns", tz=typ.tz))
    return pc.if_else(fine, pc.cast(ns, typ, safe=False), coarse)


def _may_hold_x(arr: pa.Array) -> bool:
    """Might a value of the string array hold an ``x`` or ``X``? One scan of its data
    buffer (a slice's buffer may hold more: then the answer errs on the safe side).

    >>> _may_hold_x(pa.array(["12", None])), _may_hold_x(pa.array(["0X1"]))
    (False, True)
    """
    data = arr.buffers()[2]
    if data is None:
        return False
    raw = np.frombuffer(data, dtype=np.uint8)
    return bool(((raw | 0x20) == ord("x")).any())


def _bad_values(arr: pa.Array, typ: pa.DataType) -> dict[int, str]:
    """Indices of values of `arr` that do not cast to `typ`, with the reasons (bisection)."""

    def check(lo: int, hi: int) -> None:
        _cast_text(arr.slice(lo, hi - lo), typ)

    errors = (pa.ArrowInvalid, pa.ArrowNotImplementedError, ValueError)
    return {i: _message(exc) for i, exc in bisect_failures(len(arr), check, errors).items()}


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
    data, bad, mask, columns = _cast_columns(table, schema)
    if not bad:
        return data, None, mask
    idx = np.fromiter(sorted(bad), dtype=np.int64, count=len(bad))
    if raw is None:
        names = list(columns)
        raw = (
            pc.binary_join_element_wise(*[pc.fill_null(columns[c], "") for c in names], ",")
            if names
            else pa.array([""] * table.num_rows)
        )
    prefix = f"{where} " if where else ""
    raws = list(raw(idx)) if callable(raw) else pc.take(raw, pa.array(idx)).to_pylist()
    return data, errors_table(raws, [prefix + bad[i] for i in idx.tolist()]), mask


def _cast_columns(
    table: pa.Table, schema: pa.Schema
) -> tuple[pa.Table, dict[int, str], np.ndarray, dict[str, pa.Array]]:
    """`cast_strings` without the errors table: ``(data, {row: reason}, ok mask, the
    input columns as strings)``."""
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
    mask = np.ones(n, dtype=bool)
    keep = None
    if bad:
        mask[np.fromiter(bad, dtype=np.int64, count=len(bad))] = False
        keep = pa.array(mask)
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
    return pa.Table.from_arrays(out, schema=schema), bad, mask, columns


# --------------------------------------------------------------------------- CSV


def decode_csv(
    header: bytes | None,
    buf: bytes,
    schema: pa.Schema,
    *,
    delimiter: str = ",",
    source: str = "csv",
    where: str = "",
    at: int | None = None,
) -> tuple[pa.Table, pa.Table | None]:
    """Decode CSV rows, one per line, under a header line: every line that is not empty
    becomes exactly one data row or exactly one errors row (``raw``: the line, without
    its ``\\n``), whatever the chunk it was read in.

    `header` is the file's first line (columns are matched by name; extra columns are
    ignored; a declared column missing from the header raises `SchemaMismatchError`), or
    None when the file has no header (columns are the schema's, in order). Errors: a row
    with the wrong number of fields, a quoted field not closed in its line (a value
    cannot span lines), a ``\\r`` that does not end the line, bytes that are not UTF-8,
    a value that does not cast (`cast_strings`). Empty lines (also ``\\r\\n``) hold no
    record. Reasons start with `where`, and with each line's byte offset in its file
    when `at` (the offset of `buf`) is given.

    >>> s = pa.schema([("k", pa.string()), ("v", pa.int64())])
    >>> data, errors = decode_csv(b"v,k\\n", b'1,a\\n2\\nx,c\\n3,d\\n4,"e\\n', s)
    >>> data.to_pylist()
    [{'k': 'a', 'v': 1}, {'k': 'd', 'v': 3}]
    >>> [e["reason"] for e in errors.to_pylist()]
    ['expected 2 fields, found 1', "column 'v': Failed to parse string: 'x' as a scalar of \
type int64", 'a quoted field is not closed before the end of the line']
    """
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
    recs = _lines(buf)
    status = np.full(recs.n, OK, dtype=np.int8)
    reasons: dict[int, str] = {}
    _csv_lines(recs, status, reasons)
    convert_options = pcsv.ConvertOptions(
        column_types={c: pa.string() for c in names},
        strings_can_be_null=False,
        null_values=[],
        quoted_strings_can_be_null=False,
    )
    whole = pa.py_buffer(buf)
    quoted = b'"' in buf

    def read(data: pa.Buffer, threads: bool) -> tuple[pa.Table, list[tuple[int | None, str]]]:
        invalid: list[tuple[int | None, str]] = []

        def on_invalid(row: Any) -> str:
            found = f"expected {row.expected_columns} fields, found {row.actual_columns}"
            if "\n" in (row.text or ""):
                found = "a quoted field is not closed before the end of the line"
            invalid.append((row.number, found))
            return "skip"

        table = pcsv.read_csv(
            pa.BufferReader(data),
            read_options=pcsv.ReadOptions(
                column_names=names, block_size=data.size + 1, use_threads=threads
            ),
            parse_options=pcsv.ParseOptions(delimiter=delimiter, invalid_row_handler=on_invalid),
            convert_options=convert_options,
        )
        return table, invalid

    def attempt(lo: int, hi: int, want: int) -> Any:
        a, b = int(recs.start[lo]), int(recs.end[hi - 1])
        # Every line ends with "\n", so that a quote left open at the end of the last one
        # shows (as a value holding "\n") rather than being closed by the end of the data.
        data = whole.slice(a, b + 1 - a) if b < len(buf) else pa.py_buffer(buf[a:b] + b"\n")
        try:
            table, invalid = read(data, threads=True)
            if want > 1 and any(number is None for number, _ in invalid):
                # (only a single-threaded read numbers the rows it finds invalid)
                table, invalid = read(data, threads=False)
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
            return _message(exc)
        if table.num_rows + len(invalid) != want:
            return (
                f"parses as {table.num_rows + len(invalid)} CSV rows, expected one: a quoted "
                "field is not closed before the end of the line"
            )
        # (the OK lines of the piece, which its rows and invalid rows are, in order)
        lines = np.arange(lo, hi) if want == hi - lo else np.flatnonzero(status[lo:hi] == OK) + lo
        found: dict[int, str] = {}
        for number, why in invalid:
            # (the reader numbers the lines that are not empty from 1)
            k = 1 if want == 1 else (number if number is not None else 0)
            i = int(lines[k - 1]) if 1 <= k <= want else -1
            if i < 0 or i in found:
                return "cannot tell which line a bad row is"  # (bisected further)
            found[i] = why
        rows_at = lines[~np.isin(lines, list(found))] if found else lines
        # A quote left open at the end of its line runs on to the next "\n".
        open_quote = None
        for col in table.columns if quoted else ():
            m = pc.match_substring(col, "\n")
            open_quote = m if open_quote is None else pc.or_(open_quote, m)
        if open_quote is not None and pc.any(open_quote).as_py():
            mask = open_quote.to_numpy(zero_copy_only=False)
            for i in rows_at[mask].tolist():
                found[i] = "a quoted field is not closed before the end of the line"
            table = table.filter(pc.invert(open_quote))
            rows_at = rows_at[~mask]
        return (table, rows_at), found

    pieces = _isolate(status, reasons, attempt)
    if pieces:
        table = pa.concat_tables([t for t, _ in pieces])
        rows_at = np.concatenate([r for _, r in pieces])
        wanted = [c for c in schema.names if c in table.column_names]
        data, bad, _, _ = _cast_columns(table.select(wanted), schema)
        for row, why in bad.items():
            i = int(rows_at[row])
            status[i] = BAD
            reasons[i] = why
    else:
        data = empty_table(schema)
    prefix = _prefix(where, at, recs)
    return data, _errors(status, reasons, lambda i: buf[recs.start[i] : recs.end[i]], prefix)


def _csv_lines(recs: _Records, status: np.ndarray, reasons: dict[int, str]) -> None:
    """Before any parsing: empty lines (also ``\\r\\n``) are SKIP; a line with a ``\\r``
    that does not end it, or that is not UTF-8, is BAD (vectorised)."""
    buf = recs.buf
    arr = np.frombuffer(buf, dtype=np.uint8)
    body_end = recs.end.copy()  # without a "\r" ending the line
    if b"\r" in buf:
        ends_cr = np.flatnonzero(recs.end > recs.start)
        ends_cr = ends_cr[arr[recs.end[ends_cr] - 1] == ord("\r")]
        body_end[ends_cr] -= 1
        cr = np.flatnonzero(arr == ord("\r"))
        line = np.searchsorted(recs.start, cr, side="right") - 1
        for i in np.unique(line[cr != body_end[line]]).tolist():
            status[i] = BAD
            reasons[i] = (
                "a carriage return (\\r) inside the line: a CSV line ends with \\n or \\r\\n, "
                "and a value cannot span lines"
            )
    status[(body_end == recs.start) & (status == OK)] = SKIP
    for i in _invalid_utf8(recs).tolist():  # (the reason that wins: raw cannot show it)
        status[i] = BAD
        reasons[i] = _utf8_reason(bytes(buf[recs.start[i] : recs.end[i]]), "line")


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
