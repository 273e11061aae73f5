"""`SpillStore`: frames written to files in the data dir and read back lazily.

Spark's ``localCheckpoint`` keeps blocks in the executors: an executor lost takes them
with it, and a later read fails (``CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND``). A spilled
frame is a directory of Parquet files on the data dir (which every executor reaches),
so it survives executor loss, and a soft checkpoint can refer to it by path instead of
copying it. Each spill is a new *generation*; `collect_garbage` removes the generations
that neither the live state nor the latest checkpoint refer to.

Under a data dir this process owns (`sealtime.storage.ownership`), generation names carry
the owner's epoch (``g00000007-e3``) and collection and `SpillStore.remove_all` delete only
generations of this epoch or older ones: a fenced owner that wakes up never overwrites
or deletes a spill of the newer owner. Checkpointed frames go to a directory of their
own under the checkpoint's (`checkpoint_frame`), never to one another process may use.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..storage.fs import DataFS
from ..storage.ownership import epoch_at, epoch_name, epoch_of_name

__all__ = ["SpillStore", "checkpoint_frame"]


def checkpoint_frame(df: DataFrame | None, directory: str) -> dict[str, Any] | None:
    """Write `df` into a new directory under a soft checkpoint's `directory` (one Spark
    job; a name no other writer uses) and return its description for the checkpoint
    manifest (None: no frame). `SpillStore.restore_frame` reads it back.

    >>> checkpoint_frame(None, "/tmp/x") is None
    True
    """
    if df is None:
        return None
    fs = DataFS.from_uri(directory, setting="checkpoint directory").child(
        f"f-{uuid.uuid4().hex[:16]}"
    )
    df.write.mode("overwrite").parquet(fs.spark_uri())
    return {"path": fs.location, "schema": df.schema.json()}


class SpillStore:
    """Spilled frames under `directory`, a local path or a URI (see the module
    docstring). Paths are locations (`DataFS.join`); Spark is given their URIs.

    >>> SpillStore(None, "/tmp/x").path("buffer", 7)
    '/tmp/x/buffer/g00000007'
    """

    def __init__(self, spark: SparkSession | None, directory: str) -> None:
        self.spark = spark
        self.directory = directory
        self.fs = DataFS.from_uri(directory, setting="spill directory")
        self.live: dict[str, str] = {}  # name -> path of its current generation
        self.pinned: set[str] = set()  # paths the latest checkpoint refers to
        #: the epoch this process owns the data dir with (None: no owner)
        self.epoch = epoch_at(self.fs.location)

    def path(self, name: str, generation: int) -> str:
        """The location of generation `generation` of `name` (with the owner's epoch)."""
        suffix = "" if self.epoch is None else f"-{epoch_name(self.epoch)}"
        return self.fs.join(name, f"g{generation:08d}{suffix}")

    def _ours(self, generation: str) -> bool:
        """May this store delete `generation`? Only this epoch's and older ones'."""
        if self.epoch is None:
            return True
        epoch = epoch_of_name(generation)
        return epoch is None or epoch <= self.epoch

    def write(self, df: DataFrame, name: str, generation: int) -> DataFrame:
        """Write `df` as generation `generation` of `name` (one Spark job) and return a
        lazy frame over the files."""
        assert self.spark is not None
        path = self.path(name, generation)
        df.write.mode("overwrite").parquet(self._spark_uri(path))
        self.live[name] = path
        return self.read(path, df.schema)

    def read(self, path: str, schema) -> DataFrame:
        """A lazy frame over the spilled files at `path` (a location from `path`)."""
        assert self.spark is not None
        return self.spark.read.schema(schema).parquet(self._spark_uri(path))

    def _spark_uri(self, path: str) -> str:
        rel = self.fs.rel(path)
        return path if rel is None else self.fs.spark_uri(rel)

    def restore_frame(
        self, entry: dict[str, Any] | None, name: str, generation: int
    ) -> DataFrame | None:
        """Forget every spill, then copy the frame a checkpoint described
        (`checkpoint_frame`) into generation `generation` of `name` — a copy of our own,
        since the checkpoint's files go when a newer one is taken. None: no frame."""
        self.remove_all()
        if entry is None:
            return None
        assert self.spark is not None
        schema = T.StructType.fromJson(json.loads(entry["schema"]))
        df = self.read(entry["path"], schema)
        return self.write(df, name, generation)

    def drop(self, name: str) -> None:
        """`name` holds nothing any more (its files go at the next collection)."""
        self.live.pop(name, None)

    def pin(self) -> None:
        """The latest checkpoint refers to the current generations."""
        self.pinned = set(self.live.values())

    def collect_garbage(self) -> None:
        """Delete the generations neither the live state nor the checkpoint refers to."""
        keep = {self.fs.rel(p) for p in set(self.live.values()) | self.pinned}
        for name in self.fs.names():
            for generation in self.fs.names(name):
                rel = f"{name}/{generation}"
                if rel not in keep and self._ours(generation):
                    self.fs.delete_dir(rel)

    def remove_all(self) -> None:
        """Forget everything (a restart without a checkpoint): every generation of this
        epoch and older ones."""
        self.live.clear()
        self.pinned.clear()
        if self.epoch is None:
            self.fs.delete_dir()
            return
        self.collect_garbage()
