"""Making local files durable: the one place sealtime calls ``fsync``.

A file is durable on a local filesystem once its bytes *and* the directory entry that
names it are flushed: a crash after ``write`` but before ``fsync`` may leave it empty or
missing. Object stores need none of this (a completed put is durable), so callers skip
it for non-local paths.

>>> import tempfile, os
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "x")
>>> _ = open(p, "w").write("hi")
>>> fsync_paths([p])
1
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable

__all__ = ["fsync_file", "fsync_paths"]


def fsync_file(path: str) -> None:
    """Flush one file's (or directory's) contents to stable storage."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_paths(paths: Iterable[str], *, directories: bool = True) -> int:
    """Flush each file, then (when `directories`) each parent directory once, so the new
    names survive a crash too. Returns the number of files flushed."""
    dirs: set[str] = set()
    n = 0
    for path in paths:
        fsync_file(path)
        n += 1
        dirs.add(os.path.dirname(path) or ".")
    if directories:
        for d in dirs:
            # Some filesystems refuse fsync on a directory; the data is flushed anyway.
            with contextlib.suppress(OSError):
                fsync_file(d)
    return n
