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

import os
from typing import Any

import pyarrow as pa

from ..engine.failpoints import failpoint

__all__ = ["Persist"]


class Persist:
    """Write a collection to the shard ``<dataflow>.<name>`` in the dataflow's metadata
    store (files under ``<data_dir>/shards``)."""

    def __init__(self, name: str) -> None:
        if not name or not isinstance(name, str):
            raise ValueError("Persist(name) must be a non-empty string")
        self.name = name
        self.shard = None
        self.commits = 0

    def attach(self, flow: Any, node: Any) -> None:
        """Bind to a dataflow's collection; called by `Collection.sink`. The shard is
        created (or opened, on restart) at first use, after the dataflow has checked that
        its graph is the one that wrote its data_dir."""
        self._flow = flow
        self._node = node
        self._columns = [f.name for f in node.schema.fields]

    def _open(self) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..storage import Shard
        from ..time.order import MIN_TIME

        flow, node = self._flow, self._node
        schema = to_arrow_schema(node.schema)
        self.shard = Shard.create(
            flow.metadata_store,
            f"{flow.name}.{self.name}",
            pa.schema([f.with_nullable(True) for f in schema]),
            os.path.join(flow.data_dir, "shards"),
            lower=MIN_TIME,
            exist_ok=True,
        )

    def durable_upper(self) -> int | None:
        """Times below this are durably committed (None: the collection is finished)."""
        return self._require().upper

    def commit(self, delta, lo: int, hi: int | None, info: dict[str, Any]) -> bool:
        """Commit ``[lo, hi)`` once. True: `delta`'s plan was computed."""
        from pyspark.sql import functions as F

        shard = self._require()
        upper = shard.upper
        if upper is None or (hi is not None and upper >= hi):
            return False  # committed before a restart
        files: list[str] = []
        if delta is not None:
            if lo < upper:
                delta = delta.filter(F.col("_time") >= upper)
            path = shard.new_staging_path()
            delta.select(*self._columns, "_time", "_diff").write.parquet(path)
            files = [path]
        failpoint("sink.written")
        result = shard.append_idempotent(files, upper, hi)
        if not result.ok:
            raise RuntimeError(
                f"Persist({self.name!r}): the shard's upper moved to {result.upper} while this "
                "dataflow expected "
                f"{upper}; is another process running the same dataflow on this data_dir?"
            )
        self.commits += 1
        failpoint("sink.committed")
        return delta is not None

    def read_arrow(self) -> pa.Table:
        """Every committed update (columns, ``_time``, ``_diff``), unconsolidated."""
        shard = self._require()
        files = [f for b in shard.batches() for f in b.files]
        return shard._read_uris(files)

    def _require(self):
        if self.shard is None:
            if getattr(self, "_flow", None) is None:
                raise RuntimeError(f"Persist({self.name!r}) is not attached: use col.sink(...)")
            self._open()
        return self.shard
