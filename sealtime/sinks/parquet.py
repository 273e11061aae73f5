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

__all__ = ["Parquet"]

COMMIT_LOG = "_sealtime_commits.jsonl"


class Parquet:
    """Write a collection's updates (columns + ``_time`` + ``_diff``) under `path`.

    >>> Parquet("/tmp/out").path
    '/tmp/out'
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def commits(self) -> list[dict[str, Any]]:
        """The committed ranges, oldest first."""
        log = os.path.join(self.path, COMMIT_LOG)
        if not os.path.exists(log):
            return []
        with open(log, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]

    def commit(self, delta, lo: int, hi: int | None, info: dict[str, Any]) -> None:
        os.makedirs(self.path, exist_ok=True)
        seq = len(self.commits())
        rel = f"commit-{seq:08d}"
        target = os.path.join(self.path, rel)
        if delta is None:
            delta = info["spark"].createDataFrame([], _with_system(info["schema"]))
        delta.write.mode("overwrite").parquet(target)
        entry = {"seq": seq, "lower": lo, "upper": hi, "dir": rel, "tick": info["tick"]}
        with open(os.path.join(self.path, COMMIT_LOG), "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
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
