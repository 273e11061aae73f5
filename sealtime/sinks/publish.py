"""`Publish` sink: a collection's sealed epochs to subscribers over TCP, named in the catalog.

Created by ``col.publish("topic", partitions=1, by=None, mode="stream")``. The publishers
start when the dataflow is built, so subscribers can connect before the first tick, and
the publication is recorded in the dataflow's catalog (name, schema, partitions,
addresses; see `sealtime.pubsub.catalog`). Each sealed range ``[lo, hi)`` is sent as
Arrow batches per time (data columns + ``_diff``), then every partition's lower frontier
advances to ``hi``: a subscriber receives whole epochs only (`sealtime.pubsub`).

* ``partitions=N``: rows are split deterministically by a hash of the row (or of the
  ``by`` columns) into N publishers — computed on Spark (``xxhash64``), so equal rows (or
  keys) always go to the same partition in every run. Each partition has its own address;
  a group subscription over all of them merges their frontiers.
* ``mode="view"``: the updates are also kept in a durable shard per partition
  (`sealtime.pubsub.durable.ShardHistory`) before they are sent, and the publishers serve
  view subscriptions (snapshot, updates, resumable — also after this process restarts).
  Stream subscriptions are served in both modes.
* ``host``/``port``: where to listen (loopback, ephemeral ports by default; with
  partitions > 1 a fixed port is the first of N consecutive ports).
* Other keyword options go to `Publisher` (``max_queue``, ``max_queue_bytes``, ...).

On restart (same metadata store, same ``history_dir``) a view publication resumes at
its shard's upper: ranges already durable are not appended or sent again; this relies
on the dataflow being deterministic (same input log, same updates).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from ..columns import DIFF, TIME
from ..errors import ConfigError, PlanError, SchemaError
from .base import CommitContext, Sink

__all__ = ["Publish"]

_PART = "__sealtime_partition"


class Publish(Sink):
    """Publish sealed epochs of a collection under `topic` (see the module docstring)."""

    # Its first parameters are Publisher's on purpose: it passes them on, documented.
    def __init__(
        self,
        topic: str,
        partitions: int = 1,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        by: str | Sequence[str] | None = None,
        mode: str = "stream",
        schema: pa.Schema | None = None,
        store: Any = None,
        history_dir: str | os.PathLike[str] | None = None,
        **options: Any,
    ) -> None:
        from ..pubsub import Publisher
        from ..time.order import MIN_TIME

        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise ConfigError(f"publish({topic!r}, partitions={partitions!r}): must be an int >= 1")
        if mode not in ("stream", "view"):
            raise ConfigError(
                f"publish({topic!r}, mode={mode!r}): mode is 'stream' (no history) or "
                "'view' (durable history, resumable view subscriptions)"
            )
        self.topic = topic
        self.mode = mode
        # View mode keeps durable shards: the resumption frontier must respect them.
        self.exactly_once = mode == "view"
        self.partitions = partitions
        self.by = [by] if isinstance(by, str) else (list(by) if by is not None else None)
        if schema is not None:
            schema = pa.schema([f for f in schema if f.name not in (TIME, DIFF)])
            if self.by is not None and (missing := [c for c in self.by if c not in schema.names]):
                raise SchemaError(
                    f"publish({topic!r}, by={self.by!r}): no column(s) {missing}; "
                    f"columns are {schema.names}"
                )
            schema = schema.append(pa.field(DIFF, pa.int64()))
        self.schema = schema
        self.histories: list[Any] = []
        lowers: list[list[int]] = [[MIN_TIME]] * partitions
        if mode == "view":
            if store is None or schema is None:
                raise PlanError(
                    f"publish({topic!r}, mode='view') needs the dataflow's metadata store "
                    "and the collection's schema (use col.publish, not Publish directly)"
                )
            from ..pubsub.durable import ShardHistory
            from ..storage import Shard

            root = os.fspath(history_dir)
            data_schema = pa.schema([f for f in schema if f.name != DIFF])
            for p in range(partitions):
                shard = Shard.create(
                    store,
                    f"publish/{topic}/{p}",
                    data_schema,
                    root,
                    lower=MIN_TIME,
                    exist_ok=True,
                )
                history = ShardHistory(shard)
                self.histories.append(history)
                lowers[p] = [] if history.sealed is None else [history.sealed]
        self.publishers = []
        try:
            for p in range(partitions):
                self.publishers.append(
                    Publisher(
                        topic,
                        partition=p,
                        host=host,
                        port=port + p if port else 0,
                        lower=lowers[p],
                        schema=schema,
                        history=self.histories[p] if self.histories else None,
                        **options,
                    ).start()
                )
        except BaseException:
            self.close()
            raise

    @property
    def publisher(self) -> Any:
        """The publisher of partition 0 (the only one unless ``partitions > 1``)."""
        return self.publishers[0]

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` of partition 0."""
        return self.publishers[0].address

    @property
    def addresses(self) -> list[tuple[str, int]]:
        """``(host, port)`` of every partition, in partition order."""
        return [p.address for p in self.publishers]

    def durable_upper(self) -> int | None:
        """View mode: every update below this is in the shards (the engine's resumption
        frontier counts it); None when every partition is finished."""
        if not self.histories:
            return super().durable_upper()  # stream mode keeps nothing
        uppers = [h.sealed for h in self.histories]
        present = [u for u in uppers if u is not None]
        return min(present) if present else None

    # ------------------------------------------------------------------ committing
    takes_arrow = True

    def arrow_plan(self, delta: Any) -> Any:
        """`delta` with its partition column (with partitions > 1)."""
        from pyspark.sql import functions as F

        if self.partitions == 1:
            return delta
        cols = self.by or [c for c in delta.columns if c not in (TIME, DIFF)]
        # On Spark, vectorised; xxhash64 is deterministic across runs and machines.
        part = F.pmod(F.xxhash64(*[F.col(f"`{c}`") for c in cols]), F.lit(self.partitions))
        return delta.withColumn(_PART, part.cast("long"))

    def commit(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> bool:
        """Publish the updates of the sealed range ``[lo, hi)`` and advance to `hi`.
        True: `delta`'s plan was computed."""
        from ..spark.frames import to_arrow

        table = None if delta is None else to_arrow(self.arrow_plan(delta))
        self.commit_arrow(table, lo, hi, context)
        return delta is not None

    def commit_arrow(
        self, table: pa.Table | None, lo: int, hi: int | None, context: CommitContext
    ) -> None:
        """Publish the rows of `arrow_plan` for the sealed range ``[lo, hi)``, sorted by
        (partition, time), and advance to `hi`."""
        if table is not None and _PART not in table.column_names:
            table = table.append_column(_PART, pa.array(np.zeros(table.num_rows, np.int64)))
        if table is not None and table.num_rows:
            times = table.column(TIME).to_numpy()
            parts = table.column(_PART).to_numpy()
            order = np.lexsort((times, parts))
            table = table.take(pa.array(order))
            times, parts = times[order], parts[order]
        else:
            times = parts = np.zeros(0, np.int64)
        bounds = np.searchsorted(parts, np.arange(self.partitions + 1), side="left")
        for p, pub in enumerate(self.publishers):
            start, end = int(bounds[p]), int(bounds[p + 1])
            part = table.slice(start, end - start) if table is not None else None
            self._commit_partition(p, pub, part, times[start:end], lo, hi)

    def _commit_partition(
        self, p: int, pub: Any, part: pa.Table | None, times: np.ndarray, lo: int, hi: int | None
    ) -> None:
        history = self.histories[p] if self.histories else None
        if history is not None:
            durable = history.sealed
            if durable is None or (hi is not None and hi <= durable):
                return  # already durable and served (a restarted, deterministic dataflow)
            if durable > lo and len(times):  # replayed range overlapping the durable part
                keep = int(np.searchsorted(times, durable, side="left"))
                part = part.slice(keep) if part is not None else None
                times = times[keep:]
            lo = max(lo, durable)
            rows = (
                part.drop_columns([_PART])
                if part is not None
                else pa.schema([*self.schema, pa.field(TIME, pa.int64())]).empty_table()
            )
            # Log before propagating: the range is durable before any subscriber sees it.
            history.shard.append_idempotent(rows, lo, hi).expect_ok()
        if part is not None and len(times):
            rows = part.drop_columns([TIME, _PART])
            if self.schema is not None:
                rows = rows.select(self.schema.names).cast(self.schema)
            cuts = np.flatnonzero(np.diff(times)) + 1
            for start, end in zip(np.r_[0, cuts], np.r_[cuts, len(times)]):
                pub.send(int(times[start]), rows.slice(int(start), int(end - start)))
        pub.advance_lower([] if hi is None else [hi])
        if history is not None:
            history.seal(hi)

    def close(self) -> None:
        """Stop serving (subscribers get ``Close``)."""
        for pub in self.publishers:
            pub.close()
