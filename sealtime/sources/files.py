"""`Files`: a directory where complete files appear over time (JSON lines, CSV, Parquet).

Rules (see ``docs/sources.md``):

* **Which files**: regular files directly in `path` whose name matches `pattern`
  (``fnmatch``) and does not start with ``.`` or ``_`` (the usual marks of files being
  written: ``.part``/``_tmp`` names, ``_SUCCESS`` markers).
* **When a file is complete**: when its size and modification time have not changed
  for `settle` seconds, as seen by two listings of the reader. Writers that rename a
  finished file into place (the safe pattern) can use ``settle=0``: a file is read as
  soon as it is listed. A file must not change once it is complete (append-only
  *directory*, immutable *files*).
* **Order**: files are read in name order, one after the other; a file that is not
  complete yet holds back the files after it, so the order never depends on timing.
  Name files so that they sort in arrival order (a timestamp or sequence prefix). A file
  that appears with a name sorting before a file already read is not read: it is
  reported once in `errors` (raw = its name) with the fix.
* **Position**: ``{"file": name, "offset": n}`` — everything in files sorting before
  `name`, and the first `n` bytes (JSON lines, CSV) or rows (Parquet) of `name`, has
  been read. ``open(position)`` resumes right there, in the middle of a file if need be.
* **Records**: JSON lines and CSV are decoded a chunk at a time (`decode`); a bad line
  or row goes to `errors` with the raw text and a reason that names the file. A Parquet
  file whose column types do not match the declared schema raises `SchemaMismatchError`.

>>> import json, os, tempfile
>>> d = tempfile.mkdtemp()
>>> with open(os.path.join(d, "a.jsonl"), "w") as f:
...     _ = f.write('{"k": "x", "v": 1}\\n{"k": "y", "v": 2}\\n')
>>> src = Files(d, format="jsonl", schema={"k": "string", "v": "long"}, settle=0, finite=True)
>>> b = src.open().read()
>>> b.data.to_pydict(), b.position, b.exhausted
({'k': ['x', 'y'], 'v': [1, 2]}, {'file': 'a.jsonl', 'offset': 38}, True)
>>> json.loads(json.dumps(b.position)) == b.position
True
>>> import shutil; shutil.rmtree(d)
"""

from __future__ import annotations

import enum
import fnmatch
import os
import time
from collections.abc import Callable
from typing import Any, BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import ConfigError
from .base import LinkedBatch, LinkedReader, ReadBatch, Source
from .decode import (
    SchemaMismatchError,
    conform,
    decode_csv,
    decode_json_lines,
    empty_table,
    errors_table,
)
from .rows import to_arrow_schema

__all__ = [
    "FORMATS",
    "FileFormat",
    "Files",
    "FilesReader",
    "LinkedBatch",
    "linkable_type",
    "read_row_range",
]


class FileFormat(str, enum.Enum):
    """The formats `Files` reads (a str enum: `Files.format` still reads as the name
    the user gave, and compares by identity inside).

    >>> FileFormat("parquet") is FileFormat.PARQUET, FileFormat.CSV.value
    (True, 'csv')
    """

    #: one JSON object per line
    JSONL = "jsonl"
    CSV = "csv"
    PARQUET = "parquet"


#: The formats `Files` reads, by name.
FORMATS = tuple(f.value for f in FileFormat)
_FORMAT_ALIASES = {"json": FileFormat.JSONL, "ndjson": FileFormat.JSONL}
_MAX_FILES_PER_READ = 1000  # bound on files finished in one read (empty files)
_STAT_AHEAD = 64  # files after the current one whose settle clocks are kept running


def linkable_type(t: pa.DataType) -> bool:
    """Can a Parquet column of type `t` be read by Spark straight from the file with the
    same values pyarrow would give? (flat types; timestamps only with a time zone, as a
    naive timestamp may read as TIMESTAMP_NTZ or be shifted by the session zone)."""
    if pa.types.is_timestamp(t):
        return t.tz is not None and t.unit in ("ms", "us")
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or pa.types.is_string(t)
        or pa.types.is_date32(t)
    )


def read_row_range(
    pf: pq.ParquetFile, lo: int, hi: int, columns: list[str] | None = None
) -> pa.Table:
    """Rows ``[lo, hi)`` of a Parquet file (`columns` of them, or all), reading only the
    row groups that hold them.

    >>> import io
    >>> buf = io.BytesIO()
    >>> pq.write_table(pa.table({"x": list(range(10))}), buf, row_group_size=4)
    >>> read_row_range(pq.ParquetFile(buf), 3, 6).column("x").to_pylist()
    [3, 4, 5]
    """
    meta = pf.metadata
    sizes = np.array([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
    starts = np.concatenate(([0], np.cumsum(sizes)))
    first = int(np.searchsorted(starts, lo, side="right")) - 1
    last = int(np.searchsorted(starts, hi, side="left"))  # exclusive group index
    groups = list(range(first, max(last, first + 1)))
    table = pf.read_row_groups(groups, columns=columns)
    return table.slice(lo - int(starts[first]), hi - lo)


class Files(Source):
    """Files appearing over time in a directory; see the module docstring for the rules.

    * `path`: the directory (local filesystem).
    * `format`: ``"jsonl"`` (one JSON object per line), ``"csv"`` or ``"parquet"``.
    * `schema`: the declared columns (pyarrow Schema, dict, ``"a long, b string"``, Spark
      StructType).
    * `pattern`: ``fnmatch`` pattern on file names, e.g. ``"*.jsonl"``.
    * `finite`: when True, read the files present at `open` time (all taken as
      complete) and then be exhausted; when False (default) wait for more files forever.
    * `settle`: seconds a file's size and mtime must stay unchanged before it is read
      (0 when writers rename complete files into place).
    * `header`, `delimiter`: CSV only; with ``header=False`` the columns are the
      schema's, in order.
    * `max_per_read`, `max_bytes_per_read`: bounds on one `read`.
    * `clock`: monotonic seconds, for tests of `settle` (default `time.monotonic`).

    >>> Files("/tmp", format="xml", schema={"a": "long"})
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Files(format='xml'): unknown format; use one of 'jsonl', 'csv', 'parquet'
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        format: str = "jsonl",
        schema: Any = None,
        pattern: str = "*",
        *,
        finite: bool = False,
        settle: float = 1.0,
        header: bool = True,
        delimiter: str = ",",
        max_per_read: int = 1_000_000,
        max_bytes_per_read: int = 64 << 20,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.path = os.fspath(path)
        name = str(format.value if isinstance(format, FileFormat) else format).lower()
        if name not in FORMATS and name not in _FORMAT_ALIASES:
            raise ConfigError(
                f"Files(format={format!r}): unknown format; use one of "
                + ", ".join(repr(f) for f in FORMATS)
            )
        self.format = _FORMAT_ALIASES.get(name) or FileFormat(name)
        if schema is None:
            raise ConfigError(
                f"Files({self.path!r}): pass schema=..., e.g. schema={{'k': 'string', 'v': 'long'}}"
            )
        self.schema = to_arrow_schema(schema)
        self.pattern = pattern
        self._finite = bool(finite)
        if settle < 0:
            raise ConfigError(f"Files(settle={settle!r}): must be >= 0 seconds")
        self.settle = float(settle)
        self.header = bool(header)
        if len(delimiter) != 1:
            raise ConfigError(f"Files(delimiter={delimiter!r}): must be one character")
        self.delimiter = delimiter
        if max_per_read < 1 or max_bytes_per_read < 1:
            raise ConfigError("Files: max_per_read and max_bytes_per_read must be >= 1")
        self.max_per_read = int(max_per_read)
        self.max_bytes_per_read = int(max_bytes_per_read)
        self.clock = clock

    def __repr__(self) -> str:
        return f"Files({self.path!r}, format={self.format.value!r}, pattern={self.pattern!r})"

    @property
    def finite(self) -> bool:
        """True when constructed with ``finite=True``."""
        return self._finite

    def open(self, position: Any = None) -> FilesReader:
        """A reader resuming right after `position` (``{"file", "offset"}``; None = start)."""
        name, offset = _parse_position(position)
        return FilesReader(self, name, offset)

    def candidates(self) -> list[str]:
        """Names of the files in the directory that this source reads, in name order."""
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            return []
        names = [
            e.name
            for e in entries
            if not e.name.startswith((".", "_"))
            and fnmatch.fnmatchcase(e.name, self.pattern)
            and e.is_file()
        ]
        names.sort()
        return names


def _parse_position(position: Any) -> tuple[str | None, int]:
    if position is None:
        return None, 0
    fix = 'pass a position returned by this source, e.g. {"file": "a.jsonl", "offset": 0}'
    if not isinstance(position, dict) or set(position) - {"file", "offset"}:
        raise ConfigError(f"Files.open(position={position!r}): not a Files position; {fix}")
    name = position.get("file")
    offset = position.get("offset", 0)
    if name is not None and not isinstance(name, str):
        raise ConfigError(f"Files.open(position={position!r}): 'file' must be a name; {fix}")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise ConfigError(f"Files.open(position={position!r}): 'offset' must be an int >= 0; {fix}")
    return name, offset


class FilesReader(LinkedReader):
    """An open `Files` source. `position` is ``{"file": name, "offset": n}``."""

    def __init__(self, source: Files, name: str | None, offset: int) -> None:
        self.source = source
        self.file = name
        self.offset = offset
        self._clock = source.clock or time.monotonic
        self._acked: tuple[str, int] | None = None
        self._health = "running" if os.path.isdir(source.path) else "stalled"
        self._observed: dict[str, tuple[int, int, float]] = {}
        self._reported: set[str] = set()
        listing = source.candidates()
        if source.finite and not os.path.isdir(source.path):
            raise FileNotFoundError(
                f"{source!r}: directory {source.path!r} does not exist; create it or fix path="
            )
        # Names present at open that sort before the position were read before.
        self._accounted = set(listing)
        self._snapshot = listing if source.finite else None
        self._fh: BinaryIO | None = None
        self._pf: pq.ParquetFile | None = None
        self._linkable = False  # can the current Parquet file be linked (read_linked)?
        self._size = 0  # bytes (text) or rows (parquet) of the current file
        self._header: bytes | None = None
        self._pending_error: tuple[str, str] | None = None
        self._done = name is None  # is the current file finished?
        if name is not None:
            self._open_current(resume=True)

    # ------------------------------------------------------------------ API

    @property
    def position(self) -> dict[str, Any]:
        """The JSON-able position after everything read so far."""
        return {"file": self.file, "offset": self.offset}

    def read(self, max_rows: int | None = None) -> ReadBatch:
        """Rows from the current file and the complete files after it, in name order."""
        return self._read(max_rows, None)

    def read_linked(self, max_rows: int | None, columns: list[str]) -> ReadBatch:
        """Like `read`, but for Parquet files whose column types equal the declared ones
        (`linkable_type`) return a `LinkedBatch`: the file ranges the rows are in and only
        `columns` of the rows (the ingest log then links the immutable files instead of
        copying the rows). A batch is either all linked or all copied: a file that cannot
        be linked ends a linked batch, and is returned by the next call as a plain
        `ReadBatch` (so the split depends on the files only)."""
        if self.source.format is not FileFormat.PARQUET:
            return self._read(max_rows, None)
        return self._read(max_rows, list(columns))

    def _read(self, max_rows: int | None, link_columns: list[str] | None) -> ReadBatch:
        src = self.source
        links: list[tuple[str, int, int, int]] = []
        batch_linked: bool | None = None  # set once the batch has rows: all linked or all copied
        rows_left = src.max_per_read if max_rows is None else min(max_rows, src.max_per_read)
        bytes_left = src.max_bytes_per_read
        tables: list[pa.Table] = []
        errors: list[pa.Table] = []
        finished = 0
        listing: list[str] | None = None
        try:
            while rows_left > 0 and bytes_left > 0 and finished <= _MAX_FILES_PER_READ:
                if self._done:
                    if listing is None:
                        listing = self._list(errors)
                    nxt = self._next_ready(listing)
                    if nxt is None:
                        break
                    self._switch(nxt)
                    finished += 1
                    continue
                if src.format is FileFormat.PARQUET:
                    linked = batch_linked
                    if link_columns is not None and self._pf is not None:
                        linked = self._linkable
                    if batch_linked is not None and linked != batch_linked:
                        break  # a batch is all linked or all copied
                    start = self.offset
                    cols = link_columns if linked else None
                    table, errs, used = self._read_parquet(rows_left, cols)
                    if table.num_rows:
                        batch_linked = linked
                        if linked:
                            links.append((self._path(), start, self.offset, self._size))
                else:
                    table, errs, used = self._read_text(rows_left, bytes_left)
                    bytes_left -= used
                rows_left -= table.num_rows
                if table.num_rows:
                    tables.append(table)
                if errs is not None:
                    errors.append(errs)
        except SchemaMismatchError as exc:
            self._health = f"failed: {exc}"
            raise
        self._health = "running" if os.path.isdir(src.path) else "stalled"
        errs_all = pa.concat_tables(errors) if errors else None
        if batch_linked:
            assert link_columns is not None
            return LinkedBatch(
                data=pa.concat_tables(tables),
                position=self.position,
                exhausted=self._exhausted(),
                errors=errs_all,
                links=tuple(links),
            )
        data = pa.concat_tables(tables) if tables else empty_table(src.schema)
        return ReadBatch(
            data=data,
            position=self.position,
            exhausted=self._exhausted(),
            errors=errs_all,
        )

    def acknowledge(self, position: Any) -> None:
        """Record the resumption frontier (files are not changed upstream). Monotone."""
        name, offset = _parse_position(position)
        if name is None:
            return
        if self._acked is None or (name, offset) > self._acked:
            self._acked = (name, offset)

    @property
    def acknowledged(self) -> dict[str, Any] | None:
        """The highest position acknowledged so far (None before the first)."""
        if self._acked is None:
            return None
        return {"file": self._acked[0], "offset": self._acked[1]}

    def health(self) -> str:
        """``"running"``; ``"stalled"`` while the directory does not exist; ``"failed: …"``."""
        return self._health

    def close(self) -> None:
        self._close_current()

    # ------------------------------------------------------------------ listing

    def _list(self, errors: list[pa.Table]) -> list[str]:
        """The candidate names; reports out-of-order arrivals; runs the settle clocks."""
        src = self.source
        if self._snapshot is not None:
            return self._snapshot
        names = src.candidates()
        late = [
            n for n in names if self.file is not None and n < self.file and n not in self._accounted
        ]
        if late:
            self._accounted.update(late)
            errors.append(
                errors_table(
                    [os.path.join(src.path, n) for n in late],
                    [
                        f"{src!r}: file {n!r} appeared after {self.file!r}, which sorts after it, "
                        "was read; it is not read. Name files so that they sort in arrival "
                        "order (e.g. a timestamp or sequence prefix), or move it to a new name "
                        f"sorting after {self.file!r}"
                        for n in late
                    ],
                )
            )
        now = self._clock()
        ahead = [n for n in names if self.file is None or n > self.file][:_STAT_AHEAD]
        for n in ahead:
            try:
                st = os.stat(os.path.join(src.path, n))
            except FileNotFoundError:
                self._observed.pop(n, None)
                continue
            stat = (st.st_size, st.st_mtime_ns)
            seen = self._observed.get(n)
            if seen is None or seen[:2] != stat:
                self._observed[n] = (*stat, now)
        return names

    def _next_ready(self, listing: list[str]) -> str | None:
        """The next file in name order if it is complete; None otherwise."""
        for n in listing:
            if self.file is not None and n <= self.file:
                continue
            if self._snapshot is not None or self.source.settle == 0:
                return n
            seen = self._observed.get(n)
            if seen is not None and self._clock() - seen[2] >= self.source.settle:
                return n
            return None  # strict name order: wait for this one
        return None

    def _exhausted(self) -> bool:
        if self._snapshot is None or not self._done:
            return False
        return not any(self.file is None or n > self.file for n in self._snapshot)

    # ------------------------------------------------------------------ current file

    def _switch(self, name: str) -> None:
        self._close_current()
        self.file = name
        self.offset = 0
        self._accounted.add(name)
        self._observed.pop(name, None)
        self._open_current(resume=False)

    def _path(self) -> str:
        assert self.file is not None
        return os.path.join(self.source.path, self.file)

    def _open_current(self, resume: bool) -> None:
        src = self.source
        path = self._path()
        self._done = False
        if src.format is FileFormat.PARQUET:
            try:
                self._pf = pq.ParquetFile(path)
            except FileNotFoundError:
                self._done = True  # gone: it was read before (or deleted); go on
                return
            except (pa.ArrowInvalid, OSError) as exc:
                # A corrupt file: one error row (raw = its path), then the next file.
                self._pending_error = (path, f"{src!r}: cannot read Parquet file: {exc}")
                self._pf = None
                self._size = 0
                return
            found = self._pf.schema_arrow
            conform(empty_table(found), src.schema, source=repr(src), where=f"in {self.file!r}")
            self._size = self._pf.metadata.num_rows
            self._linkable = all(
                f.name in found.names
                and found.field(f.name).type.equals(f.type)
                and linkable_type(f.type)
                for f in src.schema
            )
        else:
            try:
                self._fh = open(path, "rb")  # noqa: SIM115 - kept open across reads
            except FileNotFoundError:
                self._done = True
                return
            self._size = os.fstat(self._fh.fileno()).st_size
            if src.format is FileFormat.CSV and src.header:
                line = self._fh.readline()
                self._header = line if line.endswith(b"\n") else line + b"\n"
                if self.offset < len(line):
                    self.offset = len(line)
        if self.offset > self._size:
            raise ConfigError(
                f"{src!r}: position offset {self.offset} is beyond the end of {self.file!r} "
                f"({self._size} {'rows' if src.format is FileFormat.PARQUET else 'bytes'}); the file "
                "changed after it was read. Files must not change once complete; restart "
                "from an earlier position or restore the file"
            )
        self._done = self.offset >= self._size

    def _close_current(self) -> None:
        if self._fh is not None:
            self._fh.close()
        self._fh = None
        self._pf = None
        self._header = None

    def _read_text(self, max_rows: int, max_bytes: int) -> tuple[pa.Table, pa.Table | None, int]:
        src = self.source
        fh = self._fh
        assert fh is not None
        start = self.offset
        fh.seek(start)
        want = min(max_bytes, self._size - start)
        buf = fh.read(want)
        end = start + len(buf)
        if end < self._size:  # cut at the last complete line
            cut = buf.rfind(b"\n")
            while cut < 0 and end < self._size:  # a line longer than max_bytes
                more = fh.read(min(max_bytes, self._size - end))
                if not more:
                    break
                buf += more
                end += len(more)
                cut = buf.rfind(b"\n")
            if cut >= 0 and end < self._size:
                buf = buf[: cut + 1]
        newlines = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == 10)
        lines = len(newlines) + (1 if buf and not buf.endswith(b"\n") else 0)
        if lines > max_rows:
            buf = buf[: int(newlines[max_rows - 1]) + 1]
        self.offset = start + len(buf)
        self._done = self.offset >= self._size
        if not buf and self.offset < self._size:  # should not happen: keep moving
            self._done = True
        # Reasons name the file and each line's byte offset in it (`decode`): the same
        # whatever chunk the line was read in.
        where = self.file or ""
        if src.format is FileFormat.JSONL:
            data, errs = decode_json_lines(buf, src.schema, where=where, at=start)
        else:
            data, errs = decode_csv(
                self._header if src.header else None,
                buf,
                src.schema,
                delimiter=src.delimiter,
                source=repr(src),
                where=where,
                at=start,
            )
        return data, errs, len(buf)

    def _read_parquet(
        self, max_rows: int, columns: list[str] | None = None
    ) -> tuple[pa.Table, pa.Table | None, int]:
        src = self.source
        schema = (
            src.schema if columns is None else pa.schema([src.schema.field(c) for c in columns])
        )
        pending = self._pending_error
        if self._pf is None:
            self._done = True
            if pending is not None:
                self._pending_error = None
                return empty_table(src.schema), errors_table([pending[0]], [pending[1]]), 0
            return empty_table(src.schema), None, 0
        lo = self.offset
        hi = min(self._size, lo + max_rows)
        table = read_row_range(self._pf, lo, hi, list(schema.names))
        table = conform(table, schema, source=repr(src), where=f"in {self.file!r}")
        self.offset = hi
        self._done = self.offset >= self._size
        return table, None, 0
