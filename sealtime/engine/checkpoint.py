"""Soft checkpoints: what a dataflow's state was at a tick boundary, recorded every N ticks.

A checkpoint is never needed for correctness — the ingest log and the bindings are
enough to recompute everything — it bounds recovery time and lets the log be truncated.
Its manifest (in the metadata store) holds, for one tick boundary:

* ``done``: every operator's input frontier (what it has processed);
* ``operators``: each operator's `Operator.state()`: for arrangements, the version
  whose runs are the state (the runs are already files in the data dir, made durable
  and kept until a newer checkpoint, so nothing is copied); for spilled frames, a copy
  under the checkpoint's directory;
* ``pending``: the spilled updates waiting at inputs that ran ahead of their operator;
* ``truncate``: per source, the time before which its log is no longer needed.

Files are made durable first, then the manifest is recorded in one transaction
(`BindingLog.record_checkpoint`): a crash in between leaves only unreferenced files.
Recovery = the latest checkpoint + the log after it.
"""

from __future__ import annotations

from ..storage.fs import DataFS

__all__ = ["remove"]


def remove(directory: str) -> None:
    """Delete a checkpoint's own files (after a newer checkpoint made it obsolete).
    `directory` is a local path or a URI; a missing directory is not an error.

    >>> import os, tempfile
    >>> d = tempfile.mkdtemp(); remove(d); os.path.exists(d)
    False
    """
    DataFS.from_uri(directory, setting="checkpoint directory").delete_dir()
