"""`DataFS`: the one layer every driver-side file operation of sealtime goes through.

A data dir (or a sink path) is a local path or a URI. Spark's executors reach it through
Hadoop (``file:``, ``hdfs://``, ``s3a://``, ``gs://``, ``abfs[s]://``); the driver reaches
the same files through `pyarrow.fs`, by mapping the Hadoop scheme to pyarrow's
filesystem (`HADOOP_SCHEMES`). A `DataFS` is one directory on one filesystem: its
operations take paths *relative* to that directory (``"a/b.parquet"``, ``""`` for the
directory itself) and it converts them to the three spellings callers need:

* `DataFS.join` — the **location**: an absolute local path, or the URI as given
  (``s3a://bucket/p/a``). This is what sealtime stores in the metadata store and prints.
* `DataFS.path` — the path inside the pyarrow filesystem `DataFS.fs` (for pyarrow calls
  that take ``filesystem=``).
* `DataFS.spark_uri` — a fully qualified URI for Spark (``file:///abs/a`` for a local
  path, so a cluster whose default filesystem is HDFS still reads the local one).

**What durable means** (`DataFS.durability` says it per filesystem):

* *local* (``LocalFileSystem``): a file is durable once its bytes **and** the directory
  entry naming it are fsynced; ``rename`` is atomic and replaces the target; hard links
  exist. `DataFS.sync` fsyncs files and their directories; `DataFS.write_bytes` writes a
  temporary file, fsyncs it, renames it into place and fsyncs the directory.
* *object stores* (S3, GCS, Azure): a put is durable and atomic when it returns (readers
  see the whole object or none); there is no fsync (`DataFS.sync` is a no-op), no atomic
  rename (a "rename" is copy then delete) and no hard link (`DataFS.link_or_copy`
  copies). sealtime never relies on rename or link for a commit there: the metadata
  store's transaction is the commit point, and files are written under fresh names.
* *HDFS*: a closed file is replicated along the write pipeline (hflush semantics; pyarrow
  exposes no hsync); rename is atomic; no hard links.

>>> import tempfile
>>> d = DataFS.from_uri(tempfile.mkdtemp())
>>> d.write_bytes("a/commit.json", b'{"seq": 0}')
>>> d.read_bytes("a/commit.json"), d.exists("a"), [e.name for e in d.list("a")]
(b'{"seq": 0}', True, ['commit.json'])
>>> d.local, d.atomic_rename, d.spark_uri("a").startswith("file:///")
(True, True, True)
"""

from __future__ import annotations

import contextlib
import errno
import os
import posixpath
import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.fs as pafs

from sealtime.errors import ConfigError, StorageError

__all__ = [
    "HADOOP_SCHEMES",
    "DataFS",
    "FileEntry",
    "FileSystemError",
    "fsync_file",
    "fsync_paths",
    "register_filesystem",
    "s3_options_from_hadoop",
    "unregister_filesystem",
]

#: Hadoop (Spark) URI scheme -> the pyarrow filesystem the driver uses for it.
HADOOP_SCHEMES: dict[str, str] = {
    "file": "local",
    "hdfs": "hdfs",
    "viewfs": "hdfs",
    "s3a": "s3",
    "s3n": "s3",
    "s3": "s3",
    "gs": "gcs",
    "abfs": "abfs",
    "abfss": "abfs",
}

_DURABILITY = {
    "local": (
        "local filesystem: durable once the file and its directory are fsynced; "
        "rename is atomic; hard links exist"
    ),
    "hdfs": (
        "HDFS: a closed file is replicated along its write pipeline (no hsync through "
        "pyarrow); rename is atomic; no hard links"
    ),
    "s3": (
        "object store (S3): a put is durable and atomic when it returns; no fsync, no "
        "atomic rename (copy then delete), no hard links"
    ),
    "gcs": (
        "object store (GCS): a put is durable and atomic when it returns; no fsync, no "
        "atomic rename (copy then delete), no hard links"
    ),
    "abfs": (
        "object store (Azure): a put is durable and atomic when it returns; no fsync, "
        "rename not relied on, no hard links"
    ),
}
_OBJECT_STORES = frozenset({"s3", "gcs", "abfs"})
_OTHER_DURABILITY = (
    "non-local filesystem: assumed to be an object store (a completed write is durable; "
    "no fsync, no atomic rename, no hard links)"
)


class FileSystemError(StorageError, OSError):
    """A file operation failed (the message names the operation and the location).

    Also an ``OSError``, so code that handled the built-in error keeps working.

    >>> isinstance(FileSystemError("rename a -> b: denied"), OSError)
    True
    """


# ----------------------------------------------------------------- fsync (local)
def fsync_file(path: str) -> None:
    """Flush one local file's (or directory's) contents to stable storage.

    >>> import tempfile
    >>> fsync_file(tempfile.mkdtemp())
    """
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_paths(paths: Iterable[str], *, directories: bool = True) -> int:
    """Flush each local file, then (when `directories`) each parent directory once, so
    the new names survive a crash too. Returns the number of files flushed.

    >>> import tempfile
    >>> p = os.path.join(tempfile.mkdtemp(), "x")
    >>> _ = open(p, "w").write("hi")
    >>> fsync_paths([p])
    1
    """
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


# ---------------------------------------------------------------------- registry
_registry_lock = threading.Lock()
_registry: dict[str, tuple[pafs.FileSystem, str]] = {}


def register_filesystem(
    prefix: str, filesystem: pafs.FileSystem, *, root: str | None = None
) -> None:
    """Reach every location under `prefix` (``scheme://authority[/path]``) through
    `filesystem`, with `prefix` itself at path `root` in it (default: the prefix's
    authority and path, e.g. the bucket for ``s3a://bucket``).

    Use it for credentials or endpoints pyarrow cannot infer (a MinIO server, a test
    server), or to plug in any pyarrow filesystem under a scheme of your own. The longest
    registered prefix wins; registrations apply to the whole process.

    >>> register_filesystem("memo://box", pafs.SubTreeFileSystem("/tmp", pafs.LocalFileSystem()), root="")
    >>> DataFS.from_uri("memo://box/x").path("y")
    'x/y'
    >>> unregister_filesystem("memo://box")
    """
    parts = urlsplit(prefix)
    if not parts.scheme or "://" not in prefix:
        raise ConfigError(
            f"register_filesystem(prefix={prefix!r}): give a URI prefix such as "
            "'s3a://bucket' or 'scheme://authority/path'"
        )
    key = prefix.rstrip("/")
    base = (parts.netloc + parts.path).rstrip("/") if root is None else root.rstrip("/")
    with _registry_lock:
        _registry[key] = (filesystem, base)


def unregister_filesystem(prefix: str) -> None:
    """Undo `register_filesystem` (no error if `prefix` was not registered).

    >>> unregister_filesystem("never://registered")
    """
    with _registry_lock:
        _registry.pop(prefix.rstrip("/"), None)


def _registered(uri: str) -> tuple[pafs.FileSystem, str] | None:
    with _registry_lock:
        items = sorted(_registry.items(), key=lambda kv: -len(kv[0]))
    for prefix, (fs, base) in items:
        if uri == prefix or uri.startswith(prefix + "/"):
            rest = uri[len(prefix) :].strip("/")
            return fs, (f"{base}/{rest}" if base and rest else base or rest)
    return None


def s3_options_from_hadoop(conf: Mapping[str, str]) -> dict[str, Any]:
    """`pyarrow.fs.S3FileSystem` keyword arguments from Hadoop's ``fs.s3a.*`` settings
    (with or without Spark's ``spark.hadoop.`` prefix), so the driver and the executors
    use one configuration.

    >>> s3_options_from_hadoop({
    ...     "spark.hadoop.fs.s3a.endpoint": "http://127.0.0.1:9000",
    ...     "fs.s3a.access.key": "k", "fs.s3a.secret.key": "s",
    ...     "fs.s3a.path.style.access": "true", "fs.s3a.endpoint.region": "eu-west-1"})
    {'endpoint_override': '127.0.0.1:9000', 'scheme': 'http', 'access_key': 'k', 'secret_key': 's', 'force_virtual_addressing': False, 'region': 'eu-west-1'}
    """
    plain = {k.removeprefix("spark.hadoop."): v for k, v in conf.items()}
    out: dict[str, Any] = {}
    endpoint = plain.get("fs.s3a.endpoint")
    if endpoint:
        parts = urlsplit(endpoint if "://" in endpoint else "//" + endpoint)
        out["endpoint_override"] = parts.netloc or endpoint
        if parts.scheme:
            out["scheme"] = parts.scheme
        elif plain.get("fs.s3a.connection.ssl.enabled", "true").lower() == "false":
            out["scheme"] = "http"
    if plain.get("fs.s3a.access.key"):
        out["access_key"] = plain["fs.s3a.access.key"]
        out["secret_key"] = plain.get("fs.s3a.secret.key", "")
        if plain.get("fs.s3a.session.token"):
            out["session_token"] = plain["fs.s3a.session.token"]
    if "fs.s3a.path.style.access" in plain:
        out["force_virtual_addressing"] = plain["fs.s3a.path.style.access"].lower() != "true"
    region = plain.get("fs.s3a.endpoint.region") or plain.get("fs.s3a.region")
    if region:
        out["region"] = region
    return out


# ------------------------------------------------------------------------ entries
@dataclass(frozen=True)
class FileEntry:
    """One entry of `DataFS.list`: its name, path relative to the listed `DataFS`,
    whether it is a directory, its size in bytes and modification time (seconds since
    the epoch; 0.0 when the filesystem reports none).

    >>> FileEntry("a.json", "commits/a.json", False, 12, 0.0).rel
    'commits/a.json'
    """

    name: str
    rel: str
    is_dir: bool
    size: int
    mtime: float


# -------------------------------------------------------------------------- DataFS
class DataFS:
    """One directory on one filesystem, for the driver (pyarrow) and for Spark (Hadoop).

    Build it with `DataFS.from_uri`. Every method takes a path relative to the
    directory, ``/``-separated (``""`` is the directory itself). See the module
    docstring for what `sync`, `rename` and `link_or_copy` guarantee on each filesystem.
    """

    def __init__(
        self,
        filesystem: pafs.FileSystem,
        root: str,
        *,
        location: str,
        spark_root: str,
        type_name: str,
    ) -> None:
        self.fs = filesystem
        self.root = root.rstrip("/") if root not in ("/", "") else root
        self.location = location.rstrip("/") if location not in ("/", "") else location
        self.spark_root = spark_root.rstrip("/") if spark_root != "file:///" else spark_root
        #: the pyarrow filesystem's type: "local", "hdfs", "s3", "gcs", "abfs", ...
        self.type_name = type_name

    # ------------------------------------------------------------ construction
    @classmethod
    def from_uri(
        cls,
        uri: str | os.PathLike[str],
        *,
        setting: str = "data_dir",
        hadoop_conf: Mapping[str, str] | None = None,
    ) -> DataFS:
        """The `DataFS` of a local path or a URI in Hadoop's spelling.

        `setting` names the option the URI came from (for error messages);
        `hadoop_conf` (``fs.s3a.*`` settings, see `s3_options_from_hadoop`) configures
        S3. A location under a `register_filesystem` prefix uses that filesystem.
        A scheme pyarrow cannot reach is a `ConfigError` naming `setting` and the fix.

        >>> DataFS.from_uri("file:///tmp/x").location, DataFS.from_uri("/tmp/x/").path("a")
        ('/tmp/x', '/tmp/x/a')
        >>> DataFS.from_uri("wasbs://c@acct.blob.core.windows.net/d", setting="Parquet(path)")
        Traceback (most recent call last):
        ...
        sealtime.errors.ConfigError: Parquet(path)='wasbs://c@acct.blob.core.windows.net/d': ...
        """
        text = os.fspath(uri)
        if "://" not in text:
            if text.startswith("file:"):  # Hadoop's file:/abs/path
                text = text[len("file:") :]
            path = os.path.abspath(text)
            return cls._local(path)
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme == "file":
            if parts.netloc not in ("", "localhost"):
                raise ConfigError(
                    f"{setting}={text!r}: a file:// URI names a local path: write "
                    "file:///absolute/path (three slashes)"
                )
            return cls._local(os.path.abspath(parts.path or "/"))
        if parts.query or parts.fragment:
            raise ConfigError(
                f"{setting}={text!r}: Spark cannot read a location with '?' or '#'; give "
                "the bare URI and configure the filesystem with Hadoop settings "
                "(hadoop_conf) or sealtime.storage.fs.register_filesystem"
            )
        location = text.rstrip("/")
        registered = _registered(location)
        if registered is not None:
            fs, path = registered
            type_name = "local" if isinstance(fs, pafs.LocalFileSystem) else fs.type_name
            return cls(fs, path, location=location, spark_root=location, type_name=type_name)
        target = HADOOP_SCHEMES.get(scheme)
        if target is None:
            hint = (
                "pyarrow has no wasb client: give the same storage account through the ABFS "
                "driver, abfss://<container>@<account>.dfs.core.windows.net/<path>"
                if scheme in ("wasb", "wasbs")
                else "use a local path, file:///path, hdfs://, s3a://, gs:// or abfs[s]://, "
                "or register a pyarrow filesystem for this scheme with "
                "sealtime.storage.fs.register_filesystem"
            )
            raise ConfigError(
                f"{setting}={text!r}: the driver cannot reach scheme {scheme!r} through "
                f"pyarrow.fs; {hint}"
            )
        try:
            if target == "s3":
                fs, path = _s3(parts, hadoop_conf or {}, setting)
            else:
                fs, path = pafs.FileSystem.from_uri(text)
        except ConfigError:
            raise  # (already names the setting and the fix)
        except (OSError, pa.ArrowException, ValueError) as exc:
            raise ConfigError(f"{setting}={text!r}: {_fix(target, exc)}") from exc
        return cls(fs, path.rstrip("/"), location=location, spark_root=location, type_name=target)

    @classmethod
    def _local(cls, path: str) -> DataFS:
        return cls(
            pafs.LocalFileSystem(),
            path,
            location=path,
            spark_root="file://" + path,
            type_name="local",
        )

    def child(self, rel: str) -> DataFS:
        """The `DataFS` of a subdirectory (same filesystem).

        >>> DataFS.from_uri("/tmp/x").child("shards/s").location
        '/tmp/x/shards/s'
        """
        rel = _clean(rel)
        if not rel:
            return self
        return DataFS(
            self.fs,
            self.path(rel),
            location=self.join(rel),
            spark_root=self.spark_uri(rel),
            type_name=self.type_name,
        )

    def __repr__(self) -> str:
        return f"DataFS({self.location!r}, type_name={self.type_name!r})"

    # ---------------------------------------------------------------- properties
    @property
    def local(self) -> bool:
        """True on the local filesystem (fsync, atomic rename and hard links exist).

        >>> DataFS.from_uri("/tmp").local, DataFS.from_uri("gs://b/p").local
        (True, False)
        """
        return self.type_name == "local"

    @property
    def atomic_rename(self) -> bool:
        """Whether `rename` is atomic (local, HDFS); object stores copy then delete.

        >>> DataFS.from_uri("/tmp").atomic_rename, DataFS.from_uri("gs://b/p").atomic_rename
        (True, False)
        """
        return self.type_name in ("local", "hdfs")

    @property
    def hard_links(self) -> bool:
        """Whether `link_or_copy` can link (local only).

        >>> DataFS.from_uri("gs://b/p").hard_links
        False
        """
        return self.local

    @property
    def needs_shared_metadata(self) -> bool:
        """True where SQLite cannot live (anything but a local path): the metadata store
        must then be PostgreSQL.

        >>> DataFS.from_uri("/tmp").needs_shared_metadata
        False
        """
        return not self.local

    @property
    def durability(self) -> str:
        """What "durable" means on this filesystem (see the module docstring).

        >>> DataFS.from_uri("/tmp").durability.startswith("local filesystem")
        True
        """
        return _DURABILITY.get(self.type_name, _OTHER_DURABILITY)

    # ---------------------------------------------------------------- spellings
    def join(self, *parts: str) -> str:
        """The location (absolute path or URI) of a relative path.

        >>> DataFS.from_uri("s3a://b/p", hadoop_conf={"fs.s3a.endpoint.region": "x"}).join("a", "b")
        's3a://b/p/a/b'
        """
        return _append(self.location, _clean("/".join(parts)))

    def path(self, rel: str = "") -> str:
        """The path of `rel` inside the pyarrow filesystem `fs`.

        >>> DataFS.from_uri("gs://bucket/flows").path("a/b")
        'bucket/flows/a/b'
        """
        return _append(self.root, _clean(rel))

    def spark_uri(self, rel: str = "") -> str:
        """The fully qualified URI Spark should use for `rel`.

        >>> DataFS.from_uri("/tmp/x").spark_uri("a")
        'file:///tmp/x/a'
        """
        return _append(self.spark_root, _clean(rel))

    def rel(self, location: str | os.PathLike[str]) -> str | None:
        """`location` (a location, Spark URI or filesystem path under this directory)
        relative to it, or None when it is outside.

        >>> d = DataFS.from_uri("/tmp/x")
        >>> d.rel("/tmp/x/a/b"), d.rel("file:///tmp/x/a"), d.rel("/tmp/y")
        ('a/b', 'a', None)
        """
        text = os.fspath(location)
        if self.local:
            if text.startswith("file://"):
                text = text[len("file://") :]
            elif text.startswith("file:"):
                text = text[len("file:") :]
            text = os.path.abspath(text)
        for base in (self.location, self.spark_root, self.root):
            if text == base:
                return ""
            prefix = base if base.endswith("/") else base + "/"
            if base and text.startswith(prefix):
                rel = posixpath.normpath(text[len(prefix) :])
                return None if rel == ".." or rel.startswith("../") else rel
        return None

    # ------------------------------------------------------------------- queries
    def exists(self, rel: str = "") -> bool:
        """Whether a file or directory exists at `rel`.

        >>> import tempfile
        >>> DataFS.from_uri(tempfile.mkdtemp()).exists("nothing")
        False
        """
        return self._info(rel).type != pafs.FileType.NotFound

    def is_dir(self, rel: str = "") -> bool:
        """Whether `rel` is a directory (on object stores: a prefix with objects).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("a/b", b"")
        >>> d.is_dir("a"), d.is_dir("a/b")
        (True, False)
        """
        return self._info(rel).type == pafs.FileType.Directory

    def _info(self, rel: str) -> pafs.FileInfo:
        with self._errors("stat", rel):
            return self.fs.get_file_info(self.path(rel))

    def list(self, rel: str = "", *, recursive: bool = False) -> list[FileEntry]:
        """The entries under `rel` sorted by path (empty when it does not exist).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp())
        >>> d.write_bytes("x/y/z", b""); d.write_bytes("x/a", b"1")
        >>> [(e.rel, e.is_dir, e.size) for e in d.list("x", recursive=True)]
        [('x/a', False, 1), ('x/y', True, 0), ('x/y/z', False, 0)]
        """
        base = self.path(rel)
        with self._errors("list", rel):
            infos = self.fs.get_file_info(
                pafs.FileSelector(base, allow_not_found=True, recursive=recursive)
            )
        prefix = base.rstrip("/") + "/" if base else ""
        out = []
        for info in infos:
            path = info.path.replace(os.sep, "/") if self.local else info.path
            sub = path[len(prefix) :] if path.startswith(prefix) else info.base_name
            mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
            is_dir = info.type == pafs.FileType.Directory
            out.append(
                FileEntry(
                    info.base_name,
                    _append(_clean(rel), sub),
                    is_dir,
                    0 if is_dir else int(info.size or 0),
                    mtime,
                )
            )
        return sorted(out, key=lambda e: e.rel)

    def names(self, rel: str = "") -> list[str]:
        """The names directly under `rel` (unsorted; empty when it does not exist) — the
        cheap listing for hot paths (a plain ``listdir`` on a local disk).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("p/r1", b"")
        >>> d.names("p"), d.names("missing")
        (['r1'], [])
        """
        if self.local:
            try:
                return os.listdir(self.path(rel))
            except (FileNotFoundError, NotADirectoryError):
                return []
        return [e.name for e in self.list(rel)]

    # ------------------------------------------------------------------- writing
    def create_dir(self, rel: str = "") -> None:
        """Create `rel` and its parents (no error if it exists; on object stores a
        directory is implicit and this may write a marker).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.create_dir("x/y"); d.is_dir("x/y")
        True
        """
        with self._errors("create directory", rel):
            self.fs.create_dir(self.path(rel), recursive=True)

    def open_output(self, rel: str) -> pa.NativeFile:
        """A stream writing a new file at `rel` (parents created). Not atomic on a
        local disk (use `write_bytes`, or write under a fresh name and `sync`); on an
        object store the object appears, whole, when the stream is closed.

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp())
        >>> with d.open_output("s/data.bin") as f:
        ...     _ = f.write(b"abc")
        >>> with d.open_input("s/data.bin") as f:
        ...     f.read()
        b'abc'
        """
        self._parent(rel)
        with self._errors("open for writing", rel):
            return self.fs.open_output_stream(self.path(rel))

    def open_input(self, rel: str) -> pa.NativeFile:
        """A stream reading the file at `rel` (see `open_output` for an example)."""
        with self._errors("open", rel):
            return self.fs.open_input_stream(self.path(rel))

    def open_input_file(self, rel: str) -> pa.NativeFile:
        """A random-access reader of the file at `rel` (seek and ranged reads: what the
        Arrow IPC file format and Parquet footers need; ranged GETs on object stores).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("f", b"abcdef")
        >>> with d.open_input_file("f") as f:
        ...     f.read_at(2, 3)
        b'de'
        """
        with self._errors("open", rel):
            return self.fs.open_input_file(self.path(rel))

    def read_bytes(self, rel: str) -> bytes:
        """The whole file at `rel` (``FileNotFoundError`` when there is none).

        >>> import tempfile
        >>> DataFS.from_uri(tempfile.mkdtemp()).read_bytes("none")
        Traceback (most recent call last):
        ...
        FileNotFoundError: ...
        """
        with self.open_input(rel) as f:
            return f.read()

    def write_bytes(self, rel: str, data: bytes, *, sync: bool = True) -> None:
        """Write the file at `rel` so that readers see the old file, or none, or the
        whole new one — never a part — and (with `sync`) durably.

        Local: a temporary name in the same directory, fsync, rename over `rel`, fsync of
        the directory. Object stores and HDFS: one put (atomic and durable when it returns).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp())
        >>> d.write_bytes("c/1.json", b"{}"); d.write_bytes("c/1.json", b"[]")
        >>> d.read_bytes("c/1.json"), d.names("c")  # replaced; no temporary file left
        (b'[]', ['1.json'])
        """
        rel = _clean(rel)
        if not self.local:
            with self.open_output(rel) as f:
                f.write(data)
            return
        self._parent(rel)
        tmp = _append(posixpath.dirname(rel), f".{posixpath.basename(rel)}.{uuid.uuid4().hex}.tmp")
        path = self.path(tmp)
        try:
            with open(path, "wb") as f:
                f.write(data)
                f.flush()
                if sync:
                    os.fsync(f.fileno())
            os.replace(path, self.path(rel))
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.remove(path)
            raise self._wrap("write", rel, exc) from exc
        if sync:
            fsync_paths([os.path.dirname(self.path(rel))], directories=False)

    def sync(self, rels: Sequence[str] = ("",)) -> int:
        """Make files durable: on a local disk, fsync each file (a directory: every
        file and directory under it) and the directories naming them. Returns the number
        of files flushed. A no-op (0) elsewhere: an object-store put or a closed HDFS
        file is already as durable as that filesystem makes it (see `durability`).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp())
        >>> d.write_bytes("out/part-0", b"1", sync=False); d.write_bytes("out/part-1", b"2", sync=False)
        >>> d.sync(["out"]), d.sync(["out/part-0"])
        (2, 1)
        """
        if not self.local:
            return 0
        files: list[str] = []
        dirs: set[str] = set()
        for rel in rels:
            path = self.path(rel)
            if os.path.isdir(path):
                for top, subdirs, names in os.walk(path):
                    files.extend(os.path.join(top, n) for n in names)
                    dirs.update(os.path.join(top, s) for s in subdirs)
                dirs.add(path)
            else:
                files.append(path)
            dirs.add(os.path.dirname(path))
        n = fsync_paths(files, directories=False)
        for d in dirs:
            with contextlib.suppress(OSError):
                fsync_file(d)
        return n

    def rename(self, src: str, dest: str, *, sync: bool = True) -> None:
        """Move `src` to `dest`, replacing it. Atomic on a local disk (then, with `sync`,
        both directories are fsynced) and on HDFS; on object stores a copy then a delete
        — never the commit point of anything (see the module docstring).

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("a", b"x")
        >>> d.rename("a", "b/c"); d.exists("a"), d.read_bytes("b/c")
        (False, b'x')
        """
        self._parent(dest)
        with self._errors(f"rename to {self.join(dest)!r}", src):
            self.fs.move(self.path(src), self.path(dest))
        if sync and self.local:
            dirs = {os.path.dirname(self.path(src)), os.path.dirname(self.path(dest))}
            for d in dirs:
                with contextlib.suppress(OSError):
                    fsync_file(d)

    def delete_file(self, rel: str) -> bool:
        """Delete the file at `rel`; False when there was none.

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("a", b"x")
        >>> d.delete_file("a"), d.delete_file("a")
        (True, False)
        """
        try:
            self.fs.delete_file(self.path(rel))
            return True
        except FileNotFoundError:
            return False
        except OSError as exc:
            if _not_found(exc):
                return False
            raise self._wrap("delete", rel, exc) from exc

    def delete_files(self, rels: Iterable[str]) -> int:
        """Delete the files at `rels` (missing ones are skipped); returns how many went.

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("a", b"x")
        >>> d.delete_files(["a", "b"])
        1
        """
        return sum(1 for rel in rels if self.delete_file(rel))

    def delete_dir(self, rel: str = "") -> None:
        """Delete the directory `rel` and everything under it (no error if missing).
        The root of a bucket (an object store's top level) is emptied, not deleted.

        >>> import tempfile
        >>> d = DataFS.from_uri(tempfile.mkdtemp()); d.write_bytes("g/1/part", b"x")
        >>> d.delete_dir("g"); d.delete_dir("g"); d.exists("g")
        False
        """
        path = self.path(rel)
        try:
            if not self.local and "/" not in path.strip("/"):
                self.fs.delete_dir_contents(path, missing_dir_ok=True)
            else:
                self.fs.delete_dir(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            if not _not_found(exc):
                raise self._wrap("delete directory", rel, exc) from exc

    def link_or_copy(self, source: str | os.PathLike[str], rel: str) -> str:
        """Make `rel` hold the file at location `source` (any filesystem `from_uri`
        reaches): a hard link where both are on one local filesystem, else a copy
        (written whole: a temporary name and a rename locally, one put on object stores).
        An existing `rel` is kept (a repeated call is a no-op). Returns ``"link"``,
        ``"copy"`` or ``"exists"``.

        >>> import tempfile
        >>> a, b = DataFS.from_uri(tempfile.mkdtemp()), DataFS.from_uri(tempfile.mkdtemp())
        >>> a.write_bytes("f", b"x")
        >>> b.link_or_copy(a.join("f"), "g"), b.link_or_copy(a.join("f"), "g"), b.read_bytes("g")
        ('link', 'exists', b'x')
        """
        rel = _clean(rel)
        if self.exists(rel):
            return "exists"
        src = DataFS.from_uri(os.fspath(source), setting="link source")
        if self.local and src.local:
            self._parent(rel)
            try:
                os.link(src.root, self.path(rel))
                return "link"
            except FileExistsError:
                return "exists"
            except OSError as exc:
                if exc.errno not in (
                    errno.EXDEV,
                    errno.EPERM,
                    errno.EMLINK,
                    errno.ENOTSUP,
                    errno.EACCES,
                ):
                    raise self._wrap(f"link from {src.location!r}", rel, exc) from exc
        self._parent(rel)
        if self.local:
            tmp = _append(
                posixpath.dirname(rel), f".{posixpath.basename(rel)}.{uuid.uuid4().hex}.tmp"
            )
            target = tmp
        else:
            target = rel
        try:
            with self._errors(f"copy from {src.location!r}", rel):
                pafs.copy_files(
                    src.root,
                    self.path(target),
                    source_filesystem=src.fs,
                    destination_filesystem=self.fs,
                )
            if self.local:
                self.sync([target])
                self.rename(target, rel)
        finally:
            if self.local:
                self.delete_file(target)
        return "copy"

    # ------------------------------------------------------------------- helpers
    def _parent(self, rel: str) -> None:
        # Object stores have no directories (a key's prefix is one); elsewhere create them.
        if self.type_name not in _OBJECT_STORES:
            self.create_dir(posixpath.dirname(_clean(rel)))

    @contextlib.contextmanager
    def _errors(self, op: str, rel: str):
        try:
            yield
        except FileNotFoundError:
            raise
        except OSError as exc:
            if isinstance(exc, FileSystemError):
                raise
            raise self._wrap(op, rel, exc) from exc

    def _wrap(self, op: str, rel: str, exc: BaseException) -> FileSystemError:
        return FileSystemError(f"{op} {self.join(rel)!r} ({self.type_name}): {exc}")


# -------------------------------------------------------------------- internals
def _clean(rel: str) -> str:
    rel = rel.replace("\\", "/").strip("/") if rel else ""
    if not rel:
        return ""
    norm = posixpath.normpath(rel)
    if norm == ".." or norm.startswith("../"):
        raise StorageError(f"path {rel!r} leaves its directory")
    return "" if norm == "." else norm


def _append(base: str, rel: str) -> str:
    if not rel:
        return base
    if not base:
        return rel
    return base + rel if base.endswith("/") else base + "/" + rel


def _not_found(exc: BaseException) -> bool:
    text = str(exc).lower()
    return "not found" in text or "no such" in text or "does not exist" in text


def _s3(parts: Any, hadoop_conf: Mapping[str, str], setting: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's S3 filesystem and the path of an ``s3a://`` URI; a URI without a bucket or
    with credentials in it is a `ConfigError` naming `setting` and the fix (the latter
    without repeating the URI, which holds a secret).

    >>> _s3(urlsplit("s3a:///p"), {}, "data_dir")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: data_dir='s3a:///p': no bucket: write s3a://<bucket>/<path>
    """
    if not parts.netloc:
        uri = f"{parts.scheme}://{parts.path}"
        raise ConfigError(f"{setting}={uri!r}: no bucket: write s3a://<bucket>/<path>")
    if "@" in parts.netloc:
        raise ConfigError(
            f"{setting}: credentials in an s3a:// URI are not supported (Spark logs URIs): "
            "set them in fs.s3a.access.key/fs.s3a.secret.key or the AWS_* environment variables"
        )
    options = s3_options_from_hadoop(hadoop_conf)
    if "region" not in options and not (
        os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    ):
        options["region"] = "us-east-1"  # pyarrow's own default, without a network lookup
    fs = pafs.S3FileSystem(**options)
    return fs, (parts.netloc + parts.path).rstrip("/")


def _fix(target: str, exc: BaseException) -> str:
    detail = " ".join(str(exc).split())[:300]
    if target == "hdfs":
        return (
            f"pyarrow cannot reach HDFS ({detail}); it goes through libhdfs and a JVM: set "
            "JAVA_HOME, HADOOP_HOME, ARROW_LIBHDFS_DIR (the directory of libhdfs.so) and "
            "CLASSPATH=$(hadoop classpath --glob) in the driver's environment"
        )
    if target == "s3":
        return (
            f"cannot set up pyarrow's S3 filesystem ({detail}); write "
            "s3a://<bucket>/<path> and configure it with fs.s3a.* settings or AWS_* variables"
        )
    if target == "gcs":
        return (
            f"cannot set up pyarrow's GCS filesystem ({detail}); write gs://<bucket>/<path> "
            "and provide credentials (GOOGLE_APPLICATION_CREDENTIALS)"
        )
    if target == "abfs":
        return (
            f"cannot set up pyarrow's Azure filesystem ({detail}); write "
            "abfss://<container>@<account>.dfs.core.windows.net/<path> and provide "
            "credentials (AZURE_STORAGE_ACCOUNT_KEY or Azure default credentials)"
        )
    return f"cannot open it through pyarrow.fs ({detail})"
