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

import os
import time as _time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..dataflow.plan import Node
from ..spark.frames import DIFF, TIME, consolidate, union_all
from ..spark.reduce import AggregateReducer, DifferentialReduce, TopKReducer, WindowedReduce
from ..spark.relational import BilinearJoin, Distinct, assign_windows
from .frontiers import FrontierTracker, f_min
from .ingest import MIN_TIME, SourceRuntime

__all__ = ["Engine", "TickReport"]


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

    def __init__(self, flow) -> None:
        self.flow = flow
        self.spark = flow._spark
        self.nodes: list[Node] = list(flow._nodes)
        self.sources: dict[int, SourceRuntime] = {}
        self.runtime: dict[int, Any] = {}
        self.done: dict[int, int | None] = {}
        self.pending: dict[tuple[int, int], DataFrame] = {}
        self.trace: dict[int, list[DataFrame]] = {}
        self.consumers: dict[int, int] = {n.id: 0 for n in self.nodes}
        self.tick_no = 0
        self.last_into = MIN_TIME
        self.bindings: list[dict[str, Any]] = []
        for node in self.nodes:
            for inp in node.inputs:
                self.consumers[inp.id] += 1
        for node, _ in flow._sinks:
            self.consumers[node.id] += 1
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
                )
            self.runtime[node.id] = self._make_runtime(node)
        self.tracker = FrontierTracker(self.nodes)

    # ------------------------------------------------------------------ runtimes
    def _checkpoint(self, df: DataFrame | None) -> DataFrame | None:
        # Materialise and cut the lineage: state is rebuilt from its previous value every
        # tick, so without this the query plan would grow with the number of ticks.
        return None if df is None else df.localCheckpoint(eager=True)

    def _make_runtime(self, node: Node) -> Any:
        p = node.params
        ck = self._checkpoint
        if node.kind in ("reduce", "windowed_reduce"):
            src = node.inputs[0]
            if p["what"] == "aggregate":
                reducer = AggregateReducer(p["aggregates"], src.schema)
                values = reducer.value_columns
            else:
                by = p["by"] + (
                    ["window_start", "window_end"] if node.kind == "windowed_reduce" else []
                )
                reducer = TopKReducer(p["k"], p["order_by"], src.schema, by, src.priority_column)
                values = [c for c in src.columns if c not in by]
            if node.kind == "reduce":
                return DifferentialReduce(reducer, p["by"], values, ck)
            return WindowedReduce(reducer, src.window, p["by"], values, src.monotonic, ck)
        if node.kind == "join":
            return BilinearJoin(p["on"], node.inputs[0].columns, node.inputs[1].columns, ck)
        if node.kind == "distinct":
            return Distinct(node.columns, ck)
        return None

    # ------------------------------------------------------------------ the tick
    def tick(self) -> TickReport:
        started = _time.perf_counter()
        self.tick_no += 1
        into = max(self.flow._clock_ms(), self.last_into + 1)
        self.last_into = into
        binding: dict[str, Any] = {"tick": self.tick_no, "into_time": into, "sources": {}}
        rows_in = 0
        for src in self.sources.values():
            before = src.rows_in
            binding["sources"][src.name] = src.ingest(self.tick_no, into)
            rows_in += src.rows_in - before
        self.bindings.append(binding)

        frontiers = self.tracker.advance({nid: s.frontier for nid, s in self.sources.items()})
        outputs: dict[int, DataFrame | None] = {}
        sealed: dict[int, tuple[int, int | None]] = {}
        for node in self.nodes:
            hi = frontiers[node.id]
            lo = self.done[node.id]
            inputs = [
                self._input(node, port, inp, outputs, frontiers, hi)
                for port, inp in enumerate(node.inputs)
            ]
            if lo == hi:
                outputs[node.id] = None
                continue
            out = self._run(node, inputs, lo, hi)
            if out is not None and self.consumers[node.id] > 1:
                out = self._checkpoint(out)
            if out is not None and self.flow.record:
                self._record(node, out)
            outputs[node.id] = out
            self.done[node.id] = hi
            sealed[node.id] = (lo, hi)
        for node, sink in self.flow._sinks:
            if node.id in sealed:
                lo, hi = sealed[node.id]
                sink.commit(outputs[node.id], lo, hi, self._commit_info(node))
        frontier = f_min([frontiers[n.id] for n in self.nodes]) if self.nodes else None
        return TickReport(
            self.tick_no, into, frontier, rows_in, _time.perf_counter() - started, sealed
        )

    def _commit_info(self, node: Node) -> dict[str, Any]:
        return {
            "tick": self.tick_no,
            "spark": self.spark,
            "schema": node.schema,
            "collection": node.name,
        }

    def _input(self, node, port, inp, outputs, frontiers, hi) -> DataFrame | None:
        d = union_all([self.pending.pop((node.id, port), None), outputs.get(inp.id)])
        if d is None or frontiers[inp.id] == hi:
            return d
        # The input is ahead of this operator (another input lags): hold back the rows at
        # times the operator has not sealed yet.
        assert hi is not None
        self.pending[(node.id, port)] = self._checkpoint(d.filter(F.col(TIME) >= hi))
        return d.filter(F.col(TIME) < hi)

    def _run(
        self, node: Node, inputs: list[DataFrame | None], lo: int, hi: int | None
    ) -> DataFrame | None:
        kind = node.kind
        if kind == "source":
            return self._read_source(node, "main", lo, hi)
        if kind == "source_output":
            return self._read_source(node.inputs[0], node.params["output"], lo, hi)
        d = inputs[0] if inputs else None
        if kind == "map":
            return None if d is None else node.params["fn"](d)
        if kind == "window":
            return (
                None
                if d is None
                else assign_windows(d, node.params["spec"])
                if node.params["spec"].per_row
                else d
            )
        if kind == "negate":
            return None if d is None else d.withColumn(DIFF, -F.col(DIFF))
        if kind == "consolidate":
            return None if d is None else consolidate(d, node.columns + [TIME])
        if kind == "union":
            pcol = node.params["priority_column"]
            names = node.params["names"]
            parts = []
            for i, part in enumerate(inputs):
                if part is None:
                    continue
                part = part.select(*names, TIME, DIFF)
                if pcol is not None:
                    part = part.withColumn(pcol, F.lit(i).cast("int"))
                parts.append(part)
            return union_all(parts)
        if kind == "inspect":
            if d is not None:
                node.params["fn"](d.toArrow(), lo, hi)
            return d
        rt = self.runtime[node.id]
        if kind == "reduce":
            return rt.step(d)
        if kind == "windowed_reduce":
            return rt.step(d, hi)
        if kind == "join":
            return rt.step(inputs[0], inputs[1])
        if kind == "distinct":
            return rt.step(d)
        raise NotImplementedError(kind)

    def _read_source(self, node: Node, which: str, lo: int, hi: int | None) -> DataFrame | None:
        data = [f.name for f in node.schema.fields]
        return self.sources[node.id].frame(self.spark, which, lo, hi, data)

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
        return all(s.exhausted for s in self.sources.values()) and all(
            v is None for v in self.done.values()
        )


Clock = Callable[[], float]
