"""`FusedKeyed`: several keyed operators over one upstream output, as one Spark job.

Each member is a keyed operator (`KeyedOperator`: an aggregate, a distinct, a top-k)
whose input is a per-row function of the same upstream collection (filters and
projections, composed into a `sealtime.spark.compose.RowFunction` over the upstream's
columns). Run apart, N members cost N projections, N shuffles and N ``mapInArrow``
stages a tick. Fused, a tick is one projection (each upstream row once per member
whose filter it passes, tagged with the member's index), one shuffle by the members'
own key partitions, and one ``mapInArrow`` in which each partition runs every member's
kernel on its own rows (`sealtime.arrangement.fused.FusedStep`), then one projection
of the kernels' output (the members compute their final columns alike).

Nothing of a member changes: it keeps its arrangement, its versions, its expiry, its
counters and its output, so fusing or not (or fusing it with other members) never
changes a result or a checkpoint. The members' schemas may differ in names only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.types import from_arrow_schema

from ..arrangement.fused import FusedStep, tag_slices
from ..arrangement.task import KernelTask
from ..spark.compose import RowFunction, TaggedRows
from ..spark.plans import Projection, map_in_arrow
from .base import expiry
from .keyed import KeyedOperator

__all__ = ["TAG", "FusedKeyed", "split_tagged"]

#: the column holding a row's member index
TAG = "__v"


class FusedKeyed:
    """The members (keyed operators, in order), the row function of each over the
    upstream's columns, the column names of each member's output frame, and the row
    function all members' outputs go through before it, if any (their `tail`; see the
    module docstring)."""

    def __init__(
        self,
        members: Sequence[KeyedOperator[Any]],
        functions: Sequence[RowFunction],
        columns: Sequence[Sequence[str]],
        tail: RowFunction | None = None,
    ) -> None:
        self.members = list(members)
        first = self.members[0]
        self.input_names = tuple(first.input_arrow.names)
        self.output_names = tuple(first.output_arrow.names)
        self.tagged = TaggedRows(functions, TAG, self.input_names)
        tag = pa.field(TAG, pa.int32())
        self.input_arrow = pa.schema([tag, *first.input_arrow])
        self.output_arrow = pa.schema([*first.output_arrow, tag])
        self.output_spark = from_arrow_schema(self.output_arrow)
        self.args = tuple(F.col(n) for n in self.input_arrow.names)
        #: the members' final columns, computed once (alike: `sealtime.engine.fusion`)
        self.finalize = Projection([*first.finalize, TAG])
        #: the members' tails (`sealtime.engine.fusion`), alike too: over the final
        #: columns of the first member, giving `columns`
        self.tail_condition = None if tail is None else tail.condition
        self.tail = (
            None
            if tail is None
            else Projection([*(c.alias(n) for c, n in zip(tail.columns, columns[0])), TAG])
        )
        self.columns = [tuple(c) for c in columns]
        #: per member, its rows of the final frame under its own column names
        self.selects = [
            Projection([F.col(_quoted(a)).alias(b) for a, b in zip(columns[0], own)])
            for own in columns
        ]

    def step(self, upstream: DataFrame, his: Mapping[int, int | None]) -> DataFrame:
        """Every member's output updates for its range, as one frame tagged by member
        index (`his`: each member's new frontier, by node id)."""
        tasks = []
        for m in self.members:
            version = m.arrangement.advance()
            step = m.kernel_step(version, expiry(m.node, his[m.node.id]))
            tasks.append(KernelTask(step, m.input_arrow, m.output_arrow, m.probe(version)))
        fused = FusedStep(tuple(tasks), TAG, self.input_names, self.output_names)
        task = KernelTask(fused, self.input_arrow, self.output_arrow)
        routed = self.members[0].routing.route(self.tagged.apply(upstream), key=self)
        out = self.finalize.apply(map_in_arrow(routed, task, self.output_spark, self.args))
        if self.tail_condition is not None:
            out = out.filter(self.tail_condition)
        return out if self.tail is None else self.tail.apply(out)

    def member_frame(self, fused: DataFrame, index: int) -> DataFrame:
        """Member `index`'s output out of the frame `step` returned."""
        return self.selects[index].apply(fused.filter(F.col(TAG) == index))

    def split(self, table: pa.Table) -> list[pa.Table | None]:
        """The Arrow rows of the frame `step` returned, per member (None: no row), under
        the member's own column names."""
        return split_tagged(table, self.columns)


def split_tagged(table: pa.Table, columns: Sequence[Sequence[str]]) -> list[pa.Table | None]:
    """`table`'s rows per value of its `TAG` column (0 .. len(columns) - 1), without the
    tag, each under its own column names.

    >>> t = pa.table({"x": [1, 2, 3], TAG: pa.array([1, 0, 1], pa.int32())})
    >>> [None if p is None else p.to_pydict() for p in split_tagged(t, [["a"], ["b"], ["c"]])]
    [{'a': [2]}, {'b': [1, 3]}, None]
    """
    values = table.drop_columns([TAG])
    slices = tag_slices(table.column(TAG), len(columns))
    return [
        values.take(rows).rename_columns(list(names)) if len(rows) else None
        for rows, names in zip(slices, columns)
    ]


def _quoted(name: str) -> str:
    """`name` as a column reference taken literally (a dot is no struct access)."""
    return "`" + name.replace("`", "``") + "`"
