"""`SpillStore`: frames written to files in the data dir and read back lazily.

Spark's ``localCheckpoint`` keeps blocks in the executors: an executor lost takes them
with it, and a later read fails (``CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND``). A spilled
frame is a directory of Parquet files on the data dir (which every executor reaches),
so it survives executor loss, and a soft checkpoint can refer to it by path instead of
copying it. Each spill is a new *generation*; `collect_garbage` removes the generations
that neither the live state nor the latest checkpoint refer to.
"""

from __future__ import annotations

import contextlib
import os
import shutil

from pyspark.sql import DataFrame, SparkSession

__all__ = ["SpillStore"]


class SpillStore:
    """Spilled frames under `directory` (see the module docstring).

    >>> SpillStore(None, "/tmp/x").path("buffer", 7)
    '/tmp/x/buffer/g00000007'
    """

    def __init__(self, spark: SparkSession | None, directory: str) -> None:
        self.spark = spark
        self.directory = directory
        self.live: dict[str, str] = {}  # name -> path of its current generation
        self.pinned: set[str] = set()  # paths the latest checkpoint refers to

    def path(self, name: str, generation: int) -> str:
        return os.path.join(self.directory, name, f"g{generation:08d}")

    def write(self, df: DataFrame, name: str, generation: int) -> DataFrame:
        """Write `df` as generation `generation` of `name` (one Spark job) and return a
        lazy frame over the files."""
        assert self.spark is not None
        path = self.path(name, generation)
        df.write.mode("overwrite").parquet(path)
        self.live[name] = path
        return self.read(path, df.schema)

    def read(self, path: str, schema) -> DataFrame:
        assert self.spark is not None
        return self.spark.read.schema(schema).parquet(path)

    def drop(self, name: str) -> None:
        """`name` holds nothing any more (its files go at the next collection)."""
        self.live.pop(name, None)

    def pin(self) -> None:
        """The latest checkpoint refers to the current generations."""
        self.pinned = set(self.live.values())

    def collect_garbage(self) -> None:
        keep = set(self.live.values()) | self.pinned
        if not os.path.isdir(self.directory):
            return
        for name in os.listdir(self.directory):
            folder = os.path.join(self.directory, name)
            for generation in os.listdir(folder):
                path = os.path.join(folder, generation)
                if path not in keep:
                    with contextlib.suppress(FileNotFoundError):
                        shutil.rmtree(path)

    def remove_all(self) -> None:
        """Forget everything (a restart without a checkpoint)."""
        self.live.clear()
        self.pinned.clear()
        shutil.rmtree(self.directory, ignore_errors=True)
