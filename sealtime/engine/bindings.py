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

The same table gives the **resumption frontier**, per output of each source: the main
output (rows at their own times) and the side outputs (``late``, ``errors``, ``health``:
rows at their tick's binding time) each have the durable upper ``R`` of the exactly-once
sinks downstream of *that output*; a source's position is acknowledged up to the last
binding whose logged rows of every output lie below that output's ``R``. Comparing one
``R`` with all rows would let one late row, stamped at a binding time far ahead of the
event times the sinks have made durable, hold the acknowledgement back for good.
Upstream acknowledgements never pass it.

A restart whose first tick covers several bindings (those minted but not committed
before a crash, see `sealtime.engine.replay`) is noted as a **catch-up**
(`BindingLog.note_catch_up`): the record of which ticks one step covered, so that a
replay commits the same ranges.

Checkpoints (see `sealtime.engine.checkpoint`) and the dataflow's plan fingerprint are
kept next to the bindings, in the same store.

Before it writes anything, the engine makes its process the owner of the data dir
(`BindingLog.acquire_lease`, `sealtime.storage.ownership`): a second writer is refused,
and every later write of the store — bindings, checkpoints, truncation marks, sink
commits — is fenced by the owner's epoch. Log files are written under the epoch
(``log/<source>/e<epoch>/``), so the ones an older epoch wrote and no binding names (the
tick a crashed or fenced owner was logging) are dead, and the new owner deletes them.

>>> import tempfile
>>> from sealtime.storage import MetadataStore
>>> with tempfile.TemporaryDirectory() as d:
...     log = BindingLog(MetadataStore.open(d), "flow")
...     part = BindingPart(position=7, frontier=1001, into_time=1000,
...                        state=SourceState(position=7, frontier=1001, max_logged=1000))
...     _ = log.append(1, 1000, {"s": part})
...     [(b.tick, b.into_time, b.sources["s"].position) for b in log.load()]
[(1, 1000, 7)]
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import PlanChangedError, StoredFormatError
from ..storage.fs import DataFS
from ..storage.metadata import MetadataStore
from ..storage.ownership import Lease, acquire_lease, epoch_of_name
from ..time.order import MIN_TIME
from .ingest_log import LogFile

__all__ = [
    "CATCH_UP",
    "OUTPUTS",
    "Binding",
    "BindingLog",
    "BindingPart",
    "PlanChangedError",
    "SourceState",
    "Uppers",
    "log_gaps",
    "output_maxima",
    "resumption_positions",
    "restore_point",
]

#: the outputs of a source's log, as `LogFile.bounds` names them
OUTPUTS = ("main", "late", "errors", "health")

#: metadata-store namespace of the catch-up records (key: the dataflow's name)
CATCH_UP = "catch-up"

#: durable uppers for the resumption frontier: one time for every source's data rows
#: (main and late, as before outputs were told apart), or per source name and output
#: (`OUTPUTS`) the least upper of the exactly-once sinks downstream of that output — an
#: output absent, or None, constrains nothing (no such sink, or all finished)
Uppers = int | None | Mapping[str, Mapping[str, int | None]]

_MIGRATIONS = [
    "CREATE TABLE IF NOT EXISTS sealtime_bindings ("
    "flow TEXT NOT NULL, tick BIGINT NOT NULL, into_time BIGINT NOT NULL, "
    "sources TEXT NOT NULL, PRIMARY KEY (flow, tick))",
    "CREATE TABLE IF NOT EXISTS sealtime_checkpoints ("
    "flow TEXT NOT NULL, tick BIGINT NOT NULL, manifest TEXT NOT NULL, "
    "PRIMARY KEY (flow, tick))",
]


def _from_json(cls: type, d: Mapping[str, Any], what: str) -> dict[str, Any]:
    """The keyword arguments of dataclass `cls` in the JSON object `d`: missing keys
    keep their defaults (older data dirs), an unknown key is an error (a newer one)."""
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise StoredFormatError(
            f"{what}: unknown keys {unknown} in a stored binding; this data_dir was written "
            "by a newer sealtime — run that version"
        )
    return dict(d)


@dataclass(frozen=True)
class SourceState:
    """The scalar state of a source after a tick: what a restart needs besides the log
    files (stored as the ``"state"`` object of a `BindingPart`).

    * `position`: source-native position after the rows read; `exhausted`;
    * the timestamper's state (`sealtime.engine.timestamper.Timestamper`): `frontier`,
      `max_seen`, `reported`, `last_active`, `idle_floor`, `idle_at`;
    * the log's: `offset` (rows logged: the next ``_offset``), `max_logged` (largest
      ``_time`` logged, for the resumption frontier);
    * counters: `rows_in`, `late_count`, `error_count`; `health`: the status last logged.

    >>> s = SourceState.from_json({"position": 3, "frontier": 10, "max_logged": 9})
    >>> s.position, s.exhausted, SourceState.from_json(s.to_json()) == s
    (3, False, True)
    """

    position: Any = None
    frontier: int | None = MIN_TIME
    exhausted: bool = False
    max_seen: int | None = None
    reported: int | None = None
    offset: int = 0
    late_count: int = 0
    error_count: int = 0
    rows_in: int = 0
    max_logged: int = MIN_TIME
    health: str | None = None
    last_active: int | None = None
    idle_floor: int | None = None
    idle_at: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The stored form: a JSON object of the fields."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> SourceState:
        """Read the stored form (missing keys of older data dirs keep their defaults)."""
        return cls(**_from_json(cls, d, "source state"))


#: log entry keys written only when set (an entry without late rows is stored as before
#: they existed, so the stored format of such parts does not change)
_OPTIONAL_ENTRY_KEYS = ("late_time", "main_min", "main_max")


def _entry_json(entry: LogFile) -> dict[str, Any]:
    out = dataclasses.asdict(entry)
    for key in _OPTIONAL_ENTRY_KEYS:
        if out[key] is None:
            del out[key]
    return out


def _entries(raw: Sequence[Mapping[str, Any]]) -> tuple[LogFile, ...]:
    return tuple(LogFile(**_from_json(LogFile, f, "log entry")) for f in raw)


@dataclass(frozen=True)
class BindingPart:
    """A source's part of one binding: where the source stands after the tick and the
    ingest-log entries the tick added.

    Stored (`to_json`) as the JSON object ``{"position", "frontier", "into_time",
    "state", "files", "error_files", "health_files", "rows"}``: `state` is a
    `SourceState`, the three lists hold `LogFile` entries (data, errors, health) and
    ``rows`` counts the data rows the tick logged (the sum of the data entries' rows).
    `Dataflow.bindings` shows this stored form.

    >>> p = BindingPart(position=4, frontier=11, into_time=10,
    ...                 files=(LogFile("/l/part-1", 10, 10, 2),))
    >>> p.rows, p.to_json()["files"][0]["rows"], BindingPart.from_json(p.to_json()) == p
    (2, 2, True)
    """

    position: Any
    frontier: int | None
    into_time: int
    state: SourceState = field(default_factory=SourceState)
    files: tuple[LogFile, ...] = ()
    error_files: tuple[LogFile, ...] = ()
    health_files: tuple[LogFile, ...] = ()

    @property
    def rows(self) -> int:
        """Data rows the tick logged (late ones included)."""
        return sum(f.rows for f in self.files)

    def entries(self) -> tuple[LogFile, ...]:
        """All log entries of the part: data, errors, health."""
        return self.files + self.error_files + self.health_files

    def to_json(self) -> dict[str, Any]:
        """The stored form (see the class docstring)."""
        return {
            "position": self.position,
            "frontier": self.frontier,
            "into_time": self.into_time,
            "state": self.state.to_json(),
            "files": [_entry_json(f) for f in self.files],
            "error_files": [_entry_json(f) for f in self.error_files],
            "health_files": [_entry_json(f) for f in self.health_files],
            "rows": self.rows,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any], into_time: int | None = None) -> BindingPart:
        """Read the stored form; `into_time` is the binding's (for parts stored without
        it). Keys that older data dirs lack keep their defaults."""
        d = dict(d)
        d.pop("rows", None)  # derived from the files
        state = SourceState.from_json(d.pop("state", {}))
        return cls(
            position=d.pop("position", state.position),
            frontier=d.pop("frontier", state.frontier),
            into_time=d.pop("into_time", into_time),
            state=state,
            files=_entries(d.pop("files", [])),
            error_files=_entries(d.pop("error_files", [])),
            health_files=_entries(d.pop("health_files", [])),
            **_from_json(cls, d, "binding part"),
        )


@dataclass(frozen=True)
class Binding:
    """One durable binding: ``into_time`` and each source's `BindingPart`.

    >>> b = Binding(1, 10, {"s": BindingPart(position=1, frontier=11, into_time=10)})
    >>> Binding.from_json(b.to_json()) == b, b.to_json()["sources"]["s"]["position"]
    (True, 1)
    """

    tick: int
    into_time: int
    sources: dict[str, BindingPart]

    def to_json(self) -> dict[str, Any]:
        """``{"tick", "into_time", "sources": {name: part}}`` with parts in stored form."""
        return {
            "tick": self.tick,
            "into_time": self.into_time,
            "sources": {name: part.to_json() for name, part in self.sources.items()},
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Binding:
        """Read `to_json`'s form."""
        into = int(d["into_time"])
        parts = {n: BindingPart.from_json(p, into) for n, p in d["sources"].items()}
        return cls(int(d["tick"]), into, parts)


def output_maxima(part: BindingPart) -> dict[str, int]:
    """The largest time of the rows each output of `part` logged (`OUTPUTS`; an output
    without rows is absent): main rows at their own times, late, errors and health rows
    at their tick's binding time (`LogFile.bounds`).

    >>> late = LogFile("/l/part-1", 5, 900, 3, late=1, late_time=900, main_min=5, main_max=7)
    >>> output_maxima(BindingPart(1, 8, 900, files=(late,)))
    {'main': 7, 'late': 900}
    """
    out: dict[str, int] = {}
    logged = (part.files, part.files, part.error_files, part.health_files)
    for output, entries in zip(OUTPUTS, logged, strict=True):
        for f in entries:
            bounds = f.bounds(output)
            if bounds is not None:
                out[output] = max(out.get(output, MIN_TIME), bounds[1])
    return out


def _accumulate(
    previous: Mapping[str, Mapping[str, int]], parts: Mapping[str, BindingPart]
) -> dict[str, dict[str, int]]:
    """Per source and output, the largest time logged up to and including `parts`."""
    out = {name: dict(maxima) for name, maxima in previous.items()}
    for name, part in parts.items():
        acc = out.setdefault(name, {})
        for output, t in output_maxima(part).items():
            acc[output] = max(acc.get(output, MIN_TIME), t)
    return out


def _limit(upper: Uppers, source: str, output: str) -> int | None:
    """The upper the rows of `source`'s `output` must lie below (None: no limit)."""
    if upper is None or isinstance(upper, int):
        return upper if output in ("main", "late") else None
    return upper.get(source, {}).get(output)


def resumption_positions(
    parts: Sequence[Mapping[str, BindingPart]],
    upper: Uppers,
    *,
    maxima: Sequence[Mapping[str, Mapping[str, int]]] | None = None,
) -> dict[str, Any]:
    """Per source, the position of the last binding up to which every output's logged
    rows lie below that output's durable upper (`Uppers`: one time for the data rows of
    every source, or per source and output; None = everything is durable downstream):
    the resumption frontier in source-native positions. `parts` are the bindings'
    per-source parts, oldest first (`maxima`: their running `output_maxima`, if known);
    sources with no such binding are left out.

    >>> def part(pos, main, late=None):
    ...     f = LogFile("/l/p", main, late or main, 2, late=int(late is not None),
    ...                 late_time=late, main_min=main, main_max=main)
    ...     return {"s": BindingPart(pos, None, 0, files=(f,))}
    >>> b = [part(4, 10), part(9, 20, late=1000), part(12, 30)]
    >>> resumption_positions(b, 15), resumption_positions(b, None)
    ({'s': 4}, {'s': 12})

    One time for all rows: the late row at 1000 holds everything after it back. Per
    output, with no exactly-once sink on ``late``, only the main rows count:

    >>> resumption_positions(b, 31), resumption_positions(b, {"s": {"main": 31}})
    ({'s': 4}, {'s': 12})
    """
    if maxima is None:
        running: list[dict[str, dict[str, int]]] = []
        for sources in parts:
            running.append(_accumulate(running[-1] if running else {}, sources))
        maxima = running
    out: dict[str, Any] = {}
    names = set(parts[-1]) if parts else set()
    # From the newest binding back: the common case is found at once.
    for i in range(len(parts) - 1, -1, -1):
        for name, part in parts[i].items():
            if name in out:
                continue
            logged = maxima[i].get(name, {})
            if all(
                (limit := _limit(upper, name, output)) is None or t < limit
                for output, t in logged.items()
            ):
                out[name] = part.position
        if names <= out.keys():
            break
    return out


def log_gaps(bindings: Sequence[Binding], truncated: Mapping[str, int]) -> dict[str, int]:
    """Per source whose log no longer holds all it logged, the last tick with an entry
    its truncation mark (in `truncated`) removed: a replay can start after that tick
    only (from a checkpoint), not from the beginning.

    >>> def b(tick, t):
    ...     f = LogFile(f"/l/part-{tick}", t, t, 1)
    ...     return Binding(tick, t, {"s": BindingPart(tick, t + 1, t, files=(f,))})
    >>> log_gaps([b(1, 10), b(2, 20), b(3, 30)], {"s": 25}), log_gaps([b(1, 10)], {})
    ({'s': 2}, {})
    """
    out: dict[str, int] = {}
    for binding in bindings:
        for name, part in binding.sources.items():
            mark = truncated.get(name, MIN_TIME)
            if any(f.max_time < mark for f in part.entries()):
                out[name] = binding.tick
    return out


def restore_point(
    bindings: Sequence[Binding], truncated: Mapping[str, int]
) -> dict[str, BindingPart]:
    """Per source, what a restart restores: the part of its last binding, with the log
    entries of all its bindings except those a checkpoint truncated (entries whose
    times all lie below the source's mark in `truncated`).

    >>> def b(tick, t):
    ...     f = LogFile(f"/l/part-{tick}", t, t, 1)
    ...     return Binding(tick, t, {"s": BindingPart(tick, t + 1, t, files=(f,))})
    >>> p = restore_point([b(1, 10), b(2, 20)], {"s": 15})["s"]
    >>> p.position, [f.path for f in p.files]
    (2, ['/l/part-2'])
    """
    out: dict[str, BindingPart] = {}
    kept: dict[str, dict[str, list[LogFile]]] = {}
    for binding in bindings:
        for name, part in binding.sources.items():
            out[name] = part
            mark = truncated.get(name, MIN_TIME)
            lists = kept.setdefault(name, {"files": [], "error_files": [], "health_files": []})
            for entries, logged in zip(
                lists.values(), (part.files, part.error_files, part.health_files), strict=True
            ):
                entries += [f for f in logged if f.max_time >= mark]
    return {
        name: dataclasses.replace(part, **{k: tuple(v) for k, v in kept[name].items()})
        for name, part in out.items()
    }


class BindingLog:
    """The bindings and checkpoints of one dataflow (by name) in a metadata store."""

    def __init__(self, store: MetadataStore, flow: str) -> None:
        self.store = store
        self.flow = flow
        store.migrate("engine", _MIGRATIONS)
        #: the per-source parts of the bindings loaded or appended by this object
        self._parts: list[dict[str, BindingPart]] = []
        #: their running `output_maxima` (for `resumption`)
        self._maxima: list[dict[str, dict[str, int]]] = []

    # ------------------------------------------------------------------ owner
    def acquire_lease(self, config: Any) -> Lease:
        """Make this process the owner of the dataflow's data dir (``config.data_dir``)
        before anything is written, or raise `DataDirOwnedError` naming the owner; then
        delete the log files older epochs left unbound. The lease's length and a forced
        takeover come from ``config.lease`` / ``config.takeover`` when the run config has
        them, else from `sealtime.storage.ownership.lease_settings` and the environment."""
        lease = acquire_lease(
            self.store,
            config.data_dir,
            self.flow,
            lease=getattr(config, "lease", None),
            takeover=getattr(config, "takeover", None),
        )
        self.sweep_log(DataFS.from_uri(config.data_dir).child("log"), lease.epoch)
        return lease

    def sweep_log(self, log: DataFS, epoch: int) -> int:
        """Delete the ingest-log files in `log` (``<source>/e<k>/``) that an epoch
        ``k < epoch`` wrote and no binding names: a tick whose binding never committed
        (the owner crashed, or was fenced). Returns how many went.

        >>> import tempfile
        >>> from sealtime.storage import MetadataStore
        >>> d = DataFS.from_uri(tempfile.mkdtemp())
        >>> for name in ("s/e1/part-1.parquet", "s/e1/part-2.parquet", "s/e2/part-2.parquet"):
        ...     d.write_bytes(name, b"x")
        >>> bl = BindingLog(MetadataStore.open(d.root), "f")
        >>> part = BindingPart(1, None, 1, files=(LogFile(d.join("s/e1/part-1.parquet"), 1, 1, 1),))
        >>> _ = bl.append(1, 1, {"s": part})
        >>> bl.sweep_log(d, epoch=2), sorted(d.names("s/e1")), d.names("s/e2")
        (1, ['part-1.parquet'], ['part-2.parquet'])
        """
        old: list[tuple[str, list[str]]] = []
        for source in log.names():
            for name in log.names(source):
                k = epoch_of_name(name)
                if k is not None and k < epoch:
                    old.append((f"{source}/{name}", log.names(f"{source}/{name}")))
        if not any(files for _, files in old):
            return 0
        named = {
            path
            for binding in self.load()
            for part in binding.sources.values()
            for entry in part.entries()
            for path in entry.paths()
        }
        gone = 0
        for directory, files in old:
            dead = [f"{directory}/{f}" for f in files if log.join(f"{directory}/{f}") not in named]
            gone += log.delete_files(dead)
            if len(dead) == len(files):
                log.delete_dir(directory)
        return gone

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
    def append(self, tick: int, into_time: int, sources: Mapping[str, BindingPart]) -> Binding:
        """Durably mint the binding of `tick` (one transaction; fails if it exists)."""
        binding = Binding(tick, into_time, dict(sources))
        stored = binding.to_json()["sources"]
        with self.store.transaction() as tx:
            tx.execute(
                "INSERT INTO sealtime_bindings (flow, tick, into_time, sources) "
                "VALUES (?, ?, ?, ?)",
                (self.flow, tick, into_time, json.dumps(stored, sort_keys=True)),
            )
        self._track(binding.sources)
        return binding

    def _track(self, parts: Mapping[str, BindingPart]) -> None:
        self._parts.append(dict(parts))
        self._maxima.append(_accumulate(self._maxima[-1] if self._maxima else {}, parts))

    def load(self) -> list[Binding]:
        """All bindings, oldest first."""
        rows = self.store.query(
            "SELECT tick, into_time, sources FROM sealtime_bindings WHERE flow = ? ORDER BY tick",
            (self.flow,),
        )
        out = [
            Binding.from_json({"tick": t, "into_time": i, "sources": json.loads(s)})
            for t, i, s in rows
        ]
        self._parts, self._maxima = [], []
        for b in out:
            self._track(b.sources)
        return out

    # ------------------------------------------------------------------ resumption
    #: `resumption_positions` (module function), also reachable from the class
    resumption_positions = staticmethod(resumption_positions)

    def resumption(self, upper: Uppers) -> dict[str, Any]:
        """`resumption_positions` over the bindings this object loaded and appended
        (`upper`: `Uppers`, as `sealtime.engine.commits.durable_upper` gives them)."""
        return resumption_positions(self._parts, upper, maxima=self._maxima)

    # ------------------------------------------------------------------ catch-ups
    def note_catch_up(self, after: int, through: int) -> None:
        """Record that one step covers the bindings ``after + 1 .. through``: a restart
        found the sinks committed up to tick `after` and its first tick, `through`,
        processes everything since (a restart again before `through` committed
        replaces the note: same `after`, a later `through`)."""
        notes = dict(self.store.kv_get(CATCH_UP, self.flow, {}))
        notes[str(after)] = through
        self.store.kv_put(CATCH_UP, self.flow, notes)

    def catch_ups(self) -> list[tuple[int, int]]:
        """The recorded catch-ups ``(after, through)``, oldest first.

        >>> import tempfile
        >>> from sealtime.storage import MetadataStore
        >>> log = BindingLog(MetadataStore.open(tempfile.mkdtemp()), "f")
        >>> log.note_catch_up(3, 5); log.note_catch_up(3, 6); log.note_catch_up(9, 11)
        >>> log.catch_ups()
        [(3, 6), (9, 11)]
        """
        notes = self.store.kv_get(CATCH_UP, self.flow, {})
        return sorted((int(a), int(t)) for a, t in notes.items())

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
