"""`PlanNode`: what every operator of the logical plan is and declares.

A plan node is data: a frozen dataclass with typed fields (timely's operator
description, Materialize's MIR enum variants). Beside its parameters every node
declares, on its own class:

* its **path summary** (`summary`): how a time at its input maps to a time at its
  output, for the progress tracker — the identity (None) for almost every operator,
  `RoundUp` for ``advance_time`` (timely's ``get_internal_summary``);
* whether it is **per-row** (`per_row`: each update maps to updates at the same time,
  alone) or **recomputable** (`recomputable`: its output over a time range is a
  function of its input over that range alone), which the engine uses to read a
  range of several ticks as one plan over the log;
* its **bound** (`bounded_by`): a column that bounds every update's time from above
  (``_time < row[column]``), so that keyed state may forget a key once the frontier
  passes it;
* **monotonic** (only insertions), the **window** spec a downstream aggregate honours,
  and the **priority column** of a merge that order-sensitive operators break ties by.

Nodes compare by identity (they are vertices of one graph); `fingerprint` is their
structural text, derived from the fields, so a new field is never left out of it.

>>> from pyspark.sql import types as T
>>> from sealtime.plan import Negate
>>> from sealtime.plan.source import Source
>>> from sealtime.sources import Rows
>>> s = T.StructType([T.StructField("k", T.StringType())])
>>> src = Source(id=0, name="s", inputs=(), schema=s, source=Rows({"k": "string"}, []))
>>> neg = Negate(id=1, name="negate", inputs=(src,), schema=s)
>>> neg.describe(), neg.summary() is None, neg.per_row
('#1 negate negate(#0)', True, True)
>>> neg.fingerprint()
"Negate:negate:[0]:['k']:{}"
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from .fingerprint import canonical

if TYPE_CHECKING:
    from pyspark.sql.types import StructType

    from ..progress.summary import PathSummary
    from .windows import WindowSpec

__all__ = ["NOT_FINGERPRINTED", "WINDOW_END", "WINDOW_START", "PlanNode"]

WINDOW_START = "window_start"
WINDOW_END = "window_end"

#: field metadata of a parameter that does not enter the fingerprint (a callable whose
#: effect another field describes, e.g. `Map.fn` beside `Map.expressions`)
NOT_FINGERPRINTED = {"fingerprint": False}

_BASE_FIELDS = ("id", "name", "inputs", "schema")


@dataclass(frozen=True, eq=False, kw_only=True)
class PlanNode:
    """One operator of the logical plan (see the module docstring).

    * `id`: its position in the plan (inputs come first: the order is topological);
    * `name`: a label for people (UI, errors, EXPLAIN), not part of what it computes;
    * `inputs`: the nodes it reads, in port order;
    * `schema`: the Spark schema of its data columns (without ``_time``/``_diff``).
    """

    id: int
    name: str
    inputs: tuple[PlanNode, ...]
    schema: StructType

    #: the operator's name in the field's vocabulary (UI, EXPLAIN, metrics)
    kind: ClassVar[str] = "node"
    #: each update maps to updates at the same time, alone (no look at other rows)
    per_row: ClassVar[bool] = False
    #: its output over a time range is a function of its input over that range alone
    recomputable: ClassVar[bool] = False
    #: output times may lie at or beyond the input frontier (the engine then holds such
    #: updates back at each consumer until its frontier seals them)
    delays: ClassVar[bool] = False
    #: the output frontier is given by the engine, not derived from the inputs' (a
    #: source's side outputs follow its binding times): a root of the progress graph
    own_frontier: ClassVar[bool] = False
    #: may two nodes of equal `structure` be computed once (no side effect)?
    shareable: ClassVar[bool] = True

    # Subclasses override these facts one by one: the overrides are deliberately parallel.
    # ------------------------------------------------------------------ declared facts
    def summary(self) -> PathSummary | None:
        """The path summary from every input to the output (None: the identity)."""
        return None

    @cached_property
    def monotonic(self) -> bool:
        """Does the output only ever receive insertions (every ``_diff`` > 0)?"""
        return False

    @cached_property
    def window(self) -> WindowSpec | None:
        """The window spec a downstream aggregate or top-k must honour."""
        return None

    @cached_property
    def priority_column(self) -> str | None:
        """The merge-priority column order-sensitive operators break ties by."""
        return None

    @cached_property
    def bounded_by(self) -> str | None:
        """A column that bounds every update's time from above (``_time < row[c]``)."""
        return None

    # ------------------------------------------------------------------ derived
    @property
    def columns(self) -> list[str]:
        """The names of the data columns."""
        return [f.name for f in self.schema.fields]

    def describe(self) -> str:
        """``#id kind name(#inputs)``, for EXPLAIN and error messages."""
        ins = ", ".join(f"#{n.id}" for n in self.inputs)
        return f"#{self.id} {self.kind} {self.name}({ins})"

    def parameters(self) -> Iterator[tuple[str, Any]]:
        """The node's own fields (not id, name, inputs or schema), in declaration order,
        without those marked `NOT_FINGERPRINTED`."""
        for f in dataclasses.fields(self):
            if f.name in _BASE_FIELDS or f.metadata.get("fingerprint", True) is False:
                continue
            yield f.name, getattr(self, f.name)

    def fingerprint(self) -> str:
        """The canonical text of the node: its type, name, input ids, columns and every
        parameter (`parameters`), as `sealtime.plan.fingerprint.canonical` writes them."""
        params = canonical(dict(self.parameters()))
        ins = [i.id for i in self.inputs]
        return f"{type(self).__name__}:{self.name}:{ins}:{self.columns}:{params}"

    @cached_property
    def structure(self) -> str:
        """A digest of what the node computes: its type, parameters and columns, and its
        inputs' structures — not its id or its name (names are labels). Two shareable
        nodes of equal structure compute the same updates, so a live service computes
        them once (Materialize's common sub-plans)."""
        params = canonical(dict(self.parameters()))
        text = f"{type(self).__name__}:{self.schema.simpleString()}:{params}:" + ",".join(
            i.structure for i in self.inputs
        )
        return hashlib.sha256(text.encode()).hexdigest()[:32]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.describe()})"


def window_bound(node: PlanNode) -> str | None:
    """`WINDOW_END` when `node` keeps that column and every input is bounded by it: what
    an operator that does not change times passes on."""
    if WINDOW_END not in node.columns or not node.inputs:
        return None
    return WINDOW_END if all(i.bounded_by == WINDOW_END for i in node.inputs) else None
