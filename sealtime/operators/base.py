"""The operator contract: what the engine calls on every node of a dataflow each tick.

An operator turns the updates that arrive at its inputs for the newly sealed times
``[lo, hi)`` into its output updates for the same range (`step`). Stateful operators
keep their state outside Python objects (arrangements on the data dir, or spilled
frames), so `state` returns a small JSON-able description that a soft checkpoint
records and `restore` takes back; nothing finds state by looking at attributes.

Frames are lazy: `step` only builds Spark plans. The engine decides which jobs run
(sinks, shared outputs, operators whose state must be written even when nobody reads
their output), so a linear pipeline runs as one Spark job per tick.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from pyspark.sql import DataFrame, SparkSession

from ..arrangement.counters import KernelCounters
from ..plan import PlanNode, Source
from ..time.order import MAX_TIME, MIN_TIME
from .shared import SharedArrangements

__all__ = ["Env", "LogReader", "Operator", "expiry", "kernel_tasks"]

N = TypeVar("N", bound=PlanNode)


class LogReader(Protocol):
    """What an operator reads of a source's ingest log (the engine's source runtime):
    one output's updates at times in ``[lo, hi)`` and an upper bound of their times."""

    def frame(
        self, spark: SparkSession, which: str, lo: int, hi: int | None, columns: Sequence[str]
    ) -> DataFrame | None: ...

    def max_time(self, which: str, lo: int, hi: int | None) -> int | None: ...


@dataclass
class Env:
    """What an operator gets from the engine when it is built.

    * `state_dir`: this operator's directory for durable state (arrangements, spills);
    * `partitions`: the number of hash partitions of every arrangement (fixed for the
      life of a data dir, like Materialize's replica workers);
    * `sources`: the ingest logs, by source node id (for the operators that read one);
    * `arrangements`: the arrangements operators share (differential's ``arrange``);
    * `tasks`: how many Spark tasks a kernel step runs in (None: one per partition);
      see `kernel_tasks`;
    * `counters`: where kernel tasks report rows and state sizes for monitoring (None:
      nothing is counted).
    """

    spark: SparkSession
    state_dir: str
    partitions: int
    sources: Mapping[int, LogReader]
    arrangements: SharedArrangements = field(default_factory=SharedArrangements)
    tasks: int | None = None
    counters: KernelCounters | None = None


def kernel_tasks(master: str, partitions: int) -> int | None:
    """How many Python tasks a kernel step should run in on `master`.

    Every Python task costs a fixed tens of milliseconds, so in local mode a step runs
    in as many tasks as there are cores (each taking whole arrangement partitions),
    not in one per partition. On a cluster each partition keeps its own task (None),
    so that the work spreads over the executors.

    >>> kernel_tasks("local[2]", 4), kernel_tasks("local", 4), kernel_tasks("local[8]", 4)
    (2, 1, 4)
    >>> kernel_tasks("spark://host:7077", 4) is None
    True
    """
    import os
    import re

    if master == "local":
        return 1
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", master)
    if m is None:
        return None
    cores = (os.cpu_count() or 1) if m.group(1) == "*" else int(m.group(1))
    return min(max(1, cores), partitions)


class Operator(Generic[N]):
    """Base class of the runtime operators (see the module docstring): the runtime of
    one plan node of type `N`.

    Subclasses set `stateful` when `step` writes state that must be written every tick
    it runs (the engine then makes sure its plan executes even without a reader).
    """

    stateful: ClassVar[bool] = False
    #: `step` runs a kernel in ``mapInArrow`` that reports its rows and state size
    #: (through `probe`); see `counting`
    kernel_counted: ClassVar[bool] = False

    def __init__(self, node: N, env: Env) -> None:
        self.node = node
        self.env = env

    def step(self, inputs: Sequence[DataFrame | None], lo: int, hi: int | None) -> DataFrame | None:
        """The output updates for ``[lo, hi)`` given each input's updates (None: none)."""
        raise NotImplementedError

    def can_wait(self, lo: int, hi: int | None) -> bool:
        """Can sealing ``[lo, hi)`` emit nothing, whatever the input? Then the engine may
        leave this tick's input in the log and hand it over later, with the input of the
        ticks after it, as one range (one scan of the log instead of one per tick). Only
        asked of operators whose input is derived from one source's log alone."""
        return False

    @property
    def counting(self) -> str:
        """How the operator's rows are measured, for monitoring: ``"kernel"`` (its kernel
        counts them inside its Spark tasks), ``"source"`` (counted at ingestion),
        ``"fused"`` (a stateless expression Spark runs inside its consumer's stage: no
        count of its own without a job of its own) or ``"native"`` (stateful on plain
        Spark plans: not counted)."""
        if self.kernel_counted:
            return "kernel"
        if isinstance(self.node, Source):
            return "source"
        return "native" if self.stateful else "fused"

    def probe(self, version: int, *, count_in: bool = True, count_out: bool = True) -> Any:
        """The counters' probe for a kernel step writing `version` (None when the engine
        counts nothing); `count_in`/`count_out` say whether the kernel's input/output
        rows are the operator's."""
        counters = self.env.counters
        if counters is None:
            return None
        return counters.probe(self.node.id, version, count_in=count_in, count_out=count_out)

    def output_bound(self, inputs: Sequence[int], lo: int, hi: int | None) -> int:
        """An upper bound (inclusive) of the times of this tick's output, known without
        running Spark, given those of its inputs: by default an operator's output times
        are among its inputs' times."""
        return max(inputs, default=MIN_TIME)

    def state(self, directory: str) -> dict[str, Any]:
        """A JSON-able description of the operator's state for a soft checkpoint;
        anything that must be written goes under `directory`."""
        return {}

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a `state` written by a checkpoint (or ``{}``: empty state)."""

    def after_tick(self, pinned: bool) -> None:
        """The tick's jobs are done: drop files no longer needed (unless `pinned` by a
        checkpoint)."""

    def durable(self) -> None:
        """Make the state files `state()` will refer to durable (before a checkpoint)."""

    def pin(self) -> None:
        """A checkpoint now refers to the current state: keep its files until the next."""


def expiry(node: PlanNode, hi: int | None) -> tuple[str, int] | None:
    """What an operator keyed by its ``bounded_by`` column may forget after sealing
    ``[.., hi)``: keys whose ``window_end`` is at or below `hi` (every later update has a
    time at or above `hi`, hence a larger ``window_end``: nothing will look them up)."""
    if node.bounded_by is None:
        return None
    return (node.bounded_by, hi if hi is not None else MAX_TIME)
