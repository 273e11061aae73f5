"""The dataplane: one pass over the operators in a tick, and the state between ticks.

In topological order, each operator whose input frontier advanced processes exactly the
newly sealed times ``[its previous frontier, its new frontier)`` (`Dataplane.step`).
Frames are lazy: the pass only builds Spark plans; the engine's sinks decide which jobs
run. Between ticks the dataplane holds:

* `done`: each operator's input frontier after its last step;
* **held-back updates**: updates that reached an input ahead of its operator (another
  input lags, or an upstream ``advance_time`` delays them), spilled to the data dir;
* **waiting ranges**: an operator that can emit nothing for a range (a windowed
  aggregate between window ends, `Operator.can_wait`) leaves its input in the log; the
  tick that needs it reads the whole waiting range again as one plan (`log_output`),
  one scan of the log files instead of one plan per tick. Before a checkpoint every
  waiting range is handed over (`flush`), so a checkpoint never depends on it.
"""

from __future__ import annotations

import json
import time as _time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..columns import TIME
from ..errors import PlanError
from ..operators import Operator
from ..plan import Inspect, Plan, PlanNode, Source, SourceOutput, log_derived
from ..spark.frames import persist, union_all
from ..spark.spill import SpillStore
from ..storage.fs import DataFS
from ..time.order import MIN_TIME
from .fusion import Fusion, FusionGroup
from .traces import Traces, materialise

__all__ = ["MAX_WAITING_TICKS", "Dataplane", "FusedOutput", "StepResult", "Waiting"]

#: ticks an operator's input may wait in the log before it is handed over anyway
MAX_WAITING_TICKS = 32


@dataclass
class Waiting:
    """An operator's input left in the log: the ranges of `ticks` ticks from `lo` on."""

    lo: int
    ticks: int = 1


@dataclass
class StepResult:
    """What one pass over the operators built (lazy frames) and measured.

    * `outputs`: each node's output updates this tick (None: none, or not built);
    * `sealed`: per node that advanced, the range ``[lo, hi)`` it sealed;
    * `stepped`: stateful operators that produced a plan (their state must be written);
    * `plan_seconds`: per node, the driver time of its step and whether it produced one;
    * `materialised`: outputs a job has computed already this tick;
    * `persisted`: frames cached for several readers (unpersisted after the tick);
    * `fused`: per member of a fusion group that ran fused, the group's output (its
      own frame is built only when something reads it: `output`).
    """

    outputs: dict[int, DataFrame | None] = field(default_factory=dict)
    sealed: dict[int, tuple[int, int | None]] = field(default_factory=dict)
    stepped: list[int] = field(default_factory=list)
    plan_seconds: dict[int, tuple[float, bool]] = field(default_factory=dict)
    materialised: set[int] = field(default_factory=set)
    persisted: list[DataFrame] = field(default_factory=list)
    fused: dict[int, FusedOutput] = field(default_factory=dict)

    def output(self, nid: int) -> DataFrame | None:
        """Node `nid`'s output updates this tick (None: none)."""
        if nid not in self.outputs and nid in self.fused:
            f = self.fused[nid]
            self.outputs[nid] = f.group.operator.member_frame(f.frame, f.index)
        return self.outputs.get(nid)


@dataclass
class FusedOutput:
    """The output of a fusion group that ran fused this tick: `frame`, tagged by member
    index; `index` is one member's."""

    group: FusionGroup
    frame: DataFrame
    index: int


class Dataplane:
    """The operators of one plan and their frontiers, held-back updates and waiting
    ranges (see the module docstring).

    `frame_sinks` are the node ids whose output frame a sink reads (a sink collecting
    ahead of the frontier reads the log instead); `ahead` those whose sinks collect
    ahead; `traces` is given when every output is recorded.
    """

    def __init__(
        self,
        plan: Plan,
        ops: Mapping[int, Operator[Any]],
        spill: SpillStore,
        partitions: int,
        data_fs: DataFS,
        *,
        frame_sinks: list[int],
        ahead: set[int],
        traces: Traces | None,
        fusion: Fusion | None = None,
        live: set[int] | None = None,
        collected: set[int] | None = None,
    ) -> None:
        # Parameters stored as attributes: alike only in form to other constructors.
        self.ops = ops
        self.fusion = fusion
        self.spill = spill
        self.partitions = partitions
        self.data_fs = data_fs
        self.traces = traces
        self.done: dict[int, int | None] = {}
        #: updates that arrived at an input ahead of its operator: (frame, time bound)
        self.pending: dict[tuple[int, int], tuple[DataFrame, int]] = {}
        self.waiting: dict[int, Waiting] = {}
        self.retarget(plan, frame_sinks=frame_sinks, ahead=ahead, live=live, collected=collected)

    def retarget(
        self,
        plan: Plan,
        *,
        frame_sinks: list[int],
        ahead: set[int],
        live: set[int] | None = None,
        collected: set[int] | None = None,
    ) -> None:
        """Run `plan` from now on: the nodes it shares with the current plan (by id) keep
        their frontiers, held-back updates and waiting ranges; new ones start with
        nothing sealed; those it lacks are forgotten. (`ops` must hold an operator for
        every node of `plan`.) Keyed operators among the `live` nodes (default: all) may
        run fused (`sealtime.engine.fusion`); `collected` are the nodes whose one sink
        collects the fused output of their group as Arrow (`SinkStage.collects`)."""
        self.plan = plan
        self.nodes = list(plan.nodes)
        self.ahead = ahead
        ids = {n.id for n in self.nodes}
        self.done = {n.id: self.done.get(n.id, MIN_TIME) for n in self.nodes}
        for key in [k for k in self.pending if k[0] not in ids]:
            del self.pending[key]
            self.spill.drop(f"n{key[0]}-p{key[1]}")
        self.waiting = {nid: w for nid, w in self.waiting.items() if nid in ids}
        self.readers = plan.readers()
        #: how many times each output frame is read in a tick (readers, taps, sinks)
        self.consumers = {nid: len(r) for nid, r in self.readers.items()}
        for node in self.nodes:
            if isinstance(node, Inspect):  # the tap computes its input once more
                self.consumers[node.inputs[0].id] += 1
        for nid in frame_sinks:
            self.consumers[nid] += 1
        #: outputs whose plan runs a kernel (a stateful operator upstream): worth caching
        #: when read twice. Others are scans and expressions over the log, which Spark
        #: recomputes per reader with column pruning for less than caching wide rows.
        self.runs_kernel: dict[int, bool] = {}
        for node in self.nodes:
            self.runs_kernel[node.id] = self.ops[node.id].stateful or any(
                self.runs_kernel[i.id] for i in node.inputs
            )
        self.groups: list[FusionGroup] = []
        if self.fusion is not None and self.traces is None:
            ids = live if live is not None else {n.id for n in self.nodes}
            self.groups = self.fusion.groups(plan, self.ops, ids)
        #: per fused member: its group and index
        self.member_of = {m.id: (g, i) for g in self.groups for i, m in enumerate(g.members)}
        for g in self.groups:
            self.consumers[g.upstream.id] += 1
        #: groups whose output more than one job reads (cached for the tick)
        self.shared_groups = {
            id(g)
            for g in self.groups
            if any(
                self.readers[e.id] or self.consumers[e.id] > 1 or e.id not in (collected or ())
                for e in g.ends
            )
        }
        self.unread = self._unread_nodes(set(frame_sinks) | {g.upstream.id for g in self.groups})
        self._may_wait = {n.id: len(n.inputs) == 1 and log_derived(n.inputs[0]) for n in self.nodes}

    # ------------------------------------------------------------------ the pass
    def step(self, frontiers: Mapping[int, int | None], tick: int) -> StepResult:
        """Step every operator whose frontier advanced to `frontiers` (lazy plans) in
        tick number `tick`."""
        r = StepResult()
        bounds: dict[int, int] = {}  # per output: an upper bound of its times (inclusive)
        handled: set[int] = set()  # (by a fusion group's step)
        for node in self.nodes:
            hi = frontiers[node.id]
            lo = self.done[node.id]
            if node.id in handled:
                continue
            if node.id in self.member_of:
                handled |= self._step_group(self.member_of[node.id][0], frontiers, r, bounds)
                continue
            ins = [
                self._input(node, port, inp, r, bounds, frontiers, hi, tick)
                for port, inp in enumerate(node.inputs)
            ]
            if lo == hi:
                r.outputs[node.id] = None
                continue
            op = self.ops[node.id]
            if node.id in self.unread:
                r.outputs[node.id] = None
                self.done[node.id] = hi
                if node.id in self.ahead:
                    r.sealed[node.id] = (lo, hi)
                if isinstance(node, Source):  # (its rows are read: report them)
                    r.plan_seconds[node.id] = (0.0, False)
                continue
            inputs = [d for d, _ in ins]
            if self._wait(node, op, lo, hi):
                r.outputs[node.id] = None
                r.plan_seconds[node.id] = (0.0, False)
                self.done[node.id] = hi
                r.sealed[node.id] = (lo, hi)  # (sealed with nothing to emit)
                continue
            waited = self.waiting.pop(node.id, None)
            if waited is not None:  # (the ranges that waited, and this one, as one plan)
                inputs = [self.log_output(node.inputs[0], waited.lo, hi)]
            started = _time.perf_counter()
            out = op.step(inputs, lo, hi)
            r.plan_seconds[node.id] = (_time.perf_counter() - started, out is not None)
            bounds[node.id] = op.output_bound([b for _, b in ins], lo, hi)
            self._keep(node, op, out, r)
            self.done[node.id] = hi
            r.sealed[node.id] = (lo, hi)
        return r

    def _step_group(
        self,
        group: FusionGroup,
        frontiers: Mapping[int, int | None],
        r: StepResult,
        bounds: dict[int, int],
    ) -> set[int]:
        """Step the members of `group` whose frontier advanced: fused when all seal the
        same range (their tails with them), each alone otherwise (their tails then step
        as other nodes do). Returns the nodes handled."""
        ranges = {m.id: (self.done[m.id], frontiers[m.id]) for m in group.members}
        moved = [m for m in group.members if ranges[m.id][0] != ranges[m.id][1]]
        upstream = r.output(group.upstream.id)
        together = [m for m in moved if ranges[m.id] == ranges[moved[0].id]] if moved else []
        if (
            upstream is None
            or len(together) < len(group.members)
            or any((m.id, 0) in self.pending for m in group.members)
        ):
            for i, m in enumerate(group.members):
                if m in moved:
                    self._step_alone(m, group.chains[i], upstream, ranges[m.id], r)
                    bounds[m.id] = bounds.get(group.upstream.id, MIN_TIME)
            return {m.id for m in group.members}
        started = _time.perf_counter()
        frame = group.operator.step(upstream, {m.id: frontiers[m.id] for m in group.members})
        if id(group) in self.shared_groups:
            frame = persist(frame, f"fused group of n{group.members[0].id}")
            r.persisted.append(frame)
        share = (_time.perf_counter() - started) / len(group.members)
        handled = set()
        for i, m in enumerate(group.members):
            r.fused[group.ends[i].id] = FusedOutput(group, frame, i)
            r.plan_seconds[m.id] = (share, True)
            r.stepped.append(m.id)
            for n in (m, *(group.tails[i] if group.tails else ())):
                r.sealed[n.id] = ranges[m.id]
                bounds[n.id] = bounds.get(group.upstream.id, MIN_TIME)
                self.done[n.id] = ranges[m.id][1]
                handled.add(n.id)
        return handled

    def _step_alone(
        self,
        node: PlanNode,
        chain: tuple[PlanNode, ...],
        upstream: DataFrame | None,
        sealing: tuple[int, int | None],
        r: StepResult,
    ) -> None:
        """Step one member of a fusion group by itself (its input chain built here: the
        dataplane does not build the chain's frames of fused members)."""
        lo, hi = sealing
        frame = upstream
        for n in chain:
            frame = None if frame is None else self.ops[n.id].step([frame], lo, hi)
        op = self.ops[node.id]
        started = _time.perf_counter()
        out = op.step([frame], lo, hi)
        r.plan_seconds[node.id] = (_time.perf_counter() - started, out is not None)
        self._keep(node, op, out, r)
        self.done[node.id] = hi
        r.sealed[node.id] = (lo, hi)

    def _wait(self, node: PlanNode, op: Operator[Any], lo: int, hi: int | None) -> bool:
        """Leave this tick's input of `node` in the log (`Operator.can_wait`)?"""
        if not self._may_wait[node.id] or not op.can_wait(lo, hi):
            return False
        waiting = self.waiting.get(node.id)
        if waiting is None:
            self.waiting[node.id] = Waiting(lo)
            return True
        if waiting.ticks + 1 >= MAX_WAITING_TICKS:
            return False  # (handed over now, with this tick's range)
        waiting.ticks += 1
        return True

    def _keep(
        self, node: PlanNode, op: Operator[Any], out: DataFrame | None, r: StepResult
    ) -> None:
        """Record `out` as `node`'s output: cached when several readers compute it,
        materialised and traced when every output is recorded."""
        if out is not None and op.stateful:
            r.stepped.append(node.id)
        if out is not None and self.traces is not None and op.stateful:
            # Traces are read after the tick: compute the output now, once.
            out = materialise(out, self.partitions, self.data_fs)
            r.materialised.add(node.id)
        elif out is not None and self.consumers[node.id] > 1 and self.runs_kernel[node.id]:
            out = persist(out, f"output of n{node.id}")
            r.persisted.append(out)
        if out is not None and self.traces is not None:
            self.traces.record(node, out)
        r.outputs[node.id] = out

    def _input(
        self,
        node: PlanNode,
        port: int,
        inp: PlanNode,
        r: StepResult,
        bounds: dict[int, int],
        frontiers: Mapping[int, int | None],
        hi: int | None,
        tick: int,
    ) -> tuple[DataFrame | None, int]:
        """This tick's updates at input `port` (with an upper bound of their times): the
        upstream output, plus the updates held back from earlier ticks."""
        held, held_bound = self.pending.pop((node.id, port), (None, MIN_TIME))
        self.spill.drop(f"n{node.id}-p{port}")
        out = r.output(inp.id)
        bound = max(held_bound, bounds.get(inp.id, MIN_TIME) if out is not None else MIN_TIME)
        d = union_all([held, out])
        if d is None or hi is None or (frontiers[inp.id] == hi and not inp.delays):
            return d, bound
        # The input is ahead of this operator (another input lags): hold back the rows at
        # times the operator has not sealed yet — unless the bound shows there are none.
        if bound >= hi:
            ahead = d.filter(F.col(TIME) >= hi)
            name = f"n{node.id}-p{port}"
            self.pending[(node.id, port)] = (self.spill.write(ahead, name, tick), bound)
            r.materialised |= self.plan.upstream([inp.id])
            return d.filter(F.col(TIME) < hi), hi - 1
        return d, bound

    def log_output(self, node: PlanNode, lo: int, hi: int | None) -> DataFrame | None:
        """The output of `node` at times in ``[lo, hi)``, built again from its source's
        log: `node` is a source, a side output or a chain of recomputable one-input
        operators over one, so its output over several ticks' ranges is one plan."""
        if not log_derived(node):
            raise PlanError(f"{node.describe()} is not derived from one source's log alone")
        op = self.ops[node.id]
        if isinstance(node, (Source, SourceOutput)):
            return op.step([None] * len(node.inputs), lo, hi)
        return op.step([self.log_output(node.inputs[0], lo, hi)], lo, hi)

    def flush(self) -> list[int]:
        """Hand every waiting range over to its operator now (before a checkpoint): no
        window can be sealed by it, so nothing is emitted, but the state then holds it.
        Returns the operators that stepped (their state must be written)."""
        flushed = []
        for nid, waited in list(self.waiting.items()):
            node = next(n for n in self.nodes if n.id == nid)
            hi = self.done[nid]
            assert hi is not None
            d = self.log_output(node.inputs[0], waited.lo, hi)
            op = self.ops[nid]
            out = op.step([d], hi, hi)
            if out is not None:
                out.write.format("noop").mode("overwrite").save()
                op.after_tick(False)
                flushed.append(nid)
            del self.waiting[nid]
        return flushed

    # ------------------------------------------------------------------ unread outputs
    def _unread_nodes(self, frame_sinks: set[int]) -> set[int]:
        """Stateless outputs nobody reads (no sink but Arrow sinks collecting ahead, no
        reader but unread ones, not recorded): their plans are not even built. Stateful
        operators still step (their state must advance); inspect taps still run."""
        if self.traces is not None:
            return set()
        unread: set[int] = set()
        for node in reversed(self.nodes):  # readers before what they read
            if (
                node.id not in frame_sinks
                and not isinstance(node, Inspect)
                and not self.ops[node.id].stateful
                and all(r in unread or r in self.member_of for r in self.readers[node.id])
            ):
                unread.add(node.id)
        return unread

    def run_unread(self, r: StepResult) -> None:
        """Run the plans of stateful operators no job computed this tick (no sink reads
        them): their state must be written. One job for all of them."""
        todo = [
            nid for nid in r.stepped if nid not in r.materialised and r.outputs.get(nid) is not None
        ]
        # An operator feeding another in the list runs inside that one's plan.
        covered: set[int] = set()
        for nid in todo:
            covered |= self.plan.upstream([nid]) - {nid}
        frames = []
        for nid in todo:
            out = r.outputs[nid]
            if nid not in covered and out is not None:
                frames.append(out.select(F.lit(1).alias("x")))
        # (a group's frame runs every member's kernel: one member computed is all)
        done = {id(r.fused[n].frame) for n in r.fused if n in r.materialised}
        groups = {id(f.frame): f.frame for f in r.fused.values() if id(f.frame) not in done}
        frames += [frame.select(F.lit(1).alias("x")) for frame in groups.values()]
        if frames:
            union_all(frames).write.format("noop").mode("overwrite").save()

    # ------------------------------------------------------------------ checkpoints
    def checkpoint_state(self, directory: str) -> dict[str, Any]:
        """Make every operator's state durable and describe it, with the held-back
        updates and the frontiers, for a checkpoint manifest (written under
        `directory`). Waiting ranges must have been flushed."""
        assert not self.waiting, "flush() waiting ranges before a checkpoint"
        operators = {}
        for nid, op in self.ops.items():
            op.durable()
            operators[str(nid)] = op.state(f"{directory}/n{nid:04d}")
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
        return {
            "done": {str(k): v for k, v in self.done.items()},
            "operators": operators,
            "pending": pending,
        }

    def restore(self, manifest: Mapping[str, Any]) -> None:
        """Take back the state a checkpoint manifest describes."""
        for key, entry in manifest.get("pending", {}).items():
            nid, port = (int(x) for x in key.split("."))
            if nid not in self.done:
                continue
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
            if int(nid) in self.done:  # (a node dropped since is not there any more)
                self.done[int(nid)] = value

    def start_empty(self) -> None:
        """No checkpoint: every operator starts with empty state (files of a run that
        never checkpointed go)."""
        self.spill.remove_all()
        for op in self.ops.values():
            op.restore({})
