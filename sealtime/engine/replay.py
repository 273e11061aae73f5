"""Replay of a recorded run, the hand-over to live input, and replay of a changed graph.

A replay re-runs a dataflow from another run's bindings and ingest log, tick by tick
with the recorded binding times (`ReplayPlan`). Three rules make it exact and let it
continue live:

* **The new log is self-contained.** Each replayed log file is hard-linked (copied
  across filesystems) into the new data dir and the new binding names the link
  (`link_part`), so the new dir can be resumed, truncated behind its checkpoints and
  replayed again without ever touching (or deleting) the original's files.
* **Clocked sources are restamped.** A `ClockedSource` (``Timer``, ``time_reset``) is
  a function of the binding times alone, so it is not read from the log but read again
  at the recorded binding times. For the unchanged graph that gives the logged rows;
  for a changed graph (a new timer, another period) it gives the new timers' firings —
  Triceps' "replay the input log with fresh timer stamps". Recorded sources the new
  graph dropped are ignored; a non-clocked source that was not recorded is an error.
* **The hand-over is part of the record.** A replay-then-live writes a marker
  (`MARKER`) in the new metadata store before its first binding: the original, its
  tick count ``n`` and ``then_live``. Tick ``n + 1`` is the first live tick: its
  binding time is the first live time, the source readers open at the positions of
  binding ``n``, and every `HandOverReader` is told ``(from_time, to_time)`` =
  (binding time ``n``, binding time ``n + 1``) — ``time_reset`` emits that row,
  timers apply their gap policy. Everything is logged in binding ``n + 1``, so a
  restart after it resumes plainly, a restart before it hands over then, a replay of
  the new dir repeats it from the log, and a changed-graph replay of the new dir
  restamps it at tick ``n + 1`` (read from the marker).

>>> m = {"from": "/d/old", "name": "f", "ticks": 3, "then_live": True}
>>> hand_over_tick(m), hand_over_tick({**m, "then_live": False}), hand_over_tick(None)
(4, None, None)
"""

from __future__ import annotations

import dataclasses
import posixpath
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, PlanError, StateError
from ..sources.base import Source
from ..sources.timer import ClockedSource, HandOverReader
from ..storage.fs import DataFS
from ..storage.metadata import MetadataStore
from .bindings import Binding, BindingLog, BindingPart
from .ingest import SourceRuntime
from .ingest_log import LogFile

__all__ = [
    "MARKER",
    "ReplayPlan",
    "ReplayState",
    "hand_over",
    "hand_over_tick",
    "link_part",
    "open_live",
    "read_marker",
    "restamped",
    "write_marker",
]

#: metadata-store namespace of the replay marker (key: the dataflow's name)
MARKER = "replay"


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay replays: the original's bindings (oldest first), and where the
    original itself handed over from a replay to live input (tick, or None) so a
    changed-graph replay restamps that hand-over too."""

    from_dir: str
    name: str
    bindings: list[Binding]
    then_live: bool = False
    recorded_hand_over: int | None = None
    #: the original's plan fingerprint (None when it recorded none)
    fingerprint: list[str] | None = None
    #: the original's metadata store URL (None: SQLite in `from_dir`)
    metadata: str | None = None

    @classmethod
    def load(
        cls, from_dir: str, name: str, *, metadata: str | None = None, then_live: bool = False
    ) -> ReplayPlan:
        """Read the original's bindings, plan and marker (the store is closed after)."""
        store = MetadataStore.open(metadata or from_dir)
        try:
            log = BindingLog(store, name)
            bindings = log.load()
            if not bindings:
                raise ConfigError(
                    f"replay: no bindings for dataflow {name!r} in {from_dir}; "
                    "pass the data_dir (and name=) of the run to replay"
                )
            if store.kv_get("log-truncation", name):
                raise ConfigError(
                    f"replay: the log in {from_dir} was truncated behind a checkpoint; "
                    "replaying from the beginning needs a run with truncate_log=False"
                )
            recorded = hand_over_tick(read_marker(store, name))
            if recorded is not None and recorded > len(bindings):
                recorded = None  # it never handed over (stopped before its first live tick)
            return cls(
                from_dir,
                name,
                bindings,
                then_live,
                recorded,
                store.kv_get("dataflow-plan", name),
                metadata,
            )
        finally:
            store.close()

    @property
    def ticks(self) -> int:
        return len(self.bindings)

    def marker(self) -> dict[str, Any]:
        return {
            "from": self.from_dir,
            "name": self.name,
            "ticks": self.ticks,
            "then_live": self.then_live,
            "metadata": self.metadata,
        }

    def check_sources(self, flow_name: str, sources: Iterable[tuple[str, Source]]) -> None:
        """Every source the replay reads from the log (`sources`: name, source) must
        have been recorded."""
        recorded = set(self.bindings[0].sources)
        for name, source in sources:
            if not restamped(source) and name not in recorded:
                raise PlanError(
                    f"replay: Dataflow({flow_name!r}) has a source {name!r} that the run "
                    f"in {self.from_dir} did not record (it recorded {sorted(recorded)}); a "
                    "replayed graph may add operators, sinks and timers, but its other "
                    "sources must be the recorded ones"
                )


@dataclass
class ReplayState:
    """Where a data dir stands with respect to a replay (a plain run: `replay_ticks` 0).

    * `plan`: the replay being run (None: none, or it is finished);
    * `bindings`: the recorded bindings still replayed (None: not replaying);
    * `replay_ticks`: how many ticks the replay has (kept in the marker, so a resumed
      replay keeps the count it started with);
    * `then_live` / `hand_over_at`: whether and at which tick it hands over to live
      input; `restamp_hand_over`: the tick at which the *original* handed over, which a
      changed-graph replay restamps too;
    * `time_reset`: ``(from_time, to_time)`` of the hand-over this process made.

    >>> plain = ReplayState()
    >>> plain.replaying(0), plain.finished(5), plain.hand_over_at is None
    (False, False, True)
    """

    plan: ReplayPlan | None = None
    bindings: list[Binding] | None = None
    replay_ticks: int = 0
    then_live: bool = False
    hand_over_at: int | None = None
    restamp_hand_over: int | None = None
    time_reset: tuple[int, int] | None = None

    @classmethod
    def open(
        cls,
        store: MetadataStore,
        flow: str,
        plan: ReplayPlan | None,
        stored: list[Binding],
        sources: Iterable[tuple[str, Source]],
    ) -> ReplayState:
        """The replay state of `flow`'s data dir: `plan` when this run was asked to
        replay, else what a marker left by an earlier run says. A data dir holding a
        replay keeps a marker, so a restart continues an interrupted replay, hands over
        if the replay finished just before, or refuses to run a finished replay-only
        dir (`check_can_tick`)."""
        marker = read_marker(store, flow)
        if plan is not None:
            same = marker is not None and (marker["from"], marker["name"]) == (
                plan.from_dir,
                plan.name,
            )
            if stored and not same:
                raise PlanError(
                    f"replay: Dataflow({flow!r}) already has {len(stored)} bindings in its "
                    "data_dir; replay into a new, empty data_dir"
                )
            plan.check_sources(flow, sources)
            if not stored or len(stored) < marker["ticks"]:
                # (a resumed replay keeps the tick count it started with)
                ticks = marker["ticks"] if stored else plan.ticks
                plan = dataclasses.replace(plan, bindings=plan.bindings[:ticks])
                write_marker(store, flow, plan)
                marker = plan.marker()
        elif marker is not None and len(stored) < marker["ticks"]:
            plan = ReplayPlan.load(
                marker["from"],
                marker["name"],
                metadata=marker.get("metadata"),
                then_live=marker["then_live"],
            )
        state = cls(
            plan=plan,
            replay_ticks=0 if marker is None else int(marker["ticks"]),
            then_live=bool(marker and marker["then_live"]),
            hand_over_at=hand_over_tick(marker),
        )
        if plan is not None and len(stored) < state.replay_ticks:
            state.bindings = plan.bindings[: state.replay_ticks]
            state.restamp_hand_over = plan.recorded_hand_over
        return state

    def replaying(self, tick_no: int) -> bool:
        """Do recorded ticks remain to be replayed after tick `tick_no`?"""
        return self.bindings is not None and tick_no < self.replay_ticks

    def recorded(self, tick: int) -> Binding | None:
        """The recorded binding tick `tick` replays (None: a live tick)."""
        if self.bindings is None or tick > self.replay_ticks:
            return None
        return self.bindings[tick - 1]

    def finished(self, tick_no: int) -> bool:
        """Has a replay that does not go live run all its ticks?"""
        return bool(self.replay_ticks) and tick_no >= self.replay_ticks and not self.then_live

    def check_can_tick(self, flow: str, tick_no: int) -> None:
        """Raise a clear error when the next tick cannot run: a finished replay that was
        not asked to continue live."""
        if self.finished(tick_no):
            raise StateError(
                f"Dataflow({flow!r}): the replay is finished — all {self.replay_ticks} "
                "recorded ticks ran, and it was not asked to continue with live input; "
                "replay with then_live=True (sealtime replay ... --then-live) to hand over "
                "to live input after the recorded ticks, or run the job on the original "
                "data_dir, which resumes from its own log"
            )

    def went_live(self, from_time: int, to_time: int) -> None:
        """The hand-over happened: the recorded bindings are not needed any more."""
        self.time_reset = (from_time, to_time)
        self.bindings = None


def write_marker(store: MetadataStore, flow: str, plan: ReplayPlan) -> None:
    """Record, before the first replayed binding, that this data dir is a replay."""
    store.kv_put(MARKER, flow, plan.marker())


def read_marker(store: MetadataStore, flow: str) -> dict[str, Any] | None:
    return store.kv_get(MARKER, flow)


def hand_over_tick(marker: Mapping[str, Any] | None) -> int | None:
    """The tick that hands over to live input (None: the replay does not go live)."""
    if not marker or not marker.get("then_live"):
        return None
    return int(marker["ticks"]) + 1


def restamped(source: Source) -> bool:
    """Is `source` read again at the recorded binding times instead of from the log?

    >>> from sealtime.sources import Rows, Timer
    >>> restamped(Timer(every="1s")), restamped(Rows({"x": "long"}, []))
    (True, False)
    """
    return isinstance(source, ClockedSource)


def link_part(part: BindingPart, log_dir: str) -> BindingPart:
    """A source's part of a recorded binding, with its log files (and late sidecars)
    hard-linked into `log_dir` (copied where no link is possible: across filesystems,
    or on an object store — `DataFS.link_or_copy`): the new log owns its files, so
    truncating it never deletes the original's. Linking an existing link again is a
    no-op (a resumed replay).

    >>> import tempfile
    >>> from sealtime.storage.fs import DataFS
    >>> old, new = DataFS.from_uri(tempfile.mkdtemp()), tempfile.mkdtemp()
    >>> old.write_bytes("f.parquet", b"x")
    >>> part = BindingPart(1, 2, 1, files=(LogFile(old.join("f.parquet"), 1, 1, 0),))
    >>> link_part(part, new).files[0].path == DataFS.from_uri(new).join("f.parquet")
    True
    """
    fs = DataFS.from_uri(log_dir, setting="replay log directory")
    fs.create_dir()

    def linked(f: LogFile) -> LogFile:
        late = _link(f.late_path, fs) if f.late_path else ""
        return dataclasses.replace(f, path=_link(f.path, fs), late_path=late)

    return dataclasses.replace(
        part,
        files=tuple(linked(f) for f in part.files),
        error_files=tuple(linked(f) for f in part.error_files),
        health_files=tuple(linked(f) for f in part.health_files),
    )


def _link(path: str, fs: DataFS) -> str:
    name = posixpath.basename(path.rstrip("/"))
    if fs.rel(path) == name:  # already the new log's own file
        return fs.join(name)
    fs.link_or_copy(path, name)
    return fs.join(name)


def open_live(src: SourceRuntime, acknowledged: Any) -> None:
    """After the last replayed tick: open the source's reader right after the position
    of the last replayed binding (as a restart would), so it reads live input next."""
    src.replay = False
    if src.reader is None:
        src.reader = src.source.resume(src.position, acknowledged)


def hand_over(sources: Iterable[SourceRuntime], from_time: int, to_time: int) -> None:
    """Tell every clocked reader that the next tick (at `to_time`) is the first live one
    after a replay that ended at `from_time`."""
    for src in sources:
        if isinstance(src.reader, HandOverReader):
            src.reader.hand_over(from_time, to_time)
