"""`Arrangement`: the driver's handle of one keyed, hash-partitioned operator state.

The state itself lives in partition directories of sorted runs (`runs`), written and
read by the operator's kernel inside Spark tasks. The driver only counts versions
(one per tick in which the operator ran), records the version in soft checkpoints,
and removes files nobody needs any more: runs merged into wider ones, except those a
checkpoint still refers to.

Executor loss cannot lose the state: runs are files in the data dir, not blocks in an
executor, and a task re-executed by Spark reads the same files (its version's inputs)
and rewrites the same file.

Every file operation, the driver's (listing, deleting, fsync) and the kernels' inside
Spark tasks (`runs`: ``write_run``, ``read_run``, ``live_spine``), goes through the
arrangement's `sealtime.storage.fs.DataFS` (`Arrangement.fs`, which the steps carry to
the executors): the state directory may be local, a shared POSIX mount, HDFS or an
object store, wherever the data dir is (`docs/storage-fs.md`).

>>> import tempfile
>>> a = Arrangement(tempfile.mkdtemp(), partitions=2)
>>> a.advance(), a.state()
(1, {'version': 1, 'partitions': 2, 'emitted': None})
"""

from __future__ import annotations

from typing import Any

from ..storage.fs import DataFS
from .runs import live_spine, parse_bucket, parse_spine, partition_fs, run_rows

__all__ = ["Arrangement"]


class Arrangement:
    """Versions and files of one arrangement (`partitions` directories under `directory`,
    a local path or a URI)."""

    def __init__(self, directory: str, partitions: int) -> None:
        if partitions < 1:
            raise ValueError("Arrangement(partitions) must be >= 1")
        self.directory = directory
        self.fs = DataFS.from_uri(directory, setting="arrangement directory")
        self.partitions = partitions
        self.version = 0  # the newest version written
        self.read_version = 0  # the state before the current tick (what readers read)
        self.pinned: int | None = None  # version a checkpoint refers to
        #: bucket runs (windows) ending at or before this are emitted (None: nothing yet)
        self.emitted: int | None = None
        self.pinned_emitted: int | None = None

    def partition(self, p: int) -> DataFS:
        """The `DataFS` of hash partition `p` (where its runs are).

        >>> import tempfile
        >>> Arrangement(tempfile.mkdtemp(), partitions=2).partition(1).names()
        []
        """
        return partition_fs(self.fs, p)

    def advance(self) -> int:
        """The version this tick's step writes (the writer calls it once per tick)."""
        self.version = self.read_version + 1
        return self.version

    def finish_tick(self, emitted: int | None = None) -> None:
        """The tick's jobs are done: its version is now what the next tick reads (and,
        for bucket runs, windows ending at or before `emitted` were emitted)."""
        if emitted is not None:
            self.emitted = emitted
        if self.version != self.read_version:
            self.read_version = self.version
            self.collect_garbage()

    # ------------------------------------------------------------------ checkpoints
    def state(self) -> dict[str, Any]:
        return {"version": self.version, "partitions": self.partitions, "emitted": self.emitted}

    def restore(self, state: dict[str, Any]) -> None:
        """Go back to a checkpointed version (or to empty with ``{}``): files written
        after it (by the run that crashed) are removed, so readers see exactly the
        checkpointed runs."""
        version = int(state.get("version", 0))
        partitions = int(state.get("partitions", self.partitions))
        if partitions != self.partitions:
            raise ValueError(
                f"arrangement {self.directory} was written with {partitions} partitions; "
                f"this run uses {self.partitions}. Run with "
                f"Dataflow(shuffle_partitions={partitions}) or start a new data_dir"
            )
        self.version = self.read_version = version
        self.pinned = version if version else None
        self.emitted = self.pinned_emitted = state.get("emitted")
        for p in range(self.partitions):
            d = self.partition(p)
            for name in d.names():
                spine = parse_spine(name)
                bucket = parse_bucket(name)
                newer = (spine is not None and spine[1] > version) or (
                    bucket is not None and bucket[1] > version
                )
                if newer or name.endswith(".tmp"):
                    d.delete_file(name)

    def pin(self) -> None:
        """A checkpoint now refers to the current version: keep its files."""
        self.pinned = self.version
        self.pinned_emitted = self.emitted

    def durable(self) -> None:
        """fsync the runs of the current version (before a checkpoint records it)."""
        for p in range(self.partitions):
            d = self.partition(p)
            runs = []
            for name in d.names():
                spine, bucket = parse_spine(name), parse_bucket(name)
                version = spine[1] if spine else bucket[1] if bucket else None
                if version is not None and version <= self.version:
                    runs.append(name)
            if runs:
                d.sync(runs)  # the files and the directory naming them

    # ------------------------------------------------------------------ housekeeping
    def collect_garbage(self) -> None:
        """Remove spine runs merged into wider ones and buckets already emitted, keeping
        what the checkpoint refers to."""
        for p in range(self.partitions):
            d = self.partition(p)
            names = d.names()
            if any(n.startswith("r") for n in names):
                keep = {r.name for r in live_spine(d, self.version)}
                if self.pinned:
                    keep |= {r.name for r in live_spine(d, self.pinned)}
            for name in names:
                spine = parse_spine(name)
                bucket = parse_bucket(name)
                if spine is not None:
                    drop = spine[1] <= self.version and name not in keep
                elif bucket is not None:
                    drop = self._emitted(bucket[0], self.emitted) and not (
                        self.pinned is not None
                        and bucket[1] <= self.pinned
                        and not self._emitted(bucket[0], self.pinned_emitted)
                    )
                else:
                    drop = False
                if drop:
                    d.delete_file(name)

    @staticmethod
    def _emitted(bucket: int, upto: int | None) -> bool:
        return upto is not None and bucket <= upto

    def rows(self) -> int:
        """Rows in the state's runs (a size measure for metrics and benchmarks)."""
        total = 0
        for p in range(self.partitions):
            d = self.partition(p)
            names = d.names()
            if any(parse_spine(n) for n in names):
                total += sum(run_rows(d, r.name) for r in live_spine(d, self.version))
            for name in names:
                bucket = parse_bucket(name)
                if bucket and not self._emitted(bucket[0], self.emitted):
                    total += run_rows(d, name)
        return total
