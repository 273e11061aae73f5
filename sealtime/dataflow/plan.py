"""The logical plan: one `Node` per operator, built by the `Collection` API.

Nodes are descriptions (schema, parameters, inputs); the engine turns each into a runtime
operator (`sealtime.operators.build` is the one place that maps a kind to a class). A node's ``schema`` is the Spark schema of its data columns (without ``_time``
and ``_diff``). ``monotonic`` means the collection only ever receives insertions (every
``_diff`` > 0): append-only windowed aggregates can then keep partial aggregates.
``window`` is the window spec a downstream aggregate/top_k must honour. ``bounded_by``
names a column that bounds every update's time from above (``_time < row[column]``):
``window_end`` for windowed collections, so that state keyed by it can be dropped once
the frontier passes it (no later update can have that key).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .windows import WindowSpec

__all__ = ["WINDOW_END", "Node", "Plan", "RunConfig", "infer_bound"]

WINDOW_END = "window_end"


@dataclass(eq=False)
class Node:
    """One operator of the dataflow graph.

    `kind` is one of: source, source_output, map, union, consolidate, negate, reduce,
    windowed_reduce, join, distinct, window, inspect, advance_time, timeout.
    """

    kind: str
    name: str
    inputs: list[Node]
    schema: Any  # pyspark StructType
    params: dict[str, Any] = field(default_factory=dict)
    monotonic: bool = False
    window: WindowSpec | None = None
    priority_column: str | None = None
    id: int = -1
    bounded_by: str | None = None

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    def describe(self) -> str:
        ins = ", ".join(f"#{n.id}" for n in self.inputs)
        return f"#{self.id} {self.kind} {self.name}({ins})"


MapFn = Callable[[Any], Any]
ColumnsArg = Sequence[str]


def infer_bound(node: Node) -> str | None:
    """``window_end`` when every update of `node` has ``_time < window_end``: windows and
    windowed aggregates (emitted at ``window_end - 1``), and what keeps that column from
    bounded inputs without changing times (an aggregate or join must key by it, so that
    an output time, the time of some input update of the same key, stays below it).

    >>> from pyspark.sql import types as T
    >>> s = T.StructType([T.StructField("window_end", T.LongType())])
    >>> w = Node("window", "w", [], s, params={"spec": None})
    >>> w.bounded_by = infer_bound(w); infer_bound(Node("map", "m", [w], s))
    'window_end'
    """
    if WINDOW_END not in node.columns:
        return None
    if node.kind == "window":
        from .windows import Session

        return None if isinstance(node.params.get("spec"), Session) else WINDOW_END
    if node.kind == "windowed_reduce":
        return WINDOW_END
    bounds = [i.bounded_by for i in node.inputs]
    if not bounds or any(b != WINDOW_END for b in bounds):
        return None
    if node.kind in ("map", "negate", "consolidate", "inspect", "union", "distinct"):
        return WINDOW_END
    if node.kind == "reduce" and WINDOW_END in node.params.get("by", ()):
        return WINDOW_END
    if node.kind == "join" and WINDOW_END in node.params.get("on", ()):
        return WINDOW_END
    return None


@dataclass(frozen=True)
class RunConfig:
    """The settings of a run that the engine needs (no user objects, no Spark).

    >>> RunConfig("f", "/tmp/d", record=False).checkpoint_every is None
    True
    """

    name: str
    data_dir: str
    record: bool = True
    shuffle_partitions: int | None = None
    checkpoint_every: int | None = None
    truncate_log: bool = True


@dataclass(frozen=True)
class Plan:
    """What `Dataflow.compile()` hands the engine: the operator nodes in topological
    order, each sink with the node it reads, and the run settings. Frozen: the engine
    never looks at the `Dataflow` object, and the graph cannot change under a run.

    `fingerprint()` is the canonical text of every node and sink kind: a data dir
    written by one plan is refused to a plan with another (naming the first
    difference).

    >>> from pyspark.sql import types as T
    >>> src = Node("source", "s", [], T.StructType([T.StructField("k", T.StringType())]))
    >>> plan = Plan((src,), (), RunConfig("f", "/tmp/d"))
    >>> plan.fingerprint()
    ["source:s:[]:['k']:{}"]
    >>> Plan((Node("map", "m", [src], src.schema),), (), RunConfig("f", "/tmp/d"))
    Traceback (most recent call last):
    ...
    sealtime.errors.PlanError: plan: node 'm' reads node 's', which is not in this plan (a collection of another dataflow?)
    """

    nodes: tuple[Node, ...]
    sinks: tuple[tuple[Node, Any], ...]
    config: RunConfig

    def __post_init__(self) -> None:
        from ..errors import PlanError

        known = {id(n) for n in self.nodes}
        for n in self.nodes:
            for i in n.inputs:
                if id(i) not in known:
                    raise PlanError(
                        f"plan: node {n.name!r} reads node {i.name!r}, which is not in this "
                        "plan (a collection of another dataflow?)"
                    )
        seen: set[int] = set()
        for node, sink in self.sinks:
            if id(node) not in known:
                raise PlanError(f"plan: a sink reads node {node.name!r}, not in this plan")
            if id(sink) in seen:
                raise PlanError(
                    f"plan: one {type(sink).__name__} object receives two collections; give "
                    "each collection its own sink object"
                )
            seen.add(id(sink))

    def fingerprint(self) -> list[str]:
        """Every node's kind, name, inputs, columns and canonical parameters (each
        expression, aggregate, window spec, join kind), and each sink's kind
        (`sealtime.dataflow.fingerprint`)."""
        from .fingerprint import canonical

        lines = [
            f"{n.kind}:{n.name}:{[i.id for i in n.inputs]}:{n.columns}:{canonical(n.params)}"
            for n in self.nodes
        ]
        lines += [f"sink:{node.id}:{type(sink).__name__}" for node, sink in self.sinks]
        return lines
