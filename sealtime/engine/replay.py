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
* **The commits are part of the record.** A run killed and restarted processes, in
  the restart's first tick, every binding minted since its sinks last committed: one
  sink commit where an uninterrupted run makes one per tick. The restart notes that
  catch-up (`BindingLog.note_catch_up`, `note_catch_up` here), and a replay steps
  through the noted bindings as one tick (`steps`): its sinks commit exactly the
  original's ranges, interruptions included.
* **A replay starts where the log reaches back.** From the beginning when every
  recorded binding's log files are still there (`sealtime.engine.retention`); else
  from a checkpoint of the original (`from_checkpoint`), whose state is linked into the
  new data dir with the bindings up to it (`import_checkpoint`), the bindings after it
  replayed. One that cannot reach back far enough is refused, naming the setting.
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, LogRetentionError, PlanError, StateError
from ..plan import Plan, SourceOutput
from ..plan import Source as SourceNode
from ..sources.base import Source
from ..sources.timer import ClockedSource, HandOverReader
from ..storage.fs import DataFS
from ..storage.metadata import MetadataStore
from ..storage.ownership import epoch_name
from ..time.order import MIN_TIME
from .bindings import Binding, BindingLog, BindingPart, log_gaps
from .frontiers import FrontierTracker
from .ingest import SourceRuntime
from .ingest_log import LogFile
from .retention import TRUNCATION

__all__ = [
    "MARKER",
    "ReplayPlan",
    "ReplayState",
    "frontiers_after",
    "hand_over",
    "hand_over_tick",
    "import_checkpoint",
    "link_part",
    "note_catch_up",
    "open_live",
    "read_marker",
    "restamped",
    "steps",
    "write_marker",
]

#: metadata-store namespace of the replay marker (key: the dataflow's name)
MARKER = "replay"


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay replays: the original's bindings as the replay steps through them
    (`steps`: a restart's catch-up as one tick), and where the original itself handed
    over from a replay to live input (tick, or None) so a changed-graph replay restamps
    that hand-over too.

    A replay from a checkpoint (`start` > 0) takes the original's state at tick `start`
    (`checkpoint`, its manifest) and the bindings up to it as they are, and replays the
    ones after it."""

    from_dir: str
    name: str
    bindings: list[Binding]
    then_live: bool = False
    recorded_hand_over: int | None = None
    #: the original's plan fingerprint (None when it recorded none)
    fingerprint: list[str] | None = None
    #: the original's metadata store URL (None: SQLite in `from_dir`)
    metadata: str | None = None
    #: the original's tick whose checkpoint the replay starts from (0: the beginning)
    start: int = 0
    #: that checkpoint's manifest
    checkpoint: dict[str, Any] | None = None
    #: the original's truncation marks (per source, the time its log starts at)
    marks: dict[str, int] = dataclasses.field(default_factory=dict)
    #: how many bindings the original recorded (`ticks` counts a catch-up as one)
    recorded: int = 0

    @classmethod
    def load(
        cls,
        from_dir: str,
        name: str,
        *,
        metadata: str | None = None,
        then_live: bool = False,
        from_checkpoint: int | str | None = None,
    ) -> ReplayPlan:
        """Read the original's bindings, catch-ups, checkpoints, plan and marker (the
        store is closed after). `from_checkpoint`: None replays from the beginning,
        which needs the whole log; ``"latest"`` or a tick starts from that recorded
        checkpoint. A start the log cannot serve is a `LogRetentionError` naming the
        setting and the fix."""
        store = MetadataStore.open(metadata or from_dir)
        try:
            log = BindingLog(store, name)
            bindings = log.load()
            if not bindings:
                raise ConfigError(
                    f"replay: no bindings for dataflow {name!r} in {from_dir}; "
                    "pass the data_dir (and name=) of the run to replay"
                )
            marks = dict(store.kv_get(TRUNCATION, name, {}))
            gaps = log_gaps(bindings, marks)
            checkpoints = dict(log.checkpoints())
            start, manifest = _start(from_dir, name, from_checkpoint, gaps, marks, checkpoints)
            replayed, step_of = steps(bindings, log.catch_ups(), start)
            recorded = hand_over_tick(read_marker(store, name))
            if recorded is not None:
                # (beyond the bindings: it never handed over — stopped before its first
                # live tick)
                recorded = step_of[recorded - 1] if recorded <= len(bindings) else None
            return cls(
                from_dir,
                name,
                replayed,
                then_live,
                recorded,
                store.kv_get("dataflow-plan", name),
                metadata,
                start,
                manifest,
                marks,
                len(bindings),
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
            "start": self.start,
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

    def check_checkpoint(self, flow_name: str, fingerprint: list[str]) -> None:
        """A replay from a checkpoint restores the original's operator state: only the
        graph that wrote it can take it."""
        if self.start and self.fingerprint is not None and self.fingerprint != fingerprint:
            raise PlanError(
                f"replay: Dataflow({flow_name!r}) differs from the graph that wrote the "
                f"checkpoint at tick {self.start} in {self.from_dir}, so it cannot take "
                "that checkpoint's state; replay a changed graph from the beginning "
                "(without from_checkpoint), which needs the original's whole log"
            )


def _start(
    from_dir: str,
    name: str,
    from_checkpoint: int | str | None,
    gaps: Mapping[str, int],
    marks: Mapping[str, int],
    checkpoints: Mapping[int, dict[str, Any]],
) -> tuple[int, dict[str, Any] | None]:
    """The tick a replay starts after (0: the beginning) and its checkpoint's manifest,
    or a `LogRetentionError` saying why the log cannot serve it and what to do."""
    recorded = sorted(checkpoints)
    if from_checkpoint is None:
        if not gaps:
            return 0, None
        source, tick = max(gaps.items(), key=lambda kv: kv[1])
        usable = [t for t in recorded if t >= max(gaps.values())]
        hint = (
            f"replay from its checkpoint at tick {usable[-1]} instead (sealtime replay "
            "--from-checkpoint latest, Dataflow.replay(..., from_checkpoint='latest')): its "
            "sinks then receive the commits after that tick; "
            if usable
            else ""
        )
        raise LogRetentionError(
            f"replay: the ingest log of source {source!r} in {from_dir} no longer reaches "
            f"back to the beginning (times before {marks[source]} were removed behind a "
            f"checkpoint, up to tick {tick}: retain_history); {hint}to replay whole runs, "
            "keep their log longer: Dataflow.source(..., retain_history='7d') or None for "
            "all of it (SQL: RETAIN HISTORY), or Dataflow(truncate_log=False)"
        )
    if from_checkpoint == "latest":
        if not recorded:
            raise LogRetentionError(
                f"replay: dataflow {name!r} in {from_dir} has recorded no checkpoint; "
                "replay from the beginning (without from_checkpoint), or let the run write "
                "checkpoints: Dataflow(checkpoint_every=N)"
            )
        tick = recorded[-1]
    else:
        try:
            tick = int(from_checkpoint)
        except (TypeError, ValueError):
            raise ConfigError(
                f"replay(from_checkpoint={from_checkpoint!r}): give a checkpoint's tick or "
                f"'latest' (recorded: {recorded or 'none'})"
            ) from None
        if tick not in checkpoints:
            raise LogRetentionError(
                f"replay: dataflow {name!r} in {from_dir} has no checkpoint at tick {tick} "
                f"(recorded: {recorded or 'none'}; a run keeps its newest one); replay from "
                "one of those, or from the beginning while the log reaches back"
            )
    later = {s: t for s, t in gaps.items() if t > tick}
    if later:
        source = next(iter(later))
        raise LogRetentionError(
            f"replay: the ingest log of source {source!r} in {from_dir} lost entries after "
            f"the checkpoint at tick {tick} (up to tick {later[source]}); replay from a "
            "later checkpoint"
        )
    return tick, checkpoints[tick]


def steps(
    bindings: Sequence[Binding], catch_ups: Sequence[tuple[int, int]], start: int = 0
) -> tuple[list[Binding], list[int]]:
    """The bindings as a replay steps through them, and per original tick the replay's
    tick that covers it. A catch-up ``(after, through)`` — a restart's first tick
    processed the bindings ``after + 1 .. through`` in one step — becomes one binding:
    the last one's times, positions and state, every one's log entries. The first
    `start` bindings (up to a checkpoint the replay starts from) stay as they are.

    >>> def b(tick):
    ...     f = LogFile(f"/l/part-{tick}", tick, tick, 1)
    ...     return Binding(tick, tick * 10, {"s": BindingPart(tick, tick + 1, tick * 10, files=(f,))})
    >>> out, of = steps([b(t) for t in range(1, 6)], [(1, 3)])
    >>> [(x.tick, x.into_time, len(x.sources["s"].files)) for x in out], of
    ([(1, 10, 1), (2, 30, 2), (3, 40, 1), (4, 50, 1)], [1, 2, 2, 3, 4])
    """
    through = {after: last for after, last in catch_ups if after >= start}
    out: list[Binding] = list(bindings[:start])
    step_of = list(range(1, start + 1))
    i = start
    while i < len(bindings):
        last = max(i + 1, min(through.get(i, i + 1), len(bindings)))
        group = bindings[i:last]
        out.append(_merged(group, len(out) + 1))
        step_of += [len(out)] * len(group)
        i = last
    return out, step_of


def _merged(group: Sequence[Binding], tick: int) -> Binding:
    """`group`'s bindings as one binding numbered `tick` (see `steps`)."""
    last = group[-1]
    parts = {}
    for name, part in last.sources.items():
        earlier = [b.sources[name] for b in group[:-1] if name in b.sources]
        parts[name] = dataclasses.replace(
            part,
            files=tuple(f for p in [*earlier, part] for f in p.files),
            error_files=tuple(f for p in [*earlier, part] for f in p.error_files),
            health_files=tuple(f for p in [*earlier, part] for f in p.health_files),
        )
    return Binding(tick, last.into_time, parts)


def frontiers_after(plan: Plan, binding: Binding) -> dict[int, int | None]:
    """The frontier at every node of `plan` once `binding`'s tick ran: what its sealed
    ranges reached. The roots follow the binding as in `Engine.tick`: a source's own
    frontier, a side output's the binding time plus one (empty once the source ended).

    >>> from pyspark.sql import types as T
    >>> from sealtime.plan import Plan, RunConfig, SideOutput, Source, SourceOutput
    >>> from sealtime.sources import Rows
    >>> schema = T.StructType([T.StructField("k", T.StringType())])
    >>> s = Source(id=0, name="s", inputs=(), schema=schema, source=Rows({"k": "string"}, []))
    >>> late = SourceOutput(id=1, name="s.late", inputs=(s,), schema=schema,
    ...                     output=SideOutput.LATE)
    >>> plan = Plan((s, late), (), RunConfig("f", "/tmp/f"))
    >>> frontiers_after(plan, Binding(1, 100, {"s": BindingPart(1, 50, 100)}))
    {0: 50, 1: 101}
    """
    roots: dict[int, int | None] = {}
    for node in plan.nodes:
        part = None
        if isinstance(node, SourceNode):
            part = binding.sources.get(node.name)
            roots[node.id] = MIN_TIME if part is None else part.frontier
        elif isinstance(node, SourceOutput):
            part = binding.sources.get(node.source.name)
            exhausted = part is not None and part.state.exhausted
            roots[node.id] = None if exhausted else binding.into_time + 1
    return FrontierTracker(plan.graph()).advance(roots)


def note_catch_up(log: BindingLog, plan: Plan, stored: Sequence[Binding]) -> int | None:
    """At a restart: note which bindings the first tick will process in one step — those
    after the last tick whose sealed ranges every exactly-once sink has committed
    (found from the sinks' durable uppers and the frontiers each binding sealed, by
    bisection). Returns that tick, or None when nothing is caught up (no sink to
    reproduce, or all committed). With sinks at different uppers (a crash between two
    sinks' commits of one tick) the least one decides (docs/durability.md)."""
    sinks = [(node.id, sink.durable_upper()) for node, sink in plan.sinks if sink.exactly_once]
    if not sinks or not stored:
        return None

    def committed(tick: int) -> bool:
        if tick == 0:
            return True
        sealed = frontiers_after(plan, stored[tick - 1])
        return all(
            upper is None or (sealed[nid] is not None and sealed[nid] <= upper)
            for nid, upper in sinks
        )

    lo, hi = 0, len(stored)  # committed(lo) holds; find the largest tick that does
    if committed(hi):
        return None
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if committed(mid) else (lo, mid)
    log.note_catch_up(stored[lo - 1].tick if lo else 0, stored[-1].tick + 1)
    return lo


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
        cls, log: BindingLog, plan: Plan, replay: ReplayPlan | None
    ) -> tuple[ReplayState, list[Binding]]:
        """The replay state of the data dir `log` belongs to, and its stored bindings:
        `replay` when this run was asked to replay, else what a marker left by an
        earlier run says. A data dir holding a replay keeps a marker, so a restart
        continues an interrupted replay, hands over if the replay finished just before,
        or refuses to run a finished replay-only dir (`check_can_tick`). A replay from a
        checkpoint starts by importing it (`import_checkpoint`). A restart notes its
        catch-up (`note_catch_up`)."""
        store, flow = log.store, log.flow
        stored = log.load()
        sources = [(n.name, n.source) for n in plan.sources()]
        marker = read_marker(store, flow)
        if replay is not None:
            same = marker is not None and (marker["from"], marker["name"]) == (
                replay.from_dir,
                replay.name,
            )
            if stored and not same:
                raise PlanError(
                    f"replay: Dataflow({flow!r}) already has {len(stored)} bindings in its "
                    "data_dir; replay into a new, empty data_dir"
                )
            replay.check_sources(flow, sources)
            replay.check_checkpoint(flow, plan.fingerprint())
            if not stored or len(stored) < marker["ticks"]:
                # (a resumed replay keeps the tick count it started with)
                ticks = marker["ticks"] if stored else replay.ticks
                replay = dataclasses.replace(replay, bindings=replay.bindings[:ticks])
                if stored or not replay.start:
                    write_marker(store, flow, replay)
                else:
                    import_checkpoint(replay, log, plan.config.data_dir)
                    stored = log.load()
                marker = replay.marker()
        elif marker is not None and len(stored) < marker["ticks"]:
            replay = ReplayPlan.load(
                marker["from"],
                marker["name"],
                metadata=marker.get("metadata"),
                then_live=marker["then_live"],
                from_checkpoint=marker.get("start") or None,
            )
        state = cls(
            plan=replay,
            replay_ticks=0 if marker is None else int(marker["ticks"]),
            then_live=bool(marker and marker["then_live"]),
            hand_over_at=hand_over_tick(marker),
        )
        if replay is not None and len(stored) < state.replay_ticks:
            state.bindings = replay.bindings[: state.replay_ticks]
            state.restamp_hand_over = replay.recorded_hand_over
        if stored and not plan.config.live:
            note_catch_up(log, plan, stored)
        return state, stored

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


def import_checkpoint(replay: ReplayPlan, log: BindingLog, data_dir: str) -> None:
    """Make the new, empty data dir `data_dir` (its store behind `log`) what the
    original was right after the checkpoint `replay` starts from, so the engine resumes
    it as after a restart and replays the bindings after it:

    * the files the checkpoint needs are hard-linked (copied across filesystems) into
      the new data dir: its operators' state directories (arrangement runs of the
      epoch that wrote the checkpoint, linked as a data dir without owners has them, so
      the new owner adopts them and later deletes them like any older epoch's), and
      every file the manifest names (its frames, held-back updates), with the manifest's
      paths moved to the new data dir;
    * the bindings up to the checkpoint, their log files linked (those the original's
      truncation removed are left out, as a restart leaves them out), the truncation
      marks, the checkpoint and the replay's marker are recorded in one transaction.

    The original may be running: if its checkpoint was replaced while the files were
    linked, the import is refused (run the replay again)."""
    assert replay.checkpoint is not None
    old = DataFS.from_uri(replay.from_dir, setting="replay(from_data_dir)")
    new = DataFS.from_uri(data_dir, setting="Dataflow(data_dir)")
    epochs: set[int] = set()
    paths: set[str] = set()
    manifest = _rehome(replay.checkpoint, old, new, epochs, paths)
    dirs = {epoch_name(e) for e in epochs}
    for entry in old.list("state", recursive=True):
        parts = entry.rel.split("/")
        other = [p for p in parts if _epoch_dir(p) and p not in dirs]
        if entry.is_dir or other:
            continue  # (another epoch's runs: not the checkpoint's)
        new.link_or_copy(old.join(entry.rel), "/".join(p for p in parts if p not in dirs))
    for rel in sorted(paths):
        if old.is_dir(rel):
            for entry in old.list(rel, recursive=True):
                if not entry.is_dir:
                    new.link_or_copy(old.join(entry.rel), entry.rel)
        elif old.exists(rel):
            new.link_or_copy(old.join(rel), rel)
    imported = []
    for binding in replay.bindings[: replay.start]:
        parts = {}
        for name, part in binding.sources.items():
            mark = replay.marks.get(name, MIN_TIME)
            kept = {
                k: tuple(f for f in getattr(part, k) if f.max_time >= mark)
                for k in ("files", "error_files", "health_files")
            }
            parts[name] = link_part(dataclasses.replace(part, **kept), new.join("log", name))
        imported.append((binding.tick, binding.into_time, parts))
    _check_still_recorded(replay)
    with log.store.transaction():
        write_marker(log.store, log.flow, replay)
        for tick, into, parts in imported:
            log.append(tick, into, parts)
        log.store.kv_put(TRUNCATION, log.flow, replay.marks)
        log.record_checkpoint(replay.start, manifest)


def _epoch_dir(name: str) -> bool:
    """Is `name` an epoch's directory (``e<k>``)?"""
    return len(name) > 1 and name[0] == "e" and name[1:].isdigit()


def _rehome(value: Any, old: DataFS, new: DataFS, epochs: set[int], paths: set[str]) -> Any:
    """A checkpoint manifest (JSON) of `old` as `new` holds it after the import: paths
    under `old` moved to `new` (collected in `paths`), arrangement states (a
    ``version``, ``partitions`` and ``epoch``) read from the layout without owners
    (their epochs collected in `epochs`).

    >>> old, new = DataFS.from_uri("/o"), DataFS.from_uri("/n")
    >>> e, p = set(), set()
    >>> m = {"directory": "/o/checkpoints/3", "ops": [{"version": 2, "partitions": 1,
    ...      "epoch": 4}], "schema": "{}"}
    >>> _rehome(m, old, new, e, p), e, p
    ({'directory': '/n/checkpoints/3', 'ops': [{'version': 2, 'partitions': 1, 'epoch': None}], 'schema': '{}'}, {4}, {'checkpoints/3'})
    """
    if isinstance(value, dict):
        out = {k: _rehome(v, old, new, epochs, paths) for k, v in value.items()}
        if {"version", "partitions", "epoch"} <= out.keys() and out["epoch"] is not None:
            epochs.add(int(out["epoch"]))
            out["epoch"] = None
        return out
    if isinstance(value, list):
        return [_rehome(v, old, new, epochs, paths) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "file:")) or "://" in value):
        rel = old.rel(value)
        if rel:
            paths.add(rel)
            return new.join(rel)
    return value


def _check_still_recorded(replay: ReplayPlan) -> None:
    """The original still records the checkpoint whose files were just linked (so none
    of them was deleted meanwhile: a run deletes a checkpoint's files only after it
    recorded a newer one)."""
    store = MetadataStore.open(replay.metadata or replay.from_dir)
    try:
        ticks = [t for t, _ in BindingLog(store, replay.name).checkpoints()]
    finally:
        store.close()
    if replay.start not in ticks:
        raise StateError(
            f"replay: the run in {replay.from_dir} replaced its checkpoint at tick "
            f"{replay.start} (now {ticks or 'none'}) while it was being copied; replay "
            "again into a new, empty data_dir (it starts from the newest checkpoint)"
        )


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
