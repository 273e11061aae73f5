"""`Parquet` sink: each sealed time range of a collection is committed once, as one
directory of Parquet files plus a commit record.

The commit records are the source of truth: a reader takes the directories they list,
so a range whose files were written but whose record was not is invisible (and
rewritten on the next attempt). Each commit is one small JSON object,
``_sealtime_commits/<seq>.json``, written whole (`DataFS.write_bytes`: a temporary
file, fsync and rename on a local disk; one put on an object store) after the range's
files are durable — so the sink needs neither appends nor an atomic rename, and `path`
may be any location Spark and `sealtime.storage.fs` reach (a local path, ``file://``,
``hdfs://``, ``s3a://``, ``gs://``, ``abfss://``). A log written by an earlier version
(``_sealtime_commits.jsonl``, one line per commit) is still read, and continued in the
new form.
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..columns import DIFF, TIME
from ..storage.fs import DataFS
from ..time.order import MIN_TIME
from .base import CommitContext, ExactlyOnceSink

__all__ = ["COMMITS", "LEGACY_COMMIT_LOG", "Parquet"]

#: directory of the commit records, one ``<seq:08d>.json`` per commit
COMMITS = "_sealtime_commits"
#: the single append-only commit log of earlier versions (read, never written)
LEGACY_COMMIT_LOG = "_sealtime_commits.jsonl"


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

    def durable_upper(self) -> int | None:
        """Times below this are committed (None: the collection is finished)."""
        commits = self.commits()
        return commits[-1]["upper"] if commits else MIN_TIME

    def write(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> dict[str, Any]:
        """Write the range's files into a new commit directory (not yet committed) and
        make them durable."""
        self.fs.create_dir()
        seq = len(self.commits())
        rel = f"commit-{seq:08d}"
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
        """Write the commit record: the directory becomes part of the output."""
        if self.durable_upper() != upper:
            raise RuntimeError(
                f"Parquet({self.path!r}): the commit log moved past {upper} while this "
                "dataflow was writing; is another process writing to the same path?"
            )
        self.fs.write_bytes(
            f"{COMMITS}/{int(written['seq']):08d}.json", json.dumps(written).encode("utf-8")
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
