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

**One owner, one directory.** Run names are versions, so two processes writing one
arrangement would write the same names. Under a data dir this process owns
(`sealtime.storage.ownership`), `fs` is the owner's epoch directory ``<directory>/e<epoch>``:
restoring a checkpoint links (or copies) the checkpointed runs from the epoch directory
that wrote them into this one, and every later write and deletion stays inside it. So a
fenced owner that wakes up writes and collects only its own directory, never a file the
new owner reads. Older epochs' directories go once no recorded checkpoint needs them:
at restore (all but the one restored from) and after this epoch's first checkpoint (that
one too); newer epochs' directories are never touched. Without an owner (a bare
arrangement, as in the example) the runs lie directly under `directory`.

>>> import tempfile
>>> a = Arrangement(tempfile.mkdtemp(), partitions=2)
>>> a.advance(), a.state()
(1, {'version': 1, 'partitions': 2, 'emitted': None, 'epoch': None})
"""

from __future__ import annotations

import os
from typing import Any

from ..errors import ConfigError
from ..storage.fs import DataFS, fsync_paths
from ..storage.ownership import epoch_at, epoch_name, epoch_of_name
from .runs import (
    live_buckets,
    live_spine,
    parse_bucket,
    parse_spine,
    partition_fs,
    run_rows,
)

__all__ = ["Arrangement"]


class Arrangement:
    """Versions and files of one arrangement (`partitions` directories under `directory`,
    a local path or a URI)."""

    def __init__(self, directory: str, partitions: int) -> None:
        if partitions < 1:
            raise ConfigError("Arrangement(partitions) must be >= 1")
        self.directory = directory
        #: the arrangement's directory; `fs` is this epoch's directory in it
        self.root = DataFS.from_uri(directory, setting="arrangement directory")
        #: the epoch this process owns the data dir with (None: no owner)
        self.epoch = epoch_at(self.root.location)
        self.fs = self.root if self.epoch is None else self.root.child(epoch_name(self.epoch))
        self._pinned_here = False  # a checkpoint of this epoch refers to our runs
        self._older_gone = self.epoch is None  # older epochs' directories are deleted
        self._dirs_synced = False
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
        """What a checkpoint records: the version, the partition count, the emitted
        buckets and the epoch whose directory holds the runs."""
        return {
            "version": self.version,
            "partitions": self.partitions,
            "emitted": self.emitted,
            "epoch": self.epoch,
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Go back to a checkpointed version (or to empty with ``{}``): the runs live at
        that version are linked from the directory of the epoch that wrote them into this
        epoch's (a checkpoint of an earlier owner, or of a data dir written before owners),
        and files written after it (by the run that crashed) are removed, so readers see
        exactly the checkpointed runs.

        >>> import tempfile
        >>> from sealtime.arrangement.runs import spine_name, write_run
        >>> import pyarrow as pa
        >>> a = Arrangement(tempfile.mkdtemp(), partitions=1)
        >>> write_run(a.partition(0), spine_name(1, 1), pa.table({"__h": [1]}))
        >>> write_run(a.partition(0), spine_name(2, 2), pa.table({"__h": [2]}))
        >>> a.restore({"version": 1, "partitions": 1}); sorted(a.partition(0).names())
        ['r0000000001-0000000001.arrow']
        """
        version = int(state.get("version", 0))
        partitions = int(state.get("partitions", self.partitions))
        if partitions != self.partitions:
            raise ConfigError(
                f"arrangement {self.directory} was written with {partitions} partitions; "
                f"this run uses {self.partitions}. Run with "
                f"Dataflow(shuffle_partitions={partitions}) or start a new data_dir"
            )
        self.version = self.read_version = version
        self.pinned = version if version else None
        self.emitted = self.pinned_emitted = state.get("emitted")
        if self.epoch is not None:
            written = state.get("epoch")
            source = self.root if written is None else self.root.child(epoch_name(written))
            if version and source.location != self.fs.location:
                self._adopt(source, version)
            self._drop_older(keep=source if version else None)
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

    def _adopt(self, source: DataFS, version: int) -> None:
        """Link the runs live at `version` in `source` (another epoch's directory, or the
        arrangement's own from before owners) into this epoch's directory: a hard link on
        a local disk, a copy elsewhere. Emitted buckets are not needed any more."""
        for p in range(self.partitions):
            src, dst = partition_fs(source, p), self.partition(p)
            names = [r.name for r in live_spine(src, version)] if _has_spine(src) else []
            for bucket, runs in live_buckets(src, version).items():
                if not self._emitted(bucket, self.emitted):
                    names += runs
            for name in names:
                dst.link_or_copy(src.join(name), name)

    def _drop_older(self, keep: DataFS | None) -> None:
        """Delete the directories of epochs older than this one (and the runs from before
        owners) but `keep`: no recorded checkpoint refers to them. Newer epochs' are
        never touched (this process may be the fenced one)."""
        assert self.epoch is not None
        for name in self.root.names():
            epoch = epoch_of_name(name)
            legacy = epoch is None and name.startswith("p")
            if not (legacy or (epoch is not None and epoch < self.epoch)):
                continue
            if legacy and keep is not None and keep.location == self.root.location:
                continue
            if keep is not None and self.root.join(name) == keep.location:
                continue
            self.root.delete_dir(name)

    def pin(self) -> None:
        """A checkpoint now refers to the current version: keep its files."""
        self.pinned = self.version
        self.pinned_emitted = self.emitted
        self._pinned_here = True

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
        if self.fs.local and not self._dirs_synced and self.epoch is not None:
            # (once: the names of the partition directories and of the epoch directory)
            dirs = [self.partition(p).path() for p in range(self.partitions)]
            fsync_paths([d for d in [*dirs, self.fs.path()] if os.path.isdir(d)])
            self._dirs_synced = True

    # ------------------------------------------------------------------ housekeeping
    def collect_garbage(self) -> None:
        """Remove spine runs merged into wider ones and buckets already emitted, keeping
        what the checkpoint refers to — in this epoch's directory only; after this
        epoch's first checkpoint, older epochs' directories too."""
        if self._pinned_here and not self._older_gone:
            self._drop_older(keep=None)
            self._older_gone = True
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


def _has_spine(d: DataFS) -> bool:
    return any(parse_spine(n) is not None for n in d.names())
