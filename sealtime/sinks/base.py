"""The sink contract: `Sink`, the `ExactlyOnceSink` template, and the typed contexts.

A sink receives each sealed range ``[lo, hi)`` of one collection exactly when the
collection's frontier passes ``hi`` (``hi is None``: the collection is finished).

* `Sink.bind` is called once, when ``col.sink(s)`` attaches the sink, with a
  `SinkBinding` (the dataflow's name, data dir, metadata store, the collection's name and
  schema). A sink object belongs to one collection: binding it again while its first
  dataflow is alive is refused, since its commits describe one collection's ranges.
* `Sink.commit` is called by the engine once per sealed range, with the range's updates
  as a Spark DataFrame (or None when the range holds none) and a `CommitContext`.
* A sink that only needs each range's rows in Python sets `takes_arrow` and implements
  `commit_arrow` (and `arrow_plan` for columns it wants computed on Spark first). The
  engine may then hand it Arrow tables it collected ahead of the frontier
  (`sealtime.engine.ahead`), so that rows logged before their time is sealed are read
  from the log once, not once per tick until they are sealed.
* `ExactlyOnceSink` owns what makes a sink exactly-once, so that a subclass only writes:
  it reads the durable upper, skips a range committed before a restart, keeps only
  ``_time >= upper`` of a range that overlaps it, and fires the ``sink.written`` and
  ``sink.committed`` failpoints around the subclass's two steps (`write`, then `publish`,
  which makes the write visible atomically). Its `durable_upper` is what the engine's
  resumption frontier is computed from.

>>> class Count(Sink):
...     def __init__(self) -> None:
...         self.ranges = []
...     def commit(self, delta, lo, hi, context):
...         self.ranges.append((lo, hi))
...         return delta is not None
>>> s = Count()
>>> s.commit(None, 0, 10, None), s.ranges, s.exactly_once
(False, [(0, 10)], False)
"""

from __future__ import annotations

import weakref
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..columns import TIME
from ..errors import PlanError
from ..failpoints import failpoint

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import types as T

__all__ = ["CommitContext", "ExactlyOnceSink", "Sink", "SinkBinding"]

Written = TypeVar("Written")


@dataclass(frozen=True)
class SinkBinding:
    """What a sink learns when it is attached to a collection."""

    dataflow: str  # the dataflow's name
    data_dir: str  # the dataflow's data directory (an absolute path, or a URI)
    store: Any  # the dataflow's `MetadataStore`
    collection: str  # the collection's name
    schema: T.StructType  # the collection's data columns (without ``_time``/``_diff``)


@dataclass(frozen=True)
class CommitContext:
    """What the engine passes with each sealed range."""

    tick: int  # the tick that sealed the range
    spark: SparkSession
    schema: T.StructType  # the collection's data columns (without ``_time``/``_diff``)
    collection: str


class Sink(ABC):
    """Where the sealed ranges of one collection go (see the module docstring)."""

    #: True when the sink keeps a durable upper the resumption frontier must respect
    exactly_once: bool = False
    _binding: SinkBinding | None = None
    _owner: weakref.ref | None = None

    def bind(self, binding: SinkBinding, owner: object) -> None:
        """Attach to a collection of the dataflow `owner` (called by ``col.sink``)."""
        current = self._owner() if self._owner is not None else None
        if current is not None and self._binding is not None:
            where = "this dataflow" if current is owner else f"dataflow {self._binding.dataflow!r}"
            raise PlanError(
                f"sink(): this {type(self).__name__} object already receives collection "
                f"{self._binding.collection!r} of {where}; its commits describe one "
                "collection's ranges, so give each collection its own sink object"
            )
        self._binding = binding
        self._owner = weakref.ref(owner)

    @property
    def binding(self) -> SinkBinding:
        """The binding given by `bind`; an error naming the fix before it."""
        if self._binding is None:
            raise PlanError(
                f"{type(self).__name__} is not attached to a collection: use col.sink(...)"
            )
        return self._binding

    @abstractmethod
    def commit(
        self, delta: DataFrame | None, lo: int, hi: int | None, context: CommitContext
    ) -> bool:
        """Take the sealed range ``[lo, hi)``. True when `delta`'s plan was computed."""

    #: The sink takes each range's rows as one Arrow table (`commit_arrow`), so the
    #: engine may collect them ahead of the frontier (`sealtime.engine.ahead`).
    takes_arrow: bool = False

    def arrow_plan(self, delta: DataFrame) -> DataFrame:
        """`delta` with the columns the sink wants computed on Spark before the rows are
        collected as Arrow (e.g. a partition hash); by default `delta` itself."""
        return delta

    def commit_arrow(
        self, table: pa.Table | None, lo: int, hi: int | None, context: CommitContext
    ) -> None:
        """Take the sealed range ``[lo, hi)`` as the Arrow rows of `arrow_plan` (None:
        the range holds no update). Only sinks with `takes_arrow`."""
        raise TypeError(f"{type(self).__name__} does not take Arrow tables (takes_arrow)")

    #: The sink's commits of a tick may be staged and made durable together, for all
    #: sinks of its class, by `end_commits` (which the engine calls once a tick, after
    #: every commit and before anything counts them as durable).
    batches_commits: bool = False

    @classmethod  # noqa: B027 - optional hook
    def end_commits(cls, sinks: list[Sink]) -> None:
        """Make the commits `sinks` (of this class, with `batches_commits`) staged this
        tick durable."""

    def durable_upper(self) -> int | None:
        """Times below this are durably committed (None: the collection is finished).
        Only exactly-once sinks keep one."""
        raise TypeError(f"{type(self).__name__} is not an exactly-once sink: it keeps no upper")

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release what the sink holds (servers, files)."""


class ExactlyOnceSink(Sink, Generic[Written]):
    """A sink whose commits are exactly-once across crashes: a subclass says where its
    durable upper is (`durable_upper`), writes a range so that it is not yet visible
    (`write`) and makes it visible atomically with the new upper (`publish`)."""

    exactly_once = True

    @abstractmethod
    def durable_upper(self) -> int | None: ...

    @abstractmethod
    def write(
        self, delta: DataFrame | None, lo: int, hi: int | None, context: CommitContext
    ) -> Written:
        """Write the updates of ``[lo, hi)`` (all at ``_time >= lo``) invisibly."""

    @abstractmethod
    def publish(
        self, written: Written, lo: int, hi: int | None, upper: int, context: CommitContext
    ) -> None:
        """Make `written` visible and move the durable upper from `upper` to `hi`, in one
        atomic step; raise if the upper is no longer `upper` (another writer)."""

    def commit(
        self, delta: DataFrame | None, lo: int, hi: int | None, context: CommitContext
    ) -> bool:
        upper = self.durable_upper()
        if upper is None or (hi is not None and upper >= hi):
            return False  # committed before a restart: nothing runs, nothing is written
        if lo < upper:
            if delta is not None:
                from pyspark.sql import functions as F

                delta = delta.filter(F.col(TIME) >= upper)
            lo = upper
        written = self.write(delta, lo, hi, context)
        failpoint("sink.written")
        self.publish(written, lo, hi, upper, context)
        failpoint("sink.committed")
        return delta is not None
