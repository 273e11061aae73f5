"""Which keyed operators the dataplane runs fused (`sealtime.operators.fused`).

A live service holds many views of one shape over one collection: the same aggregate
with other parameters, each behind its own filters and projections. Each would be a
Spark job a tick (measured in docs/serve.md: ~0.2-0.6 s a view on this project's
2-core machine, so 200 views took minutes). The planner here finds the keyed
operators (aggregates, distincts, top-k) that can share one pass:

* the operator's input is a chain of per-row nodes (`Filter`, `Project`, `Map`,
  `AssignWindows`) over an *upstream* node, and the chain with the operator's own
  input projection composes into one `RowFunction` of the upstream's columns
  (`sealtime.spark.compose.row_function`, verified by Spark's ``sameResult``);
* the operators' kernel inputs have the same types in the same order (the engine's
  routing columns under the same names), their kernel outputs too, and their final
  projections compute the same result up to names (``sameResult`` again);
* they run the same number of arrangement partitions and tasks.

A member read only by a chain of per-row nodes (a SQL view's final ``SELECT``: names
and casts) takes that chain, its *tail*, into the group when every member's tail
computes alike (``sameResult`` up to names): the group's output is then the tails'
ends, whose sinks collect one frame for all (`sealtime.engine.commits.SinkStage`).

Such operators over one upstream form a `FusionGroup`. Only live nodes take part (a
hydrating copy runs its own slices). Groups are found again whenever the plan changes;
the verdicts are kept per node, so adding a view costs the checks of that view only.

Alternatives measured before this design (200 views, 10k rows a tick, loaded 2-core
machine): a union of the views' plans in one job built in 16 s and ran in 107 s;
one projection with ``explode`` ran the same work in 15 s.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

from ..arrangement.task import MARKER, PARTITION
from ..columns import DIFF, TIME
from ..kernels.keyed import HASH
from ..operators import Operator
from ..operators.fused import FusedKeyed
from ..operators.keyed import KeyedOperator
from ..plan import AssignWindows, Filter, Map, Plan, PlanNode, Project
from ..spark.compose import RowFunction, opaque_frame, row_function, same_result
from ..spark.frames import with_system
from ..time.order import MIN_TIME

__all__ = ["MAX_MEMBERS", "Fusion", "FusionGroup"]

#: members of one group at most: Spark compiles a group's tagging projection into one
#: method, which outgrew the JVM's 64 KB at ~45 members (Spark then runs that stage
#: interpreted, each tick); 24 compiled (bench/live_views.py, docs/fusion.md)
MAX_MEMBERS = 24
#: per-row nodes a member's input chain may hold
_ROW_NODES = (Filter, Project, Map, AssignWindows)
#: columns whose names the fused kernel input keeps (the routing reads them by name)
_ROUTING = frozenset({HASH, PARTITION, MARKER, TIME, DIFF})


@dataclass(frozen=True)
class FusionGroup:
    """Keyed operators (`members`) fed by per-row `chains` (upstream side first) over
    one `upstream` node, run as `operator`."""

    upstream: PlanNode
    members: tuple[PlanNode, ...]
    chains: tuple[tuple[PlanNode, ...], ...]
    operator: FusedKeyed
    #: per member, the per-row nodes after it that the group computes (all empty or none)
    tails: tuple[tuple[PlanNode, ...], ...] = ()

    @property
    def ends(self) -> tuple[PlanNode, ...]:
        """The nodes whose outputs the group's frame holds, per member."""
        if not self.tails:
            return self.members
        return tuple(t[-1] for t in self.tails)


@dataclass(frozen=True)
class _Candidate:
    node: PlanNode
    chain: tuple[PlanNode, ...]
    function: RowFunction
    columns: tuple[str, ...]  # the output frame's column names
    tail: tuple[PlanNode, ...] = ()
    tail_function: RowFunction | None = None
    tail_columns: tuple[str, ...] = ()


class Fusion:
    """The fusion planner of one engine (see the module docstring)."""

    def __init__(self, spark: SparkSession) -> None:
        self.spark = spark
        self._leaves: dict[str, DataFrame] = {}
        # The caches below are keyed by node ids (and the operator objects), never by
        # node objects: a hydrated view's nodes join the live plan as other objects with
        # the same ids, reading the live nodes instead of their copies, and finding
        # their functions again cost seconds a merge at 200 views.
        #: per (member, its chain, the upstream's columns): its row function over the
        #: upstream (None: not composable)
        self._functions: dict[tuple[Any, ...], RowFunction | None] = {}
        #: per (member, representative[, tails]): do they compute alike?
        self._alike: dict[tuple[Any, ...], bool] = {}
        #: the groups found last time, by their members (`_group`)
        self._groups: dict[tuple[Any, ...], FusionGroup] = {}
        self._found: list[tuple[Any, ...]] = []
        #: per (member, the per-row nodes after it): the longest prefix of those that
        #: composes, its row function and columns (None: none composes)
        self._tails: dict[tuple[Any, ...], tuple[int, RowFunction, tuple[str, ...]] | None] = {}

    def groups(
        self, plan: Plan, ops: Mapping[int, Operator[Any]], live: set[int]
    ) -> list[FusionGroup]:
        """The fusion groups of `plan` among the `live` nodes (two members or more)."""
        by_key: dict[tuple[Any, ...], list[_Candidate]] = defaultdict(list)
        readers = plan.readers()
        sinks = {n.id for n, _ in plan.sinks}
        by_id = {n.id: n for n in plan.nodes}
        for node in plan.nodes:
            op = ops[node.id]
            if node.id not in live or not _fusable(op) or len(node.inputs) != 1:
                continue
            chain: list[PlanNode] = []
            at = node.inputs[0]
            while isinstance(at, _ROW_NODES) and at.id in live:
                chain.append(at)
                at = at.inputs[0]
            chain.reverse()
            found = self._candidate(node, tuple(chain), at, ops)
            if found is not None:
                found = self._with_tail(found, readers, sinks, live, ops, by_id)
                by_key[(at.id, *_signature(op))].append(found)
        groups = []
        for candidates in by_key.values():
            for bucket in self._alike_buckets(candidates, ops):
                for i in range(0, len(bucket), MAX_MEMBERS):
                    if len(bucket[i : i + MAX_MEMBERS]) > 1:
                        groups.append(self._group(bucket[i : i + MAX_MEMBERS], ops))
        # (a group not found again is forgotten; one found again is the same object)
        self._groups = {key: self._groups[key] for key in self._found}
        self._found = []
        return groups

    def _candidate(
        self,
        node: PlanNode,
        chain: tuple[PlanNode, ...],
        upstream: PlanNode,
        ops: Mapping[int, Operator[Any]],
    ) -> _Candidate | None:
        op = ops[node.id]
        assert isinstance(op, KeyedOperator)
        key = (node.id, id(op), tuple(n.id for n in chain), upstream.schema.json())
        if key not in self._functions:
            leaf = self._leaf(with_system(upstream.schema))
            frame: DataFrame | None = leaf
            for n in chain:
                frame = ops[n.id].step([frame], MIN_TIME, None)
                if frame is None:
                    break
            function = None
            if frame is not None:
                function = row_function(op.compiled().prep.apply(frame), leaf)
            self._functions[key] = function
        function = self._functions[key]
        if function is None:
            return None
        columns = tuple(self._final(op).columns)
        return _Candidate(node, chain, function, columns)

    def _with_tail(
        self,
        c: _Candidate,
        readers: Mapping[int, list[int]],
        sinks: set[int],
        live: set[int],
        ops: Mapping[int, Operator[Any]],
        by_id: Mapping[int, PlanNode],
    ) -> _Candidate:
        """`c` with its tail: the per-row nodes after it, each the only reader of the
        one before, up to a node with a sink or other readers (see the module doc)."""
        tail: list[PlanNode] = []
        at = c.node
        while (
            at.id not in sinks
            and len(readers[at.id]) == 1
            and isinstance(by_id[readers[at.id][0]], _ROW_NODES)
            and readers[at.id][0] in live
        ):
            at = by_id[readers[at.id][0]]
            tail.append(at)
        key = _identity((c.node, *tail), ops)
        if key not in self._tails:
            found = None
            leaf = self._leaf(self._final(ops[c.node.id]).schema)  # type: ignore[arg-type]
            for length in range(len(tail), 0, -1):  # (the longest prefix that composes)
                frame: DataFrame | None = leaf.toDF(*c.columns)
                for n in tail[:length]:
                    frame = None if frame is None else ops[n.id].step([frame], MIN_TIME, None)
                function = None if frame is None else row_function(frame, leaf)
                if function is not None and frame is not None:
                    found = (length, function, tuple(frame.columns))
                    break
            self._tails[key] = found
        found = self._tails[key]
        if found is None:
            return c
        length, function, columns = found
        return _Candidate(
            c.node, c.chain, c.function, c.columns, tuple(tail[:length]), function, columns
        )

    def _alike_buckets(
        self, candidates: list[_Candidate], ops: Mapping[int, Operator[Any]]
    ) -> list[list[_Candidate]]:
        """`candidates` split into runs whose final projections compute alike."""
        buckets: list[list[_Candidate]] = []
        for c in candidates:
            for bucket in buckets:
                if self._finals_alike(c.node, bucket[0].node, ops) and self._tails_alike(
                    c, bucket[0], ops
                ):
                    bucket.append(c)
                    break
            else:
                buckets.append([c])
        return buckets

    def _finals_alike(
        self, node: PlanNode, representative: PlanNode, ops: Mapping[int, Operator[Any]]
    ) -> bool:
        key = (_identity((node,), ops), _identity((representative,), ops))
        if key not in self._alike:
            op, rep = ops[node.id], ops[representative.id]
            assert isinstance(op, KeyedOperator) and isinstance(rep, KeyedOperator)
            own = self._final(op)
            leaf = self._leaf(from_arrow_schema(op.output_arrow))
            theirs = rep.compiled().finalize.apply(leaf.toDF(*rep.output_arrow.names))
            same_types = [f.dataType for f in own.schema] == [f.dataType for f in theirs.schema]
            self._alike[key] = same_types and same_result(own, theirs)
        return self._alike[key]

    def _tails_alike(
        self, c: _Candidate, representative: _Candidate, ops: Mapping[int, Operator[Any]]
    ) -> bool:
        """Do the two candidates' tails compute alike (both none, or the same results
        up to names over one frame of the member's final columns)?"""
        if c.tail_function is None or representative.tail_function is None:
            return c.tail_function is None and representative.tail_function is None
        key = (
            "tail",
            _identity((c.node, *c.tail), ops),
            "of",
            _identity((representative.node, *representative.tail), ops),
        )
        if key not in self._alike:
            leaf = self._leaf(self._final(ops[c.node.id]).schema)  # type: ignore[arg-type]
            own = c.tail_function.apply(leaf.toDF(*c.columns), c.tail_columns)
            theirs = representative.tail_function.apply(
                leaf.toDF(*representative.columns), representative.tail_columns
            )
            same_types = [f.dataType for f in own.schema] == [f.dataType for f in theirs.schema]
            self._alike[key] = same_types and same_result(own, theirs)
        return self._alike[key]

    def _final(self, op: KeyedOperator[Any]) -> DataFrame:
        """The operator's final projection over an opaque frame of its kernel output."""
        return op.compiled().finalize.apply(self._leaf(from_arrow_schema(op.output_arrow)))

    def _group(self, bucket: list[_Candidate], ops: Mapping[int, Operator[Any]]) -> FusionGroup:
        """The group of `bucket`: the one built before for the same members (the same
        operators, chains and tails) when there is one — building a `FusedKeyed` is
        most of what finding groups costs, and a new view changes one group at most."""
        # (the upstream too: a hydrated group's members keep their ids when they join
        # the live plan, but their chains then read the live nodes, not the copies)
        key = (
            _upstream(bucket[0]).id,
            *(
                (
                    c.node.id,
                    id(ops[c.node.id]),
                    tuple(n.id for n in c.chain),
                    tuple(n.id for n in c.tail),
                )
                for c in bucket
            ),
        )
        self._found.append(key)
        if key not in self._groups:
            self._groups[key] = self._build_group(bucket, ops)
        return self._groups[key]

    def _build_group(
        self, bucket: list[_Candidate], ops: Mapping[int, Operator[Any]]
    ) -> FusionGroup:
        members = [ops[c.node.id] for c in bucket]
        tail = bucket[0].tail_function
        operator = FusedKeyed(
            members,  # type: ignore[arg-type]
            [c.function for c in bucket],
            [c.tail_columns if tail is not None else c.columns for c in bucket],
            tail=tail,
        )
        return FusionGroup(
            _upstream(bucket[0]),
            tuple(c.node for c in bucket),
            tuple(c.chain for c in bucket),
            operator,
            tuple(c.tail for c in bucket) if tail is not None else (),
        )

    def _leaf(self, schema: Any) -> DataFrame:
        key = schema.json()
        if key not in self._leaves:
            self._leaves[key] = opaque_frame(self.spark, schema)
        return self._leaves[key]


def _identity(nodes: tuple[PlanNode, ...], ops: Mapping[int, Operator[Any]]) -> tuple[Any, ...]:
    """What the caches know `nodes` by: each one's id and operator object (a hydrated
    node joins the live plan as another object with the same id and operator)."""
    return tuple((n.id, id(ops[n.id])) for n in nodes)


def _upstream(c: _Candidate) -> PlanNode:
    """The node a candidate's chain (or, without one, the candidate) reads."""
    return c.chain[0].inputs[0] if c.chain else c.node.inputs[0]


def _fusable(op: Operator[Any]) -> bool:
    """A keyed operator that steps the standard way (one kernel over its arrangement)."""
    return isinstance(op, KeyedOperator) and type(op).step is KeyedOperator.step


def _signature(op: KeyedOperator[Any]) -> tuple[Any, ...]:
    """What fused members must share: kernel input and output types in order (routing
    columns by name too), and the partitions and tasks of their steps."""
    inputs = tuple((str(f.type), f.name if f.name in _ROUTING else None) for f in op.input_arrow)
    outputs = tuple(str(f.type) for f in op.output_arrow)
    return (inputs, outputs, op.routing.partitions, op.routing.tasks)
