"""Where a metadata store lives: the one reading of a SQLite location.

A data dir (its ``metadata.sqlite``), a ``sqlite:///path`` URL or the file itself name
the same store to `sealtime.storage.MetadataStore`, the pub-sub catalog reader and
``sealtime status``. This module holds that reading on the bottom floor (standard
library only), so a subscriber reading a data dir's catalog loads neither the storage
package nor Spark.

>>> sqlite_path("sqlite:///m.db")
'm.db'
"""

from __future__ import annotations

import os

__all__ = ["DEFAULT_SQLITE_FILENAME", "existing_sqlite_path", "sqlite_path"]

#: File name of the SQLite store in a data dir.
DEFAULT_SQLITE_FILENAME = "metadata.sqlite"


def sqlite_path(where: str | os.PathLike[str]) -> str:
    """The SQLite file of a metadata location: a data dir (its ``metadata.sqlite``), a
    ``sqlite:///path`` URL or the path itself.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> sqlite_path(d) == os.path.join(d, "metadata.sqlite"), sqlite_path("sqlite:///m.db")
    (True, 'm.db')
    """
    text = os.fspath(where)
    if text.lower().startswith("sqlite:///"):
        text = text[len("sqlite:///") :]
    return os.path.join(text, DEFAULT_SQLITE_FILENAME) if os.path.isdir(text) else text


def existing_sqlite_path(where: str | os.PathLike[str], reader: str, fix: str) -> str:
    """`sqlite_path` of `where` for a reader that must not create the store: a missing
    file is a `FileNotFoundError` naming the `reader`, the path expected and the `fix`.

    >>> import tempfile
    >>> missing = os.path.join(tempfile.mkdtemp(), "missing")
    >>> existing_sqlite_path(missing, "sealtime status", "pass the job's --data-dir")
    Traceback (most recent call last):
    ...
    FileNotFoundError: sealtime status: no metadata store in '.../missing' (expected .../missing); pass the job's --data-dir
    """
    path = sqlite_path(where)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{reader}: no metadata store in {os.fspath(where)!r} (expected {path}); {fix}"
        )
    return path
