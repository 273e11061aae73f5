"""The remap collection: durable bindings from system time to source positions.

Every tick the coordinator mints one **binding** (Materialize's reclocking): the tick's
``into_time`` and, per source, the source-native position after the rows it read, the
source's frontier, the scalar state of its timestamper and the ingest-log files the
tick added. The binding is written in one metadata-store transaction *after* the log
files are on disk and *before* any of their rows propagate, so:

* a binding never names a file that is not durable (logging precedes binding);
* a crash before the binding commits leaves only unreferenced files, which the tick
  with the same number overwrites when it runs again;
* a restart reads the bindings and assigns exactly the same times, because the times
  live in the log and the bindings say which log files exist.

The same table gives the **resumption frontier**: a time ``R`` below which everything
downstream that must not lose data is durable maps back to, per source, the position
of the last binding all of whose logged rows have times ``< R``. Upstream
acknowledgements never pass it.

Checkpoints (see `sealtime.engine.checkpoint`) and the dataflow's plan fingerprint are
kept next to the bindings, in the same store.

>>> import tempfile
>>> from sealtime.storage import MetadataStore
>>> with tempfile.TemporaryDirectory() as d:
...     log = BindingLog(MetadataStore.open(d), "flow")
...     log.append(1, 1000, {"s": {"position": 7, "frontier": 1001, "files": [],
...                               "error_files": [], "state": {"max_logged": 1000}}})
...     [(b.tick, b.into_time, b.sources["s"]["position"]) for b in log.load()]
[(1, 1000, 7)]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import PlanChangedError
from ..storage.metadata import MetadataStore

__all__ = ["Binding", "BindingLog", "PlanChangedError"]

_MIGRATIONS = [
    "CREATE TABLE IF NOT EXISTS sealtime_bindings ("
    "flow TEXT NOT NULL, tick BIGINT NOT NULL, into_time BIGINT NOT NULL, "
    "sources TEXT NOT NULL, PRIMARY KEY (flow, tick))",
    "CREATE TABLE IF NOT EXISTS sealtime_checkpoints ("
    "flow TEXT NOT NULL, tick BIGINT NOT NULL, manifest TEXT NOT NULL, "
    "PRIMARY KEY (flow, tick))",
]


@dataclass(frozen=True)
class Binding:
    """One durable binding: ``into_time`` and each source's part (position, frontier,
    timestamper state, log files added in this tick)."""

    tick: int
    into_time: int
    sources: dict[str, dict[str, Any]]


class BindingLog:
    """The bindings and checkpoints of one dataflow (by name) in a metadata store."""

    def __init__(self, store: MetadataStore, flow: str) -> None:
        self.store = store
        self.flow = flow
        store.migrate("engine", _MIGRATIONS)

    # ------------------------------------------------------------------ plan
    def check_plan(self, fingerprint: list[str]) -> None:
        """Record the graph on first use; afterwards refuse a different graph, because
        the log and checkpoints only make sense for the graph that wrote them."""
        stored = self.store.kv_get("dataflow-plan", self.flow)
        if stored is None:
            self.store.kv_put("dataflow-plan", self.flow, fingerprint)
            return
        if stored != fingerprint:
            diff = next(
                (
                    f"operator {i}: was {a!r}, now {b!r}"
                    for i, (a, b) in enumerate(zip(stored, fingerprint, strict=False))
                    if a != b
                ),
                f"{len(stored)} operators before, {len(fingerprint)} now",
            )
            raise PlanChangedError(
                f"Dataflow({self.flow!r}): its data_dir/metadata store holds a log written by a "
                f"different graph ({diff}); run the original graph to resume, or give the "
                "changed dataflow a new data_dir (or a new name)"
            )

    # ------------------------------------------------------------------ bindings
    def append(self, tick: int, into_time: int, sources: Mapping[str, Any]) -> None:
        """Durably mint the binding of `tick` (one transaction; fails if it exists)."""
        with self.store.transaction() as tx:
            tx.execute(
                "INSERT INTO sealtime_bindings (flow, tick, into_time, sources) "
                "VALUES (?, ?, ?, ?)",
                (self.flow, tick, into_time, json.dumps(sources, sort_keys=True)),
            )

    def load(self) -> list[Binding]:
        """All bindings, oldest first."""
        rows = self.store.query(
            "SELECT tick, into_time, sources FROM sealtime_bindings WHERE flow = ? ORDER BY tick",
            (self.flow,),
        )
        return [Binding(int(t), int(i), json.loads(s)) for t, i, s in rows]

    # ------------------------------------------------------------------ resumption
    @staticmethod
    def resumption_positions(
        parts: Sequence[Mapping[str, Any]], upper: int | None
    ) -> dict[str, Any]:
        """Per source, the position of the last binding whose logged rows all have times
        ``< upper`` (None = everything is durable downstream): the resumption frontier
        in source-native positions. `parts` are the bindings' per-source parts, oldest
        first; sources with no such binding are left out.

        >>> b = [{"s": {"position": 4, "state": {"max_logged": 10}}},
        ...      {"s": {"position": 9, "state": {"max_logged": 20}}}]
        >>> BindingLog.resumption_positions(b, 15), BindingLog.resumption_positions(b, None)
        ({'s': 4}, {'s': 9})
        """
        out: dict[str, Any] = {}
        names = set(parts[-1]) if parts else set()
        # From the newest binding back: the common case is found at once.
        for sources in reversed(parts):
            for name, part in sources.items():
                if name not in out and (upper is None or part["state"]["max_logged"] < upper):
                    out[name] = part["position"]
            if names <= out.keys():
                break
        return out

    # ------------------------------------------------------------------ checkpoints
    def record_checkpoint(self, tick: int, manifest: Mapping[str, Any]) -> None:
        """Durably record a checkpoint whose state files are already written."""
        with self.store.transaction() as tx:
            tx.execute(
                "INSERT INTO sealtime_checkpoints (flow, tick, manifest) VALUES (?, ?, ?)",
                (self.flow, tick, json.dumps(manifest, sort_keys=True)),
            )

    def checkpoints(self) -> list[tuple[int, dict[str, Any]]]:
        """(tick, manifest) of every recorded checkpoint, oldest first."""
        rows = self.store.query(
            "SELECT tick, manifest FROM sealtime_checkpoints WHERE flow = ? ORDER BY tick",
            (self.flow,),
        )
        return [(int(t), json.loads(m)) for t, m in rows]

    def drop_checkpoints_before(self, tick: int) -> list[dict[str, Any]]:
        """Forget checkpoints older than `tick`; returns their manifests (to delete files)."""
        with self.store.transaction() as tx:
            rows = tx.query(
                "SELECT manifest FROM sealtime_checkpoints WHERE flow = ? AND tick < ?",
                (self.flow, tick),
            )
            tx.execute(
                "DELETE FROM sealtime_checkpoints WHERE flow = ? AND tick < ?", (self.flow, tick)
            )
        return [json.loads(m) for (m,) in rows]
