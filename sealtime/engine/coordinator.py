"""The coordinator: the tick loop that drives a dataflow on Spark.

One tick:

1. **mint bindings** — every source reads a batch, stamps it (ingestion or event time,
   late routing) and logs it (Parquet) before anything propagates; the tick's binding
   records ``into_time`` and each source's position and frontier;
2. **progress** — the new source frontiers go through the progress tracker
   (`sealtime.progress`), which gives the frontier at every operator input;
3. **operators** — in topological order, each operator whose input frontier advanced
   processes exactly the newly sealed times ``[old frontier, new frontier)`` on Spark;
   updates that arrive at an input ahead of the operator's frontier (a multi-input
   operator whose other input lags) wait in a per-input buffer;
4. **sinks** — each sink commits the sealed range of its collection once.

No operator reads the clock: the only clock is the ticker's, used to mint ingestion
times, and it is injectable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time as _time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..arrangement.counters import KernelCounters
from ..dataflow.plan import Node, Plan
from ..operators import Env, Operator, build, kernel_tasks, log_derived, row_source
from ..sinks.base import CommitContext, Sink
from ..spark import frames
from ..spark.frames import DIFF, TIME, consolidate, union_all
from ..spark.session import import_short_names
from ..spark.spill import SpillStore
from ..storage.fs import DataFS
from ..storage.metadata import MetadataStore
from ..time.order import MAX_TIME, MIN_TIME, describe_frontier
from .ahead import AheadCollector
from .bindings import Binding, BindingLog, BindingPart, restore_point
from .checkpoint import remove
from .failpoints import failpoint
from .frontiers import FrontierTracker, f_min, node_summary
from .ingest import SourceRuntime, unreferenced_paths
from .replay import (
    ReplayPlan,
    hand_over,
    hand_over_tick,
    link_part,
    open_live,
    read_marker,
    restamped,
    write_marker,
)
from .stats import OperatorStats, operator_stats

__all__ = ["ROUTING_CONF", "Engine", "OperatorStats", "TickReport"]

#: Spark settings the engine needs (set on the session it runs on)
ROUTING_CONF = {
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


class Engine:
    """Runs a compiled `Plan` tick by tick. Internal; users call `Dataflow.run`.

    It sees only the plan (nodes, sinks, settings), the metadata store, the
    SparkSession and the ticker's clock (ms) — never the `Dataflow` object.
    `observers` are called as ``fn(engine, report)`` after each tick.
    """

    def __init__(
        self,
        plan: Plan,
        store: MetadataStore,
        spark: Any,
        clock_ms: Callable[[], int],
        *,
        replay_from: ReplayPlan | None = None,
        observers: Sequence[Callable[[Engine, TickReport], None]] = (),
    ) -> None:
        self.plan = plan
        self.config = config = plan.config
        #: the data dir through the one filesystem layer (log, state, spill, checkpoints)
        self.data_fs = DataFS.from_uri(config.data_dir)
        self.store = store
        self.clock_ms = clock_ms
        # (the caller's list: observers added later, e.g. by serve_ui, are seen too)
        self.observers = observers
        self.spark = spark
        self.nodes: list[Node] = list(plan.nodes)
        self.sources: dict[int, SourceRuntime] = {}
        self.ops: dict[int, Operator] = {}
        self.done: dict[int, int | None] = {}
        #: updates that arrived at an input ahead of its operator: (frame, time bound)
        self.pending: dict[tuple[int, int], tuple[DataFrame, int]] = {}
        self.trace: dict[int, list[DataFrame]] = {}
        self._compacted: set[int] = set()  # traces that are one materialised frame
        self.consumers: dict[int, int] = {n.id: 0 for n in self.nodes}
        self.tick_no = 0
        self.last_into = MIN_TIME
        self.bindings: list[dict[str, Any]] = []
        self.acknowledged: dict[str, Any] = {}
        self.partitions = config.shuffle_partitions or self._partitions()
        # Arrangements route keys with explicit hash partitioning that must reach the
        # kernels as it is: adaptive execution would coalesce or split partitions, and a
        # union that reports its children's partitioning lets Spark push the shuffle
        # below the union (task i then holds partition i - P). Kernels check it.
        # (and Parquet timestamps as the shards expect them; see ROUTING_CONF)
        for key, value in ROUTING_CONF.items():
            self.spark.conf.set(key, value)
        import_short_names(self.spark)  # (a session the user built has not had it)
        self.checkpoint_every = config.checkpoint_every
        self.truncate_log = config.truncate_log
        self.recovered_from: dict[str, Any] = {}
        #: per node: the nodes that read its output frame (sinks not included)
        self.readers: dict[int, list[int]] = {n.id: [] for n in self.nodes}
        for node in self.nodes:
            if node.kind == "source_output":
                continue  # reads the source's log itself, not the source's output frame
            for inp in node.inputs:
                self.consumers[inp.id] += 1
                self.readers[inp.id].append(node.id)
            if node.kind == "inspect":  # the tap computes its input once more
                self.consumers[node.inputs[0].id] += 1
        #: per sink (its index in ``plan.sinks``): Arrow sinks of per-row collections
        #: collect each log entry once, ahead of the frontier (`sealtime.engine.ahead`)
        self.ahead: dict[int, AheadCollector] = {}
        for i, (node, sink) in enumerate(plan.sinks):
            if sink.takes_arrow and row_source(node) is not None:
                self.ahead[i] = AheadCollector()
            else:
                self.consumers[node.id] += 1
        self.ahead_nodes = {plan.sinks[i][0].id for i in self.ahead}
        self._collect_pool: ThreadPoolExecutor | None = None
        #: the next tick's binding, minted early while this tick collected (`_read_ahead`)
        self._next_binding: dict[str, Any] | None = None
        #: outputs whose plan runs a kernel (a stateful operator upstream): worth caching
        #: when read twice. Others are scans and expressions over the log, which Spark
        #: recomputes per reader with column pruning for less than caching wide rows.
        self.runs_kernel: dict[int, bool] = {}

        # Durable state: the bindings (remap collection) and checkpoints of this dataflow.
        self.log = BindingLog(store, config.name)
        self.log.check_plan(plan.fingerprint())
        stored = self.log.load()
        self._init_replay(replay_from, stored)
        truncated = store.kv_get("log-truncation", config.name, {})
        restored = restore_point(stored, truncated)
        acked = self.log.resumption(self._durable_upper())
        if stored:
            self.tick_no = stored[-1].tick
            self.last_into = stored[-1].into_time
            self.bindings = [b.to_json() for b in stored]
            self.recovered_from = {"ticks": len(stored)}
        for node in self.nodes:
            self.done[node.id] = MIN_TIME
            if node.kind == "source":
                p = node.params
                self.sources[node.id] = SourceRuntime(
                    name=node.name,
                    source=p["source"],
                    log_dir=self.data_fs.join("log", node.name),
                    time_column=p.get("time"),
                    lateness=p.get("lateness"),
                    idle_timeout=p.get("idle_timeout"),
                    max_future=p.get("max_future"),
                    max_rows=p.get("max_rows"),
                    restored=restored.get(node.name),
                    acknowledged=acked.get(node.name),
                    replay=self.replaying,
                )
                if self.replaying and restamped(p["source"]):
                    # Clocked sources are read again at the recorded binding times.
                    src = self.sources[node.id]
                    src.reader = src.source.resume(src.position, None)
        shared: dict[Any, Any] = {}
        tasks = kernel_tasks(self.spark.sparkContext.master, self.partitions)
        #: what kernel tasks report (rows, state rows, time) through an accumulator
        self.counters = KernelCounters(self.spark.sparkContext)
        for node in self.nodes:
            env = Env(
                spark=self.spark,
                state_dir=self.data_fs.join("state", f"n{node.id:04d}-{node.kind}"),
                partitions=self.partitions,
                sources=self.sources,
                shared=shared,
                tasks=tasks,
                counters=self.counters,
                log_output=self.log_output,
            )
            self.ops[node.id] = build(node, env)
            self.runs_kernel[node.id] = self.ops[node.id].stateful or any(
                self.runs_kernel[i.id] for i in node.inputs
            )
        self.unread = self._unread_nodes()
        self.spill = SpillStore(self.spark, self.data_fs.join("spill", "pending"))
        self.acknowledged = dict(acked)
        self.tracker = FrontierTracker(self.nodes)
        checkpoints = self.log.checkpoints() if stored else []
        if checkpoints:
            self._restore_checkpoint(*checkpoints[-1])
        else:
            self.spill.remove_all()
            for op in self.ops.values():
                op.restore({})  # empty state: files of a run that never checkpointed go

    # ------------------------------------------------------------------ replay
    def _init_replay(self, plan: ReplayPlan | None, stored: list[Binding]) -> None:
        """Replay state (`sealtime.engine.replay`): the recorded bindings still to
        replay, and the tick that hands over to live input. A data dir holding a replay
        keeps a marker, so a restart continues an interrupted replay, hands over if the
        replay finished just before, or refuses to run a finished replay-only dir."""
        store = self.store
        marker = read_marker(store, self.config.name)
        if plan is not None:
            same = marker is not None and (marker["from"], marker["name"]) == (
                plan.from_dir,
                plan.name,
            )
            if stored and not same:
                raise RuntimeError(
                    f"replay: Dataflow({self.config.name!r}) already has {len(stored)} bindings "
                    "in its data_dir; replay into a new, empty data_dir"
                )
            plan.check_sources(
                self.config.name,
                [(n.name, n.params["source"]) for n in self.nodes if n.kind == "source"],
            )
            if not stored or len(stored) < marker["ticks"]:
                # (a resumed replay keeps the tick count it started with)
                ticks = marker["ticks"] if stored else plan.ticks
                plan = dataclasses.replace(plan, bindings=plan.bindings[:ticks])
                write_marker(store, self.config.name, plan)
                marker = plan.marker()
        elif marker is not None and len(stored) < marker["ticks"]:
            plan = ReplayPlan.load(
                marker["from"],
                marker["name"],
                metadata=marker.get("metadata"),
                then_live=marker["then_live"],
            )
        #: the replay: recorded bindings, tick count, live hand-over (tick), restamping
        self.replay_plan = plan
        self.replay: list[Binding] | None = None
        self.replay_ticks = 0 if marker is None else int(marker["ticks"])
        self.then_live = bool(marker and marker["then_live"])
        self.hand_over_at = hand_over_tick(marker)
        self.restamp_hand_over: int | None = None
        #: (from_time, to_time) of the hand-over this process made
        self.time_reset: tuple[int, int] | None = None
        if plan is not None and len(stored) < self.replay_ticks:
            self.replay = plan.bindings[: self.replay_ticks]
            self.restamp_hand_over = plan.recorded_hand_over

    @property
    def replaying(self) -> bool:
        """Do recorded ticks remain to be replayed?"""
        return self.replay is not None and self.tick_no < self.replay_ticks

    def check_can_tick(self) -> None:
        """Raise a clear error when the next tick cannot run: a finished replay that was
        not asked to continue live."""
        if self.replay_ticks and self.tick_no >= self.replay_ticks and not self.then_live:
            raise RuntimeError(
                f"Dataflow({self.config.name!r}): the replay is finished — all "
                f"{self.replay_ticks} recorded ticks ran, and it was not asked to continue "
                "with live input; replay with then_live=True (sealtime replay ... "
                "--then-live) to hand over to live input after the recorded ticks, or run "
                "the job on the original data_dir, which resumes from its own log"
            )

    def _go_live(self, into: int) -> None:
        """The first live tick after a replay: open the readers at the positions of the
        last replayed binding and tell the clocked ones (timers, ``time_reset``)."""
        acked = self.log.resumption(self._durable_upper())
        for src in self.sources.values():
            open_live(src, acked.get(src.name))
            if src.name in acked:
                self.acknowledged[src.name] = acked[src.name]
        hand_over(self.sources.values(), self.last_into, into)
        self.time_reset = (self.last_into, into)
        self.replay = None  # (the recorded bindings are not needed any more)

    def _durable_upper(self) -> int | None:
        """The least upper of the sinks that must not lose data (exactly-once sinks); None
        when every logged row is durable downstream (no such sink, or all finished)."""
        uppers = [sink.durable_upper() for _, sink in self.plan.sinks if sink.exactly_once]
        present = [u for u in uppers if u is not None]
        return min(present) if present else None

    # ------------------------------------------------------------------ frames
    def _checkpoint(self, df: DataFrame | None) -> DataFrame | None:
        # Materialise and cut the lineage (pending buffers, traces); coalesce bounds the
        # partition count of frames that are unioned with their own past.
        if df is None:
            return None
        df = df.coalesce(self.partitions)
        sc = self.spark.sparkContext
        if sc.master.startswith("local"):
            # The executor is this JVM: its blocks live exactly as long as the dataflow.
            return df.localCheckpoint(eager=True)
        # On a cluster a lost executor takes its localCheckpoint blocks with it, and a
        # later read (trace compaction, updates()) fails with
        # CHECKPOINT_RDD_BLOCK_ID_NOT_FOUND. A reliable checkpoint is files on the data
        # dir, which every executor reaches; Spark deletes them once the frame is
        # unreferenced (spark.cleaner.referenceTracking.cleanCheckpoints). See
        # docs/cluster.md.
        if sc._jsc.sc().getCheckpointDir().isEmpty():
            sc.setCheckpointDir(self.data_fs.spark_uri("spill/checkpoints"))
        # A reliable checkpoint computes its frame once to count it and again to write
        # the files: cached, the second pass reads the cache instead of rerunning kernels.
        cached = df.persist(StorageLevel.MEMORY_AND_DISK)
        out = cached.checkpoint(eager=True)
        cached.unpersist()
        return out

    def _partitions(self) -> int:
        return max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions")))

    # ------------------------------------------------------------------ the tick
    def tick(self, read_ahead: bool | Callable[[], bool] = False) -> TickReport:
        """Run one tick. `read_ahead` (or its answer, asked mid-tick): does another tick
        follow at once? Then, while this tick's Arrow sinks collect, the next tick's
        binding is minted and its entries' collection starts (`_read_ahead`)."""
        self.check_can_tick()
        started = _time.perf_counter()
        self.tick_no += 1
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.partitions))
        binding, self._next_binding = self._next_binding, None
        if binding is None:
            binding = self._mint_binding(self.tick_no)
        self.bindings.append(binding)
        into = binding["into_time"]
        rows_in = sum(p["rows"] for p in binding["sources"].values())

        frontiers = self.tracker.advance({nid: s.frontier for nid, s in self.sources.items()})
        outputs: dict[int, DataFrame | None] = {}
        bounds: dict[int, int] = {}  # per output: an upper bound of its times (inclusive)
        sealed: dict[int, tuple[int, int | None]] = {}
        persisted: list[DataFrame] = []
        stepped: list[int] = []  # stateful operators that ran (their state must be written)
        plan_seconds: dict[int, tuple[float, bool]] = {}  # (monitoring) step time, ran
        materialised: set[int] = set()  # outputs already computed by a job this tick
        for node in self.nodes:
            hi = frontiers[node.id]
            lo = self.done[node.id]
            ins = [
                self._input(node, port, inp, outputs, bounds, frontiers, hi, materialised)
                for port, inp in enumerate(node.inputs)
            ]
            inputs = [d for d, _ in ins]
            if lo == hi:
                outputs[node.id] = None
                continue
            op = self.ops[node.id]
            if node.id in self.unread:
                outputs[node.id] = None
                self.done[node.id] = hi
                if node.id in self.ahead_nodes:
                    sealed[node.id] = (lo, hi)
                if node.kind == "source":  # (its rows are read: report them)
                    plan_seconds[node.id] = (0.0, False)
                continue
            step_started = _time.perf_counter()
            out = op.step(inputs, lo, hi)
            plan_seconds[node.id] = (_time.perf_counter() - step_started, out is not None)
            bounds[node.id] = op.output_bound([b for _, b in ins], lo, hi)
            if out is not None and op.stateful:
                stepped.append(node.id)
            if out is not None and self.config.record and op.stateful:
                # Traces are read after the tick: compute the output now, once.
                out = self._checkpoint(out)
                materialised.add(node.id)
            elif out is not None and self.consumers[node.id] > 1 and self.runs_kernel[node.id]:
                out = out.persist(StorageLevel.MEMORY_AND_DISK)
                persisted.append(out)
            if out is not None and self.config.record:
                self._record(node, out)
            outputs[node.id] = out
            self.done[node.id] = hi
            sealed[node.id] = (lo, hi)
        failpoint("tick.computed")
        pinned = bool(self.checkpoint_every and self.tick_no % self.checkpoint_every == 0)
        # Arrow sinks collecting ahead: their collections start now and run while the
        # engine goes on (other sinks' jobs, the next tick's binding).
        collecting = {}
        for i, (node, sink) in enumerate(self.plan.sinks):
            if i in self.ahead and node.id in sealed:
                collecting[i] = reader = self._ahead_reader(node, sink)
                self.ahead[i].begin(sealed[node.id][0], reader)
        early = self._first_collection(outputs, sealed)
        if (
            (collecting or early)
            and not pinned
            and (read_ahead() if callable(read_ahead) else read_ahead)
        ):
            self._read_ahead(collecting, sealed)
        for i, (node, sink) in enumerate(self.plan.sinks):
            if node.id in sealed:
                lo, hi = sealed[node.id]
                if i in self.ahead:
                    table = self.ahead[i].take(lo, hi)
                    sink.commit_arrow(table, lo, hi, self._commit_context(node))
                    continue
                if early is not None and early[0] == i:
                    sink.commit_arrow(early[1].result(), lo, hi, self._commit_context(node))
                    materialised |= self._upstream(node.id)
                    continue
                computed = sink.commit(outputs[node.id], lo, hi, self._commit_context(node))
                if computed is True:  # (a range committed before a restart runs nothing)
                    materialised |= self._upstream(node.id)
        self._run_unread(stepped, outputs, materialised)
        for df in persisted:
            df.unpersist()
        if not self.config.record:
            # (recorded traces are lazy plans that may read held-back updates' files)
            self.spill.collect_garbage()
        for nid in stepped:
            self.ops[nid].after_tick(pinned)
        self._acknowledge()
        if pinned:
            self.checkpoint()
        frontier = f_min([frontiers[n.id] for n in self.nodes]) if self.nodes else None
        # Reported ranges say "nothing sealed before" as None, not as the internal minimum.
        reported = {n: (None if lo <= MIN_TIME else lo, hi) for n, (lo, hi) in sealed.items()}
        report = TickReport(
            self.tick_no,
            into,
            frontier,
            rows_in,
            _time.perf_counter() - started,
            reported,
            self._operator_stats(plan_seconds, binding),
        )
        # sealtime.ui (Dataflow.serve_ui()): one immutable snapshot per tick, built only from
        # the Python objects above (no Spark job); the web server reads nothing else.
        for observe in self.observers:
            observe(self, report)
        return report

    def _operator_stats(
        self, plan_seconds: dict[int, tuple[float, bool]], binding: dict[str, Any]
    ) -> dict[int, OperatorStats]:
        """Per operator that stepped: what its kernel tasks reported this tick (drained
        from the accumulator: no Spark job) and the driver time of its step."""
        kernels = self.counters.drain()
        out = {}
        for nid, (seconds, ran) in plan_seconds.items():
            src = self.sources.get(nid)
            read = binding["sources"].get(src.name, {}).get("rows") if src is not None else None
            counting = self.ops[nid].counting
            out[nid] = operator_stats(counting, seconds, kernels.get(nid), ran=ran, rows_read=read)
        return out

    def _upstream(self, node_id: int) -> set[int]:
        """The node and every node its output this tick was computed from."""
        out = {node_id}
        for node in reversed(self.nodes):  # reverse topological order
            if node.id in out:
                out.update(i.id for i in node.inputs)
        return out

    def _run_unread(
        self, stepped: list[int], outputs: dict[int, DataFrame | None], done: set[int]
    ) -> None:
        """Run the plans of stateful operators no job has computed this tick (no sink
        reads them): their state must be written. One job for all of them."""
        from pyspark.sql import functions as F

        todo = [nid for nid in stepped if nid not in done and outputs.get(nid) is not None]
        # An operator feeding another in the list runs inside that one's plan.
        covered: set[int] = set()
        for nid in todo:
            covered |= self._upstream(nid) - {nid}
        frames = [outputs[nid].select(F.lit(1).alias("x")) for nid in todo if nid not in covered]
        if frames:
            union_all(frames).write.format("noop").mode("overwrite").save()

    # ------------------------------------------------------------------ durability
    def _mint_binding(self, tick: int) -> dict[str, Any]:
        """Read, stamp and log every source, make the log files durable, then record
        binding `tick` in one transaction — before any row of that tick propagates."""
        parts: dict[str, BindingPart] = {}
        if self.replay is not None and tick <= self.replay_ticks:
            original = self.replay[tick - 1]
            into = original.into_time
            if tick == self.restamp_hand_over:
                # The original handed over to live input here: restamp that too.
                hand_over(self.sources.values(), self.last_into, into)
            for src in self.sources.values():
                if restamped(src.source):
                    parts[src.name] = part = src.ingest(tick, into)
                else:
                    # The recorded files, linked into this data dir's log (it owns them).
                    parts[src.name] = part = link_part(original.sources[src.name], src.log_dir)
                    src.apply_binding(part)
                self._sync_log(part)
        else:
            into = max(self.clock_ms(), self.last_into + 1)
            if tick == self.hand_over_at:
                self._go_live(into)
            for src in self.sources.values():
                parts[src.name] = part = src.ingest(tick, into)
                self._sync_log(part)
        self.last_into = into
        failpoint("ingest.logged")
        binding = self.log.append(tick, into, parts).to_json()
        failpoint("binding.committed")
        return binding

    def _first_collection(
        self, outputs: dict[int, DataFrame | None], sealed: dict[int, Any]
    ) -> tuple[int, Future[Any]] | None:
        """The Arrow collection of the first sink (in plan order) whose commit runs a
        job, started now when that sink takes Arrow, so that the next binding is minted
        while it runs (`_read_ahead`). Only the first: sinks' jobs keep their order, as
        a later one may read state an earlier one's kernels write. (A range without
        updates commits without a job.)"""
        for i, (node, sink) in enumerate(self.plan.sinks):
            delta = outputs.get(node.id)
            if node.id not in sealed or i in self.ahead or delta is None:
                continue  # (no job: collected ahead, or nothing to commit)
            if not sink.takes_arrow:
                return None
            return i, self._collect(sink.arrow_plan(delta))
        return None

    def _read_ahead(self, collecting: dict[int, Any], sealed: dict[int, Any]) -> None:
        """Mint the next tick's binding now, while this tick's Arrow sinks collect, and
        start collecting its log entries for them: the Spark jobs of two ticks overlap,
        and the binding's reading, stamping and fsync hide behind this tick's jobs.

        Only live ticks read ahead (a replay's bindings are recorded; the hand-over to
        live input happens in its own tick), and only while a source may still have
        rows. The early binding is durable like any other: a crash after it restarts
        from the log as after any minted binding whose tick did not finish."""
        nxt = self.tick_no + 1
        if self.replay is not None or nxt == self.hand_over_at:
            return
        if all(src.exhausted for src in self.sources.values()):
            return
        self._next_binding = self._mint_binding(nxt)
        failpoint("tick.read_ahead")
        for i, reader in collecting.items():
            lo, hi = sealed[self.plan.sinks[i][0].id]
            if hi is not None:
                self.ahead[i].begin_next(lo, hi, reader)

    def _acknowledge(self) -> None:
        """Acknowledge upstream up to the resumption frontier: the positions whose rows
        are all at times below the durable upper of every exactly-once sink."""
        if self.tick_no <= self.replay_ticks:
            return  # (a replay acknowledges nothing upstream: it reads no source)
        positions = self.log.resumption(self._durable_upper())
        for src in self.sources.values():
            position = positions.get(src.name)
            if position is not None and position != self.acknowledged.get(src.name):
                src.acknowledge(position)
                self.acknowledged[src.name] = position

    def resumption_frontier(self) -> dict[str, Any]:
        """Per source, the source-native position up to which upstream is acknowledged."""
        return dict(self.acknowledged)

    def checkpoint(self) -> None:
        """Write a soft checkpoint of all operator state, then truncate the logs behind it."""
        directory = self.data_fs.join("checkpoints", f"{self.tick_no:08d}")
        operators = {}
        for nid, op in self.ops.items():
            op.durable()
            operators[str(nid)] = op.state(os.path.join(directory, f"n{nid:04d}"))
            op.pin()
        pending = {
            f"{nid}.{port}": {
                "path": self.spill.live[f"n{nid}-p{port}"],
                "schema": df.schema.json(),
                "bound": bound,
            }
            for (nid, port), (df, bound) in self.pending.items()
        }
        self.spill.pin()
        truncate = {src.name: self._processed_below(nid) for nid, src in self.sources.items()}
        manifest = {
            "tick": self.tick_no,
            "directory": directory,
            "done": {str(k): v for k, v in self.done.items()},
            "operators": operators,
            "pending": pending,
            "truncate": truncate,
        }
        failpoint("checkpoint.written")
        self.log.record_checkpoint(self.tick_no, manifest)
        for old in self.log.drop_checkpoints_before(self.tick_no):
            remove(old["directory"])
        if self.truncate_log:
            # Recorded traces are lazy frames over log files the truncation deletes.
            for nid in list(self.trace):
                self._compact_trace(nid)
            self._truncate(truncate)

    def _processed_below(self, source_id: int) -> int | None:
        """Least `done` frontier over the source and everything downstream of it: log rows
        at earlier times are reflected in the checkpointed state."""
        reach = {source_id}
        for node in self.nodes:  # nodes are in topological order
            if any(i.id in reach for i in node.inputs):
                reach.add(node.id)
        return f_min(self.done[n] for n in reach)

    def _sync_log(self, part: BindingPart) -> None:
        """Make a tick's new log files (and the directories naming them) durable."""
        rels = [self.data_fs.rel(path) for f in part.entries() for path in f.paths()]
        self.data_fs.sync([r for r in rels if r is not None])

    def _truncate(self, below: dict[str, int | None]) -> None:
        marks = dict(self.store.kv_get("log-truncation", self.config.name, {}))
        marks.update({k: (v if v is not None else MAX_TIME) for k, v in below.items()})
        # Record first: a crash after this but before the deletes only leaves files behind.
        self.store.kv_put("log-truncation", self.config.name, marks)
        for src in self.sources.values():
            mark = marks[src.name]
            for files in (src.files, src.error_files, src.health_files):
                gone = [f for f in files if f.max_time < mark]
                kept = [f for f in files if f.max_time >= mark]
                # Linked entries share their source file's link; sidecars go with entries.
                for path in unreferenced_paths(gone, kept):
                    rel = self.data_fs.rel(path)
                    if rel is not None:  # (the log lies under the data dir)
                        self.data_fs.delete_file(rel)
                files[:] = kept

    def _restore_checkpoint(self, tick: int, manifest: dict[str, Any]) -> None:
        import json

        from pyspark.sql import types as T

        for key, entry in manifest.get("pending", {}).items():
            nid, port = (int(x) for x in key.split("."))
            schema = T.StructType.fromJson(json.loads(entry["schema"]))
            self.spill.live[f"n{nid}-p{port}"] = entry["path"]
            df = self.spill.read(entry["path"], schema)
            self.pending[(nid, port)] = (df, entry["bound"])
        self.spill.pin()
        self.spill.collect_garbage()
        states = manifest.get("operators", {})
        for nid, op in self.ops.items():
            op.restore(states.get(str(nid), {}))
        for nid, value in manifest["done"].items():
            self.done[int(nid)] = value
        self.recovered_from["checkpoint"] = tick

    def close(self) -> None:
        if self._collect_pool is not None:
            # (queued collections are cancelled; a running one is waited for, so that no
            # job of this dataflow outlives it)
            self._collect_pool.shutdown(wait=True, cancel_futures=True)
            self._collect_pool = None
        for src in self.sources.values():
            with contextlib.suppress(Exception):
                src.close()

    def _commit_context(self, node: Node) -> CommitContext:
        return CommitContext(
            tick=self.tick_no, spark=self.spark, schema=node.schema, collection=node.name
        )

    def _input(
        self, node, port, inp, outputs, bounds, frontiers, hi, materialised: set[int]
    ) -> tuple[DataFrame | None, int]:
        """This tick's updates at input `port` (with an upper bound of their times): the
        upstream output, plus the updates held back from earlier ticks."""
        held, held_bound = self.pending.pop((node.id, port), (None, MIN_TIME))
        self.spill.drop(f"n{node.id}-p{port}")
        out = outputs.get(inp.id)
        bound = max(held_bound, bounds.get(inp.id, MIN_TIME) if out is not None else MIN_TIME)
        d = union_all([held, out])
        if d is None or hi is None or (frontiers[inp.id] == hi and not self.ops[inp.id].delays):
            return d, bound
        # The input is ahead of this operator (another input lags): hold back the rows at
        # times the operator has not sealed yet — unless the bound shows there are none.
        assert hi is not None
        if bound >= hi:
            ahead = d.filter(F.col(TIME) >= hi)
            name = f"n{node.id}-p{port}"
            self.pending[(node.id, port)] = (self.spill.write(ahead, name, self.tick_no), bound)
            materialised |= self._upstream(inp.id)
            return d.filter(F.col(TIME) < hi), hi - 1
        return d, bound

    def log_output(self, node: Node, lo: int, hi: int | None) -> DataFrame | None:
        """The output of `node` at times in ``[lo, hi)``, built again from its source's
        log: `node` is a source output or a chain of one-input stateless operators over
        one, so its output over several ticks' ranges is one plan (one scan of the log
        files) instead of one per tick. A windowed aggregate reads its deferred ticks
        this way."""
        if not log_derived(node):
            raise ValueError(
                f"{node.kind} node {node.name!r} is not derived from one source's log alone"
            )
        op = self.ops[node.id]
        if node.kind in ("source", "source_output"):
            return op.step([None] * len(node.inputs), lo, hi)
        return op.step([self.log_output(node.inputs[0], lo, hi)], lo, hi)

    def _unread_nodes(self) -> set[int]:
        """Stateless outputs nobody reads (no sink but Arrow sinks collecting ahead, no
        reader but unread ones, not recorded): their plans are not even built. Stateful
        operators still step (their state must advance); inspect taps still run."""
        if self.config.record:
            return set()
        sunk = {node.id for i, (node, _) in enumerate(self.plan.sinks) if i not in self.ahead}
        unread: set[int] = set()
        for node in reversed(self.nodes):  # readers before what they read
            if (
                node.id not in sunk
                and node.kind != "inspect"
                and not self.ops[node.id].stateful
                and all(r in unread for r in self.readers[node.id])
            ):
                unread.add(node.id)
        return unread

    def _ahead_reader(self, node: Node, sink: Sink) -> Any:
        """`AheadCollector`'s ``read`` for `sink` of the per-row collection `node`: the
        plan of `node` over the log entries not read yet, at every time from ``lo`` on,
        collected as the sink's Arrow rows by a Spark job in the background (the plan
        is built here, on the engine's thread; only the collection runs in the pool)."""
        source = row_source(node)
        assert source is not None
        runtime = self.sources[source.id]

        def plan(n: Node, lo: int, skip: Any) -> DataFrame | None:
            if n is source:
                return runtime.frame(self.spark, "main", lo, None, n.columns, skip)
            inner = plan(n.inputs[0], lo, skip)
            return None if inner is None else self.ops[n.id].step([inner], lo, None)

        def read(lo: int, skip: Any) -> tuple[Any, list[tuple[str, int]]]:
            keys = [e.key for e in runtime.log.entries_for("main", lo, None)]
            df = plan(node, lo, skip) if any(k not in skip for k in keys) else None
            if df is None:
                return None, keys
            return self._collect(sink.arrow_plan(df)).result, keys

        return read

    def _collect(self, df: DataFrame) -> Future[Any]:
        """`to_arrow(df)` in a background thread (a Spark job while the engine goes on).
        The job keeps this thread's Spark local properties (job group, description,
        scheduler pool), as PySpark's `InheritableThread` does."""
        if self._collect_pool is None:
            # Two: this tick's collection and the next tick's, read ahead.
            self._collect_pool = ThreadPoolExecutor(2, thread_name_prefix="sealtime-collect")
        jsc = self.spark.sparkContext._jsc.sc()
        properties = jsc.getLocalProperties().clone()

        def run() -> Any:
            jsc.setLocalProperties(properties)
            # Looked up per call: tests and bench/tick_profile.py wrap frames.to_arrow.
            return frames.to_arrow(df)

        return self._collect_pool.submit(run)

    # ------------------------------------------------------------------ traces
    def _record(self, node: Node, out: DataFrame) -> None:
        trace = self.trace.setdefault(node.id, [])
        trace.append(out)
        self._compacted.discard(node.id)
        # Traces hold lazy frames over checkpointed state and logged input (recomputed
        # when read); every 32 ticks they are compacted into one materialised frame.
        if len(trace) >= 32:
            self._compact_trace(node.id)

    def _compact_trace(self, nid: int) -> None:
        trace = self.trace.get(nid)
        if trace and nid not in self._compacted:
            node = next(n for n in self.nodes if n.id == nid)
            merged = self._checkpoint(consolidate(union_all(trace), node.columns + [TIME]))
            self.trace[nid] = [merged]
            self._compacted.add(nid)

    def trace_frame(self, node: Node) -> DataFrame:
        parts = self.trace.get(node.id, [])
        if not parts:
            schema = T.StructType(
                list(node.schema.fields)
                + [
                    T.StructField(TIME, T.LongType(), False),
                    T.StructField(DIFF, T.LongType(), False),
                ]
            )
            return self.spark.createDataFrame([], schema)
        return consolidate(union_all(parts), node.columns + [TIME])

    def frontier_of(self, node: Node) -> int | None:
        """The frontier of `node`'s output: its input frontier through its path summary
        (rounded up for ``advance_time``, unchanged otherwise)."""
        done = self.done[node.id]
        summary = node_summary(node)
        return done if done is None or summary is None else summary.results_in(done)

    def finished(self) -> bool:
        if self.replay_ticks and self.tick_no >= self.replay_ticks and not self.then_live:
            return True
        if self.tick_no < self.replay_ticks:
            return False
        return all(s.exhausted for s in self.sources.values()) and all(
            v is None for v in self.done.values()
        )


Clock = Callable[[], float]
