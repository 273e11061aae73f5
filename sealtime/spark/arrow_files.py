"""Collecting a DataFrame to Python as Arrow through files its tasks write (local mode).

Problem: a Python sink (`Callback`, `Console`, `Publish`) needs a sealed range as
Arrow on the driver. PySpark's ``toArrow`` converts each partition to Arrow batches in
its task, then sends every batch to the driver JVM as a task result (serialised, kept
in the block manager, fetched), where one thread writes it again into a socket that
Python reads. For Nexmark q0 (460,000 rows of 5 columns a tick) that detour cost about
a third of the JVM's CPU time of the whole collection.

Decision: in local mode the tasks run in the driver's JVM on this machine, so each task
writes its partition's batches once, as an Arrow IPC stream (Spark's own schema and
batches, `sealtime.spark.jvm`'s ``ArrowFiles``), into a per-collection directory; the
driver is told the file names and Python maps the files (on ``/dev/shm``, a memory
file system, without a copy) or reads them. The result equals ``toArrow``'s: the same
batches, in partition order. Where this does not apply — a cluster (executors write to
their own disks), no JDK to build the helper, a helper that fails — `collector` gives
None or `ArrowFileCollector.collect` gives None, and the caller uses PySpark's path.
``SEALTIME_ARROW_FILES=0`` turns it off.

Files of a process live under ``<dir>/sealtime-arrow-<uid>/<pid>-<id>/`` and go when
read; a directory left by a process that died is removed by the next collector.

>>> from sealtime.spark.session import get_or_create_session
>>> spark = get_or_create_session()
>>> files = collector(spark)
>>> t = files.collect(spark.range(5).repartition(2)) if files is not None else None
>>> t is None or sorted(t["id"].to_pylist()) == [0, 1, 2, 3, 4]
True
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa

from .jvm import helper_method
from .session import is_local_master

__all__ = ["DISABLE_ENV", "MIN_SHM_BYTES", "ArrowFileCollector", "collector"]

log = logging.getLogger(__name__)

#: environment variable: ``0`` turns collecting through files off (PySpark's path only)
DISABLE_ENV = "SEALTIME_ARROW_FILES"
#: /dev/shm is used only with at least this much free (containers often give it 64 MB)
MIN_SHM_BYTES = 2 * 2**30

_lock = threading.Lock()
_collectors: dict[Any, ArrowFileCollector | None] = {}


class ArrowFileCollector:
    """Collects DataFrames of one SparkContext through files (see the module).

    `directory` holds this process's files; `mapped`: read them by mapping (a memory
    file system) instead of reading them into memory.
    """

    def __init__(self, method: Any, directory: Path, mapped: bool) -> None:
        self._method = method
        self.directory = directory
        self.mapped = mapped
        #: (monitoring) collections that fell back to PySpark's path after an error
        self.fallbacks = 0

    def collect(self, df: Any) -> pa.Table | None:
        """`df`'s rows as one Arrow table in partition order (Spark's batches and
        schema, as ``toArrow`` gets them); None when `df` has no partitions or the
        helper failed (the caller then collects the PySpark way)."""
        from py4j.protocol import Py4JError

        where = self.directory / uuid.uuid4().hex
        where.mkdir(parents=True)
        try:
            try:
                paths = [str(p) for p in self._method(df._jdf, str(where))]
            except Py4JError as exc:
                # (an error of the query itself comes again from PySpark's path, as a
                # PySpark exception; a failure of the files, e.g. a full disk, does not)
                self.fallbacks += 1
                log.debug("sealtime: collecting through files failed: %s", exc)
                return None
            tables = [self._read(p) for p in paths]
        finally:
            shutil.rmtree(where, ignore_errors=True)
        return pa.concat_tables(tables) if tables else None

    def _read(self, path: str) -> pa.Table:
        if self.mapped:
            # The table's buffers keep the mapping (and the memory) after the file goes.
            with pa.memory_map(path) as source:
                return pa.ipc.open_stream(source).read_all()
        with pa.OSFile(path) as source:
            return pa.ipc.open_stream(source.read_buffer()).read_all()


def collector(spark: Any) -> ArrowFileCollector | None:
    """The collector of `spark`'s SparkContext, or None where collecting through files
    does not apply (not local mode, turned off, no helper)."""
    if os.environ.get(DISABLE_ENV, "1") == "0":
        return None
    sc = spark.sparkContext
    if not is_local_master(sc.master):
        return None
    key = sc._jsc.sc().hashCode()
    with _lock:
        if key not in _collectors:
            _collectors[key] = _new_collector(spark)
        return _collectors[key]


def _new_collector(spark: Any) -> ArrowFileCollector | None:
    method = helper_method(
        spark,
        "sealtime.spark.ArrowFiles",
        "collect",
        "org.apache.spark.sql.Dataset",
        "java.lang.String",
    )
    if method is None:
        return None
    root, mapped = _root()
    base = root / f"sealtime-arrow-{os.getuid()}"
    base.mkdir(parents=True, exist_ok=True)
    _remove_dead(base)
    directory = base / f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    directory.mkdir()
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    return ArrowFileCollector(method, directory, mapped)


def _root() -> tuple[Path, bool]:
    """Where the files go: /dev/shm (mapped) when it exists with room, else the temp dir
    (read into memory: a mapped file of a disk's file system may be written back)."""
    shm = Path("/dev/shm")
    if shm.is_dir() and os.access(shm, os.W_OK):
        st = os.statvfs(shm)
        if st.f_bavail * st.f_frsize >= MIN_SHM_BYTES:
            return shm, True
    return Path(tempfile.gettempdir()), False


def _remove_dead(base: Path) -> None:
    """Remove the directories of processes that no longer run (killed ones leave them)."""
    for d in base.iterdir():
        pid = d.name.split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except PermissionError:
            pass  # (alive, another user's)
