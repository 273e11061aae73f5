"""`Parquet` sink: each sealed time range of a collection is committed once, as one
directory of Parquet files plus a commit record.

The commit records are what readers see: a reader takes the directories they list, so a
range whose files were written but whose record was not is invisible. Each commit is one
small JSON object, ``_sealtime_commits/<seq>.json``, written whole (`DataFS.write_bytes`:
a temporary file, fsync and rename on a local disk; one put on an object store) after the
range's files are durable — so the sink needs neither appends nor an atomic rename, and
`path` may be any location Spark and `sealtime.storage.fs` reach (a local path,
``file://``, ``hdfs://``, ``s3a://``, ``gs://``, ``abfss://``). A log written by an earlier
version (``_sealtime_commits.jsonl``, one line per commit) is still read, and continued in
the new form.

**The commit point is the dataflow's metadata store**, as for every other commit. A
file system has no compare-and-set a fenced writer could fail, so the sink attached to a
dataflow records each commit first in ONE transaction of the dataflow's store (the last
record under ``("parquet-sink", <path>)``, compared with the upper the sink expects) and
only then writes the record file. That transaction is fenced by the data dir's owner
(`sealtime.storage.ownership`): an owner that lost its data dir and wakes up fails there
and never writes a record. A crash between the two leaves the record file missing; the
next `durable_upper` writes it from the store. Each attempt writes its files to a
directory of its own (``commit-<seq>-e<epoch>-<random>``, the epoch of the data dir's
owner), so no writer overwrites another's; when the sink starts, the directories no
record names are deleted — those of this epoch and older ones only, never a newer
owner's attempt in flight. A sink not attached to a dataflow (reading, tests) uses the
record files alone.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

from ..columns import DIFF, TIME
from ..errors import WriterConflictError
from ..storage.fs import DataFS
from ..storage.ownership import epoch_at, epoch_name, epoch_of_name
from ..time.order import MIN_TIME
from .base import CommitContext, ExactlyOnceSink

__all__ = ["COMMITS", "COMMIT_NAMESPACE", "LEGACY_COMMIT_LOG", "Parquet"]

#: directory of the commit records, one ``<seq:08d>.json`` per commit
COMMITS = "_sealtime_commits"
#: the single append-only commit log of earlier versions (read, never written)
LEGACY_COMMIT_LOG = "_sealtime_commits.jsonl"
#: the metadata store's key-value namespace of the last commit per sink path
COMMIT_NAMESPACE = "parquet-sink"


class Parquet(ExactlyOnceSink[dict]):
    """Write a collection's updates (columns + ``_time`` + ``_diff``) under `path` (a
    local path or a URI; a scheme the driver cannot reach is a `ConfigError` here).

    >>> Parquet("/tmp/out").path
    '/tmp/out'
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.fs = DataFS.from_uri(self.path, setting="Parquet(path)")
        self._seen: dict[str, dict[str, Any]] = {}  # commit record name -> record
        self._swept = False  # the directories no record names were deleted
        self._epoch: int | None = None  # the data dir owner's epoch, read when first used

    def commits(self) -> list[dict[str, Any]]:
        """The committed ranges, oldest first (a torn legacy line is not a commit).

        >>> import tempfile
        >>> sink = Parquet(tempfile.mkdtemp())
        >>> first = sink.durable_upper()  # nothing committed yet: the least time
        >>> sink.publish({"seq": 0, "lower": first, "upper": 5, "dir": "commit-00000000"}, first, 5, first, None)
        >>> [c["upper"] for c in sink.commits()], sink.durable_upper()
        ([5], 5)
        """
        out = self._legacy()
        names = sorted(n for n in self.fs.names(COMMITS) if n.endswith(".json"))
        for name in names:
            if name not in self._seen:
                self._seen[name] = json.loads(self.fs.read_bytes(f"{COMMITS}/{name}"))
        out.extend(self._seen[n] for n in names)
        return out

    def _legacy(self) -> list[dict[str, Any]]:
        try:
            text = self.fs.read_bytes(LEGACY_COMMIT_LOG).decode("utf-8")
        except FileNotFoundError:
            return []
        complete = text[: text.rfind("\n") + 1]
        return [json.loads(line) for line in complete.splitlines() if line.strip()]

    def _store(self) -> Any:
        """The dataflow's metadata store (None: not attached to a dataflow)."""
        return None if self._binding is None else self._binding.store

    def _last(self) -> dict[str, Any] | None:
        """The last commit: the store's record when attached (writing its record file if
        a crash lost it), else the last record file."""
        store = self._store()
        if store is not None and not self._swept:
            self._swept = True  # (first use: in the engine's start, after its lease)
            self._epoch = epoch_at(self.binding.data_dir)
            self._sweep()
        last = None if store is None else store.kv_get(COMMIT_NAMESPACE, self.fs.location)
        if last is None:
            commits = self.commits()
            return commits[-1] if commits else None
        name = f"{int(last['seq']):08d}.json"
        if name not in self._seen and not self.fs.exists(f"{COMMITS}/{name}"):
            self._write_record(last)
        return last

    def durable_upper(self) -> int | None:
        """Times below this are committed (None: the collection is finished)."""
        last = self._last()
        return MIN_TIME if last is None else last["upper"]

    def _sweep(self) -> None:
        """Delete the commit directories no record names, of this epoch or older ones:
        attempts whose commit never happened (a crash, a fenced writer)."""
        last = self.binding.store.kv_get(COMMIT_NAMESPACE, self.fs.location)
        named = {c["dir"] for c in self.commits()} | ({last["dir"]} if last else set())
        for name in self.fs.names():
            if not name.startswith("commit-") or name in named:
                continue
            epoch = next((e for p in name.split("-") if (e := epoch_of_name(p)) is not None), None)
            if epoch is None or self._epoch is None or epoch <= self._epoch:
                self.fs.delete_dir(name)

    def write(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> dict[str, Any]:
        """Write the range's files into a new commit directory of this attempt (not yet
        committed) and make them durable."""
        self.fs.create_dir()
        last = self._last()
        seq = 0 if last is None else int(last["seq"]) + 1
        tag = "" if self._epoch is None else f"-{epoch_name(self._epoch)}"
        rel = f"commit-{seq:08d}{tag}-{uuid.uuid4().hex[:12]}"
        if delta is None:
            delta = context.spark.createDataFrame([], _with_system(context.schema))
        delta.write.mode("overwrite").parquet(self.fs.spark_uri(rel))
        self.fs.sync([rel])
        return {"seq": seq, "lower": lo, "upper": hi, "dir": rel, "tick": context.tick}

    def publish(
        self,
        written: dict[str, Any],
        lo: int,
        hi: int | None,
        upper: int,
        context: CommitContext | None,
    ) -> None:
        """Commit: record `written` in the dataflow's store if the last commit still
        ends at `upper` (a fenced transaction), then write its record file — the
        directory becomes part of the output."""
        store = self._store()
        if store is None:
            if self.durable_upper() != upper:
                raise self._conflict(upper)
        else:
            legacy = (
                self.commits() if store.kv_get(COMMIT_NAMESPACE, self.fs.location) is None else []
            )
            with store.transaction() as tx:
                row = tx.query_one(
                    "SELECT value FROM sealtime_kv WHERE namespace = ? AND key = ?"
                    + tx.dialect.for_update,
                    (COMMIT_NAMESPACE, self.fs.location),
                )
                last = json.loads(row[0]) if row is not None else (legacy[-1] if legacy else None)
                if (MIN_TIME if last is None else last["upper"]) != upper:
                    raise self._conflict(upper)
                tx.upsert(
                    "sealtime_kv",
                    {"namespace": COMMIT_NAMESPACE, "key": self.fs.location},
                    {"value": json.dumps(written, sort_keys=True)},
                )
        self._write_record(written)

    def _write_record(self, record: dict[str, Any]) -> None:
        name = f"{int(record['seq']):08d}.json"
        self.fs.write_bytes(f"{COMMITS}/{name}", json.dumps(record).encode("utf-8"))
        self._seen[name] = record

    def _conflict(self, upper: int) -> WriterConflictError:
        return WriterConflictError(
            f"Parquet({self.path!r}): the commit log moved past {upper} while this "
            "dataflow was writing; is another dataflow writing to the same path?"
        )

    def directories(self) -> list[str]:
        """The locations of the committed directories, oldest first.

        >>> import tempfile
        >>> sink = Parquet(tempfile.mkdtemp())
        >>> first = sink.durable_upper()
        >>> sink.publish({"seq": 0, "upper": 5, "dir": "commit-00000000"}, first, 5, first, None)
        >>> sink.directories() == [sink.fs.join("commit-00000000")]
        True
        """
        return [self.fs.join(c["dir"]) for c in self.commits()]

    def read(self, spark):
        """All committed updates as a Spark DataFrame."""
        dirs = [self.fs.spark_uri(c["dir"]) for c in self.commits()]
        if not dirs:
            raise FileNotFoundError(f"Parquet sink at {self.path} has no commits yet")
        return spark.read.parquet(*dirs)


def _with_system(schema):
    from pyspark.sql import types as T

    return T.StructType(
        list(schema.fields)
        + [T.StructField(TIME, T.LongType(), False), T.StructField(DIFF, T.LongType(), False)]
    )
