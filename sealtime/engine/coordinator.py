"""The coordinator: the tick loop that drives a dataflow on Spark.

One tick (`Engine.tick`):

1. **mint a binding** — every source reads a batch, stamps it (ingestion or event time,
   late routing) and logs it (Parquet) before anything propagates; the tick's binding
   records ``into_time`` and each source's position and frontier (`sealtime.engine.ingest`,
   `sealtime.engine.bindings`);
2. **progress** — the new root frontiers go through the progress tracker
   (`sealtime.engine.frontiers`), which gives the frontier at every operator input;
3. **operators** — the dataplane steps each operator whose frontier advanced over the
   newly sealed times (`sealtime.engine.dataplane`);
4. **sinks** — each sink commits the sealed range of its collection once
   (`sealtime.engine.commits`); while Arrow sinks collect, the next tick's binding may be
   minted (read-ahead);
5. **acknowledge, checkpoint** — upstream is acknowledged up to the resumption frontier;
   every ``checkpoint_every`` ticks the operators' state is checkpointed and the log
   behind it truncated (`sealtime.engine.retention`).

No operator reads the clock: the only clock is the ticker's, used to mint ingestion
times, and it is injectable. Recovery (`Engine.__init__`) reads the stored bindings and
the latest checkpoint; a replay feeds recorded bindings (`sealtime.engine.replay`).
"""

from __future__ import annotations

import contextlib
import time as _time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession

from ..arrangement.counters import KernelCounters
from ..errors import ConfigError
from ..failpoints import failpoint
from ..operators import Env, Operator, SharedArrangements, build, kernel_tasks
from ..plan import GRAPH_NAMESPACE, Plan, PlanNode, SinkEdge, Source, SourceOutput
from ..spark.session import import_short_names
from ..spark.spill import SpillStore
from ..storage.fs import DataFS
from ..storage.metadata import MetadataStore
from ..time.order import MIN_TIME, describe_frontier
from .bindings import Binding, BindingLog, restore_point
from .checkpoint import remove
from .commits import SinkStage, durable_upper
from .dataplane import Dataplane, StepResult
from .frontiers import FrontierTracker, f_min, output_frontier
from .fusion import Fusion
from .hydration import Hydrations
from .ingest import SourceRuntime
from .live import LivePlan
from .remap import Remap
from .replay import ReplayPlan, ReplayState, restamped
from .retention import TRUNCATION, LogRetention
from .snapshot import (
    EngineSnapshot,
    snapshot_of,
)
from .stats import OperatorStats, operator_stats
from .traces import Traces

__all__ = ["HYDRATION_IDS", "ROUTING_CONF", "Engine", "OperatorStats", "TickReport"]

#: the ids of hydrating copies start here (plan ids stay below it)
HYDRATION_IDS = 1 << 40

#: Spark settings the engine needs (set on the session it runs on)
ROUTING_CONF = {
    # Arrangements route keys with explicit hash partitioning that must reach the
    # kernels as it is: adaptive execution would coalesce or split partitions, and a
    # union that reports its children's partitioning lets Spark push the shuffle below
    # the union (task i then holds partition i - P). Kernels check it.
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.unionOutputPartitioning": "false",
    # Timestamps in Spark-written Parquet as UTC microseconds (not the legacy INT96,
    # which pyarrow reads as naive nanoseconds): shards check files against their
    # Arrow schema, timestamp[us, tz=UTC].
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
}


@dataclass
class TickReport:
    """What one tick did (for status lines, tests and benchmarks).

    * `frontier`: the sources' combined frontier after the tick (None: all sealed).
    * `sealed`: per operator that ran, the times it sealed this tick, ``[lo, hi)``;
      ``lo`` is None when no time was sealed before this tick and ``hi`` is None when
      every time is sealed now (the internal minimum time never shows).
    * `operators`: per operator that stepped, its rows, state size and times
      (`OperatorStats`, measured without an extra Spark job; `sealtime.engine.stats`).

    >>> r = TickReport(1, 1000, 1001, 5, 0.1, {3: (None, 1001)})
    >>> str(r)
    'tick 1 at 1000: 5 rows in, sealed before 1001, 0.100 s'
    """

    tick: int
    into_time: int
    frontier: int | None
    rows_in: int
    seconds: float
    sealed: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    operators: dict[int, OperatorStats] = field(default_factory=dict)

    def __str__(self) -> str:
        return (
            f"tick {self.tick} at {self.into_time}: {self.rows_in} rows in, "
            f"{describe_frontier(self.frontier)}, {self.seconds:.3f} s"
        )


def _configure(spark: SparkSession, partitions: int | None) -> int:
    """Set what the engine needs on `spark` (`ROUTING_CONF`, the short class names);
    returns the shuffle partitions to run (`partitions`, else the session's)."""
    for key, value in ROUTING_CONF.items():
        spark.conf.set(key, value)
    import_short_names(spark)  # (a session the user built has not had it)
    return partitions or max(1, int(spark.conf.get("spark.sql.shuffle.partitions")))


class Engine(LivePlan):
    """Runs a compiled `Plan` tick by tick. Users call `Dataflow.run`; everything
    above reads it through `snapshot()`.

    It sees only the plan (nodes, sinks, settings), the metadata store, the
    SparkSession and the ticker's clock (ms) — never the `Dataflow` object.
    `observers` are called as ``fn(engine, report)`` after each tick.
    """

    def __init__(
        self,
        plan: Plan,
        store: MetadataStore,
        spark: SparkSession,
        clock_ms: Callable[[], int],
        *,
        replay_from: ReplayPlan | None = None,
        observers: Sequence[Callable[[Engine, TickReport], None]] = (),
    ) -> None:
        self.plan = plan
        self.config = config = plan.config
        self.data_fs = DataFS.from_uri(config.data_dir)
        self.store = store
        self.clock_ms = clock_ms
        # (the caller's list: observers added later, e.g. by serve_ui, are seen too)
        self.observers = observers
        self.spark = spark
        self.partitions = _configure(spark, config.shuffle_partitions)
        self.tick_no = 0
        self.bindings: list[Binding] = []
        self.recovered_from: dict[str, Any] = {}

        # Durable state: the bindings (remap collection) and checkpoints of this dataflow.
        self.log = BindingLog(store, config.name)
        # One owner per data dir: refused if another process owns it; fenced from here on.
        self.lease = self.log.acquire_lease(config)
        if not config.live:  # (a live graph's objects are its catalog's: sealtime.serve)
            self.log.check_plan(plan.fingerprint())
        # (the graph, for readers without the dataflow's code: `sealtime status`)
        store.kv_put(GRAPH_NAMESPACE, config.name, [g.to_json() for g in plan.graph()])
        # (the stored bindings: a replay from a checkpoint imports its first ones)
        self.replay, stored = ReplayState.open(self.log, plan, replay_from)
        # (the resumption frontier: where readers open, what upstream counts as acknowledged)
        acked = self.log.resumption(durable_upper(plan))
        #: the live plan's nodes and sinks (`plan` also runs the hydrating copies)
        self.live_nodes: list[PlanNode] = list(plan.nodes)
        self.live_sinks: list[SinkEdge] = list(plan.sinks)
        self.hydrations = Hydrations(first_id=HYDRATION_IDS)
        self.sources = self._open_sources(plan.sources(), stored, acked)
        #: the ingest log each source or side-output node reads (hydrating copies too)
        self.log_readers: dict[int, SourceRuntime] = dict(self.sources)
        self.arrangements = SharedArrangements()
        #: what kernel tasks report (rows, state rows, time) through an accumulator
        self.counters = KernelCounters(spark.sparkContext)
        self.ops: dict[int, Operator[Any]] = self._build_operators(plan.nodes)
        self.sinks = SinkStage(plan, self.log_readers, self.ops, spark, together=config.fuse)
        self.dataplane = self._new_dataplane(plan)
        self.retention = LogRetention(plan, store, self.sources, self.data_fs)
        self.tracker = FrontierTracker(plan.graph())
        #: the next tick's binding, minted early while this tick collected (read-ahead)
        self._next_binding: Binding | None = None
        self.remap = Remap(
            self.log,
            self.sources,
            self.data_fs,
            clock_ms,
            self.replay,
            last_into=stored[-1].into_time if stored else MIN_TIME,
            acknowledged=acked,
        )
        self._recover(stored)

    def _new_dataplane(self, plan: Plan) -> Dataplane:
        """The dataplane of `plan` (after the sink stage: it knows which outputs its sinks
        collect)."""
        config = self.config
        spark = self.spark
        return Dataplane(
            plan,
            self.ops,
            SpillStore(spark, self.data_fs.join("spill", "pending")),
            self.partitions,
            self.data_fs,
            frame_sinks=self.sinks.frame_nodes,
            ahead=self.sinks.ahead_nodes,
            traces=Traces(spark, self.partitions, self.data_fs) if config.record else None,
            fusion=Fusion(spark) if config.fuse else None,
            collected=self.sinks.collects,
        )

    def _recover(self, stored: list[Binding]) -> None:
        """Resume after the `stored` bindings: the tick count, and the operators' state
        from the latest checkpoint (empty without one; the log after it replays)."""
        if stored:
            self.tick_no = stored[-1].tick
            self.bindings = list(stored)
            self.recovered_from = {"ticks": len(stored)}
        checkpoints = self.log.checkpoints() if stored else []
        if checkpoints:
            tick, manifest = checkpoints[-1]
            self.dataplane.restore(manifest)
            self.recovered_from["checkpoint"] = tick
        else:
            self.dataplane.start_empty()

    def _open_sources(
        self, nodes: Sequence[Source], stored: list[Binding], acked: dict[str, Any]
    ) -> dict[int, SourceRuntime]:
        """The runtimes of source `nodes`, resumed from the stored bindings (the log
        entries a checkpoint did not truncate, the last position), readers opened after
        the acknowledged position `acked` — or, in a replay, at the recorded times."""
        restored = restore_point(stored, self.store.kv_get(TRUNCATION, self.config.name, {}))
        replaying = self.replay.replaying(stored[-1].tick if stored else 0)
        out: dict[int, SourceRuntime] = {}
        for node in nodes:
            runtime = SourceRuntime(
                name=node.name,
                source=node.source,
                log_dir=self.data_fs.join("log", node.name),
                time_column=node.time_column,
                lateness=node.lateness,
                idle_timeout=node.idle_timeout,
                max_future=node.max_future,
                max_rows=node.max_rows,
                restored=restored.get(node.name),
                acknowledged=acked.get(node.name),
                replay=replaying,
                tuning=self.config.tuning,
            )
            if replaying and restamped(node.source):
                # Clocked sources are read again at the recorded binding times.
                runtime.reader = runtime.source.resume(runtime.position, None)
            out[node.id] = runtime
        return out

    def _build_operators(self, nodes: Sequence[PlanNode]) -> dict[int, Operator[Any]]:
        """The runtime operators of `nodes`; a hydrating copy keeps its state apart."""
        tasks = kernel_tasks(self.spark.sparkContext.master, self.partitions)
        out = {}
        for node in nodes:
            if node.id >= HYDRATION_IDS:
                state_dir = self.data_fs.join("state", "hydrating", f"n{node.id}")
            else:
                state_dir = self.data_fs.join("state", f"n{node.id:04d}-{node.kind}")
            # Fields passed by name: alike only in form to other keyword-argument calls.
            env = Env(
                spark=self.spark,
                state_dir=state_dir,
                partitions=self.partitions,
                sources=self.log_readers,
                arrangements=self.arrangements,
                tasks=tasks,
                counters=self.counters,
            )
            out[node.id] = build(node, env)
        return out

    # ------------------------------------------------------------------ replay
    @property
    def replaying(self) -> bool:
        """Do recorded ticks remain to be replayed?"""
        return self.replay.replaying(self.tick_no)

    @property
    def replay_ticks(self) -> int:
        """How many ticks the replay this data dir holds has (0: none)."""
        return self.replay.replay_ticks

    @property
    def time_reset(self) -> tuple[int, int] | None:
        """``(from_time, to_time)`` of the hand-over to live input this process made."""
        return self.replay.time_reset

    def check_can_tick(self) -> None:
        """Raise a clear error when the next tick cannot run: a finished replay that was
        not asked to continue live."""
        self.replay.check_can_tick(self.config.name, self.tick_no)

    # ------------------------------------------------------------------ the tick
    def tick(self, read_ahead: bool | Callable[[], bool] = False) -> TickReport:
        """Run one tick. `read_ahead` (or its answer, asked mid-tick): does another tick
        follow at once? Then, while this tick's Arrow sinks collect, the next tick's
        binding is minted and its entries' collection starts."""
        self.check_can_tick()
        started = _time.perf_counter()
        self._refresh_plan()
        self.tick_no += 1
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.partitions))
        binding, self._next_binding = self._next_binding, None
        if binding is None:
            binding = self.remap.mint(self.tick_no, self.sinks.durable_upper)
        self.bindings.append(binding)
        frontiers = self.tracker.advance(self._root_frontiers(binding))
        result = self.dataplane.step(frontiers, self.tick_no)
        failpoint("tick.computed")
        pinned = bool(
            self.config.checkpoint_every and self.tick_no % self.config.checkpoint_every == 0
        )
        collecting = self.sinks.begin(result)
        if collecting and not pinned and (read_ahead() if callable(read_ahead) else read_ahead):
            self._read_ahead(result)
        self.sinks.commit(result, self.tick_no)
        self.dataplane.run_unread(result)
        stats = self._operator_stats(result, binding)
        self._end_tick(result, pinned)
        frontier = f_min(frontiers[n.id] for n in self.live_nodes) if self.live_nodes else None
        # Reported ranges say "nothing sealed before" as None, not as the internal minimum.
        sealed = {n: (None if lo <= MIN_TIME else lo, hi) for n, (lo, hi) in result.sealed.items()}
        report = TickReport(
            self.tick_no,
            binding.into_time,
            frontier,
            sum(p.rows for p in binding.sources.values()),
            _time.perf_counter() - started,
            sealed,
            stats,
        )
        self.hydrations.observe(report.seconds, report.rows_in)
        for observe in self.observers:
            observe(self, report)
        return report

    def _root_frontiers(self, binding: Binding) -> dict[int, int | None]:
        """The frontier of every root of the plan after `binding`: a source's own; a
        side output's follows the source's binding times (docs/time.md); a hydrating
        copy's is where its slice of the recorded bindings has brought it."""
        out: dict[int, int | None] = self.hydrations.root_frontiers(self.bindings)
        for node in self.live_nodes:
            if isinstance(node, Source):
                out[node.id] = self.sources[node.id].frontier
            elif isinstance(node, SourceOutput):
                src = self.sources[node.source.id]
                out[node.id] = None if src.exhausted else binding.into_time + 1
        return out

    def _end_tick(self, result: StepResult, pinned: bool) -> None:
        """After the commits: release cached frames, let operators drop files they no
        longer need, acknowledge upstream, checkpoint on a pinned tick."""
        for df in result.persisted:
            df.unpersist()
        if not self.config.record:
            # (recorded traces are lazy plans that may read held-back updates' files)
            self.dataplane.spill.collect_garbage()
        for nid in result.stepped:
            self.ops[nid].after_tick(pinned)
        self.remap.acknowledge(self.tick_no, self.sinks.durable_upper)
        merged = self._merge_hydrated()
        # (a checkpoint never holds a hydrating copy; one follows each merge at once)
        if (pinned or (merged and self.config.checkpoint_every)) and not self.hydrations.active:
            self.checkpoint()

    def _read_ahead(self, result: StepResult) -> None:
        """Mint the next tick's binding now, while this tick's Arrow sinks collect, and
        start collecting its log entries for them: the Spark jobs of two ticks overlap,
        and the binding's reading, stamping and fsync hide behind this tick's jobs.

        Only live ticks read ahead (a replay's bindings are recorded; the hand-over to
        live input happens in its own tick), and only while a source may still have
        rows. The early binding is durable like any other: a crash after it restarts
        from the log as after any minted binding whose tick did not finish."""
        nxt = self.tick_no + 1
        if self.replay.bindings is not None or nxt == self.replay.hand_over_at:
            return
        if all(src.exhausted for src in self.sources.values()):
            return
        self._next_binding = self.remap.mint(nxt, self.sinks.durable_upper)
        failpoint("tick.read_ahead")
        self.sinks.begin_next(result)

    def _operator_stats(self, result: StepResult, binding: Binding) -> dict[int, OperatorStats]:
        """Per operator that stepped: what its kernel tasks reported this tick (drained
        from the accumulator: no Spark job) and the driver time of its step."""
        kernels = self.counters.drain()
        out = {}
        for nid, (seconds, ran) in result.plan_seconds.items():
            src = self.sources.get(nid)
            part = binding.sources.get(src.name) if src is not None else None
            read = part.rows if part is not None else None
            counting = self.ops[nid].counting
            out[nid] = operator_stats(counting, seconds, kernels.get(nid), ran=ran, rows_read=read)
        return out

    # ------------------------------------------------------------------ durability
    def resumption_frontier(self) -> dict[str, Any]:
        """Per source, the source-native position up to which upstream is acknowledged."""
        return dict(self.remap.acknowledged)

    def checkpoint(self) -> None:
        """Write a soft checkpoint of all operator state, then truncate the logs behind it."""
        self._refresh_plan()
        self.dataplane.flush()
        directory = self.data_fs.join("checkpoints", f"{self.tick_no:08d}")
        truncate = self.retention.processed_below(self.dataplane.done)
        manifest = {
            "tick": self.tick_no,
            "directory": directory,
            **self.dataplane.checkpoint_state(directory),
            "truncate": truncate,
        }
        failpoint("checkpoint.written")
        self.log.record_checkpoint(self.tick_no, manifest)
        for old in self.log.drop_checkpoints_before(self.tick_no):
            remove(old["directory"])
        if self.config.truncate_log:
            if self.dataplane.traces is not None:
                # Recorded traces are lazy frames over log files the truncation deletes.
                self.dataplane.traces.compact_all()
            self.retention.truncate(truncate)

    def close(self) -> None:
        """Stop the collections and close the source readers."""
        self.sinks.close()
        for src in self.sources.values():
            with contextlib.suppress(Exception):
                src.close()
        self.lease.release()

    # ------------------------------------------------------------------ reading
    def trace_frame(self, node: PlanNode) -> DataFrame:
        """All recorded updates of `node` (``Dataflow(record=True)``)."""
        traces = self.dataplane.traces
        if traces is None:
            raise ConfigError(
                "trace_frame: the dataflow keeps no traces; build it with Dataflow(record=True)"
            )
        return traces.frame(node)

    def frontier_of(self, node: PlanNode) -> int | None:
        """The frontier of `node`'s output: its input frontier through its path summary."""
        return output_frontier(node.summary(), self.dataplane.done[node.id])

    def finished(self) -> bool:
        """Has every tick run: a finished replay, or every source exhausted and every
        frontier empty?"""
        if self.replay.finished(self.tick_no):
            return True
        if self.tick_no < self.replay.replay_ticks:
            return False
        return all(s.exhausted for s in self.sources.values()) and all(
            v is None for v in self.dataplane.done.values()
        )

    def snapshot(self) -> EngineSnapshot:
        """The engine's state as a typed, read-only record (`EngineSnapshot`)."""
        self._refresh_plan()
        return snapshot_of(self)

    @property
    def plan(self) -> Plan:
        """The running plan: the live nodes and the hydrating copies."""
        self._refresh_plan()
        return self._plan

    @plan.setter
    def plan(self, plan: Plan) -> None:
        self._plan = plan
