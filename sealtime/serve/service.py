"""`Service`: the live service behind ``sealtime serve``.

One process, one Spark session, one live dataflow (`Dataflow(live=True)`), ticking
continuously on a thread of its own (the *ticker*). It holds every source, view, sink
and publication of the deployment; its catalog (`ServiceCatalog`) lives in the metadata
store. Clients' statements reach it through sessions (`sealtime.serve.session`, the
`Backend` of the PostgreSQL wire front end):

* a statement that changes the graph (CREATE, DROP) is queued to the ticker and applied
  **between ticks**, never inside one; the client waits for its outcome;
* a new view hydrates beside the live ticks (`sealtime.engine.hydration`) and becomes
  visible once it has caught up; every view keeps its history in a shard
  (`sealtime.serve.history.ViewHistory`) that ``SELECT ... AS OF`` and ``SUBSCRIBE`` read;
* a restart (even after ``kill -9``) replays the catalog's statements in creation order:
  the views live at the latest checkpoint are rebuilt under the same node ids and
  resume from it and the log; the others hydrate again.

Nothing here reads the engine's attributes but through its snapshot and methods.
"""

from __future__ import annotations

import logging
import threading
import time as _time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ..errors import ConfigError, FencedError, NotFoundError, StateError
from ..sql import catalog as tables
from ..sql.pipeline import Pipeline
from ..sql.statements import (
    CreateSink,
    CreateSource,
    CreateView,
    Publish,
    parse_statement,
    split,
)
from .backend import ObjectExistsError
from .catalog import CatalogEntry, ObjectKind, ServiceCatalog
from .history import Hub, ViewHistory

__all__ = ["Service", "ServiceSettings"]

log = logging.getLogger("sealtime.serve")

#: ticks in a row that may fail (each followed by a rebuild) before the service stops
MAX_FAILED_TICKS = 5

T = TypeVar("T")


@dataclass(frozen=True)
class ServiceSettings:
    """How the service runs (``sealtime serve`` options).

    * `name`: the service's dataflow name (its bindings, catalog and shards);
    * `tick`: the ticker's interval; `checkpoint_every`: ticks between checkpoints;
    * `master`, `metadata`: a Spark master URL, a PostgreSQL metadata URL;
    * `statement_timeout`: how long a statement waits for the ticker (a DDL, a view to
      finish hydrating, an ``AS OF`` time to be sealed) before it fails;
    * `fuse`: views of one shape over one collection share one Spark job a tick
      (`sealtime.engine.fusion`); False runs each alone, with the same results.
    """

    data_dir: str
    name: str = "sealtime"
    tick: str | int = "1s"
    checkpoint_every: int = 20
    master: str | None = None
    metadata: str | None = None
    statement_timeout: float = 300.0
    conf: dict[str, str] = field(default_factory=dict)
    #: views of one shape share one Spark job a tick (`Dataflow(fuse=...)`)
    fuse: bool = True


@dataclass
class _ViewState:
    """What the service keeps per view: its history sink and subscribers."""

    history: ViewHistory
    hub: Hub


class Service:
    """The live service (see the module docstring); `start()` builds or restores it and
    starts the ticker, `close()` stops both."""

    def __init__(
        self,
        settings: ServiceSettings,
        *,
        spark: Any = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.settings = settings
        self._spark = spark
        self._clock = clock
        self.flow: Any = None
        self.pipeline: Pipeline | None = None
        self.catalog: ServiceCatalog | None = None
        self.views: dict[str, _ViewState] = {}
        #: the sink objects each CREATE SINK / PUBLISH made, by the object's name
        self.object_sinks: dict[str, list[Any]] = {}
        #: views still hydrating (their catalog entry has no live tick yet)
        self._hydrating: set[str] = set()
        self._queue: list[tuple[Callable[[], Any], Future[Any]]] = []
        self._cond = threading.Condition()
        self._stop = False
        self._thread: threading.Thread | None = None
        #: why the ticker stopped, if it did (fenced by a newer owner, ...)
        self.failure: BaseException | None = None
        #: ticks run since start, and the latest tick's report
        self.ticks = 0
        self.last_report: Any = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> Service:
        """Open the data dir (refused if another process owns it), rebuild every
        catalog object, start the engine and the ticker."""
        self._open()
        self._thread = threading.Thread(target=self._run, name="sealtime-ticker", daemon=True)
        self._thread.start()
        return self

    def _open(self) -> None:
        """Build the dataflow and every catalog object, and start the engine: recovery
        from the bindings, the latest checkpoint and the log."""
        from ..flow import Dataflow

        s = self.settings
        self.views, self.object_sinks, self._hydrating = {}, {}, set()
        spark = self._spark
        if spark is None:
            from ..spark.session import get_or_create_session

            spark = get_or_create_session(master=s.master, app_name=f"sealtime-serve-{s.name}")
        self.flow = flow = Dataflow(
            s.name,
            data_dir=s.data_dir,
            spark=spark,
            metadata=s.metadata,
            tick=s.tick,
            clock=self._clock,
            record=False,
            checkpoint_every=s.checkpoint_every,
            truncate_log=True,
            live=True,
            fuse=s.fuse,
        )
        self.pipeline = Pipeline(flow)
        self.catalog = catalog = ServiceCatalog(flow.metadata_store, s.name)
        flow.keep_node_ids(catalog.node_ids())
        entries = catalog.entries()
        deferred = self._deferred(entries)
        for entry in entries:
            if entry.name not in deferred:
                self._apply(entry)
        flow.engine  # noqa: B018 - recovery: bindings, checkpoint, log
        for entry in entries:
            if entry.name in deferred:
                self._apply(entry)
        self._save_ids()

    def _deferred(self, entries: list[CatalogEntry]) -> set[str]:
        """The objects that were not live at the latest checkpoint: views still
        hydrating then (or live only after it), and what depends on them. They are
        created again once the engine runs, and hydrate."""
        from ..engine.bindings import BindingLog

        checkpoints = BindingLog(self.flow.metadata_store, self.settings.name).checkpoints()
        last = checkpoints[-1][0] if checkpoints else None
        out: set[str] = set()
        for e in entries:
            late = e.kind is ObjectKind.VIEW and (
                e.live_tick is None or last is None or e.live_tick > last
            )
            if late or any(d in out for d in e.depends):
                out.add(e.name)
        return out

    def close(self) -> None:
        """Stop the ticker (between ticks) and close the dataflow."""
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        if self._thread is not None:
            self._thread.join(60)
        for state in self.views.values():
            state.hub.end("the service stopped")
        if self.flow is not None:
            self.flow.close()

    # ------------------------------------------------------------------ the ticker
    def submit(self, fn: Callable[[], T], timeout: float | None = None) -> T:
        """Run `fn` on the ticker, between ticks, and return its result (or raise its
        error). The service's graph changes only this way."""
        future: Future[T] = Future()
        with self._cond:
            if self._stop or self.failure is not None:
                raise StateError(f"the service is not running ({self.failure or 'stopped'})")
            self._queue.append((fn, future))
            self._cond.notify_all()
        return future.result(timeout or self.settings.statement_timeout)

    def _run(self) -> None:
        failures = 0
        tick_s = self.flow.tick_ms / 1000
        clock = self._clock or _time.time
        next_at = clock()
        while True:
            with self._cond:
                while not self._stop and not self._queue and clock() < next_at:
                    self._cond.wait(max(0.0, min(next_at - clock(), 0.5)))
                if self._stop:
                    break
                work, self._queue = self._queue, []
            for fn, future in work:
                try:
                    future.set_result(fn())
                except BaseException as exc:  # (the client gets it; the ticker goes on)
                    future.set_exception(exc)
            if clock() < next_at:
                continue
            next_at = max(next_at + tick_s, clock())
            try:
                self.last_report = self.flow.run(ticks=1)[0]
                self.ticks += 1
                self._after_tick()
                failures = 0
            except FencedError as exc:
                self._fail(exc)
                break
            except Exception as exc:
                failures += 1
                log.exception("tick failed (%d in a row): %s", failures, exc)
                if failures >= MAX_FAILED_TICKS or not self._recover():
                    self._fail(exc)
                    break
        self._drain()

    def _recover(self) -> bool:
        """After a failed tick: rebuild everything from durable state, as a restart
        would (a tick that failed half way never leaves state behind). False: the
        rebuild failed too."""
        hubs = {name: state.hub for name, state in self.views.items()}
        try:
            self.flow.close()
            self._open()
        except Exception:
            log.exception("rebuilding the service after a failed tick failed")
            return False
        for name, state in self.views.items():  # (subscribers keep following their views)
            if name in hubs:
                state.history.hub = state.hub = hubs[name]
        return True

    def _fail(self, exc: BaseException) -> None:
        log.error("the service stops: %s", exc)
        self.failure = exc
        for state in self.views.values():
            state.hub.end(f"the service stopped: {exc}")

    def _drain(self) -> None:
        with self._cond:
            work, self._queue = self._queue, []
        for _, future in work:
            future.set_exception(StateError("the service stopped"))

    def _after_tick(self) -> None:
        """Record views that finished hydrating (restart resumes them from the checkpoint
        the engine takes at once)."""
        if not self._hydrating:
            return
        hydrating = self.flow.engine.hydrating()
        assert self.catalog is not None
        for name in sorted(self._hydrating):
            if self._collection(name).node.id not in hydrating:
                self.catalog.mark_live(name, self.flow.engine.tick_no)
                self._hydrating.discard(name)

    # ------------------------------------------------------------------ objects
    def _collection(self, name: str) -> Any:
        table = tables.lookup(self.flow, name)
        if table is None:
            raise NotFoundError(f"no source or view named {name!r}")
        return table.collection

    def _apply(self, entry: CatalogEntry) -> None:
        """Build the object `entry` describes in the dataflow (no catalog change)."""
        (stmt,) = split(entry.sql)
        self._build(parse_statement(stmt))
        if entry.kind is ObjectKind.VIEW and entry.live_tick is None:
            self._hydrating.add(entry.name)

    def _build(self, item: Any) -> tuple[str, ...]:
        """Build one object in the dataflow; returns the names of what it reads."""
        assert self.pipeline is not None
        before = {id(e.sink) for e in self.flow.compile().sinks}
        self.pipeline.execute(item)
        if isinstance(item, CreateView):
            table = tables.lookup(self.flow, item.name)
            self._track_view(item.name)
            return tuple(sorted(table.reads)) if table is not None else ()
        if isinstance(item, (CreateSink, Publish)):
            made = [e.sink for e in self.flow.compile().sinks if id(e.sink) not in before]
            self.object_sinks[_object_name(item)] = made
            return (item.view,)
        return ()

    def _unbuild(self, item: Any) -> None:
        """Take back what `_build` added for `item` (the engine refused it)."""
        name = _object_name(item)
        if isinstance(item, CreateView):
            state = self.views.pop(name.lower(), None)
            coll = self._collection(name)
            self.flow.drop(coll, *([state.history] if state else []))
        elif isinstance(item, CreateSource):
            self.flow.drop(self._collection(name))
        else:
            self.flow.drop(*self.object_sinks.pop(name, []))

    def _track_view(self, name: str) -> None:
        hub = Hub()
        history = ViewHistory(f"{self.settings.name}.view.{name.lower()}", hub)
        self._collection(name).sink(history)
        self.views[name.lower()] = _ViewState(history, hub)

    def _save_ids(self) -> None:
        assert self.catalog is not None
        self.catalog.save_node_ids(self.flow.node_ids())

    def create(self, sql: str, owner: str) -> str:
        """Run a CREATE SOURCE/VIEW/SINK or PUBLISH statement (on the ticker): build
        it, record it in the catalog. Returns its command tag."""
        (stmt,) = split(sql)
        item = parse_statement(stmt)
        name = _object_name(item)
        assert self.catalog is not None
        if self.catalog.entry(name) is not None or (
            isinstance(item, (CreateSource, CreateView))
            and tables.lookup(self.flow, name) is not None
        ):
            raise ObjectExistsError(f"{stmt.title}: an object named {name!r} exists already")

        def apply() -> str:
            assert self.catalog is not None
            depends = self._build(item)
            try:
                self.flow.apply_changes()  # (now, between ticks: a refusal reaches the client)
            except BaseException:
                self._unbuild(item)
                raise
            if isinstance(item, CreateView):
                self._hydrating.add(item.name)
            self.catalog.add(
                _KIND[type(item)], name, stmt.source_text, owner=owner, depends=depends
            )
            self._save_ids()
            return stmt.kind

        return self.submit(apply)

    def drop(self, what: str, name: str, *, if_exists: bool, cascade: bool) -> str:
        """``DROP SOURCE|VIEW|SINK [IF EXISTS] name [CASCADE]`` (on the ticker)."""
        from .backend import DependentObjectsError

        def apply() -> str:
            assert self.catalog is not None
            entry = self.catalog.entry(name)
            kinds = {
                "SOURCE": (ObjectKind.SOURCE,),
                "VIEW": (ObjectKind.VIEW,),
                "SINK": (ObjectKind.SINK, ObjectKind.PUBLICATION),
            }
            if entry is None or entry.kind not in kinds[what]:
                if if_exists:
                    return f"DROP {what}"
                raise NotFoundError(f"DROP {what}: no {what.lower()} named {name!r}")
            order = self._dependents_closure(entry.name)
            if order and not cascade:
                raise DependentObjectsError(
                    f"DROP {what} {entry.name}: {', '.join(order)} depend(s) on it; drop them "
                    f"first, or DROP {what} {entry.name} CASCADE"
                )
            for dependent in reversed(order):
                self._drop_object(dependent)
            self._drop_object(entry.name)
            return f"DROP {what}"

        return self.submit(apply)

    def _dependents_closure(self, name: str) -> list[str]:
        """Every object that depends on `name`, directly or not, in creation order."""
        assert self.catalog is not None
        found: list[str] = []
        stack = [name]
        while stack:
            for dep in self.catalog.dependents(stack.pop()):
                if dep not in found:
                    found.append(dep)
                    stack.append(dep)
        order = {e.name: e.id for e in self.catalog.entries()}
        return sorted(found, key=lambda n: order[n])

    def _drop_object(self, name: str) -> None:
        assert self.catalog is not None
        entry = self.catalog.remove(name)
        flow = self.flow
        if entry.kind is ObjectKind.VIEW:
            coll = self._collection(name)
            state = self.views.pop(name.lower())
            flow.drop(coll, state.history)
            state.history.drop()
            state.hub.end(f"view {name} was dropped")
        elif entry.kind is ObjectKind.SOURCE:
            flow.drop(self._collection(name))
        else:
            sinks = self.object_sinks.pop(name, [])
            for sink in sinks:
                for topic, published in list(flow.publications.items()):
                    if published is sink:
                        flow.catalog.unpublish(topic, flow.name)
                        del flow.publications[topic]
            flow.drop(*sinks)
        self._hydrating.discard(name)
        self._save_ids()

    # ------------------------------------------------------------------ reading
    def wait_live(self, view: str, timeout: float | None = None) -> None:
        """Block until view `view` has finished hydrating."""
        deadline = _time.monotonic() + (timeout or self.settings.statement_timeout)
        node = self._collection(view).node
        while node.id in self.flow.engine.hydrating():
            if _time.monotonic() > deadline:
                raise StateError(
                    f"view {view} is still hydrating (catching up with its inputs' history); "
                    "try again in a moment"
                )
            _time.sleep(0.05)

    def view_state(self, name: str) -> _ViewState:
        state = self.views.get(name.lower())
        if state is None:
            raise NotFoundError(
                f"no view named {name!r}; the views are {', '.join(sorted(self.views)) or 'none'}"
            )
        return state


_KIND = {
    CreateSource: ObjectKind.SOURCE,
    CreateView: ObjectKind.VIEW,
    CreateSink: ObjectKind.SINK,
    Publish: ObjectKind.PUBLICATION,
}


def _object_name(item: Any) -> str:
    if isinstance(item, Publish):
        return item.topic
    if isinstance(item, (CreateSource, CreateView, CreateSink)):
        return item.name
    raise ConfigError(f"{item.statement.kind}: not a statement that creates an object")
