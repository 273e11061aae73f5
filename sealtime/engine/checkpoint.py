"""Soft checkpoints: operator state written to Parquet every N ticks.

A checkpoint is never needed for correctness — the ingest log and the bindings are
enough to recompute everything — it bounds recovery time and lets the log be truncated.
It holds, for one tick boundary:

* ``done``: every operator's input frontier (what it has processed);
* the state of every stateful operator: each of its Spark DataFrame fields (reduce
  state and output, join arrangements, open windows), one Parquet directory each;
* the updates waiting in per-input buffers (inputs ahead of their operator);
* per source, the time before which its log is no longer needed (``truncate``).

Files are written first, then the manifest is recorded in the metadata store in one
transaction (`BindingLog.record_checkpoint`): a crash in between leaves only
unreferenced files. Recovery = the latest checkpoint + the log after it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Mapping
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

__all__ = ["load_frames", "remove", "save_frames", "state_fields"]


def state_fields(runtime: Any) -> dict[str, DataFrame | None]:
    """The DataFrame-valued fields of an operator runtime: its state.

    Operator runtimes keep their state in DataFrame attributes (``None`` = empty) and
    their configuration in other attributes, which the plan rebuilds on restart.

    >>> class R: pass
    >>> r = R(); r.k = 3; r.state = None
    >>> state_fields(r)
    {}
    """
    return {k: v for k, v in vars(runtime).items() if isinstance(v, DataFrame)}


def save_frames(frames: Mapping[str, DataFrame | None], directory: str) -> dict[str, Any]:
    """Write each frame to ``directory/<key>`` as Parquet; returns the manifest part
    (path and schema per key, None for an absent frame)."""
    out: dict[str, Any] = {}
    for key, df in frames.items():
        if df is None:
            out[key] = None
            continue
        path = os.path.join(directory, key)
        df.write.mode("overwrite").parquet(path)
        out[key] = {"path": path, "schema": df.schema.json()}
    return out


def load_frames(spark: SparkSession, manifest: Mapping[str, Any]) -> dict[str, DataFrame | None]:
    """Read frames written by `save_frames`, materialised so that later deletion of the
    checkpoint directory cannot break them."""
    out: dict[str, DataFrame | None] = {}
    for key, entry in manifest.items():
        if entry is None:
            out[key] = None
            continue
        schema = T.StructType.fromJson(json.loads(entry["schema"]))
        out[key] = spark.read.schema(schema).parquet(entry["path"]).localCheckpoint(eager=True)
    return out


def remove(directory: str) -> None:
    """Delete a checkpoint's files (after a newer checkpoint made it obsolete)."""
    shutil.rmtree(directory, ignore_errors=True)
