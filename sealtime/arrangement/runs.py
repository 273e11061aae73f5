"""Runs: the immutable, sorted Arrow files an arrangement's state is made of.

An arrangement keeps, per hash partition, a directory of *runs*. A run is an Arrow IPC
file (uncompressed, so readers memory-map it without copying) whose rows are sorted by
the 64-bit key hash ``__h``. Two layouts share this module:

* **spine runs** ``r<first>-<last>.arrow`` hold the updates of versions
  ``first..last`` (one version per tick in which the operator ran). A merge writes
  ``r<a>-<v>`` from the runs ``a..v-1`` and the new version, so the live runs of a
  partition are exactly the listed runs not contained in a wider one: readers need no
  manifest, only the version they read at.
* **bucket runs** ``b<bucket>-<version>.arrow`` group rows by a bucket number (the
  ``window_end`` of windowed state); a bucket is read whole, once, when it is sealed.

Names alone decide which files are live, so a task that is retried or re-executed
after an executor loss reads exactly the files of the version it reads at, and a file
written twice is replaced atomically with the same contents.

Every function takes the partition directory as a `sealtime.storage.fs.DataFS` (or a
path or URI, opened as one), so the runs live wherever the data dir does: a local disk
or a shared POSIX mount (runs are memory-mapped), or HDFS and object stores (runs are
read into memory through `pyarrow.fs`). A `DataFS` pickles with its filesystem, so the
Spark tasks that read and write runs reach the same files as the driver.

>>> spine_name(3, 7), parse_spine("r0000000003-0000000007.arrow")
('r0000000003-0000000007.arrow', (3, 7))
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pyarrow as pa

from ..storage.fs import DataFS

__all__ = [
    "ROWS_KEY",
    "Run",
    "as_fs",
    "bucket_name",
    "live_buckets",
    "live_spine",
    "parse_bucket",
    "parse_spine",
    "partition_dir",
    "partition_fs",
    "partition_name",
    "read_run",
    "run_rows",
    "spine_name",
    "write_run",
]

#: footer metadata key holding a run's row count (read without reading the batches)
ROWS_KEY = "sealtime.rows"
_BIAS = 2**63  # bucket numbers are signed; biased so that names sort like numbers


def partition_name(partition: int) -> str:
    """The directory name of one hash partition (relative to the arrangement's root).

    >>> partition_name(3)
    'p0003'
    """
    return f"p{partition:04d}"


def partition_dir(directory: str, partition: int) -> str:
    """The location of one hash partition of the arrangement at `directory`."""
    return directory.rstrip("/") + "/" + partition_name(partition)


def as_fs(directory: DataFS | str) -> DataFS:
    """`directory` as a `DataFS` (a local path or a URI is opened; a `DataFS` is kept)."""
    if isinstance(directory, DataFS):
        return directory
    return DataFS.from_uri(directory, setting="arrangement directory")


def partition_fs(root: DataFS | str, partition: int) -> DataFS:
    """The `DataFS` of one hash partition of the arrangement at `root`."""
    return as_fs(root).child(partition_name(partition))


def spine_name(first: int, last: int) -> str:
    """File name of the spine run holding versions ``first..last``."""
    return f"r{first:010d}-{last:010d}.arrow"


def parse_spine(name: str) -> tuple[int, int] | None:
    """``(first, last)`` of a spine run's file name, None for other files.

    >>> parse_spine("b0-1.arrow") is None
    True
    """
    if not (name.startswith("r") and name.endswith(".arrow")):
        return None
    try:
        first, last = name[1:-6].split("-")
        return int(first), int(last)
    except ValueError:
        return None


def bucket_name(bucket: int, version: int) -> str:
    """File name of the part of `bucket` written at `version`.

    >>> bucket_name(-5, 2) < bucket_name(3, 1)
    True
    """
    return f"b{bucket + _BIAS:020d}-{version:010d}.arrow"


def parse_bucket(name: str) -> tuple[int, int] | None:
    """``(bucket, version)`` of a bucket run's file name, None for other files.

    >>> parse_bucket(bucket_name(-5, 2))
    (-5, 2)
    """
    if not (name.startswith("b") and name.endswith(".arrow")):
        return None
    try:
        bucket, version = name[1:-6].split("-")
        return int(bucket) - _BIAS, int(version)
    except ValueError:
        return None


@dataclass(frozen=True)
class Run:
    """One live spine run: its versions and file name (in its partition directory)."""

    first: int
    last: int
    name: str


def live_spine(directory: DataFS | str, upto: int) -> list[Run]:
    """The spine runs holding versions ``1..upto`` of a partition, oldest first.

    Runs newer than `upto` (written by the tick being computed, or left by a process
    that crashed) are ignored; a run contained in a wider one was merged into it.
    A gap in the versions is corruption (files deleted by hand) and raises.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> for a, b in [(1, 4), (1, 2), (3, 4), (5, 5), (6, 6)]:
    ...     open(os.path.join(d, spine_name(a, b)), "w").close()
    >>> [(r.first, r.last) for r in live_spine(d, 5)]
    [(1, 4), (5, 5)]
    """
    if upto <= 0:
        return []
    fs = as_fs(directory)
    ranges = sorted(
        {r for r in (parse_spine(n) for n in fs.names()) if r is not None and r[1] <= upto},
        key=lambda r: (r[0], -r[1]),
    )
    live: list[tuple[int, int]] = []
    for first, last in ranges:
        if live and last <= live[-1][1]:
            continue  # contained in a wider run (sorted by first, widest first)
        live.append((first, last))
    expected = 1
    for first, last in live:
        if first != expected:
            raise FileNotFoundError(
                f"arrangement partition {fs.location}: versions {expected}..{first - 1} are "
                "missing (run files deleted?); restart the dataflow to rebuild its state "
                "from the checkpoint and the log"
            )
        expected = last + 1
    if expected != upto + 1:
        raise FileNotFoundError(
            f"arrangement partition {fs.location}: versions {expected}..{upto} are missing"
        )
    return [Run(first, last, spine_name(first, last)) for first, last in live]


def live_buckets(directory: DataFS | str, upto: int) -> dict[int, list[str]]:
    """Bucket runs written at versions ``<= upto``, by bucket (names in version order).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> for b, v in [(10, 1), (10, 2), (20, 2), (10, 3)]:
    ...     open(os.path.join(d, bucket_name(b, v)), "w").close()
    >>> {b: [n[-16:] for n in ns] for b, ns in live_buckets(d, 2).items()}
    {10: ['0000000001.arrow', '0000000002.arrow'], 20: ['0000000002.arrow']}
    """
    out: dict[int, list[tuple[int, str]]] = {}
    for name in sorted(as_fs(directory).names()):
        parsed = parse_bucket(name)
        if parsed is not None and parsed[1] <= upto:
            out.setdefault(parsed[0], []).append((parsed[1], name))
    return {b: [n for _, n in sorted(v)] for b, v in sorted(out.items())}


def read_run(directory: DataFS | str, name: str) -> pa.Table:
    """A run's rows. On a local disk the file is memory-mapped (no copy; the page cache
    is the cache); on any other filesystem it is read into memory through `pyarrow.fs`.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_run(d, spine_name(1, 1), pa.table({"__h": [1, 2]}))
    >>> read_run(d, spine_name(1, 1)).column("__h").to_pylist()
    [1, 2]
    """
    with _open_run(as_fs(directory), name) as source:
        return pa.ipc.open_file(source).read_all()


def run_rows(directory: DataFS | str, name: str) -> int:
    """Rows in a run, from its footer only (no batch is read).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> write_run(d, spine_name(1, 1), pa.table({"__h": [5, 6, 7]}))
    >>> run_rows(d, spine_name(1, 1))
    3
    """
    fs = as_fs(directory)
    if not fs.local:
        with _open_run(fs, name) as source:
            return _footer_rows(pa.ipc.open_file(source))
    # Every tick a step sizes its newest runs and reports its state's rows: opening each
    # run for its footer was a quarter of a fused task's time at 200 views. A run file
    # is written once (a retried task writes the same rows), so its count is kept per
    # path, checked against the file's size and modification time.
    path = fs.path(name)
    stat = os.stat(path)
    known = _ROWS.get(path)
    if known is not None and known[:2] == (stat.st_mtime_ns, stat.st_size):
        return known[2]
    with _open_run(fs, name) as source:
        rows = _footer_rows(pa.ipc.open_file(source))
    _remember_rows(path, rows, stat)
    return rows


#: per local run file: (modification time, size, rows), for `run_rows`
_ROWS: dict[str, tuple[int, int, int]] = {}
_ROWS_KEPT = 200_000


def _remember_rows(path: str, rows: int, stat: os.stat_result | None = None) -> None:
    if len(_ROWS) >= _ROWS_KEPT:
        _ROWS.clear()
    stat = stat or os.stat(path)
    _ROWS[path] = (stat.st_mtime_ns, stat.st_size, rows)


def _open_run(fs: DataFS, name: str) -> pa.NativeFile:
    """A run file opened for random access: memory-mapped on a local disk (closing the
    map leaves the pages of tables read from it valid: Arrow unmaps when the last buffer
    goes), a ranged reader elsewhere."""
    if fs.local:
        return pa.memory_map(fs.path(name), "r")
    return fs.open_input_file(name)


def _footer_rows(reader: pa.ipc.RecordBatchFileReader) -> int:
    rows = (reader.metadata or {}).get(ROWS_KEY.encode())
    if rows is not None:
        return int(rows)
    # A run written before the count was recorded: count its batches.
    return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))


def write_run(directory: DataFS | str, name: str, table: pa.Table) -> None:
    """Write a run so that a reader sees the whole file or none, and a task that runs
    twice replaces it with the same rows: on a local disk a temporary name, then an
    atomic rename; elsewhere one put (`DataFS.write_bytes`: atomic on object stores)."""
    fs = as_fs(directory)
    metadata = {ROWS_KEY: str(table.num_rows)}
    if not fs.local:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema, metadata=metadata) as writer:
            writer.write_table(table)
        fs.write_bytes(name, sink.getvalue(), sync=False)  # durable() syncs before a checkpoint
        return
    path = fs.path(name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        with (
            pa.OSFile(tmp, "wb") as sink,
            pa.ipc.new_file(sink, table.schema, metadata=metadata) as writer,
        ):
            writer.write_table(table)
        os.replace(tmp, path)
        _remember_rows(path, table.num_rows)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
