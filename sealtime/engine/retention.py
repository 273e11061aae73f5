"""Log retention: which ingest-log files a checkpoint made unnecessary, and their removal.

After a checkpoint, a source's log rows at times below the least frontier of the source
and everything downstream of it are reflected in the checkpointed state: recovery never
reads them again. A source keeps its log further back by its `retain_history` (a
duration of its log's times behind the largest time of its main rows — late, error and
health rows are stamped at binding times, another clock; None: forever): that is what a
replay from the beginning (`sealtime.engine.replay`) and a view added to a live
dataflow can still read. By default a source keeps `DEFAULT_RETAIN_HISTORY` (a day;
docs/durability.md gives its disk cost). The truncation mark of each source is recorded
in the metadata store *first*; only then are the files deleted, so a crash in between
only leaves files behind (they are deleted at the next truncation).

>>> DEFAULT_RETAIN_HISTORY == 24 * 3600 * 1000
True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..plan import Plan
from ..storage.fs import DataFS
from ..storage.metadata import MetadataStore
from ..time.order import MAX_TIME, MIN_TIME
from .frontiers import f_min
from .ingest import SourceRuntime, unreferenced_paths
from .ingest_log import LogFile

__all__ = ["DEFAULT_RETAIN_HISTORY", "TRUNCATION", "LogRetention", "retention_horizon"]

#: metadata-store namespace of the truncation marks (key: the dataflow's name)
TRUNCATION = "log-truncation"

#: the ingest log a source keeps by default (ms of its log's times; `retain_history`)
DEFAULT_RETAIN_HISTORY = 24 * 3600 * 1000


def retention_horizon(files: Iterable[LogFile], max_logged: int, retain: int) -> int:
    """The time from which a source keeps its log for `retain` ms: `retain` behind the
    largest time of its main rows (of `files`, the entries it holds; `max_logged` when
    none has main rows).

    >>> late = LogFile("/l/part-2", 10, 5000, 2, late=1, late_time=5000, main_min=10, main_max=20)
    >>> retention_horizon([LogFile("/l/part-1", 1, 9, 3), late], 5000, 15)
    6
    """
    newest = max((b[1] for f in files if (b := f.bounds("main")) is not None), default=None)
    return (max_logged if newest is None else newest) - retain + 1


class LogRetention:
    """The truncation of one dataflow's ingest logs behind its checkpoints."""

    def __init__(
        self, plan: Plan, store: MetadataStore, sources: Mapping[int, SourceRuntime], fs: DataFS
    ) -> None:
        self.plan = plan
        self.store = store
        self.sources = sources
        self.fs = fs
        self.flow = plan.config.name

    def marks(self) -> dict[str, int]:
        """Per source, the time below which its log was truncated."""
        return dict(self.store.kv_get(TRUNCATION, self.flow, {}))

    def forget(self, source: str) -> None:
        """Drop the truncation mark of `source` (a dropped source)."""
        marks = self.marks()
        if marks.pop(source, None) is not None:
            self.store.kv_put(TRUNCATION, self.flow, marks)

    def processed_below(self, done: Mapping[int, int | None]) -> dict[str, int | None]:
        """Per source, the least `done` frontier over the source and everything
        downstream of it: log rows at earlier times are reflected in the state a
        checkpoint records now."""
        return {
            src.name: f_min(done[n] for n in self.plan.downstream(nid))
            for nid, src in self.sources.items()
        }

    def truncate(self, below: Mapping[str, int | None]) -> None:
        """Record the new marks — `below` (what recovery no longer needs), held back by
        each source's retention — then delete the log files wholly below them."""
        marks = self.marks()
        retain = {n.name: n.retain_history for n in self.plan.sources()}
        for src in self.sources.values():
            if src.name not in below or retain.get(src.name, 0) is None:
                continue  # (kept forever)
            mark = below[src.name] if below[src.name] is not None else MAX_TIME
            if retain.get(src.name):
                horizon = retention_horizon(src.files, src.max_logged, retain[src.name])
                mark = min(mark, horizon)
            marks[src.name] = max(marks.get(src.name, MIN_TIME), mark)
        self.store.kv_put(TRUNCATION, self.flow, marks)
        for src in self.sources.values():
            mark = marks.get(src.name, MIN_TIME)
            for files in (src.files, src.error_files, src.health_files):
                gone = [f for f in files if f.max_time < mark]
                kept = [f for f in files if f.max_time >= mark]
                # Linked entries share their source file's link; sidecars go with entries.
                for path in unreferenced_paths(gone, kept):
                    rel = self.fs.rel(path)
                    if rel is not None:  # (the log lies under the data dir)
                        self.fs.delete_file(rel)
                files[:] = kept
