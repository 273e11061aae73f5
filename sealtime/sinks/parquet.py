"""`Parquet` sink: each sealed time range of a collection is committed once, as one
directory of Parquet files plus a line in the sink's commit log.

The commit log (``_sealtime_commits.jsonl``) is the source of truth: a reader takes the
directories it lists, so a range whose files were written but whose commit line was not
is invisible (and rewritten on the next attempt).
"""

from __future__ import annotations

import json
import os
from typing import Any

from ..time.order import MIN_TIME
from .base import CommitContext, ExactlyOnceSink

__all__ = ["Parquet"]

COMMIT_LOG = "_sealtime_commits.jsonl"


class Parquet(ExactlyOnceSink[dict]):
    """Write a collection's updates (columns + ``_time`` + ``_diff``) under `path`.

    >>> Parquet("/tmp/out").path
    '/tmp/out'
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def commits(self) -> list[dict[str, Any]]:
        """The committed ranges, oldest first (a line torn by a crash is not a commit)."""
        log = os.path.join(self.path, COMMIT_LOG)
        if not os.path.exists(log):
            return []
        with open(log, encoding="utf-8") as f:
            text = f.read()
        complete = text[: text.rfind("\n") + 1]
        return [json.loads(line) for line in complete.splitlines() if line.strip()]

    def durable_upper(self) -> int | None:
        """Times below this are committed (None: the collection is finished)."""
        commits = self.commits()
        return commits[-1]["upper"] if commits else MIN_TIME

    def write(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> dict[str, Any]:
        """Write the range's files into a new commit directory (not yet in the log)."""
        os.makedirs(self.path, exist_ok=True)
        self._repair_log()
        seq = len(self.commits())
        rel = f"commit-{seq:08d}"
        if delta is None:
            delta = context.spark.createDataFrame([], _with_system(context.schema))
        delta.write.mode("overwrite").parquet(os.path.join(self.path, rel))
        return {"seq": seq, "lower": lo, "upper": hi, "dir": rel, "tick": context.tick}

    def publish(
        self, written: dict[str, Any], lo: int, hi: int | None, upper: int, context: CommitContext
    ) -> None:
        """Append the commit line (fsynced): the directory becomes part of the output."""
        if self.durable_upper() != upper:
            raise RuntimeError(
                f"Parquet({self.path!r}): the commit log moved past {upper} while this "
                "dataflow was writing; is another process writing to the same path?"
            )
        with open(os.path.join(self.path, COMMIT_LOG), "a", encoding="utf-8") as f:
            f.write(json.dumps(written) + "\n")
            f.flush()
            os.fsync(f.fileno())

    def _repair_log(self) -> None:
        # Drop a partial last line left by a crash, so the next line starts clean.
        log = os.path.join(self.path, COMMIT_LOG)
        if not os.path.exists(log):
            return
        with open(log, "rb+") as f:
            data = f.read()
            end = data.rfind(b"\n") + 1
            if end != len(data):
                f.truncate(end)
                f.flush()
                os.fsync(f.fileno())

    def read(self, spark):
        """All committed updates as a Spark DataFrame."""
        dirs = [os.path.join(self.path, c["dir"]) for c in self.commits()]
        if not dirs:
            raise FileNotFoundError(f"Parquet sink at {self.path} has no commits yet")
        return spark.read.parquet(*dirs)


def _with_system(schema):
    from pyspark.sql import types as T

    return T.StructType(
        list(schema.fields)
        + [T.StructField("_time", T.LongType(), False), T.StructField("_diff", T.LongType(), False)]
    )
