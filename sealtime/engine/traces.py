"""Recorded traces: every collection's updates, kept for ``updates()``/``to_spark()``.

With ``Dataflow(record=True)`` (tests, debugging) the engine keeps, per plan node, the
frames of its output updates. They are lazy frames over checkpointed state and logged
input, recomputed when read; every `COMPACT_EVERY` ticks (and before the log is
truncated under them) a node's frames are compacted into one materialised frame.
"""

from __future__ import annotations

from pyspark import StorageLevel
from pyspark.sql import DataFrame, SparkSession

from ..plan import PlanNode
from ..spark.frames import TIME, consolidate, union_all, with_system
from ..storage.fs import DataFS

__all__ = ["COMPACT_EVERY", "Traces", "materialise"]

#: frames a trace holds before they are compacted into one
COMPACT_EVERY = 32


def materialise(df: DataFrame, partitions: int, data_fs: DataFS) -> DataFrame:
    """`df` computed once and its lineage cut (traces, held-back updates); coalescing
    bounds the partition count of frames that are unioned with their own past."""
    df = df.coalesce(partitions)
    sc = df.sparkSession.sparkContext
    if sc.master.startswith("local"):
        # The executor is this JVM: its blocks live exactly as long as the dataflow.
        return df.localCheckpoint(eager=True)
    # On a cluster a lost executor takes its localCheckpoint blocks with it, and a later
    # read fails with CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND: a reliable checkpoint is files on
    # the data dir, which every executor reaches; Spark deletes them once the frame is
    # unreferenced (docs/cluster.md).
    if sc._jsc.sc().getCheckpointDir().isEmpty():
        sc.setCheckpointDir(data_fs.spark_uri("spill/checkpoints"))
    # (cached: the reliable checkpoint's second pass reads the cache, not the kernels)
    cached = df.persist(StorageLevel.MEMORY_AND_DISK)
    out = cached.checkpoint(eager=True)
    cached.unpersist()
    return out


class Traces:
    """The recorded output frames of every node (see the module docstring)."""

    def __init__(self, spark: SparkSession, partitions: int, data_fs: DataFS) -> None:
        self.spark = spark
        self.partitions = partitions
        self.data_fs = data_fs
        self._frames: dict[int, list[DataFrame]] = {}
        self._nodes: dict[int, PlanNode] = {}
        self._compacted: set[int] = set()

    def record(self, node: PlanNode, out: DataFrame) -> None:
        """Keep `out`, this tick's output of `node`."""
        frames = self._frames.setdefault(node.id, [])
        self._nodes[node.id] = node
        frames.append(out)
        self._compacted.discard(node.id)
        if len(frames) >= COMPACT_EVERY:
            self.compact(node.id)

    def compact(self, nid: int) -> None:
        """Replace node `nid`'s frames by one materialised, consolidated frame."""
        frames = self._frames.get(nid)
        if frames and nid not in self._compacted:
            node = self._nodes[nid]
            merged = consolidate(union_all(frames), node.columns + [TIME])
            self._frames[nid] = [materialise(merged, self.partitions, self.data_fs)]
            self._compacted.add(nid)

    def compact_all(self) -> None:
        """Compact every trace (before the log files under their lazy frames go)."""
        for nid in list(self._frames):
            self.compact(nid)

    def frame(self, node: PlanNode) -> DataFrame:
        """All of `node`'s recorded updates, consolidated per (row, time)."""
        frames = self._frames.get(node.id, [])
        if not frames:
            return self.spark.createDataFrame([], with_system(node.schema))
        return consolidate(union_all(frames), node.columns + [TIME])
