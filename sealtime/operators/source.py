"""`SourceRead` and `SourceOutput`: a source's updates, read from its ingest log.

A source's rows reach the dataflow only through its log (logging precedes
propagation): each tick reads the log entries whose times fall in ``[lo, hi)``. The
``late``, ``errors`` and ``health`` outputs read the same log, so they add no work to
the main path.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from .. import plan as P
from ..time.order import MIN_TIME
from .base import Operator

#: the ingest log's name of a source's main output
MAIN = "main"

__all__ = ["SourceOutput", "SourceRead"]


class SourceRead(Operator[P.Source]):
    """The source's main output."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        data = self.node.columns
        return self.env.sources[self.node.id].frame(self.env.spark, MAIN, lo, hi, data)

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        top = self.env.sources[self.node.id].max_time(MAIN, lo, hi)  # from the log
        return MIN_TIME if top is None else top


class SourceOutput(Operator[P.SourceOutput]):
    """One of the source's side outputs (``late``, ``errors``, ``health``)."""

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        source = self.node.source
        which = self.node.output.value
        return self.env.sources[source.id].frame(self.env.spark, which, lo, hi, source.columns)

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        top = self.env.sources[self.node.source.id].max_time(self.node.output.value, lo, hi)
        return MIN_TIME if top is None else top
