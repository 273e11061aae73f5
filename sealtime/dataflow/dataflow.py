"""`Dataflow`: a named graph of collections, run tick by tick on Spark."""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import time as _time
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..columns import CNT, DIFF, SUBSOURCE, TIME
from ..durations import parse_duration
from ..errors import ConfigError, PlanError, SchemaError, StateError
from ..plan import (
    DataPathTuning,
    Filter,
    Plan,
    PlanNode,
    Project,
    RunConfig,
    SideOutput,
    SinkEdge,
    Source,
    SourceOutput,
)
from ..sinks.base import Sink, SinkBinding
from ..sources.base import Source as Connector
from .collection import Collection

__all__ = ["Dataflow", "SourceCollection"]


class SourceCollection(Collection):
    """The main output of a source, with its `late` and `errors` outputs."""

    @property
    def late(self) -> Collection:
        """Records whose event time was already sealed when they arrived, with the
        original columns and a ``reason``; stamped at the frontier they missed."""
        return self._flow._source_output(self._node, SideOutput.LATE)

    @property
    def errors(self) -> Collection:
        """Records that could not be decoded: ``raw`` and ``reason``."""
        return self._flow._source_output(self._node, SideOutput.ERRORS)

    def subsource(self, name: str) -> Collection:
        """One output of a source with several (``Nexmark``: ``"person"``, ``"auction"``,
        ``"bid"``): the rows whose ``_subsource`` is `name`, with that output's columns.
        ``src["bid"]`` is the same. All outputs share the source's binding and frontier."""
        node = self._node
        assert isinstance(node, Source)
        subsources = node.source.subsources
        if not subsources:
            raise PlanError(f"source {node.name!r} has no subsources")
        if name not in subsources:
            raise PlanError(
                f"source {node.name!r} has no subsource {name!r}; it has {', '.join(subsources)}"
            )
        cols = [f.name for f in subsources[name] if f.name not in (TIME, DIFF)]
        flow = self._flow
        rows = flow._add(
            Filter,
            name=f"subsource[{name}]",
            inputs=(node,),
            schema=node.schema,
            condition=F.col(SUBSOURCE) == name,
        )
        schema = T.StructType([f for f in node.schema.fields if f.name in cols])
        return flow._add(
            Project,
            name=f"subsource[{name}]",
            inputs=(rows.node,),
            schema=T.StructType([schema[c] for c in cols]),
            projection=tuple(cols),
        )

    def __getitem__(self, name: str) -> Collection:
        return self.subsource(name)

    @property
    def health(self) -> Collection:
        """The source's status as a one-row collection (``source``, ``status``):
        ``running``, ``stalled`` (e.g. its broker is unreachable, the reader retries) or
        ``failed: reason``. Each change retracts the old row and adds the new one."""
        return self._flow._source_output(self._node, SideOutput.HEALTH)


class Dataflow:
    """A dataflow: sources, operators and sinks, run on Spark (local mode by default).

    * `data_dir`: where ingest logs, sink files and the SQLite metadata store go: a
      path or a ``file://`` URI (see docs/storage-fs.md for other filesystems).
    * `metadata`: a ``postgresql://`` URL for a shared metadata store instead of SQLite.
    * `spark` / `master`: an existing SparkSession, or a master URL for a new one
      (default ``local[*]``).
    * `tick`: the ticker's interval for ``run(forever=True)`` and paced sources.
    * `clock`: a callable returning seconds (default `time.time`): the ticker's clock, the
      only clock in the system; inject one in tests.
    * `shuffle_partitions`: Spark shuffle partitions while this dataflow runs.
    * `record`: keep every collection's updates for `updates()`/`to_spark()` (tests,
      debugging); production dataflows set False and read sinks instead.
    * `checkpoint_every`: write a soft checkpoint of all operator state every N ticks
      (None or 0: never); recovery = latest checkpoint + the log after it.
    * `truncate_log`: after a checkpoint, delete ingest-log files it made unnecessary
      and older than each source's `retain_history` (a day by default, so that
      `replay` from the beginning works on a run of the last day; False keeps the whole
      log for ever; docs/durability.md gives the disk cost).
    * `live`: views may be added (`apply_changes`) and dropped (`drop`) while it runs.
    * `fuse`: aggregates, distincts and top-k over filters and projections of one
      collection share one Spark job a tick (`sealtime.engine.fusion`; with
      ``record=False``); False runs each alone. Results are the same either way.
    * `lease`: how long the data dir's ownership lasts without renewal (a duration,
      e.g. ``"10s"``; default ``--lease``, ``$SEALTIME_LEASE`` or 30 s): a stopped or
      unreachable owner blocks a restart elsewhere at most this long.
      `takeover`: replace a live owner, which is fenced (it commits nothing more);
      otherwise a second writer is refused, naming the owner (docs/durability.md).

    Durability: every tick's binding (source positions, frontiers, log files) is written
    to the metadata store before its rows propagate. Building the same dataflow again
    on the same `data_dir` resumes it: sources continue after their last bound position,
    operators recompute from the latest checkpoint and the log, and exactly-once sinks
    (`st.sinks.Persist`, `st.sinks.Parquet`) skip what they committed already.
    """

    def __init__(
        self,
        name: str,
        data_dir: str | os.PathLike[str] | None = None,
        *,
        spark: SparkSession | None = None,
        master: str | None = None,
        metadata: str | None = None,
        tick: str | int = "1s",
        clock: Callable[[], float] | None = None,
        sleep: Callable[[float], None] | None = None,
        shuffle_partitions: int | None = None,
        record: bool = True,
        checkpoint_every: int | None = 50,
        truncate_log: bool = True,
        live: bool = False,
        fuse: bool = True,
        lease: str | float | None = None,
        takeover: bool = False,
        tuning: DataPathTuning | None = None,
    ) -> None:
        if not name or not isinstance(name, str):
            raise ConfigError("Dataflow(name) must be a non-empty string")
        self.name = name
        from ..storage import MetadataStore
        from ..storage.fs import DataFS

        #: the data dir's filesystem layer (`sealtime.storage.fs`)
        self.data_fs = DataFS.from_uri(
            data_dir if data_dir is not None else os.path.join("data", name),
            setting="Dataflow(data_dir)",
        )
        _check_data_dir(self.data_fs, metadata)
        #: an absolute path for a local data dir (``file://`` URIs included), else the URI
        self.data_dir = self.data_fs.location
        self.data_fs.create_dir()

        # SQLite in the data dir unless a URL is given; opening it validates the setting
        # (a bad URL or an unreachable server fails here, naming `metadata`).
        self.metadata = metadata
        self.metadata_store = MetadataStore.open(metadata or self.data_dir)
        self.tick_ms = parse_duration(tick, "Dataflow(tick)")
        if self.tick_ms <= 0:
            raise ConfigError("Dataflow(tick) must be > 0, e.g. tick='1s'")
        self._clock = clock or _time.time
        self._sleep = sleep or _time.sleep
        self.record = record
        if shuffle_partitions is not None and shuffle_partitions < 1:
            raise ConfigError("Dataflow(shuffle_partitions) must be >= 1")
        self.shuffle_partitions = shuffle_partitions
        if checkpoint_every is not None and (
            not isinstance(checkpoint_every, int) or checkpoint_every < 0
        ):
            raise ConfigError(
                f"Dataflow(checkpoint_every={checkpoint_every!r}) must be a number of ticks "
                ">= 1, or 0/None for no checkpoints"
            )
        self.checkpoint_every = checkpoint_every or None
        self.truncate_log = bool(truncate_log)
        self.fuse = bool(fuse)
        from ..storage.ownership import lease_seconds

        #: the data dir's lease length in seconds (None: the process's default)
        self.lease = None if lease is None else lease_seconds(lease)
        self.takeover = bool(takeover)
        from ..storage.ownership import check_unowned

        # (a second writer is refused before Spark starts; the engine's lease is the claim)
        check_unowned(
            self.metadata_store, self.data_dir, name, lease=self.lease, takeover=takeover or None
        )
        if tuning is not None and not isinstance(tuning, DataPathTuning):
            raise ConfigError(
                f"Dataflow(tuning={tuning!r}) must be a st.DataPathTuning(...), e.g. "
                "st.DataPathTuning(pushdown_rows=0)"
            )
        #: the data path's thresholds (`sealtime.plan.DataPathTuning`): costs, never results
        self.tuning = tuning or DataPathTuning()
        if spark is None:
            from ..spark.session import get_or_create_session

            spark = get_or_create_session(master=master, app_name=f"sealtime-{name}")
        self._spark = spark
        self._nodes: list[PlanNode] = []
        self._sinks: list[SinkEdge] = []
        #: Called as ``fn(engine, report)`` after every tick (the web view's snapshots).
        self.tick_observers: list[Callable[[Any, Any], None]] = []
        self._ui_server: Any = None
        self._scratch = False  # inside provisional(keep=False)
        #: views registered by `create_view`, by name (owned by `sealtime.sql`)
        self.sql_views: dict[str, Any] = {}
        self._source_outputs: dict[tuple[int, SideOutput], Collection] = {}
        #: topic -> Publish sink (its ``address`` is where subscribers connect)
        self.publications: dict[str, Any] = {}
        self._catalog: Any = None  # sealtime.pubsub.catalog.Catalog, on first use
        self._catalog_server: Any = None  # its CatalogServer, started by the first publish
        self._engine = None
        self._time_reset: Collection | None = None  # `time_reset`, on first use
        #: the graph may change while the dataflow runs (views added and dropped)
        self.live = bool(live)
        self._next_id = 0
        #: (live) each shareable node by its structure: an equal one is computed once
        self._by_structure: dict[str, PlanNode] = {}
        #: (live) the id each node structure had when the graph was built before, so a
        #: restarted service finds each operator's state where it left it
        self._stable_ids: dict[str, int] = {}
        #: (live, running) nodes and sinks added since the engine last took them
        self._pending_nodes: list[PlanNode] = []
        self._pending_sinks: list[SinkEdge] = []

    # ------------------------------------------------------------------ building
    def source(
        self,
        name: str,
        source: Connector,
        *,
        time: str | None = None,
        lateness: str | int | None = None,
        max_rows_per_tick: int | None = None,
        idle_timeout: str | int | None = None,
        max_future: Any = ...,
        retain_history: Any = ...,
    ) -> SourceCollection:
        """Add a source. Without `time`, rows get ingestion time (the tick's binding time);
        with ``time="col"`` the column is the event time and `lateness` bounds how far
        behind the largest event time seen a record may be before it is late.

        `idle_timeout` (event time only): when the source has read nothing for that
        long on the ticker's clock (``Dataflow(clock=...)``), its event-time frontier
        moves to the clock minus `lateness`, so windows seal without new data. The
        advancement is recorded in the tick's binding (replay repeats it); a record
        that arrives below it goes to ``late`` with a reason naming idleness.

        `max_future` (event time only): a record whose event time lies further than this
        ahead of its tick's binding time goes to ``errors`` with a reason, and does not
        move the frontier — one producer's clock bug cannot seal everyone's future
        (docs/time.md). Default ``"1h"`` with ``time=``; None turns the bound off.

        `retain_history`: how far behind the largest time of its rows (a duration of
        its log's times) the source's ingest log is kept once checkpoints made it
        unnecessary for recovery — what a replay from the beginning and a view added to
        a live dataflow can still read; None keeps it all. By default a day
        (`sealtime.engine.retention.DEFAULT_RETAIN_HISTORY`) with
        ``Dataflow(truncate_log=True)``, all of it in a live dataflow and without
        truncation; 0 keeps only what recovery needs.

        >>> # flow.source("s", src, time="ts", lateness="4s", idle_timeout="5s")
        """
        self._check_can_change("the sources")
        if any(isinstance(n, Source) and n.name == name for n in self._nodes):
            raise PlanError(f"Dataflow: a source named {name!r} exists already")
        if not isinstance(source, Connector):
            raise TypeError(
                f"source {name!r}: expected a sealtime Source, got {type(source).__name__}"
            )
        explicit = source.time_column == TIME
        if time is not None and time not in source.schema.names:
            raise SchemaError(
                f"source {name!r}: time={time!r} is not a column of the source; its columns "
                f"are {source.schema.names} (name the event-time column, or leave time out "
                "for ingestion time)"
            )
        if lateness is not None and time is None:
            raise ConfigError(
                f"source {name!r}: lateness={lateness!r} needs time='<event time column>'; "
                "ingestion-time sources are never late"
            )
        lateness_ms = (
            parse_duration(lateness, f"source {name!r} lateness") if lateness is not None else None
        )
        idle_ms = None
        if idle_timeout is not None:
            if time is None and not explicit:
                raise ConfigError(
                    f"source {name!r}: idle_timeout={idle_timeout!r} needs event time "
                    "(time='<event time column>'); an ingestion-time source's frontier "
                    "follows the clock already, so leave idle_timeout out"
                )
            idle_ms = parse_duration(idle_timeout, f"source {name!r} idle_timeout")
            if idle_ms < 1:
                raise ConfigError(
                    f"source {name!r}: idle_timeout={idle_timeout!r} must be > 0, "
                    "e.g. idle_timeout='5s'"
                )
        if max_future is ...:
            max_future = "1h" if time is not None else None
        future_ms = None
        if max_future is not None:
            if time is None and not explicit:
                raise ConfigError(
                    f"source {name!r}: max_future={max_future!r} needs event time "
                    "(time='<event time column>'); ingestion times never lie ahead"
                )
            future_ms = parse_duration(max_future, f"source {name!r} max_future")
        if retain_history is ...:
            from ..engine.retention import DEFAULT_RETAIN_HISTORY

            retain_ms: int | None = (
                DEFAULT_RETAIN_HISTORY if self.truncate_log and not self.live else None
            )
        elif retain_history is None:
            retain_ms = None
        else:
            retain_ms = parse_duration(retain_history, f"source {name!r} retain_history")
        names = [n for n in source.schema.names if n not in (TIME, DIFF)]
        spark_schema = self._spark_schema(source.schema, names)
        # Fields passed by name: alike only in form to other keyword-argument calls.
        node = self._add(
            Source,
            name=name,
            inputs=(),
            schema=spark_schema,
            source=source,
            time_column=time,
            lateness=lateness_ms,
            max_rows=max_rows_per_tick,
            idle_timeout=idle_ms,
            max_future=future_ms,
            retain_history=retain_ms,
        ).node
        # The side outputs exist from the start, so they can be read after a run; unread
        # ones cost nothing (the engine skips stateless outputs nobody reads).
        for which in SideOutput:
            self._source_output(node, which)
        return SourceCollection(self, node)

    def _spark_schema(self, schema: pa.Schema, names: list[str]) -> T.StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(pa.schema([schema.field(n) for n in names]))

    def _source_output(self, node: PlanNode, which: SideOutput) -> Collection:
        key = (node.id, which)
        if key not in self._source_outputs:
            if which is SideOutput.LATE:
                fields = list(node.schema.fields) + [T.StructField("reason", T.StringType(), True)]
            elif which is SideOutput.HEALTH:
                fields = [
                    T.StructField("source", T.StringType(), True),
                    T.StructField("status", T.StringType(), True),
                ]
            else:
                fields = [
                    T.StructField("raw", T.StringType(), True),
                    T.StructField("reason", T.StringType(), True),
                ]
            self._source_outputs[key] = self._add(
                SourceOutput,
                name=f"{node.name}.{which.value}",
                inputs=(node,),
                schema=T.StructType(fields),
                output=which,
            )
        return self._source_outputs[key]

    # ------------------------------------------------------------------ graph access
    @property
    def spark(self) -> SparkSession:
        """The SparkSession this dataflow runs on."""
        return self._spark

    @property
    def started(self) -> bool:
        """True once the first `run()` (or `replay()`) started the engine: the graph is
        fixed from then on."""
        return self._engine is not None

    @property
    def nodes(self) -> tuple[PlanNode, ...]:
        """The plan's operator nodes so far, in the order they were added (topological)."""
        return tuple(self._nodes)

    @property
    def sinks(self) -> tuple[SinkEdge, ...]:
        """The sinks attached so far, in the order they were added: each a `SinkEdge`
        (the node whose output it receives, and the sink)."""
        return tuple(self._sinks)

    @contextlib.contextmanager
    def provisional(self, *, keep: bool = True) -> Iterator[list[PlanNode]]:
        """Add operators tentatively: those added inside the block are removed again if
        it raises, and always when `keep` is False (to show what a query *would* add,
        as ``EXPLAIN`` does; then even a started dataflow accepts them, since they never
        run). The yielded list holds the added nodes once the block ends.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"k": "string"}, [])
        >>> with t.flow.provisional(keep=False) as added:
        ...     _ = s.distinct()
        >>> [n.kind for n in added], len(t.flow.nodes) == 4
        (['distinct'], True)
        """
        n, next_id, pending = len(self._nodes), self._next_id, len(self._pending_nodes)
        added: list[PlanNode] = []
        scratch, self._scratch = self._scratch, self._scratch or not keep
        kept = False
        try:
            yield added
            kept = keep
        finally:
            self._scratch = scratch
            added.extend(self._nodes[n:])
            if not kept:
                for node in self._nodes[n:]:
                    self._by_structure.pop(node.structure, None)
                del self._nodes[n:]
                del self._pending_nodes[pending:]
                self._next_id = next_id

    def _add(self, kind: type[PlanNode], **fields: Any) -> Collection:
        """Add a node of type `kind` (ids count up: inputs come first) and return its
        collection. In a live dataflow a node equal to one already there (same
        `structure`) is not added: the existing one is returned, computed once."""
        self._check_can_change("the graph")
        node = kind(id=self._next_id, **fields)
        if self.live and node.shareable:
            same = self._by_structure.get(node.structure)
            if same is not None:
                return Collection(self, same)
            stable = self._stable_ids.get(node.structure)
            if stable is not None and stable != node.id:
                node = dataclasses.replace(node, id=stable)
            self._by_structure[node.structure] = node
        self._next_id = max(self._next_id, node.id) + 1
        self._nodes.append(node)
        if self._engine is not None and not self._scratch:
            self._pending_nodes.append(node)
        return Collection(self, node)

    def node_ids(self) -> dict[str, int]:
        """(live) Every node's id by its `structure`: what `keep_node_ids` takes back."""
        return {n.structure: n.id for n in self._nodes if n.shareable}

    def keep_node_ids(self, ids: dict[str, int]) -> None:
        """(live) Give nodes built from now on the ids their structures had before
        (`node_ids` of an earlier build of the same graph)."""
        self._stable_ids.update(ids)
        if ids:
            self._next_id = max(self._next_id, max(ids.values()) + 1)

    def _check_can_change(self, what: str) -> None:
        if self._engine is not None and not self._scratch and not self.live:
            raise StateError(
                f"Dataflow: {what} cannot change after the first run(); build it with "
                "Dataflow(live=True) to add and drop views while it runs"
            )

    def _add_sink(self, node: PlanNode, sink: Any) -> None:
        self._check_can_change("the sinks")
        if not isinstance(sink, Sink):
            raise TypeError(
                f"sink(): expected a sealtime sink (st.sinks.*, or a subclass of "
                f"st.sinks.Sink), got {sink!r}"
            )
        # Fields passed by name: alike only in form to other keyword-argument calls.
        sink.bind(
            SinkBinding(
                dataflow=self.name,
                data_dir=self.data_dir,
                store=self.metadata_store,
                collection=node.name,
                schema=node.schema,
            ),
            owner=self,
        )
        self._sinks.append(SinkEdge(node, sink))
        if self._engine is not None:
            self._pending_sinks.append(SinkEdge(node, sink))

    def _add_publication(self, node: PlanNode, topic: str, options: dict[str, Any]) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..pubsub.catalog import CATALOG_TOPIC
        from ..sinks.publish import Publish

        self._check_can_change("the publications")
        if topic in self.publications or topic == CATALOG_TOPIC:
            raise PlanError(
                f"publish({topic!r}): the topic is published already (or reserved); "
                "pick another name"
            )
        options.setdefault("history_dir", os.path.join(self.data_dir, "publish"))
        schema = to_arrow_schema(node.schema, timezone="UTC")
        sink = Publish(topic, schema=schema, store=self.metadata_store, **options)
        try:
            addresses = [f"{host}:{port}" for host, port in sink.addresses]
            self.catalog.publish(
                topic, addresses, schema=sink.schema, dataflow=self.name, mode=sink.mode
            )
            self.serve_catalog().refresh()
        except BaseException:
            sink.close()
            raise
        self.publications[topic] = sink
        self._add_sink(node, sink)

    @property
    def catalog(self) -> Any:
        """The catalog of publications in this dataflow's metadata store
        (`sealtime.pubsub.catalog.Catalog`: ``entries()``, ``lookup(name)``)."""
        if self._catalog is None:
            from ..pubsub.catalog import Catalog

            self._catalog = Catalog(self.metadata_store)
        return self._catalog

    def serve_catalog(self, host: str = "127.0.0.1", port: int = 0) -> Any:
        """Serve the catalog over TCP (a view publication; started by the first
        ``publish``; call it earlier to choose `host`/`port`). Returns the server."""
        if self._catalog_server is None:
            from ..pubsub.catalog import CatalogServer

            self._catalog_server = CatalogServer(self.catalog, host, port).start()
            self.catalog.set_server(self.name, self._catalog_server.address)
        return self._catalog_server

    @property
    def catalog_address(self) -> tuple[str, int] | None:
        """``(host, port)`` of the catalog server (``st.subscribe(..., catalog="host:port")``),
        None before the first publication."""
        return None if self._catalog_server is None else self._catalog_server.address

    def serve_ui(self, host: str = "127.0.0.1", port: int = 0, *, history: int = 120) -> Any:
        """Serve the live web view of this dataflow (graph, frontiers, sources, tick
        plot, bindings, checkpoints) and Prometheus metrics at ``/metrics``.

        Loopback by default; pass another `host` (e.g. ``"0.0.0.0"``) only to expose it.
        `port` 0 picks a free port. Returns the `sealtime.ui.UiServer` (``.url``,
        ``.close()``); `close()` of the dataflow stops it too. The engine publishes one
        snapshot per tick; the server reads only those (`sealtime.ui.Monitor`).
        """
        if self._ui_server is None:
            from ..ui import serve_ui

            self._ui_server = serve_ui(self, host, port, history=history)
        return self._ui_server

    def close_publications(self) -> None:
        """Stop publishing: remove this dataflow's publications from the catalog, close
        their publishers (subscribers get ``Close``) and the catalog server."""
        for topic, sink in list(self.publications.items()):
            self.catalog.unpublish(topic, self.name)
            sink.close()
        server, self._catalog_server = self._catalog_server, None
        if server is not None:
            server.refresh()
            server.close()
            self.catalog.set_server(self.name, None)

    def _empty_delta(self, schema: T.StructType) -> DataFrame:
        fields = list(schema.fields) + [
            T.StructField(TIME, T.LongType(), False),
            T.StructField(DIFF, T.LongType(), False),
        ]
        return self._spark.createDataFrame([], T.StructType(fields))

    # ------------------------------------------------------------------ running
    def _clock_ms(self) -> int:
        return int(self._clock() * 1000)

    def compile(self) -> Plan:
        """The frozen `Plan` the engine runs: nodes, sinks and run settings. It checks
        itself (every node and sink belongs to this dataflow, each sink object is used
        once) and has the canonical fingerprint a resumed data dir is checked against.

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> _ = t.rows({"k": "string"}, [], name="s").distinct()
        >>> [n.kind for n in t.flow.compile().nodes][-1], t.flow.compile().config.name
        ('distinct', 'test')
        """
        # Fields passed by name: alike only in form to other keyword-argument calls.
        return Plan(
            tuple(self._nodes),
            tuple(self._sinks),
            RunConfig(
                name=self.name,
                data_dir=self.data_dir,
                record=self.record,
                shuffle_partitions=self.shuffle_partitions,
                checkpoint_every=self.checkpoint_every,
                truncate_log=self.truncate_log,
                live=self.live,
                fuse=self.fuse,
                lease=self.lease,
                takeover=self.takeover or None,
                tuning=self.tuning,
            ),
        )

    def _new_engine(self, replay_from: Any = None) -> Any:
        from ..engine.coordinator import Engine

        return Engine(
            self.compile(),
            self.metadata_store,
            self._spark,
            self._clock_ms,
            replay_from=replay_from,
            observers=self.tick_observers,
        )

    @property
    def engine(self):
        if self._engine is None:
            self._engine = self._new_engine()
        return self._engine

    def run(
        self,
        ticks: int | None = None,
        forever: bool = False,
        on_tick: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """Run ticks: `ticks` of them, or until every source is exhausted and every
        frontier is empty (default), or `forever` (paced by the ticker's clock).
        Returns the tick reports."""
        engine = self.engine
        # (a finished replay that does not go live: run() until finished has nothing to
        # do; asking for ticks raises an error saying why — Engine.check_can_tick)
        if ticks is None and not forever and not engine.replaying and not engine.finished():
            for node in self._nodes:
                if isinstance(node, Source) and not node.source.finite:
                    raise ConfigError(
                        f"run() would never end: source {node.name!r} is unbounded; "
                        "use run(ticks=N) or run(forever=True)"
                    )
        if self.shuffle_partitions is not None:
            self._spark.conf.set("spark.sql.shuffle.partitions", str(self.shuffle_partitions))
        reports = []
        next_at = self._clock()
        while True:
            if ticks is not None and len(reports) >= ticks:
                break
            self.apply_changes()
            if ticks is None and not forever and engine.finished():
                break
            # Does another tick follow at once? Then this one may read ahead (mint the
            # next binding and start its collections while its own jobs run).
            read_ahead: bool | Callable[[], bool] = (
                functools.partial(self._is_due, next_at + self.tick_ms / 1000)
                if forever
                else ticks is None or len(reports) + 1 < ticks
            )
            report = engine.tick(read_ahead)
            reports.append(report)
            if on_tick is not None:
                on_tick(report)
            if forever:
                next_at += self.tick_ms / 1000
                delay = next_at - self._clock()
                if delay > 0:
                    self._sleep(delay)
        return reports

    def apply_changes(self) -> None:
        """Hand the engine what was added since its last tick (a live dataflow; `run`
        does it before every tick). A node the engine refuses (it reads history that
        is gone) raises here, and nothing of the batch is applied."""
        if self._engine is not None and (self._pending_nodes or self._pending_sinks):
            nodes, sinks = self._pending_nodes, self._pending_sinks
            self._pending_nodes, self._pending_sinks = [], []
            try:
                self._engine.extend(nodes, sinks)
            except BaseException:
                self._pending_nodes[:0], self._pending_sinks[:0] = nodes, sinks
                raise

    def drop(self, *outputs: Collection | Any) -> list[PlanNode]:
        """Drop collections and sinks from a live dataflow, between ticks: the sinks
        given, and every node that nothing kept needs any more — kept are the sources
        and their side outputs, the views registered by `create_view`, every sink's
        collection, and whatever those read. Returns the nodes dropped (their state goes
        with them). A `Collection` given is unregistered if it is a view; callers check
        dependents first (`sealtime.serve` refuses a DROP with dependents unless
        CASCADE).

        >>> # flow.drop(flow.sql_views["v"].collection)
        """
        self._check_can_change("the graph")
        nodes = {o.node.id for o in outputs if isinstance(o, Collection)}
        sinks = {id(o) for o in outputs if not isinstance(o, Collection)}
        unpinned = {
            n.id
            for n in self._nodes
            if n.id in nodes or (isinstance(n, SourceOutput) and n.source.id in nodes)
        }
        for key, table in list(self.sql_views.items()):
            if table.collection.node.id in nodes:
                del self.sql_views[key]
                # (its ``v.errors`` table goes too: registered, it kept the view computed)
                self.sql_views.pop(f"{key}.errors", None)
        dropped_sinks = [e.sink for e in self._sinks if id(e.sink) in sinks]
        self._sinks = [e for e in self._sinks if id(e.sink) not in sinks]
        self._pending_sinks = [e for e in self._pending_sinks if id(e.sink) not in sinks]
        keep = {
            n.id
            for n in self._nodes
            if isinstance(n, (Source, SourceOutput)) and n.id not in unpinned
        }
        keep |= {t.collection.node.id for t in self.sql_views.values()}
        keep |= {e.node.id for e in self._sinks}
        keep = self.compile().upstream(keep)
        gone = [n for n in self._nodes if n.id not in keep]
        gone_ids = {n.id for n in gone}
        self._nodes = [n for n in self._nodes if n.id not in gone_ids]
        self._pending_nodes = [n for n in self._pending_nodes if n.id not in gone_ids]
        for node in gone:
            self._by_structure.pop(node.structure, None)
            if isinstance(node, SourceOutput):
                self._source_outputs.pop((node.source.id, node.output), None)
        for sink in dropped_sinks:
            sink.close()
        if self._engine is not None:
            self._engine.shrink(gone_ids, dropped_sinks)
        return gone

    def _is_due(self, at: float) -> bool:
        """Has the ticker's clock reached `at` (a paced run is behind schedule)?"""
        return self._clock() >= at

    def replay(
        self,
        from_data_dir: str | os.PathLike[str],
        *,
        from_metadata: str | None = None,
        name: str | None = None,
        then_live: bool = False,
        on_tick: Callable[[Any], None] | None = None,
        from_checkpoint: int | str | None = None,
    ) -> list[Any]:
        """Re-run this dataflow from another run's ingest log and bindings (read, never
        changed), tick by tick with the original binding times, so every sink gets
        exactly the commits of the original run. This dataflow's own `data_dir` must be
        new (or hold an interrupted replay of the same run, which continues). `name` is
        the original dataflow's name (default: this one's). Returns the replayed ticks'
        reports.

        * `then_live`: afterwards, `run()` continues with live input: sources read on
          from the positions of the last replayed binding, `time_reset` emits
          ``(last replayed time, first live time)`` once, timers apply their gap policy
          (``Timer(gap=...)``). Without it, `run()` after the replay raises an error
          saying so.
        * `from_checkpoint`: ``"latest"`` or a tick: start from that checkpoint of the
          original (its state restored, the bindings after it replayed) — for a run whose
          log no longer reaches back to its beginning (``retain_history``); without it a
          truncated log is refused with a `LogRetentionError` naming the setting.
        * The graph may differ from the recorded one (more operators, sinks, timers):
          recorded sources are reused, timers are restamped from the recorded binding
          times, and the new data dir's log replays exactly in its turn
          (`sealtime.engine.replay`).

        >>> # flow.replay("data/yesterday", then_live=True); flow.run(forever=True)
        """
        from ..engine.replay import ReplayPlan

        if self._engine is not None:
            raise StateError("replay() must be the first run of a Dataflow")
        from ..storage.fs import DataFS

        source_dir = DataFS.from_uri(from_data_dir, setting="replay(from_data_dir)").location
        if source_dir == self.data_dir:
            raise ConfigError("replay(from_data_dir=...) must differ from this data_dir")
        plan = ReplayPlan.load(
            source_dir,
            name or self.name,
            metadata=from_metadata,
            then_live=then_live,
            from_checkpoint=from_checkpoint,
        )
        self._engine = engine = self._new_engine(replay_from=plan)
        remaining = engine.replay_ticks - engine.tick_no
        return self.run(ticks=remaining, on_tick=on_tick) if remaining > 0 else []

    @property
    def time_reset(self) -> Collection:
        """One row ``(from_time, to_time)`` at time ``to_time`` when a replay hands over
        to live input (``replay(..., then_live=True)``): the last replayed binding time
        and the first live one. Empty in every other run. Read it to cancel or fire what
        would have happened in the gap; `Timer` applies its own gap policy.

        >>> # flow.time_reset.sink(st.sinks.Callback(lambda t, lo, hi: print(t)))
        """
        if self._time_reset is None:
            from ..sources.timer import TimeReset

            self._time_reset = self.source("time_reset", TimeReset())
        return self._time_reset

    def close(self) -> None:
        """Close source readers, sinks and the metadata store."""
        if self._engine is not None:
            self._engine.close()
        if self._ui_server is not None:
            self._ui_server.close()
            self._ui_server = None
        self.close_publications()
        published = {id(s) for s in self.publications.values()}
        for _, sink in self._sinks:
            if id(sink) not in published:
                sink.close()
        self.metadata_store.close()

    def resumption_frontier(self) -> dict[str, Any]:
        """Per source, the source-native position acknowledged upstream: every row before
        it is durable in every exactly-once sink downstream."""
        return {} if self._engine is None else self._engine.resumption_frontier()

    @property
    def bindings(self) -> list[dict[str, Any]]:
        """The bindings minted so far: per tick, ``into_time`` and each source's position
        and frontier."""
        return [] if self._engine is None else [b.to_json() for b in self._engine.bindings]

    def metrics(self) -> dict[str, Any]:
        """Counters per source: rows read, late rows, error rows, frontier."""
        if self._engine is None:
            return {"ticks": 0, "sources": {}}
        snap = self._engine.snapshot()
        return {
            "ticks": snap.tick,
            "sources": {
                s.name: {"rows": s.rows, "late": s.late, "errors": s.errors, "frontier": s.frontier}
                for s in snap.sources
            },
        }

    def _engine_frontier(self, node: PlanNode) -> int | None:
        from ..time.order import MIN_TIME

        if self._engine is None:
            return MIN_TIME
        return self._engine.frontier_of(node)

    # ------------------------------------------------------------------ reading back
    def _require_record(self, what: str) -> None:
        if not self.record:
            raise ConfigError(
                f"{what} needs Dataflow(record=True) (it keeps every collection's updates); "
                "with record=False read a sink instead"
            )

    def _updates(self, node: PlanNode) -> pa.Table:
        self._require_record("updates()")
        if self._engine is None:
            df = self._empty_delta(node.schema)
        else:
            df = self._engine.trace_frame(node)
        cols = node.columns + [TIME, DIFF]
        table = df.select(*cols).toArrow()
        if table.num_rows == 0:
            return table
        return table.sort_by(
            [(TIME, "ascending")] + [(c, "ascending") for c in node.columns if _sortable(table, c)]
        )

    def _to_spark(self, node: PlanNode, as_of: int | None) -> DataFrame:
        self._require_record("to_spark()")
        df = (
            self._engine.trace_frame(node)
            if self._engine is not None
            else self._empty_delta(node.schema)
        )
        if as_of is not None:
            df = df.filter(F.col(TIME) <= as_of)
        acc = df.groupBy(*node.columns).agg(F.sum(DIFF).alias(CNT)).filter(F.col(CNT) != 0)
        negative = acc.filter(F.col(CNT) < 0).limit(1).collect()
        if negative:
            raise PlanError(
                f"to_spark(as_of={as_of}): collection {node.name!r} has a row with negative "
                f"multiplicity ({negative[0].asDict()}); read updates() instead"
            )
        expanded = acc.withColumn("__i", F.explode(F.sequence(F.lit(1), F.col(CNT).cast("int"))))
        return expanded.select(*node.columns)


def _sortable(table: pa.Table, column: str) -> bool:
    t = table.schema.field(column).type
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t))


def _check_data_dir(fs: Any, metadata: str | None) -> None:
    """Refuse a data dir the dataflow cannot keep its state in, naming the fix: a data
    dir that is not on a local disk needs a metadata store every process reaches.

    >>> from sealtime.storage.fs import DataFS
    >>> _check_data_dir(DataFS.from_uri("/tmp"), None)
    >>> _check_data_dir(DataFS.from_uri("gs://bucket/flows/a"), "postgresql://db/flows")
    >>> _check_data_dir(DataFS.from_uri("gs://bucket/flows/a"), None)
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Dataflow(data_dir='gs://bucket/flows/a'): the default metadata store is an SQLite file in the data dir, ...
    """
    if fs.local:
        return
    if metadata is None or not str(metadata).lower().startswith(("postgresql://", "postgres://")):
        raise ConfigError(
            f"Dataflow(data_dir={fs.location!r}): the default metadata store is an SQLite "
            "file in the data dir, and SQLite needs a local file (this data dir is on "
            f"{fs.type_name}); pass metadata='postgresql://user@host:5432/db' (a PostgreSQL "
            "server every process of the dataflow reaches), or use a local path"
        )
    # Everything else (ingest log, shards, checkpoints, spill, arrangement runs read and
    # written by Spark tasks) goes through `DataFS`, so any filesystem it reaches works.
