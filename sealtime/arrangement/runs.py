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

>>> spine_name(3, 7), parse_spine("r0000000003-0000000007.arrow")
('r0000000003-0000000007.arrow', (3, 7))
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

__all__ = [
    "Run",
    "partition_dir",
    "bucket_name",
    "live_buckets",
    "live_spine",
    "parse_bucket",
    "parse_spine",
    "read_run",
    "run_rows",
    "spine_name",
    "write_run",
]

_BIAS = 2**63  # bucket numbers are signed; biased so that names sort like numbers


def partition_dir(directory: str, partition: int) -> str:
    """The directory of one hash partition of the arrangement at `directory`."""
    return os.path.join(directory, f"p{partition:04d}")


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
    """One live spine run: its versions and path."""

    first: int
    last: int
    path: str


def live_spine(directory: str, upto: int) -> list[Run]:
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
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        names = []
    ranges = sorted(
        {r for r in (parse_spine(n) for n in names) if r is not None and r[1] <= upto},
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
                f"arrangement partition {directory}: versions {expected}..{first - 1} are "
                "missing (run files deleted?); restart the dataflow to rebuild its state "
                "from the checkpoint and the log"
            )
        expected = last + 1
    if expected != upto + 1:
        raise FileNotFoundError(
            f"arrangement partition {directory}: versions {expected}..{upto} are missing"
        )
    return [
        Run(first, last, os.path.join(directory, spine_name(first, last))) for first, last in live
    ]


def live_buckets(directory: str, upto: int) -> dict[int, list[str]]:
    """Bucket runs written at versions ``<= upto``, by bucket (paths in version order).

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> for b, v in [(10, 1), (10, 2), (20, 2), (10, 3)]:
    ...     open(os.path.join(d, bucket_name(b, v)), "w").close()
    >>> {b: [os.path.basename(p)[-16:] for p in ps] for b, ps in live_buckets(d, 2).items()}
    {10: ['0000000001.arrow', '0000000002.arrow'], 20: ['0000000002.arrow']}
    """
    try:
        names = sorted(os.listdir(directory))
    except FileNotFoundError:
        return {}
    out: dict[int, list[tuple[int, str]]] = {}
    for name in names:
        parsed = parse_bucket(name)
        if parsed is not None and parsed[1] <= upto:
            out.setdefault(parsed[0], []).append((parsed[1], os.path.join(directory, name)))
    return {b: [p for _, p in sorted(v)] for b, v in sorted(out.items())}


def read_run(path: str) -> pa.Table:
    """A run's rows, memory-mapped (no copy; the page cache is the cache).

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), spine_name(1, 1))
    >>> write_run(p, pa.table({"__h": [1, 2]}))
    >>> read_run(p).column("__h").to_pylist()
    [1, 2]
    """
    source = pa.memory_map(path, "r")
    return pa.ipc.open_file(source).read_all()


def run_rows(path: str) -> int:
    """Rows in a run, from its footer only."""
    with pa.memory_map(path, "r") as source:
        reader = pa.ipc.open_file(source)
        return sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))


def write_run(path: str, table: pa.Table | Iterable[pa.RecordBatch], schema=None) -> None:
    """Write a run atomically (temporary name, then rename): a reader sees the whole file
    or none, and a task that runs twice replaces the file with the same rows."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{uuid.uuid4().hex}.tmp"
    try:
        with pa.OSFile(tmp, "wb") as sink:
            if isinstance(table, pa.Table):
                with pa.ipc.new_file(sink, table.schema) as writer:
                    writer.write_table(table)
            else:
                with pa.ipc.new_file(sink, schema) as writer:
                    for batch in table:
                        writer.write_batch(batch)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
