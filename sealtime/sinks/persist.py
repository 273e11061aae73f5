"""`Persist` sink: a collection's updates in a durable shard, committed exactly once.

Each sealed range ``[lo, hi)`` becomes one `Shard.compare_and_append` from the shard's
current upper to ``hi`` in one metadata-store transaction. After a crash the dataflow
recomputes from its checkpoint and log and offers ranges again; the sink keeps only
the part at times ``>= upper`` (what was committed before is never written twice) and
a range wholly below the upper costs nothing. The shard's upper is also what the
dataflow's resumption frontier is computed from: upstream is acknowledged only up to
positions whose rows are all below it.

>>> Persist("totals").name
'totals'
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from ..columns import DIFF, TIME
from ..errors import ConfigError, WriterConflictError
from ..storage import Shard
from ..storage.fs import DataFS
from ..time.order import MIN_TIME
from .base import CommitContext, ExactlyOnceSink, SinkBinding

__all__ = ["Persist", "open_shard"]


def open_shard(binding: SinkBinding, name: str) -> Shard:
    """The shard `name` of the bound dataflow's store (created, empty from `MIN_TIME`, at
    first use), its columns the collection's, all nullable, files under ``shards``."""
    from pyspark.sql.pandas.types import to_arrow_schema

    # Spark hands timestamps to Arrow in the session time zone, UTC (session.py).
    schema = to_arrow_schema(binding.schema, timezone="UTC")
    return Shard.create(
        binding.store,
        name,
        pa.schema([f.with_nullable(True) for f in schema]),
        DataFS.from_uri(binding.data_dir).join("shards"),
        lower=MIN_TIME,
        exist_ok=True,
    )


class Persist(ExactlyOnceSink[list]):
    """Write a collection to the shard ``<dataflow>.<name>`` in the dataflow's metadata
    store (files under ``<data_dir>/shards``, on whatever filesystem the data dir is)."""

    def __init__(self, name: str) -> None:
        if not name or not isinstance(name, str):
            raise ConfigError("Persist(name) must be a non-empty string, e.g. Persist('totals')")
        self.name = name
        self.shard: Shard | None = None
        self.commits = 0

    def _open(self) -> Shard:
        # At first use, after the dataflow has checked that its graph is the one that
        # wrote its data_dir (so a changed plan never touches the shard).
        if self.shard is None:
            self.shard = open_shard(self.binding, f"{self.binding.dataflow}.{self.name}")
        return self.shard

    def durable_upper(self) -> int | None:
        """Times below this are durably committed (None: the collection is finished)."""
        return self._open().upper

    def write(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> list[str]:
        """Stage the range's rows as Parquet files beside the shard (not yet a batch)."""
        if delta is None:
            return []
        path = self._open().new_staging_path()
        columns = [*context.schema.fieldNames(), TIME, DIFF]
        delta.select(*columns).write.parquet(self._open().spark_uri(path))
        return [path]

    def publish(
        self, written: list[str], lo: int, hi: int | None, upper: int, context: CommitContext
    ) -> None:
        """One `compare_and_append` of the staged files from `upper` to `hi` (a
        transaction of the dataflow's store: fenced by the data dir's owner)."""
        result = self._open().append_idempotent(written, upper, hi)
        if not result.ok:
            raise WriterConflictError(
                f"Persist({self.name!r}): the shard's upper moved to {result.upper} while this "
                f"dataflow expected {upper}; is another dataflow writing shard "
                f"{self._open().name!r} of this metadata store?"
            )
        self.commits += 1

    def read_arrow(self) -> pa.Table:
        """Every committed update (columns, ``_time``, ``_diff``), unconsolidated."""
        shard = self._open()
        return shard.read_files([f for b in shard.batches() for f in b.files])
