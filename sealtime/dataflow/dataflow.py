"""`Dataflow`: a named graph of collections, run tick by tick on Spark."""

from __future__ import annotations

import os
import time as _time
import weakref
from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..sources.base import Source
from ..spark.plans import Projection
from .collection import Collection
from .durations import parse_duration
from .plan import Node, infer_bound

__all__ = ["Dataflow", "SourceCollection"]


#: which dataflow each attached sink object belongs to (by id, with weak references, so
#: that a sink object given to two collections is refused and no sink is kept alive)
_SINK_OWNERS: dict[int, tuple[weakref.ref, weakref.ref]] = {}


class SourceCollection(Collection):
    """The main output of a source, with its `late` and `errors` outputs."""

    @property
    def late(self) -> Collection:
        """Records whose event time was already sealed when they arrived, with the
        original columns and a ``reason``; stamped at the frontier they missed."""
        return self._flow._source_output(self._node, "late")

    @property
    def errors(self) -> Collection:
        """Records that could not be decoded: ``raw`` and ``reason``."""
        return self._flow._source_output(self._node, "errors")

    def subsource(self, name: str) -> Collection:
        """One output of a source with several (``Nexmark``: ``"person"``, ``"auction"``,
        ``"bid"``): the rows whose ``_subsource`` is `name`, with that output's columns.
        ``src["bid"]`` is the same. All outputs share the source's binding and frontier."""
        subsources = getattr(self._node.params["source"], "subsources", None)
        if not subsources:
            raise ValueError(f"source {self._node.name!r} has no subsources")
        if name not in subsources:
            raise ValueError(
                f"source {self._node.name!r} has no subsource {name!r}; "
                f"it has {', '.join(subsources)}"
            )
        cols = [f.name for f in subsources[name] if f.name not in ("_time", "_diff")]

        built: list = []  # the filter and the projection, built on first use only

        def pick(df: DataFrame) -> DataFrame:
            if not built:
                built.extend([F.col("_subsource") == name, Projection([*cols, "_time", "_diff"])])
            return built[1].apply(df.filter(built[0]))

        pick.__name__ = f"subsource[{name}]"
        return self.map(pick)

    def __getitem__(self, name: str) -> Collection:
        return self.subsource(name)

    @property
    def health(self) -> Collection:
        """The source's status as a one-row collection (``source``, ``status``):
        ``running``, ``stalled`` (e.g. its broker is unreachable, the reader retries) or
        ``failed: reason``. Each change retracts the old row and adds the new one."""
        return self._flow._source_output(self._node, "health")


class Dataflow:
    """A dataflow: sources, operators and sinks, run on Spark (local mode by default).

    * `data_dir`: where ingest logs, sink files and the SQLite metadata store go.
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
      (keep False to be able to `replay` from the very beginning).

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
    ) -> None:
        if not name or not isinstance(name, str):
            raise ValueError("Dataflow(name) must be a non-empty string")
        self.name = name
        self.data_dir = os.path.abspath(os.fspath(data_dir or os.path.join("data", name)))
        os.makedirs(self.data_dir, exist_ok=True)
        from ..storage import MetadataStore

        # SQLite in the data dir unless a URL is given; opening it validates the setting
        # (a bad URL or an unreachable server fails here, naming `metadata`).
        self.metadata = metadata
        self.metadata_store = MetadataStore.open(metadata or self.data_dir)
        self.tick_ms = parse_duration(tick, "Dataflow(tick)")
        if self.tick_ms <= 0:
            raise ValueError("Dataflow(tick) must be > 0, e.g. tick='1s'")
        self._clock = clock or _time.time
        self._sleep = sleep or _time.sleep
        self.record = record
        if shuffle_partitions is not None and shuffle_partitions < 1:
            raise ValueError("Dataflow(shuffle_partitions) must be >= 1")
        self.shuffle_partitions = shuffle_partitions
        if checkpoint_every is not None and (
            not isinstance(checkpoint_every, int) or checkpoint_every < 0
        ):
            raise ValueError(
                f"Dataflow(checkpoint_every={checkpoint_every!r}) must be a number of ticks "
                ">= 1, or 0/None for no checkpoints"
            )
        self.checkpoint_every = checkpoint_every or None
        self.truncate_log = bool(truncate_log)
        if spark is None:
            from ..spark.session import get_or_create_session

            spark = get_or_create_session(master=master, app_name=f"sealtime-{name}")
        self._spark = spark
        self._nodes: list[Node] = []
        self._sinks: list[tuple[Node, Any]] = []
        self._source_outputs: dict[tuple[int, str], Collection] = {}
        #: topic -> Publish sink (its ``address`` is where subscribers connect)
        self.publications: dict[str, Any] = {}
        self._catalog: Any = None  # sealtime.pubsub.catalog.Catalog, on first use
        self._catalog_server: Any = None  # its CatalogServer, started by the first publish
        self._engine = None

    # ------------------------------------------------------------------ building
    def source(
        self,
        name: str,
        source: Source,
        *,
        time: str | None = None,
        lateness: str | int | None = None,
        max_rows_per_tick: int | None = None,
    ) -> SourceCollection:
        """Add a source. Without `time`, rows get ingestion time (the tick's binding time);
        with ``time="col"`` the column is the event time and `lateness` bounds how far
        behind the largest event time seen a record may be before it is late."""
        if self._engine is not None:
            raise RuntimeError("Dataflow: add sources before the first run()")
        if any(n.kind == "source" and n.name == name for n in self._nodes):
            raise ValueError(f"Dataflow: a source named {name!r} exists already")
        if not isinstance(source, Source):
            raise TypeError(
                f"source {name!r}: expected a sealtime Source, got {type(source).__name__}"
            )
        explicit = getattr(source, "time_column", None) == "_time"
        if time is not None and time not in source.schema.names:
            raise ValueError(
                f"source {name!r}: time={time!r} is not a column of the source; its columns "
                f"are {source.schema.names} (name the event-time column, or leave time out "
                "for ingestion time)"
            )
        if lateness is not None and time is None:
            raise ValueError(
                f"source {name!r}: lateness={lateness!r} needs time='<event time column>'; "
                "ingestion-time sources are never late"
            )
        lateness_ms = (
            parse_duration(lateness, f"source {name!r} lateness") if lateness is not None else None
        )
        names = [n for n in source.schema.names if n not in ("_time", "_diff")]
        spark_schema = self._spark_schema(source.schema, names)
        node = Node(
            "source",
            name,
            [],
            spark_schema,
            params={
                "source": source,
                "time": time,
                "lateness": lateness_ms,
                "max_rows": max_rows_per_tick,
            },
            monotonic=not explicit or bool(getattr(source, "monotonic", False)),
        )
        if explicit and hasattr(source, "table"):
            node.monotonic = bool(
                pa.compute.all(pa.compute.greater(source.table.column("_diff"), 0)).as_py()
                or source.table.num_rows == 0
            )
        self._add(node)
        # The side outputs exist from the start, so they can be read after a run; unread
        # ones cost nothing (the engine skips stateless outputs nobody reads).
        for which in ("late", "errors", "health"):
            self._source_output(node, which)
        return SourceCollection(self, node)

    def _spark_schema(self, schema: pa.Schema, names: list[str]) -> T.StructType:
        from pyspark.sql.pandas.types import from_arrow_schema

        return from_arrow_schema(pa.schema([schema.field(n) for n in names]))

    def _source_output(self, node: Node, which: str) -> Collection:
        key = (node.id, which)
        if key not in self._source_outputs:
            if which == "late":
                fields = list(node.schema.fields) + [T.StructField("reason", T.StringType(), True)]
            elif which == "health":
                fields = [
                    T.StructField("source", T.StringType(), True),
                    T.StructField("status", T.StringType(), True),
                ]
            else:
                fields = [
                    T.StructField("raw", T.StringType(), True),
                    T.StructField("reason", T.StringType(), True),
                ]
            out = Node(
                "source_output",
                f"{node.name}.{which}",
                [node],
                T.StructType(fields),
                params={"output": which},
            )
            self._add(out)
            self._source_outputs[key] = Collection(self, out)
        return self._source_outputs[key]

    def _add(self, node: Node) -> Collection:
        if self._engine is not None:
            raise RuntimeError("Dataflow: the graph cannot change after the first run()")
        node.id = len(self._nodes)
        node.bounded_by = infer_bound(node)
        self._nodes.append(node)
        return Collection(self, node)

    def _add_sink(self, node: Node, sink: Any) -> None:
        if self._engine is not None:
            raise RuntimeError("Dataflow: add sinks before the first run()")
        if not hasattr(sink, "commit"):
            raise TypeError(f"sink(): expected a sealtime sink (st.sinks.*), got {sink!r}")
        owner = _SINK_OWNERS.get(id(sink))
        if owner is not None and owner[0]() is sink and owner[1]() is not None:
            where = "this dataflow" if owner[1]() is self else f"dataflow {owner[1]().name!r}"
            raise ValueError(
                f"sink(): this {type(sink).__name__} object already receives a collection of "
                f"{where}; its commit log holds one collection's ranges, so give each "
                "collection its own sink object"
            )
        if hasattr(sink, "attach"):
            sink.attach(self, node)
        self._sinks.append((node, sink))
        _SINK_OWNERS[id(sink)] = (weakref.ref(sink), weakref.ref(self))

    def _add_publication(self, node: Node, topic: str, options: dict[str, Any]) -> None:
        from pyspark.sql.pandas.types import to_arrow_schema

        from ..pubsub.catalog import CATALOG_TOPIC
        from ..sinks.publish import Publish

        if self._engine is not None:
            raise RuntimeError("Dataflow: publish before the first run()")
        if topic in self.publications or topic == CATALOG_TOPIC:
            raise ValueError(
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
            T.StructField("_time", T.LongType(), False),
            T.StructField("_diff", T.LongType(), False),
        ]
        return self._spark.createDataFrame([], T.StructType(fields))

    # ------------------------------------------------------------------ running
    def _clock_ms(self) -> int:
        return int(self._clock() * 1000)

    @property
    def engine(self):
        if self._engine is None:
            from ..engine.coordinator import Engine

            self._engine = Engine(self)
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
        if ticks is None and not forever and engine.replay is None:
            for node in self._nodes:
                if node.kind == "source" and not node.params["source"].finite:
                    raise ValueError(
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
            if ticks is None and not forever and engine.finished():
                break
            report = engine.tick()
            reports.append(report)
            if on_tick is not None:
                on_tick(report)
            if forever:
                next_at += self.tick_ms / 1000
                delay = next_at - self._clock()
                if delay > 0:
                    self._sleep(delay)
        return reports

    def replay(
        self,
        from_data_dir: str | os.PathLike[str],
        *,
        from_metadata: str | None = None,
        name: str | None = None,
        on_tick: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """Re-run this dataflow from another run's ingest log and bindings (read in place,
        never changed), tick by tick with the original binding times, so every sink gets
        exactly the commits of the original run. This dataflow's own `data_dir` must be
        new. `name` is the original dataflow's name (default: this one's)."""
        from ..engine.bindings import BindingLog
        from ..engine.coordinator import Engine
        from ..storage import MetadataStore

        if self._engine is not None:
            raise RuntimeError("replay() must be the first run of a Dataflow")
        source_dir = os.path.abspath(os.fspath(from_data_dir))
        if source_dir == self.data_dir:
            raise ValueError("replay(from_data_dir=...) must differ from this data_dir")
        store = MetadataStore.open(from_metadata or source_dir)
        original = BindingLog(store, name or self.name)
        if not original.load():
            raise ValueError(
                f"replay: no bindings for dataflow {name or self.name!r} in {source_dir}; "
                "pass the data_dir (and name=) of the run to replay"
            )
        if original.store.kv_get("log-truncation", original.flow):
            raise ValueError(
                f"replay: the log in {source_dir} was truncated behind a checkpoint; "
                "replaying from the beginning needs a run with truncate_log=False"
            )
        self._engine = Engine(self, replay_from=original)
        try:
            return self.run(on_tick=on_tick)
        finally:
            store.close()

    def close(self) -> None:
        """Close source readers, sinks and the metadata store."""
        if self._engine is not None:
            self._engine.close()
        self.close_publications()
        published = {id(s) for s in self.publications.values()}
        for _, sink in self._sinks:
            close = getattr(sink, "close", None)
            if close is not None and id(sink) not in published:
                close()
        self.metadata_store.close()

    def resumption_frontier(self) -> dict[str, Any]:
        """Per source, the source-native position acknowledged upstream: every row before
        it is durable in every exactly-once sink downstream."""
        return {} if self._engine is None else self._engine.resumption_frontier()

    @property
    def bindings(self) -> list[dict[str, Any]]:
        """The bindings minted so far: per tick, ``into_time`` and each source's position
        and frontier."""
        return [] if self._engine is None else list(self._engine.bindings)

    def metrics(self) -> dict[str, Any]:
        """Counters per source: rows read, late rows, error rows, frontier."""
        if self._engine is None:
            return {"ticks": 0, "sources": {}}
        return {
            "ticks": self._engine.tick_no,
            "sources": {
                s.name: {
                    "rows": s.rows_in,
                    "late": s.late_count,
                    "errors": s.error_count,
                    "frontier": s.frontier,
                }
                for s in self._engine.sources.values()
            },
        }

    def _engine_frontier(self, node: Node) -> int | None:
        from ..time.order import MIN_TIME

        if self._engine is None:
            return MIN_TIME
        return self._engine.frontier_of(node)

    # ------------------------------------------------------------------ reading back
    def _require_record(self, what: str) -> None:
        if not self.record:
            raise RuntimeError(
                f"{what} needs Dataflow(record=True) (it keeps every collection's updates); "
                "with record=False read a sink instead"
            )

    def _updates(self, node: Node) -> pa.Table:
        self._require_record("updates()")
        if self._engine is None:
            df = self._empty_delta(node.schema)
        else:
            df = self._engine.trace_frame(node)
        cols = node.columns + ["_time", "_diff"]
        table = df.select(*cols).toArrow()
        if table.num_rows == 0:
            return table
        return table.sort_by(
            [("_time", "ascending")]
            + [(c, "ascending") for c in node.columns if _sortable(table, c)]
        )

    def _to_spark(self, node: Node, as_of: int | None) -> DataFrame:
        self._require_record("to_spark()")
        df = (
            self._engine.trace_frame(node)
            if self._engine is not None
            else self._empty_delta(node.schema)
        )
        if as_of is not None:
            df = df.filter(F.col("_time") <= as_of)
        acc = df.groupBy(*node.columns).agg(F.sum("_diff").alias("_cnt")).filter(F.col("_cnt") != 0)
        negative = acc.filter(F.col("_cnt") < 0).limit(1).collect()
        if negative:
            raise ValueError(
                f"to_spark(as_of={as_of}): collection {node.name!r} has a row with negative "
                f"multiplicity ({negative[0].asDict()}); read updates() instead"
            )
        expanded = acc.withColumn("__i", F.explode(F.sequence(F.lit(1), F.col("_cnt").cast("int"))))
        return expanded.select(*node.columns)


def _sortable(table: pa.Table, column: str) -> bool:
    t = table.schema.field(column).type
    return not (pa.types.is_nested(t) or pa.types.is_dictionary(t))
