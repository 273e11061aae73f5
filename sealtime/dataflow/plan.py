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

__all__ = ["WINDOW_END", "Node", "infer_bound"]

WINDOW_END = "window_end"


@dataclass(eq=False)
class Node:
    """One operator of the dataflow graph.

    `kind` is one of: source, source_output, map, union, consolidate, negate, reduce,
    windowed_reduce, join, distinct, window, inspect.
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
