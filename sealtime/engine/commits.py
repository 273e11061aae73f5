"""The sink stage of a tick: each sink commits the sealed range of its collection once.

Three ways a range reaches its sink:

* **collected ahead** (`sealtime.engine.ahead`): an Arrow sink of a per-row collection
  over one source gets each log entry's rows once, at all their times, and is handed
  those of the sealed range;
* **collected early**: the first sink whose commit runs a Spark job and takes Arrow has
  its collection started in the background, so that the engine can mint the next
  tick's binding while it runs (read-ahead);
* **collected together**: Arrow sinks whose frames only read outputs computed and
  cached earlier in the tick (e.g. many views filtering one shared aggregate) are
  collected as one Spark job per column types: each frame tagged with its index, the
  union collected once and split (`_collect_together`), instead of one job per sink;
* **committed**: every other sink gets the range's frame and runs its own job.

The collections run in a small thread pool; each job keeps the Spark local properties
(job group, description, scheduler pool) of the thread that started it.
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..operators import Operator
from ..operators.fused import TAG, split_tagged
from ..plan import Plan, PlanNode, Source, SourceOutput, row_source
from ..sinks.base import CommitContext, Sink
from ..spark import frames
from .ahead import AheadCollector, Collected
from .dataplane import StepResult
from .frontiers import f_min
from .ingest import SourceRuntime

__all__ = ["SinkStage", "durable_upper"]


def durable_upper(plan: Plan) -> dict[str, dict[str, int | None]]:
    """Per source name and output (``main``, ``late``, ``errors``, ``health``), the least
    upper of the exactly-once sinks downstream of that output: the uppers the resumption
    frontier respects (`sealtime.engine.bindings.resumption_positions`). An output with
    no such sink downstream is absent (its rows are durable in the log); None: every
    such sink is finished. A side output reads the source's log, not its main output,
    so a sink on ``late`` never holds back the main output's acknowledgement, nor the
    other way round."""
    by_id = {n.id: n for n in plan.nodes}
    out: dict[str, dict[str, int | None]] = {}
    for node, sink in plan.sinks:
        if not sink.exactly_once:
            continue
        upper = sink.durable_upper()
        seen, stack = set(), [node]
        while stack:
            n = stack.pop()
            if n.id in seen:
                continue
            seen.add(n.id)
            if isinstance(n, Source):
                key = (n.name, "main")
            elif isinstance(n, SourceOutput):
                key = (n.source.name, n.output.value)
            else:
                stack += [by_id.get(i.id, i) for i in n.inputs]
                continue
            outputs = out.setdefault(key[0], {})
            outputs[key[1]] = f_min([outputs[key[1]], upper]) if key[1] in outputs else upper
    return out


class SinkStage:
    """The sinks of one plan and their collections (see the module docstring)."""

    def __init__(
        self,
        plan: Plan,
        sources: Mapping[int, SourceRuntime],
        ops: Mapping[int, Operator[Any]],
        spark: SparkSession,
        *,
        together: bool = True,
    ) -> None:
        self.sources = sources
        #: collect sinks that read only computed outputs in one job (`_collect_together`)
        self.together = together
        self._slots = max(1, spark.sparkContext.defaultParallelism)
        #: the runtime operators, for the per-row chains the ahead readers apply
        self.ops = ops
        self.spark = spark
        self._pool: ThreadPoolExecutor | None = None
        #: this tick's ahead readers and early collection (between `begin` and `commit`)
        self._readers: dict[int, Any] = {}
        self._early: tuple[int, Future[Any]] | None = None
        #: this tick's collections of fused groups' outputs, and their rows per member
        self._fused_jobs: dict[int, Future[Any]] = {}
        self._fused_parts: dict[int, list[Any]] = {}
        self.ahead: dict[int, AheadCollector] = {}
        self.retarget(plan)

    def retarget(self, plan: Plan) -> None:
        """Serve the sinks of `plan` from now on (a sink object kept from the current
        plan keeps what it collected ahead)."""
        kept = {id(self.plan.sinks[i].sink): c for i, c in self.ahead.items()} if self.ahead else {}
        self.plan = plan
        self.by_id = {n.id: n for n in plan.nodes}
        #: per sink (its index in ``plan.sinks``) that collects ahead of the frontier
        self.ahead = {
            i: kept.get(id(sink)) or AheadCollector(plan.config.tuning.ahead_max_bytes)
            for i, (node, sink) in enumerate(plan.sinks)
            if sink.takes_arrow and row_source(node) is not None
        }
        #: the nodes whose sinks all collect ahead
        self.ahead_nodes = {plan.sinks[i].node.id for i in self.ahead}
        #: the nodes whose output frame a sink reads
        self.frame_nodes = [
            node.id for i, (node, _) in enumerate(plan.sinks) if i not in self.ahead
        ]
        #: the nodes whose sinks take their rows as they are, as Arrow: a fused group's
        #: member among them takes its rows of the group's one collection
        self.collects = {
            node.id
            for i, (node, sink) in enumerate(plan.sinks)
            if i not in self.ahead and sink.takes_arrow and type(sink).arrow_plan is Sink.arrow_plan
        }

    # ------------------------------------------------------------------ the tick
    def begin(self, r: StepResult) -> bool:
        """Start this tick's collections: the ahead ones and the first early one.
        Returns whether any collection runs (a read-ahead can then overlap it)."""
        self._readers = {}
        for i, (node, sink) in enumerate(self.plan.sinks):
            if i in self.ahead and node.id in r.sealed:
                self._readers[i] = reader = self._ahead_reader(node, sink)
                self.ahead[i].begin(r.sealed[node.id][0], reader)
        self._early = self._first_collection(r)
        return bool(self._readers or self._early or self._fused_jobs)

    def begin_next(self, r: StepResult) -> None:
        """Start, for the next tick (whose binding was just minted), the ahead
        collections of the entries it logged."""
        for i, reader in self._readers.items():
            lo, hi = r.sealed[self.plan.sinks[i].node.id]
            if hi is not None:
                self.ahead[i].begin_next(lo, hi, reader)

    def commit(self, r: StepResult, tick: int) -> None:
        """Commit every sink's sealed range (waiting for the collections begun)."""
        later: list[tuple[int, DataFrame, CommitContext]] = []
        persisted = {id(f) for f in r.persisted}
        for i, (node, sink) in enumerate(self.plan.sinks):
            if node.id not in r.sealed:
                continue
            lo, hi = r.sealed[node.id]
            context = CommitContext(
                tick=tick, spark=self.spark, schema=node.schema, collection=node.name
            )
            if i in self.ahead:
                sink.commit_arrow(self.ahead[i].take(lo, hi), lo, hi, context)
                continue
            if node.id in r.fused and node.id in self.collects:
                sink.commit_arrow(self._fused_rows(r, node.id), lo, hi, context)
                r.materialised |= self.plan.upstream([node.id])
                continue
            if self._early is not None and self._early[0] == i:
                sink.commit_arrow(self._early[1].result(), lo, hi, context)
                r.materialised |= self.plan.upstream([node.id])
                continue
            delta = r.output(node.id)
            if (
                self.together
                and delta is not None
                and sink.takes_arrow
                and self._reads_computed(node.id, r, persisted)
            ):
                later.append((i, sink.arrow_plan(delta), context))
                continue
            computed = sink.commit(delta, lo, hi, context)
            if computed is True:  # (a range committed before a restart runs nothing)
                r.materialised |= self.plan.upstream([node.id])
        for i, table, context in self._collect_together(later):
            node, sink = self.plan.sinks[i]
            lo, hi = r.sealed[node.id]
            sink.commit_arrow(table, lo, hi, context)
        batched: dict[type[Sink], list[Sink]] = {}
        for node, sink in self.plan.sinks:
            if getattr(sink, "batches_commits", False) and node.id in r.sealed:
                batched.setdefault(type(sink), []).append(sink)
        for kind, sinks in batched.items():
            kind.end_commits(sinks)
        self._readers, self._early = {}, None
        self._fused_jobs, self._fused_parts = {}, {}

    def durable_upper(self) -> dict[str, dict[str, int | None]]:
        """The durable uppers of the plan's exactly-once sinks, per source and output
        (`durable_upper`)."""
        return durable_upper(self.plan)

    def close(self) -> None:
        """Stop the collection pool (queued collections are cancelled; a running one is
        waited for, so that no job of this dataflow outlives it)."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    # ------------------------------------------------------------------ collections
    def _first_collection(self, r: StepResult) -> tuple[int, Future[Any]] | None:
        """The Arrow collection of the first sink (in plan order) whose commit runs a
        job, started now when that sink takes Arrow. Only the first: sinks' jobs keep
        their order, as a later one may read state an earlier one's kernels write. (A
        range without updates commits without a job.)"""
        for i, (node, sink) in enumerate(self.plan.sinks):
            if node.id in r.fused and node.id in self.collects and node.id in r.sealed:
                frame = r.fused[node.id].frame
                self._fused_jobs[id(frame)] = self._collect(frame)
                return None
            delta = r.output(node.id)
            if node.id not in r.sealed or i in self.ahead or delta is None:
                continue  # (no job: collected ahead, or nothing to commit)
            if not sink.takes_arrow:
                return None
            return i, self._collect(sink.arrow_plan(delta))
        return None

    def _reads_computed(self, nid: int, r: StepResult, persisted: set[int]) -> bool:
        """Does node `nid`'s output this tick read only what a job computed and cached
        already (the ids of the cached frames: `persisted`), or the log? Then collecting
        it runs no kernel: no operator's state is written, so it may be collected
        together with others in any order."""
        by_id = self.by_id
        seen: set[int] = set()
        stack = [nid]
        while stack:
            n = stack.pop()
            if n in seen:
                continue
            seen.add(n)
            frame = r.fused[n].frame if n in r.fused else r.outputs.get(n)
            if n in r.materialised and frame is not None and id(frame) in persisted:
                continue  # (read from Spark's cache)
            if n in r.fused or self.ops[n].stateful:
                return False
            stack += [i.id for i in by_id[n].inputs]
        return True

    def _collect_together(
        self, frames: list[tuple[int, DataFrame, CommitContext]]
    ) -> list[tuple[int, pa.Table | None, CommitContext]]:
        """Collect `frames` (sink index, Arrow plan, context) with one Spark job per list
        of column types: each frame's rows tagged with its place, the union collected
        once (in as many tasks as Spark has cores: the frames are small) and
        split per frame under its own column names. A frame alone is collected alone."""
        by_types: dict[tuple[str, ...], list[tuple[int, DataFrame, CommitContext]]] = {}
        for entry in frames:
            types = tuple(f.dataType.simpleString() for f in entry[1].schema)
            by_types.setdefault(types, []).append(entry)
        jobs = []
        for entries in by_types.values():
            if len(entries) == 1:
                jobs.append((entries, self._collect(entries[0][1])))
                continue
            # (`union` goes by position: the names are the first frame's)
            parts = [df.select(F.lit(k).alias(TAG), "*") for k, (_, df, _) in enumerate(entries)]
            while len(parts) > 1:  # (pairs of pairs: each union is analysed, keep them small)
                pairs = zip(parts[::2], parts[1::2])
                parts = [a.union(b) for a, b in pairs] + parts[len(parts) // 2 * 2 :]
            jobs.append((entries, self._collect(parts[0].coalesce(self._slots))))
        out = []
        for entries, job in jobs:
            table = job.result()
            if len(entries) == 1:
                out.append((entries[0][0], table, entries[0][2]))
                continue
            columns = [df.columns for _, df, _ in entries]
            for (i, _, context), rows in zip(entries, split_tagged(table, columns)):
                out.append((i, rows, context))
        return out

    def _fused_rows(self, r: StepResult, nid: int) -> Any:
        """Member `nid`'s rows of its fusion group's output (one collection a group)."""
        fused = r.fused[nid]
        key = id(fused.frame)
        if key not in self._fused_parts:
            job = self._fused_jobs.pop(key, None) or self._collect(fused.frame)
            self._fused_parts[key] = fused.group.operator.split(job.result())
        return self._fused_parts[key][fused.index]

    def _ahead_reader(self, node: PlanNode, sink: Sink) -> Any:
        """`AheadCollector`'s ``read`` for `sink` of the per-row collection `node`: the
        plan of `node` over the log entries not read yet, at every time from ``lo`` on,
        collected as the sink's Arrow rows by a Spark job in the background (the plan
        is built here, on the engine's thread; only the collection runs in the pool)."""
        source = row_source(node)
        assert source is not None
        runtime = self.sources[source.id]
        chain: list[PlanNode] = []
        at = node
        while at is not source:
            chain.append(at)
            at = at.inputs[0]
        ops = self.ops

        def plan(lo: int, skip: Any) -> DataFrame | None:
            df = runtime.frame(self.spark, "main", lo, None, source.columns, skip)
            for n in reversed(chain):
                if df is None:
                    return None
                df = ops[n.id].step([df], lo, None)
            return df

        def read(lo: int, skip: Any) -> tuple[Collected, list[tuple[str, int]]]:
            keys = [e.key for e in runtime.log.entries_for("main", lo, None)]
            df = plan(lo, skip) if any(k not in skip for k in keys) else None
            if df is None:
                return None, keys
            return self._collect(sink.arrow_plan(df)).result, keys

        return read

    def _collect(self, df: DataFrame) -> Future[Any]:
        """`to_arrow(df)` in a background thread (a Spark job while the engine goes on).
        The job keeps this thread's Spark local properties (job group, description,
        scheduler pool), as PySpark's `InheritableThread` does."""
        if self._pool is None:
            # Two: this tick's collection and the next tick's, read ahead.
            self._pool = ThreadPoolExecutor(2, thread_name_prefix="sealtime-collect")
        jsc = self.spark.sparkContext._jsc.sc()
        properties = jsc.getLocalProperties().clone()

        def run() -> Any:
            jsc.setLocalProperties(properties)
            # Looked up per call: tests and bench/tick_profile.py wrap frames.to_arrow.
            return frames.to_arrow(df)

        return self._pool.submit(run)
