"""The logical plan: one `Node` per operator, built by the `Collection` API.

Nodes are descriptions (schema, parameters, inputs); the engine turns each into a runtime
operator. A node's ``schema`` is the Spark schema of its data columns (without ``_time``
and ``_diff``). ``monotonic`` means the collection only ever receives insertions (every
``_diff`` > 0): append-only windowed aggregates can then keep partial aggregates.
``window`` is the window spec a downstream aggregate/top_k must honour.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .windows import WindowSpec

__all__ = ["Node"]


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

    @property
    def columns(self) -> list[str]:
        return [f.name for f in self.schema.fields]

    @property
    def stateful(self) -> bool:
        return self.kind in ("reduce", "windowed_reduce", "join", "distinct")

    def describe(self) -> str:
        ins = ", ".join(f"#{n.id}" for n in self.inputs)
        return f"#{self.id} {self.kind} {self.name}({ins})"


MapFn = Callable[[Any], Any]
ColumnsArg = Sequence[str]
