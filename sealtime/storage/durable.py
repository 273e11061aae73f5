"""Kept for the modules that import it: the fsync helpers now live in `sealtime.storage.fs`
(the one filesystem layer), which also says what "durable" means on each filesystem.

>>> from sealtime.storage.durable import fsync_paths
>>> fsync_paths is __import__("sealtime.storage.fs", fromlist=["x"]).fsync_paths
True
"""

from __future__ import annotations

from .fs import fsync_file, fsync_paths

__all__ = ["fsync_file", "fsync_paths"]
