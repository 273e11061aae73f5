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
import os
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..dataflow.fingerprint import canonical
from ..dataflow.plan import Node
from ..operators import Env, Operator, build, kernel_tasks
from ..spark.frames import DIFF, TIME, consolidate, union_all
from ..spark.spill import SpillStore
from ..time.order import MAX_TIME, MIN_TIME
from .bindings import Binding, BindingLog
from .checkpoint import remove
from .failpoints import failpoint
from .frontiers import FrontierTracker, f_min
from .ingest import SourceRuntime, _fsync, unreferenced_paths

__all__ = ["ROUTING_CONF", "Engine", "TickReport"]

#: Spark settings the engine needs (set on the session it runs on)
ROUTING_CONF = {
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.unionOutputPartitioning": "false",
}


@dataclass
class TickReport:
    """What one tick did (for status lines, tests and benchmarks)."""

    tick: int
    into_time: int
    frontier: int | None
    rows_in: int
    seconds: float
    sealed: dict[int, tuple[int, int | None]] = field(default_factory=dict)


class Engine:
    """Runs the plan of a `Dataflow` tick by tick. Internal; users call `Dataflow.run`."""

    def __init__(self, flow, replay_from: BindingLog | None = None) -> None:
        self.flow = flow
        self.spark = flow._spark
        self.nodes: list[Node] = list(flow._nodes)
        self.sources: dict[int, SourceRuntime] = {}
        self.ops: dict[int, Operator] = {}
        self.done: dict[int, int | None] = {}
        #: updates that arrived at an input ahead of its operator: (frame, time bound)
        self.pending: dict[tuple[int, int], tuple[DataFrame, int]] = {}
        self.trace: dict[int, list[DataFrame]] = {}
        self.consumers: dict[int, int] = {n.id: 0 for n in self.nodes}
        self.tick_no = 0
        self.last_into = MIN_TIME
        self.bindings: list[dict[str, Any]] = []
        self.acknowledged: dict[str, Any] = {}
        self.partitions = flow.shuffle_partitions or self._partitions()
        # Arrangements route keys with explicit hash partitioning that must reach the
        # kernels as it is: adaptive execution would coalesce or split partitions, and a
        # union that reports its children's partitioning lets Spark push the shuffle
        # below the union (task i then holds partition i - P). Kernels check it.
        for key, value in ROUTING_CONF.items():
            self.spark.conf.set(key, value)
        self.checkpoint_every = getattr(flow, "checkpoint_every", None)
        self.truncate_log = getattr(flow, "truncate_log", False)
        self.recovered_from: dict[str, Any] = {}
        for node in self.nodes:
            if node.kind == "source_output":
                continue  # reads the source's log itself, not the source's output frame
            for inp in node.inputs:
                self.consumers[inp.id] += 1
            if node.kind == "inspect":  # the tap computes its input once more
                self.consumers[node.inputs[0].id] += 1
        for node, _ in flow._sinks:
            self.consumers[node.id] += 1
        #: outputs whose plan runs a kernel (a stateful operator upstream): worth caching
        #: when read twice. Others are scans and expressions over the log, which Spark
        #: recomputes per reader with column pruning for less than caching wide rows.
        self.runs_kernel: dict[int, bool] = {}

        # Durable state: the bindings (remap collection) and checkpoints of this dataflow.
        self.log = BindingLog(flow.metadata_store, flow.name)
        self.log.check_plan(self._fingerprint())
        stored = self.log.load()
        self.replay: list[Binding] | None = None
        if replay_from is not None:
            if stored:
                raise RuntimeError(
                    f"replay: Dataflow({flow.name!r}) already has {len(stored)} bindings in its "
                    "data_dir; replay into a new, empty data_dir"
                )
            self.replay = replay_from.load()
        truncated = flow.metadata_store.kv_get("log-truncation", flow.name, {})
        restored = _restore_sources(stored, truncated)
        acked = BindingLog.resumption_positions([b.sources for b in stored], self._durable_upper())
        if stored:
            self.tick_no = stored[-1].tick
            self.last_into = stored[-1].into_time
            self.bindings = [_binding_dict(b) for b in stored]
            self.recovered_from = {"ticks": len(stored)}
        for node in self.nodes:
            self.done[node.id] = MIN_TIME
            if node.kind == "source":
                p = node.params
                self.sources[node.id] = SourceRuntime(
                    name=node.name,
                    source=p["source"],
                    log_dir=os.path.join(flow.data_dir, "log", node.name),
                    time_column=p.get("time"),
                    lateness=p.get("lateness"),
                    max_rows=p.get("max_rows"),
                    restored=restored.get(node.name),
                    acknowledged=acked.get(node.name),
                    replay=self.replay is not None,
                )
        shared: dict[Any, Any] = {}
        tasks = kernel_tasks(self.spark.sparkContext.master, self.partitions)
        for node in self.nodes:
            env = Env(
                spark=self.spark,
                state_dir=os.path.join(flow.data_dir, "state", f"n{node.id:04d}-{node.kind}"),
                partitions=self.partitions,
                sources=self.sources,
                shared=shared,
                tasks=tasks,
            )
            self.ops[node.id] = build(node, env)
            self.runs_kernel[node.id] = self.ops[node.id].stateful or any(
                self.runs_kernel[i.id] for i in node.inputs
            )
        self.spill = SpillStore(self.spark, os.path.join(flow.data_dir, "spill", "pending"))
        self.acknowledged = dict(acked)
        self.tracker = FrontierTracker(self.nodes)
        checkpoints = self.log.checkpoints() if stored else []
        if checkpoints:
            self._restore_checkpoint(*checkpoints[-1])
        else:
            self.spill.remove_all()
            for op in self.ops.values():
                op.restore({})  # empty state: files of a run that never checkpointed go

    def _fingerprint(self) -> list[str]:
        """Every node's kind, name, inputs, columns and canonical parameters (each
        expression, aggregate, window spec, join kind), and each sink's kind: what a
        resumed data dir must have been written by (`sealtime.dataflow.fingerprint`)."""
        plan = [
            f"{n.kind}:{n.name}:{[i.id for i in n.inputs]}:{n.columns}:{canonical(n.params)}"
            for n in self.nodes
        ]
        plan += [f"sink:{node.id}:{type(sink).__name__}" for node, sink in self.flow._sinks]
        return plan

    def _durable_upper(self) -> int | None:
        """The least upper of the sinks that must not lose data (exactly-once sinks); None
        when every logged row is durable downstream (no such sink, or all finished)."""
        uppers = [
            sink.durable_upper() for _, sink in self.flow._sinks if hasattr(sink, "durable_upper")
        ]
        present = [u for u in uppers if u is not None]
        return min(present) if present else None

    # ------------------------------------------------------------------ frames
    def _checkpoint(self, df: DataFrame | None) -> DataFrame | None:
        # Materialise and cut the lineage (pending buffers, traces); coalesce bounds the
        # partition count of frames that are unioned with their own past.
        if df is None:
            return None
        return df.coalesce(self.partitions).localCheckpoint(eager=True)

    def _partitions(self) -> int:
        return max(1, int(self.spark.conf.get("spark.sql.shuffle.partitions")))

    # ------------------------------------------------------------------ the tick
    def tick(self) -> TickReport:
        started = _time.perf_counter()
        self.tick_no += 1
        self.spark.conf.set("spark.sql.shuffle.partitions", str(self.partitions))
        binding = self._mint_binding()
        into = binding["into_time"]
        rows_in = sum(p["rows"] for p in binding["sources"].values())

        frontiers = self.tracker.advance({nid: s.frontier for nid, s in self.sources.items()})
        outputs: dict[int, DataFrame | None] = {}
        bounds: dict[int, int] = {}  # per output: an upper bound of its times (inclusive)
        sealed: dict[int, tuple[int, int | None]] = {}
        persisted: list[DataFrame] = []
        stepped: list[int] = []  # stateful operators that ran (their state must be written)
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
            if self._unread(node.id, node.kind, op.stateful):
                outputs[node.id] = None
                self.done[node.id] = hi
                continue
            out = op.step(inputs, lo, hi)
            bounds[node.id] = op.output_bound([b for _, b in ins], lo, hi)
            if out is not None and op.stateful:
                stepped.append(node.id)
            if out is not None and self.flow.record and op.stateful:
                # Traces are read after the tick: compute the output now, once.
                out = self._checkpoint(out)
                materialised.add(node.id)
            elif out is not None and self.consumers[node.id] > 1 and self.runs_kernel[node.id]:
                out = out.persist(StorageLevel.MEMORY_AND_DISK)
                persisted.append(out)
            if out is not None and self.flow.record:
                self._record(node, out)
            outputs[node.id] = out
            self.done[node.id] = hi
            sealed[node.id] = (lo, hi)
        failpoint("tick.computed")
        for node, sink in self.flow._sinks:
            if node.id in sealed:
                lo, hi = sealed[node.id]
                computed = sink.commit(outputs[node.id], lo, hi, self._commit_info(node))
                if computed is True:  # (a range committed before a restart runs nothing)
                    materialised |= self._upstream(node.id)
        self._run_unread(stepped, outputs, materialised)
        for df in persisted:
            df.unpersist()
        if not self.flow.record:
            # (recorded traces are lazy plans that may read held-back updates' files)
            self.spill.collect_garbage()
        pinned = bool(self.checkpoint_every and self.tick_no % self.checkpoint_every == 0)
        for nid in stepped:
            self.ops[nid].after_tick(pinned)
        self._acknowledge()
        if pinned:
            self.checkpoint()
        frontier = f_min([frontiers[n.id] for n in self.nodes]) if self.nodes else None
        return TickReport(
            self.tick_no, into, frontier, rows_in, _time.perf_counter() - started, sealed
        )

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
    def _mint_binding(self) -> dict[str, Any]:
        """Read, stamp and log every source, make the log files durable, then record the
        tick's binding in one transaction — before any row of this tick propagates."""
        parts: dict[str, Any] = {}
        if self.replay is not None:
            original = self.replay[self.tick_no - 1]
            into = original.into_time
            for src in self.sources.values():
                part = original.sources[src.name]
                src.apply_binding(part)
                parts[src.name] = {**part, "rows": sum(f["rows"] for f in part["files"])}
        else:
            into = max(self.flow._clock_ms(), self.last_into + 1)
            for src in self.sources.values():
                before = src.rows_in
                part = src.ingest(self.tick_no, into)
                parts[src.name] = {**part, "rows": src.rows_in - before}
                for f in part["files"] + part["error_files"] + part["health_files"]:
                    _fsync(f["path"])
            for src in self.sources.values():
                _fsync(src.log_dir)
        self.last_into = into
        failpoint("ingest.logged")
        self.log.append(self.tick_no, into, parts)
        failpoint("binding.committed")
        binding = {"tick": self.tick_no, "into_time": into, "sources": parts}
        self.bindings.append(binding)
        return binding

    def _acknowledge(self) -> None:
        """Acknowledge upstream up to the resumption frontier: the positions whose rows
        are all at times below the durable upper of every exactly-once sink."""
        if self.replay is not None:
            return
        positions = BindingLog.resumption_positions(
            [b["sources"] for b in self.bindings], self._durable_upper()
        )
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
        directory = os.path.join(self.flow.data_dir, "checkpoints", f"{self.tick_no:08d}")
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
            self._truncate(truncate)

    def _processed_below(self, source_id: int) -> int | None:
        """Least `done` frontier over the source and everything downstream of it: log rows
        at earlier times are reflected in the checkpointed state."""
        reach = {source_id}
        for node in self.nodes:  # nodes are in topological order
            if any(i.id in reach for i in node.inputs):
                reach.add(node.id)
        return f_min(self.done[n] for n in reach)

    def _truncate(self, below: dict[str, int | None]) -> None:
        marks = dict(self.flow.metadata_store.kv_get("log-truncation", self.flow.name, {}))
        marks.update({k: (v if v is not None else MAX_TIME) for k, v in below.items()})
        # Record first: a crash after this but before the deletes only leaves files behind.
        self.flow.metadata_store.kv_put("log-truncation", self.flow.name, marks)
        for src in self.sources.values():
            mark = marks[src.name]
            for files in (src.files, src.error_files, src.health_files):
                gone = [f for f in files if f.max_time < mark]
                kept = [f for f in files if f.max_time >= mark]
                # Linked entries share their source file's link; sidecars go with entries.
                for path in unreferenced_paths(gone, kept):
                    with contextlib.suppress(FileNotFoundError):
                        os.remove(path)
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
        for src in self.sources.values():
            with contextlib.suppress(Exception):
                src.close()

    def _commit_info(self, node: Node) -> dict[str, Any]:
        return {
            "tick": self.tick_no,
            "spark": self.spark,
            "schema": node.schema,
            "collection": node.name,
        }

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
        if d is None or frontiers[inp.id] == hi:
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

    def _unread(self, nid: int, kind: str, stateful: bool) -> bool:
        """A stateless output nobody reads (no consumer, no sink, not recorded): its plan
        is not even built. Stateful operators still step (their state must advance)."""
        return (
            not self.flow.record and self.consumers[nid] == 0 and not stateful and kind != "inspect"
        )

    # ------------------------------------------------------------------ traces
    def _record(self, node: Node, out: DataFrame) -> None:
        trace = self.trace.setdefault(node.id, [])
        trace.append(out)
        # Traces hold lazy frames over checkpointed state and logged input (recomputed
        # when read); every 32 ticks they are compacted into one materialised frame.
        if len(trace) >= 32:
            merged = consolidate(union_all(trace), node.columns + [TIME])
            self.trace[node.id] = [self._checkpoint(merged)]

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
        return self.done[node.id]

    def finished(self) -> bool:
        if self.replay is not None and self.tick_no >= len(self.replay):
            return True
        return all(s.exhausted for s in self.sources.values()) and all(
            v is None for v in self.done.values()
        )


def _restore_sources(
    bindings: list[Binding], truncated: dict[str, int]
) -> dict[str, dict[str, Any]]:
    """Per source: the state of its last binding and the log files of all bindings
    (minus the ones a checkpoint truncated)."""
    out: dict[str, dict[str, Any]] = {}
    for binding in bindings:
        for name, part in binding.sources.items():
            entry = out.setdefault(name, {"files": [], "error_files": [], "health_files": []})
            entry["state"] = part["state"]
            mark = truncated.get(name, MIN_TIME)
            for kind in ("files", "error_files", "health_files"):
                entry[kind] += [f for f in part.get(kind, []) if f["max_time"] >= mark]
    return out


def _binding_dict(b: Binding) -> dict[str, Any]:
    return {"tick": b.tick, "into_time": b.into_time, "sources": b.sources}


Clock = Callable[[], float]
