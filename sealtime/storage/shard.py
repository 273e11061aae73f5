"""Shards: durable time-varying collections (Materialize persist, in Python + Parquet).

A shard is a set of updates ``(row, _time, _diff)`` stored as Parquet batch files (the
user columns plus ``_time`` and ``_diff``, both int64) whose manifest, ``upper`` and
``since`` live in the `MetadataStore`. Frontiers are single ints; ``None`` is the empty
antichain (the shard is finished / can no longer be read).

* ``upper``: every update at a time ``< upper`` is durable; no update at such a time will
  ever be added. Only `Shard.compare_and_append` moves it.
* ``since``: reads are correct at any ``as_of >= since``. Compaction may have advanced
  the times of updates ``< since`` to ``since``, so a snapshot below ``since`` is an error.

Writers use `compare_and_append`: in one transaction it checks ``upper == expected``,
registers the batch and sets ``upper = new_upper``; on a mismatch nothing changes and the
current upper is returned (Materialize's ``UpperMismatch``), never raised.

>>> import tempfile, os
>>> import pyarrow as pa
>>> from sealtime.storage import MetadataStore
>>> with tempfile.TemporaryDirectory() as d:
...     store = MetadataStore.open(os.path.join(d, "meta.db"))
...     shard = Shard.create(store, "words", pa.schema([("w", pa.string())]), d)
...     ok = shard.compare_and_append(
...         pa.table({"w": ["a", "b", "a"], "_time": [0, 1, 2], "_diff": [1, 1, 1]}), 0, 3)
...     late = shard.compare_and_append(
...         pa.table({"w": ["c"], "_time": [0], "_diff": [1]}), 0, 1)
...     print(ok.ok, late.ok, late.upper)
...     print(sorted(shard.snapshot_arrow(2).to_pylist(), key=lambda r: r["w"]))
...     store.close()
True False 3
[{'w': 'a', '_time': 2, '_diff': 2}, {'w': 'b', '_time': 2, '_diff': 1}]
"""

from __future__ import annotations

import base64
import collections
import contextlib
import json
import os
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from sealtime.errors import ConfigError, ReadBelowSinceError, StorageError
from sealtime.storage.fs import DataFS
from sealtime.storage.metadata import MetadataStore, Transaction

from ..columns import DIFF, TIME, consolidate
from ..time import frontier_le

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DIFF",
    "TIME",
    "AppendResult",
    "BatchInfo",
    "CompactResult",
    "InvalidBatchError",
    "Listen",
    "ListenEvent",
    "NotYetAvailableError",
    "ReadBelowSinceError",
    "Shard",
    "ShardError",
    "ShardExistsError",
    "ShardNotFoundError",
    "ShardState",
    "SinceError",
    "UpperMismatchError",
]


#: How long a retired (compacted-away) or unreferenced file is kept before garbage
#: collection deletes it, so readers holding file lists from a snapshot or listen
#: event can still read them. Override per call.
DEFAULT_GRACE_SECONDS = 300.0


# --------------------------------------------------------------------------- errors
class ShardError(StorageError):
    """Base class of shard errors (`ReadBelowSinceError` is in `sealtime.errors`)."""


class ShardNotFoundError(ShardError, KeyError):
    """No shard of that name exists in the metadata store."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class ShardExistsError(ShardError):
    """`Shard.create` found a shard of that name (with a different schema or exist_ok=False)."""


class InvalidBatchError(ShardError, ValueError):
    """A batch does not fit the shard: wrong columns or types, or times outside its range."""


class SinceError(ShardError, ValueError):
    """`Shard.downgrade_since` was asked to move `since` backwards."""


class NotYetAvailableError(ShardError):
    """A snapshot asked for a time the shard has not sealed yet (``as_of >= upper``)."""

    def __init__(self, shard: str, upper: int | None, as_of: int) -> None:
        self.shard = shard
        self.upper = upper
        self.as_of = as_of
        super().__init__(
            f"shard {shard!r}: cannot snapshot at {as_of}: upper={upper}, so times >= {upper} "
            "are not complete yet — wait until upper > as_of (listen) or read at upper - 1"
        )


class UpperMismatchError(ShardError):
    """Raised by `AppendResult.expect_ok` when an append found a different upper."""

    def __init__(self, shard: str, expected: int | None, actual: int | None) -> None:
        self.shard = shard
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"shard {shard!r}: compare_and_append expected upper={expected} but the "
            f"shard's upper is {actual}"
        )


# ---------------------------------------------------------------------- results
@dataclass(frozen=True)
class AppendResult:
    """Outcome of `Shard.compare_and_append` / `Shard.append_idempotent`.

    * `ok`: the batch is (now) in the shard and its upper is at least `new_upper`.
    * `upper`: the shard's upper after the call — `new_upper` on success, the current
      upper on a mismatch (the caller's cue to resynchronize).
    * `already_applied`: `append_idempotent` found the append had been done before.

    Truthiness is `ok`.

    >>> bool(AppendResult(ok=False, upper=7))
    False
    """

    ok: bool
    upper: int | None
    expected: int | None = None
    already_applied: bool = False
    shard: str = ""

    def __bool__(self) -> bool:
        return self.ok

    def expect_ok(self) -> AppendResult:
        """Return self if `ok`, else raise `UpperMismatchError`."""
        if not self.ok:
            raise UpperMismatchError(self.shard, self.expected, self.upper)
        return self


@dataclass(frozen=True)
class ShardState:
    """`lower` (the upper the shard was created with), `upper` and `since`, read together."""

    lower: int
    upper: int | None
    since: int | None


@dataclass(frozen=True)
class BatchInfo:
    """A registered batch: its time range ``[lower, upper)``, files (URIs) and row count.

    `compacted_to` is the since a compacted batch's times were advanced to (None for
    batches as appended).
    """

    seq: int
    lower: int
    upper: int | None
    files: tuple[str, ...]
    row_count: int
    compacted_to: int | None


@dataclass(frozen=True)
class CompactResult:
    """What one `Shard.compact` call did."""

    since: int | None
    batches_in: int
    rows_in: int
    rows_out: int
    files_retired: int


@dataclass(frozen=True)
class ListenEvent:
    """One step of a `Listen`: the updates at times in ``[lower, upper)`` and the new upper.

    `files` hold the updates (possibly none: a progress-only event). They may also hold
    updates at times below `lower` (the first event of a listen that starts inside a
    batch): `to_arrow` / `to_spark` filter them out. Updates are not consolidated.
    """

    lower: int
    upper: int | None
    files: tuple[str, ...]
    row_count: int
    shard: Shard = field(repr=False, compare=False)

    @property
    def has_data(self) -> bool:
        """Whether this event carries update files (False: progress only)."""
        return bool(self.files)

    def to_arrow(self) -> pa.Table:
        """The updates of this event as an Arrow table (user columns, `_time`, `_diff`)."""
        return self.shard.read_files(self.files, pc.field(TIME) >= self.lower)

    def to_spark(self, spark: SparkSession) -> DataFrame:
        """The updates of this event as a Spark DataFrame."""
        from pyspark.sql import functions as F

        return self.shard._spark_read(spark, self.files).where(F.col(TIME) >= self.lower)


# --------------------------------------------------------------------- location
def _dir_name(name: str) -> str:
    """A filesystem-, URI- and Spark-glob-safe directory name for a shard name (injective).

    >>> _dir_name("orders"), _dir_name("flow/src 1"), _dir_name(".."), _dir_name("a~b")
    ('orders', 'flow~2Fsrc~201', '~2E.', 'a~7Eb')
    """
    out = []
    for i, ch in enumerate(name):
        if (ch.isascii() and ch.isalnum()) or ch in "_-" or (ch == "." and i > 0):
            out.append(ch)
        else:
            out.extend(f"~{b:02X}" for b in ch.encode("utf-8"))
    return "".join(out) or "~"


def _schema_to_text(schema: pa.Schema) -> str:
    return base64.b64encode(schema.serialize().to_pybytes()).decode("ascii")


def _schema_from_text(text: str) -> pa.Schema:
    return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(text)))


def _types_match(a: pa.DataType, b: pa.DataType) -> bool:
    return a == b or (
        # Parquet round-trips large_string/large_binary as their small forms and back.
        {a, b} <= {pa.string(), pa.large_string()} or {a, b} <= {pa.binary(), pa.large_binary()}
    )


@dataclass
class _Prepared:
    files: list[str]
    row_count: int
    owned: bool  # written by this call (safe to delete on a definite mismatch)


# ------------------------------------------------------------------------ shard
class Shard:
    """A durable time-varying collection: Parquet batch files + upper/since in the store.

    Construct with `Shard.create` or `Shard.open`. A `Shard` object is a handle: every
    property read goes to the metadata store, so several handles (threads, processes)
    on the same shard see one state.
    """

    def __init__(
        self,
        store: MetadataStore,
        name: str,
        schema: pa.Schema,
        root: str | os.PathLike[str],
        lower: int,
        *,
        fsync: bool = True,
    ) -> None:
        self.store = store
        self.name = name
        self.schema = schema
        self.full_schema = pa.schema(
            [
                *schema,
                pa.field(TIME, pa.int64()),
                pa.field(DIFF, pa.int64()),
            ]
        )
        self.root = os.fspath(root)
        self.lower = lower
        self.fsync = fsync
        self._loc = DataFS.from_uri(root, setting="shard root").child(_dir_name(name))

    # ------------------------------------------------------------- lifecycle
    @classmethod
    def create(
        cls,
        store: MetadataStore,
        name: str,
        schema: pa.Schema,
        root: str | os.PathLike[str],
        *,
        lower: int = 0,
        exist_ok: bool = False,
        fsync: bool = True,
    ) -> Shard:
        """Create a shard with `upper = since = lower` and the given user-column `schema`.

        `_time`/`_diff` are added (and stripped from `schema` if present). Files go to
        ``<root>/<url-quoted name>/``. With `exist_ok`, an existing shard with the same
        schema is opened instead. `fsync` flushes data files before they are registered
        (durability across power loss on local disks).
        """
        if not name:
            raise ConfigError("a shard needs a non-empty name")
        user = pa.schema([f for f in schema if f.name not in (TIME, DIFF)]).remove_metadata()
        for special in (TIME, DIFF):
            idx = schema.get_field_index(special)
            if idx >= 0 and not pa.types.is_integer(schema.field(idx).type):
                raise InvalidBatchError(f"shard {name!r}: column {special!r} must be int64")
        if len(set(user.names)) != len(user.names):
            raise InvalidBatchError(f"shard {name!r}: duplicate column names in {user.names}")
        with store.transaction() as tx:
            changed = tx.execute(
                "INSERT INTO sealtime_shards (name, lower, upper, since, arrow_schema, next_seq, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (name) DO NOTHING",
                (name, lower, lower, lower, _schema_to_text(user), 1, time.time()),
            )
        if changed == 0:
            existing = cls.open(store, name, root, fsync=fsync)
            if exist_ok and existing.schema.equals(user):
                return existing
            if exist_ok:
                raise ShardExistsError(
                    f"shard {name!r} exists with schema {existing.schema} which differs from "
                    f"{user} — use another name or open it with Shard.open"
                )
            raise ShardExistsError(
                f"shard {name!r} already exists — open it with Shard.open or pass exist_ok=True"
            )
        shard = cls(store, name, user, root, lower, fsync=fsync)
        shard._loc.create_dir()
        return shard

    @classmethod
    def open(
        cls,
        store: MetadataStore,
        name: str,
        root: str | os.PathLike[str],
        *,
        fsync: bool = True,
    ) -> Shard:
        """Open an existing shard (raises `ShardNotFoundError` if there is none)."""
        rows = store.query(
            "SELECT arrow_schema, lower FROM sealtime_shards WHERE name = ?", (name,)
        )
        if not rows:
            raise ShardNotFoundError(
                f"shard {name!r} does not exist in metadata store {store.url!r} — "
                "create it with Shard.create"
            )
        shard = cls(store, name, _schema_from_text(rows[0][0]), root, int(rows[0][1]), fsync=fsync)
        shard._loc.create_dir()
        return shard

    @staticmethod
    def exists(store: MetadataStore, name: str) -> bool:
        """Whether a shard called `name` exists."""
        return bool(store.query("SELECT 1 FROM sealtime_shards WHERE name = ?", (name,)))

    def __repr__(self) -> str:
        return f"Shard({self.name!r}, directory={self.directory!r})"

    # ------------------------------------------------------------ properties
    @property
    def directory(self) -> str:
        """The shard's directory (local path or URI) holding its Parquet files."""
        return self._loc.location

    @property
    def upper(self) -> int | None:
        """Times ``< upper`` are complete; None once the shard is finished."""
        return self.state().upper

    @property
    def since(self) -> int | None:
        """Reads are valid at ``as_of >= since``; None once no reads are allowed."""
        return self.state().since

    def state(self) -> ShardState:
        """`lower`, `upper` and `since` read in one transaction."""
        with self.store.transaction(readonly=not self.store.in_transaction()) as tx:
            return self._state(tx)

    def _state(self, tx: Transaction, lock: bool = False) -> ShardState:
        row = tx.query_one(
            "SELECT lower, upper, since FROM sealtime_shards WHERE name = ?"
            + (tx.dialect.for_update if lock else ""),
            (self.name,),
        )
        if row is None:
            raise ShardNotFoundError(f"shard {self.name!r} no longer exists in {self.store.url!r}")
        return ShardState(int(row[0]), row[1], row[2])

    @property
    def spark_schema(self) -> Any:
        """The Spark ``StructType`` of the shard's files (user columns, `_time`, `_diff`)."""
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(self.full_schema)

    def batches(self) -> list[BatchInfo]:
        """The registered batches in time order (for inspection and tests)."""
        rows = self.store.query(
            "SELECT seq, lower, upper, files, row_count, compacted_to "
            "FROM sealtime_shard_batches WHERE shard = ? ORDER BY lower, seq",
            (self.name,),
        )
        return [self._batch_info(r) for r in rows]

    def _batch_info(self, r: tuple[Any, ...]) -> BatchInfo:
        return BatchInfo(
            seq=int(r[0]),
            lower=int(r[1]),
            upper=r[2],
            files=tuple(self._loc.join(f) for f in json.loads(r[3])),
            row_count=int(r[4]),
            compacted_to=r[5],
        )

    # --------------------------------------------------------------- writing
    def new_staging_path(self) -> str:
        """A fresh, unique directory inside the shard for an external writer (Spark).

        Write Parquet there (``df.write.parquet(path)``) and pass ``[path]`` to
        `compare_and_append`; if the append never happens, `collect_garbage` removes it.
        """
        return self._loc.join(f"s-{uuid.uuid4().hex}")

    def compare_and_append(
        self,
        batch: pa.Table | Sequence[str | os.PathLike[str]],
        expected_upper: int | None,
        new_upper: int | None,
    ) -> AppendResult:
        """Atomically append `batch` if the shard's upper is `expected_upper`.

        `batch` is a `pyarrow.Table` (user columns + `_time` + `_diff`; written here to a
        fresh Parquet file) or a list of Parquet files / directories already written
        inside the shard directory (see `new_staging_path`). Every row must satisfy
        ``expected_upper <= _time < new_upper`` (``new_upper=None`` finishes the shard).

        In ONE transaction: lock the shard row, compare its upper with `expected_upper`,
        register the batch and set ``upper = new_upper``. On a mismatch nothing changes:
        the result has ``ok=False`` and ``upper`` = the current upper; a file this call
        wrote is deleted, caller-written files are left for `collect_garbage`.
        If the call raises (e.g. the connection died during COMMIT) the outcome is
        unknown: retry with `append_idempotent` and the same arguments.
        """
        self._check_uppers(expected_upper, new_upper)
        prepared = self._prepare(batch, expected_upper, new_upper)
        with self.store.transaction() as tx:
            result = self._append_in(tx, prepared, expected_upper, new_upper)
        if not result.ok and prepared.owned:
            self._loc.delete_files(prepared.files)
        return result

    def _check_uppers(self, expected_upper: int | None, new_upper: int | None) -> None:
        if expected_upper is None:
            raise InvalidBatchError(
                f"shard {self.name!r}: cannot append with expected_upper=None — a finished "
                "shard (empty upper) takes no more updates"
            )
        if new_upper is not None and new_upper < expected_upper:
            raise InvalidBatchError(
                f"shard {self.name!r}: new_upper={new_upper} is before expected_upper="
                f"{expected_upper}; uppers only move forward"
            )

    def _append_in(
        self, tx: Transaction, prepared: _Prepared, expected_upper: int, new_upper: int | None
    ) -> AppendResult:
        """Inside `tx`: lock the shard row, compare, register `prepared`, move the upper."""
        row = tx.query_one(
            "SELECT upper, next_seq FROM sealtime_shards WHERE name = ?" + tx.dialect.for_update,
            (self.name,),
        )
        if row is None:
            raise ShardNotFoundError(f"shard {self.name!r} no longer exists in {self.store.url!r}")
        current, seq = row[0], int(row[1])
        if current != expected_upper:
            return AppendResult(False, current, expected_upper, shard=self.name)
        tx.execute(
            "UPDATE sealtime_shards SET upper = ?, next_seq = ? WHERE name = ?",
            (new_upper, seq + 1, self.name),
        )
        if prepared.files:
            tx.execute(
                "INSERT INTO sealtime_shard_batches (shard, seq, lower, upper, files, "
                "row_count, compacted_to, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    self.name,
                    seq,
                    expected_upper,
                    new_upper,
                    json.dumps(prepared.files),
                    prepared.row_count,
                    None,
                    time.time(),
                ),
            )
        return AppendResult(True, new_upper, expected_upper, shard=self.name)

    def append_idempotent(
        self,
        batch: pa.Table | Sequence[str | os.PathLike[str]],
        expected_upper: int | None,
        new_upper: int | None,
    ) -> AppendResult:
        """`compare_and_append`, treating "the upper is already at or past `new_upper`" as done.

        This is the retry protocol for an append whose outcome is unknown (a crash or a
        lost connection after COMMIT was sent): retry with the same arguments; if the
        first attempt committed, the retry sees ``upper >= new_upper`` and returns
        ``ok=True, already_applied=True`` (its own new file is deleted). Sound when the
        shard has one writer, or several writers that write identical data for the same
        times (deterministic replicas) — the case in sealtime. A mismatch with an upper
        below `new_upper` is still returned as ``ok=False``.

        >>> import tempfile, os
        >>> import pyarrow as pa
        >>> from sealtime.storage import MetadataStore
        >>> with tempfile.TemporaryDirectory() as d:
        ...     store = MetadataStore.open(d)
        ...     s = Shard.create(store, "s", pa.schema([("x", pa.int64())]), d)
        ...     t = pa.table({"x": [1], "_time": [0], "_diff": [1]})
        ...     first = s.append_idempotent(t, 0, 1)
        ...     retry = s.append_idempotent(t, 0, 1)   # e.g. after a crash
        ...     print(first.ok, first.already_applied, retry.ok, retry.already_applied)
        ...     print(len(s.batches()), s.upper)
        ...     store.close()
        True False True True
        1 1
        """
        result = self.compare_and_append(batch, expected_upper, new_upper)
        if result.ok or not frontier_le(new_upper, result.upper):
            return result
        return AppendResult(
            True, result.upper, expected_upper, already_applied=True, shard=self.name
        )

    @staticmethod
    def append_many(
        appends: Sequence[tuple[Shard, pa.Table, int | None, int | None]],
    ) -> list[AppendResult]:
        """`append_idempotent` of several shards of one metadata store at once: their
        files written and synced in parallel, then ONE transaction for all (each shard
        compared and moved on its own: a mismatch leaves the others appended). A live
        service commits every view's history each tick this way (one transaction, not
        one per view: docs/serve.md).

        >>> import tempfile
        >>> from sealtime.storage import MetadataStore
        >>> with tempfile.TemporaryDirectory() as d:
        ...     store = MetadataStore.open(d)
        ...     a, b = (Shard.create(store, n, pa.schema([("x", pa.int64())]), d) for n in "ab")
        ...     t = pa.table({"x": [1], "_time": [0], "_diff": [1]})
        ...     rs = Shard.append_many([(a, t, 0, 1), (b, t.slice(0, 0), 0, 1), (a, t, 0, 1)])
        ...     print([(r.ok, r.already_applied) for r in rs], a.upper, b.upper, len(b.batches()))
        ...     store.close()
        [(True, False), (True, False), (True, True)] 1 1 0
        """
        from concurrent.futures import ThreadPoolExecutor

        if not appends:
            return []
        stores = {id(shard.store) for shard, *_ in appends}
        if len(stores) != 1:
            raise InvalidBatchError("Shard.append_many: the shards must share one store")
        for shard, _, expected, new in appends:
            shard._check_uppers(expected, new)
        with ThreadPoolExecutor(min(8, len(appends))) as pool:
            prepared = list(pool.map(lambda a: a[0]._prepare(a[1], a[2], a[3]), appends))
        results = []
        with appends[0][0].store.transaction() as tx:
            for (shard, _, expected, new), prep in zip(appends, prepared):
                assert expected is not None  # (checked above)
                results.append(shard._append_in(tx, prep, expected, new))
        out = []
        for (shard, _, expected, new), prep, result in zip(appends, prepared, results):
            if not result.ok and prep.owned:
                shard._loc.delete_files(prep.files)
            if not result.ok and frontier_le(new, result.upper):
                result = AppendResult(
                    True, result.upper, expected, already_applied=True, shard=shard.name
                )
            out.append(result)
        return out

    def _prepare(
        self,
        batch: pa.Table | Sequence[str | os.PathLike[str]],
        lower: int,
        upper: int | None,
    ) -> _Prepared:
        if isinstance(batch, pa.RecordBatch):
            batch = pa.Table.from_batches([batch])
        if isinstance(batch, pa.Table):
            table = self._conform(batch)
            self._check_times(table.column(TIME), table.column(DIFF), lower, upper, "batch")
            if table.num_rows == 0:
                return _Prepared([], 0, owned=True)
            rel = f"b-{uuid.uuid4().hex}.parquet"
            pq.write_table(table, self._loc.path(rel), filesystem=self._loc.fs)
            if self.fsync:
                self._loc.sync([rel])
            return _Prepared([rel], table.num_rows, owned=True)
        if isinstance(batch, (str, os.PathLike)):
            raise InvalidBatchError(
                f"shard {self.name!r}: pass a list of paths, not a single path ({batch!r})"
            )
        files = self._expand(batch)
        total = 0
        kept = []
        for rel in files:
            path = self._loc.path(rel)
            try:
                pf = pq.ParquetFile(path, filesystem=self._loc.fs)
            except (OSError, pa.ArrowInvalid) as exc:
                raise InvalidBatchError(f"shard {self.name!r}: cannot read {rel!r}: {exc}") from exc
            self._check_file_schema(pf.schema_arrow, rel)
            n = pf.metadata.num_rows
            if n == 0:
                continue
            cols = pf.read(columns=[TIME, DIFF])
            self._check_times(cols.column(TIME), cols.column(DIFF), lower, upper, f"file {rel!r}")
            total += n
            kept.append(rel)
        if kept and self.fsync:
            self._loc.sync(kept)
        return _Prepared(kept, total, owned=False)

    def _expand(self, paths: Sequence[str | os.PathLike[str]]) -> list[str]:
        out: list[str] = []
        for p in paths:
            rel = self._loc.rel(p)
            if rel is None or rel.startswith(".."):
                raise InvalidBatchError(
                    f"shard {self.name!r}: {os.fspath(p)!r} is outside the shard directory "
                    f"{self.directory!r} — write files under shard.new_staging_path()"
                )
            if not self._loc.exists(rel):
                raise InvalidBatchError(f"shard {self.name!r}: {os.fspath(p)!r} does not exist")
            if self._loc.is_dir(rel):
                for e in self._loc.list(rel):
                    if e.name.startswith(("_", ".")):
                        continue  # _SUCCESS, _temporary, .crc side files
                    if e.is_dir:
                        raise InvalidBatchError(
                            f"shard {self.name!r}: {self._loc.join(e.rel)!r} is a subdirectory "
                            "— partitioned writes (partitionBy) are not supported; write plain "
                            "Parquet files"
                        )
                    out.append(e.rel)
            else:
                out.append(rel)
        return out

    def _conform(self, table: pa.Table) -> pa.Table:
        expected = set(self.full_schema.names)
        got = set(table.column_names)
        if got != expected or len(table.column_names) != len(expected):
            raise InvalidBatchError(
                f"shard {self.name!r}: batch columns {table.column_names} do not match the "
                f"shard's {self.full_schema.names} (missing: {sorted(expected - got)}, "
                f"extra: {sorted(got - expected)})"
            )
        table = table.select(self.full_schema.names)
        if table.schema.equals(self.full_schema):
            return table
        try:
            return table.cast(self.full_schema)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError, ValueError) as exc:
            raise InvalidBatchError(
                f"shard {self.name!r}: batch schema {table.schema} cannot be cast to the "
                f"shard's {self.full_schema}: {exc}"
            ) from exc

    def _check_file_schema(self, schema: pa.Schema, rel: str) -> None:
        expected = {f.name: f.type for f in self.full_schema}
        got = {f.name: f.type for f in schema}
        problems = []
        missing = sorted(set(expected) - set(got))
        extra = sorted(set(got) - set(expected))
        if missing:
            problems.append(f"missing columns {missing}")
        if extra:
            problems.append(f"extra columns {extra}")
        for n in expected.keys() & got.keys():
            if not _types_match(expected[n], got[n]):
                problems.append(f"column {n!r} is {got[n]}, expected {expected[n]}")
        if problems:
            raise InvalidBatchError(
                f"shard {self.name!r}: file {rel!r} does not match the shard schema: "
                + "; ".join(problems)
                + " — cast the DataFrame to shard.spark_schema before writing"
            )

    def _check_times(
        self,
        times: pa.ChunkedArray,
        diffs: pa.ChunkedArray,
        lower: int,
        upper: int | None,
        what: str,
    ) -> None:
        if times.null_count or diffs.null_count:
            raise InvalidBatchError(f"shard {self.name!r}: {what} has null {TIME} or {DIFF} values")
        if len(times) == 0:
            return
        mm = pc.min_max(times)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo < lower or (upper is not None and hi >= upper):
            rng = f"[{lower}, {'∞' if upper is None else upper})"
            raise InvalidBatchError(
                f"shard {self.name!r}: {what} has {TIME} values in [{lo}, {hi}], outside the "
                f"appended range {rng} (expected_upper <= {TIME} < new_upper)"
            )

    # --------------------------------------------------------------- reading
    def snapshot(self, as_of: int) -> list[str]:
        """The files holding every update at a time ``<= as_of`` (requires since <= as_of < upper).

        The files are raw batches: they may also hold updates at times ``> as_of`` and
        are not consolidated; filter ``_time <= as_of`` and advance times to `as_of`
        (or use `snapshot_arrow` / `snapshot_spark`, which do). Files stay readable for
        at least the garbage-collection grace period even if compaction replaces them.
        """
        with self.store.transaction(readonly=not self.store.in_transaction()) as tx:
            st = self._state(tx)
            self._check_as_of(st, as_of)
            rows = tx.query(
                "SELECT files FROM sealtime_shard_batches WHERE shard = ? AND lower <= ? "
                "ORDER BY lower, seq",
                (self.name, as_of),
            )
        return [self._loc.join(f) for r in rows for f in json.loads(r[0])]

    def _check_as_of(self, st: ShardState, as_of: int) -> None:
        if st.since is None or as_of < st.since:
            raise ReadBelowSinceError(self.name, st.since, as_of)
        if st.upper is not None and as_of >= st.upper:
            raise NotYetAvailableError(self.name, st.upper, as_of)

    def snapshot_arrow(self, as_of: int) -> pa.Table:
        """The collection accumulated at `as_of`: consolidated updates, all with ``_time = as_of``.

        Like Materialize's snapshot, every update at a time ``<= as_of`` is included with
        its time advanced to `as_of`; equal rows are summed and zero diffs dropped. The
        result is therefore independent of how the shard was batched or compacted.
        Row order is unspecified.
        """
        files = self.snapshot(as_of)
        return consolidate(self.read_files(files, pc.field(TIME) <= as_of), as_of=as_of)

    def snapshot_spark(self, spark: SparkSession, as_of: int) -> DataFrame:
        """`snapshot_arrow` as a (lazy) Spark DataFrame: consolidated, ``_time = as_of``.

        The DataFrame reads the snapshot's files when an action runs: run it within the
        garbage-collection grace period (or cache it) if compaction runs concurrently.
        """
        from pyspark.sql import functions as F

        files = self.snapshot(as_of)
        df = self._spark_read(spark, tuple(files)).where(F.col(TIME) <= F.lit(as_of))
        keys = [F.col(_quote_col(c)) for c in self.schema.names]
        agg = (
            df.groupBy(*keys)
            .agg(F.sum(F.col(DIFF)).cast("long").alias(DIFF))
            .where(F.col(DIFF) != 0)
        )
        return agg.select(*keys, F.lit(as_of).cast("long").alias(TIME), F.col(DIFF))

    def _spark_read(self, spark: SparkSession, files: Sequence[str]) -> DataFrame:
        if not files:
            return spark.createDataFrame([], self.spark_schema)
        return spark.read.schema(self.spark_schema).parquet(*(self.spark_uri(f) for f in files))

    def spark_uri(self, path: str | os.PathLike[str]) -> str:
        """The URI Spark should use for a location inside the shard (a batch file, a
        `new_staging_path`): fully qualified, e.g. ``file:///...`` for a local path.

        >>> import tempfile
        >>> from sealtime.storage import MetadataStore
        >>> d = tempfile.mkdtemp()
        >>> s = Shard.create(MetadataStore.open(d), "s", pa.schema([("x", pa.int64())]), d)
        >>> s.spark_uri(s.directory + "/b.parquet") == "file://" + d + "/s/b.parquet"
        True
        """
        rel = self._loc.rel(path)
        if rel is None:
            raise InvalidBatchError(
                f"shard {self.name!r}: {os.fspath(path)!r} is outside the shard directory "
                f"{self.directory!r}"
            )
        return self._loc.spark_uri(rel)

    def read_files(self, uris: Sequence[str], filter: Any = None) -> pa.Table:
        """The rows of the shard's data files `uris` (e.g. a batch's ``files``) in the
        shard's full schema, optionally filtered by a pyarrow expression."""
        rels = [self._loc.rel(u) for u in uris]
        return self._read_rel([r for r in rels if r is not None], filter)

    def _read_rel(self, rels: Sequence[str], filter: Any = None) -> pa.Table:
        if not rels:
            return self.full_schema.empty_table()
        dataset = pads.dataset(
            [self._loc.path(r) for r in rels],
            schema=self.full_schema,
            format="parquet",
            filesystem=self._loc.fs,
        )
        return dataset.to_table(filter=filter)

    def listen(self, from_: int, *, poll_interval: float = 0.05) -> Listen:
        """Follow the shard: every update at a time ``>= from_``, batch by batch, exactly once.

        Pair with a snapshot for a subscription: ``snapshot_arrow(t)`` then
        ``listen(t + 1)``. Requires ``since < from_`` (times before `from_` must still be
        distinguishable from `from_`), except on a shard whose since never moved
        (``since == lower``), which can be followed from its beginning. The listener
        must keep since below its `Listen.frontier` while it runs; if since passes it,
        the next poll raises `ReadBelowSinceError` rather than deliver merged history.

        >>> import tempfile
        >>> import pyarrow as pa
        >>> from sealtime.storage import MetadataStore
        >>> with tempfile.TemporaryDirectory() as d:
        ...     store = MetadataStore.open(d)
        ...     s = Shard.create(store, "s", pa.schema([("x", pa.int64())]), d)
        ...     lis = s.listen(0)
        ...     _ = s.compare_and_append(pa.table({"x": [7], "_time": [1], "_diff": [1]}), 0, 2)
        ...     _ = s.compare_and_append(pa.table({"x": [8], "_time": [2], "_diff": [1]}), 2, None)
        ...     for event in lis:
        ...         print(event.lower, event.upper, event.to_arrow().to_pylist())
        ...     store.close()
        0 2 [{'x': 7, '_time': 1, '_diff': 1}]
        2 None [{'x': 8, '_time': 2, '_diff': 1}]
        """
        listen = Listen(self, from_, poll_interval=poll_interval)
        self._check_listen(self.state(), from_)
        return listen

    def _check_listen(self, st: ShardState, frontier: int) -> None:
        if st.since is None or not (
            st.since < frontier or (st.since == st.lower and frontier <= st.since)
        ):
            raise ReadBelowSinceError(self.name, st.since, frontier, listen=True)

    # -------------------------------------------------------------- since/gc
    def downgrade_since(self, new_since: int | None) -> None:
        """Allow compaction of times before `new_since` (monotonic; None = no more reads).

        Raises `SinceError` if `new_since` is before the current since. The caller (the
        engine) passes the minimum over everything that still has to read the shard.
        """
        with self.store.transaction() as tx:
            st = self._state(tx, lock=True)
            if st.since == new_since:
                return
            if not frontier_le(st.since, new_since):
                raise SinceError(
                    f"shard {self.name!r}: since can only advance: it is {st.since}, "
                    f"cannot downgrade_since({new_since})"
                )
            tx.execute(
                "UPDATE sealtime_shards SET since = ? WHERE name = ?", (new_since, self.name)
            )

    def compact(self, *, grace_seconds: float = DEFAULT_GRACE_SECONDS) -> CompactResult | None:
        """Merge all batches whose updates are at times ``<= since`` into one consolidated file.

        The merged file holds the collection accumulated at `since` (times advanced to
        since, diffs summed, zeros dropped) and replaces the old batches in one
        transaction; snapshots at any ``as_of >= since`` are unchanged. The replaced files
        are retired and deleted by garbage collection once they are `grace_seconds` old
        (so a concurrent reader holding their paths can finish); this call collects
        retired files that are past the grace period. Returns None if there was nothing
        to do (or a concurrent compaction won). Reads the merged data into memory.

        (The example opens its store and shard as `listen`'s does, on purpose: each
        example stands alone.)

        >>> import tempfile
        >>> import pyarrow as pa
        >>> from sealtime.storage import MetadataStore
        >>> with tempfile.TemporaryDirectory() as d:
        ...     store = MetadataStore.open(d)
        ...     s = Shard.create(store, "s", pa.schema([("x", pa.int64())]), d)
        ...     for t, diff in [(0, 1), (1, 1), (2, -1)]:
        ...         _ = s.compare_and_append(pa.table({"x": [5], "_time": [t], "_diff": [diff]}), t, t + 1)
        ...     s.downgrade_since(2)
        ...     print(s.compact(grace_seconds=0))
        ...     print([(b.lower, b.upper, b.row_count, b.compacted_to) for b in s.batches()])
        ...     print(s.snapshot_arrow(2).to_pylist())
        ...     store.close()
        CompactResult(since=2, batches_in=3, rows_in=3, rows_out=1, files_retired=3)
        [(0, 3, 1, 2)]
        [{'x': 5, '_time': 2, '_diff': 1}]
        """
        with self.store.transaction(readonly=True) as tx:
            st = self._state(tx)
            if st.since is None:
                rows = tx.query(
                    "SELECT seq, lower, upper, files, row_count, compacted_to "
                    "FROM sealtime_shard_batches WHERE shard = ? ORDER BY lower, seq",
                    (self.name,),
                )
            else:
                rows = tx.query(
                    "SELECT seq, lower, upper, files, row_count, compacted_to "
                    "FROM sealtime_shard_batches WHERE shard = ? AND upper IS NOT NULL "
                    "AND upper <= ? ORDER BY lower, seq",
                    (self.name, st.since + 1),
                )
        since = st.since
        cands = [(r, json.loads(r[3])) for r in rows]
        already_compact = (
            since is not None
            and len(cands) == 1
            and cands[0][0][5] == since
            and len(cands[0][1]) == 1
        )
        if not cands or already_compact:
            self._collect_retired(grace_seconds)
            return None
        old_files = [f for _, fs in cands for f in fs]
        rows_in = sum(int(r[4]) for r, _ in cands)
        new_files: list[str] = []
        rows_out = 0
        if since is not None:
            merged = consolidate(self._read_rel(old_files), as_of=since)
            rows_out = merged.num_rows
            if rows_out:
                rel = f"c-{uuid.uuid4().hex}.parquet"
                pq.write_table(merged, self._loc.path(rel), filesystem=self._loc.fs)
                if self.fsync:
                    self._loc.sync([rel])
                new_files = [rel]
        seqs = [int(r[0]) for r, _ in cands]
        lo = min(int(r[1]) for r, _ in cands)
        hi = max(int(r[2]) for r, _ in cands) if since is not None else None
        placeholders = ", ".join("?" for _ in seqs)
        won = False
        try:
            with self.store.transaction() as tx:
                row = tx.query_one(
                    "SELECT next_seq FROM sealtime_shards WHERE name = ?" + tx.dialect.for_update,
                    (self.name,),
                )
                if row is None:
                    raise ShardNotFoundError(f"shard {self.name!r} no longer exists")
                present = tx.query_one(
                    "SELECT COUNT(*) FROM sealtime_shard_batches WHERE shard = ? "
                    f"AND seq IN ({placeholders})",
                    (self.name, *seqs),
                )
                if present is not None and int(present[0]) == len(seqs):
                    tx.execute(
                        f"DELETE FROM sealtime_shard_batches WHERE shard = ? AND seq IN ({placeholders})",
                        (self.name, *seqs),
                    )
                    seq = int(row[0])
                    if new_files:
                        tx.execute(
                            "INSERT INTO sealtime_shard_batches (shard, seq, lower, upper, files, "
                            "row_count, compacted_to, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                            (
                                self.name,
                                seq,
                                lo,
                                hi,
                                json.dumps(new_files),
                                rows_out,
                                since,
                                time.time(),
                            ),
                        )
                    tx.execute(
                        "UPDATE sealtime_shards SET next_seq = ? WHERE name = ?",
                        (seq + 1, self.name),
                    )
                    now = time.time()
                    for f in old_files:
                        tx.upsert(
                            "sealtime_shard_retired",
                            {"shard": self.name, "path": f},
                            {"retired_at": now},
                        )
                    won = True
        finally:
            if not won:
                self._loc.delete_files(new_files)
        if not won:
            return None
        self._collect_retired(grace_seconds)
        return CompactResult(since, len(cands), rows_in, rows_out, len(old_files))

    def _collect_retired(self, grace_seconds: float) -> int:
        cutoff = time.time() - grace_seconds
        rows = self.store.query(
            "SELECT path FROM sealtime_shard_retired WHERE shard = ? AND retired_at <= ?",
            (self.name, cutoff),
        )
        paths = [r[0] for r in rows]
        if not paths:
            return 0
        deleted = self._loc.delete_files(paths)
        with self.store.transaction() as tx:
            for p in paths:
                tx.execute(
                    "DELETE FROM sealtime_shard_retired WHERE shard = ? AND path = ?",
                    (self.name, p),
                )
        return deleted

    def collect_garbage(self, *, grace_seconds: float = DEFAULT_GRACE_SECONDS) -> int:
        """Delete files no batch references: retired files and orphans older than the grace period.

        Orphans are what a crash or a failed append leaves behind: a batch file written
        but never registered, a Spark staging directory whose append lost. Files younger
        than `grace_seconds` are kept, so an append in flight (written, not yet
        registered) is safe as long as it commits within the grace period.
        Returns the number of files deleted.
        """
        deleted = self._collect_retired(grace_seconds)
        cutoff = time.time() - grace_seconds
        files: list[tuple[str, float]] = []
        dirs: list[tuple[str, float]] = []
        for entry in self._loc.list(recursive=True):
            (dirs if entry.is_dir else files).append((entry.rel, entry.mtime))
        # Read the references after listing: a file registered meanwhile is seen as referenced.
        with self.store.transaction(readonly=True) as tx:
            referenced = {
                f
                for (text,) in tx.query(
                    "SELECT files FROM sealtime_shard_batches WHERE shard = ?", (self.name,)
                )
                for f in json.loads(text)
            }
            referenced |= {
                p
                for (p,) in tx.query(
                    "SELECT path FROM sealtime_shard_retired WHERE shard = ?", (self.name,)
                )
            }
        doomed = [rel for rel, mtime in files if rel not in referenced and mtime <= cutoff]
        deleted += self._loc.delete_files(doomed)
        # Remove now-empty staging directories, deepest first.
        for rel, mtime in sorted(dirs, key=lambda d: -d[0].count("/")):
            if mtime > cutoff:
                continue
            with contextlib.suppress(OSError):
                if not self._loc.list(rel):
                    self._loc.delete_dir(rel)
        return deleted

    def delete(self) -> None:
        """Delete the shard: its metadata in one transaction, then its directory (a
        crash in between leaves only files, which no shard names). Readers of the shard
        fail from then on; its name may be created again."""
        with self.store.transaction() as tx:
            for table, column in (
                ("sealtime_shard_batches", "shard"),
                ("sealtime_shard_retired", "shard"),
                ("sealtime_shards", "name"),
            ):
                tx.execute(f"DELETE FROM {table} WHERE {column} = ?", (self.name,))
        self._loc.delete_dir()


def _quote_col(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


# ----------------------------------------------------------------------- listen
class Listen:
    """An ongoing subscription to a shard's updates from a time on (see `Shard.listen`).

    `next(timeout)` returns the next `ListenEvent` (or None on timeout / once finished);
    iterating yields events until the shard is finished (upper None). Events are
    contiguous: each starts at the previous one's upper. `frontier` is the upper of the
    last event returned: every update at a time in ``[from_, frontier)`` has been handed
    out exactly once.

    Not thread-safe: one consumer per `Listen`.
    """

    def __init__(self, shard: Shard, from_: int, *, poll_interval: float = 0.05) -> None:
        self.shard = shard
        self.from_ = from_
        self.poll_interval = poll_interval
        self.frontier: int | None = from_
        self._fetched: int | None = from_
        self._pending: collections.deque[ListenEvent] = collections.deque()

    @property
    def finished(self) -> bool:
        """True once the event with upper None (the shard finished) has been returned."""
        return self.frontier is None

    def poll(self) -> ListenEvent | None:
        """The next event if one is available now, else None (never blocks)."""
        if not self._pending and self._fetched is not None:
            self._fetch()
        if not self._pending:
            return None
        event = self._pending.popleft()
        self.frontier = event.upper
        return event

    def next(self, timeout: float | None = None) -> ListenEvent | None:
        """Wait up to `timeout` seconds (None: forever) for the next event."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            event = self.poll()
            if event is not None or self.finished:
                return event
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                time.sleep(min(self.poll_interval, remaining))
            else:
                time.sleep(self.poll_interval)

    def __iter__(self) -> Iterator[ListenEvent]:
        while not self.finished:
            event = self.next()
            if event is not None:
                yield event

    def _fetch(self) -> None:
        shard = self.shard
        pos = self._fetched
        assert pos is not None
        with shard.store.transaction(readonly=True) as tx:
            st = shard._state(tx)
            shard._check_listen(st, pos)
            if st.upper is not None and st.upper <= pos:
                return
            sql = (
                "SELECT seq, lower, upper, files, row_count, compacted_to "
                "FROM sealtime_shard_batches WHERE shard = ? AND (upper IS NULL OR upper > ?)"
            )
            params: list[Any] = [shard.name, pos]
            if st.upper is not None:
                sql += " AND lower < ?"
                params.append(st.upper)
            rows = tx.query(sql + " ORDER BY lower, seq", params)
        cur: int | None = pos
        for r in rows:
            b = shard._batch_info(r)
            assert cur is not None
            if b.lower > cur:
                self._pending.append(ListenEvent(cur, b.lower, (), 0, shard))
            self._pending.append(
                ListenEvent(max(b.lower, cur), b.upper, b.files, b.row_count, shard)
            )
            cur = b.upper
            if cur is None:
                break
        if cur is not None and (st.upper is None or st.upper > cur):
            self._pending.append(ListenEvent(cur, st.upper, (), 0, shard))
            cur = st.upper
        self._fetched = cur
