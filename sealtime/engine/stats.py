"""Per-operator numbers of one tick, for status lines, the web view and metrics.

The engine measures two things per operator, neither of which costs a Spark job:

* on the driver, the time `Operator.step` took (building the step's Spark plan);
* inside Spark, what each kernel task reported through the dataflow's accumulator
  (`sealtime.arrangement.counters`): rows in and out, the state rows after the
  write and the kernel's time, summed over the arrangement's partitions.

Operators without a kernel say why they have no count (`OperatorStats.counting`):
stateless operators run fused into their consumer's stage, sources are counted at
ingestion, and Spark-native stateful operators (sessions, timeouts) are not counted.

>>> from sealtime.arrangement.counters import KernelTotals
>>> s = operator_stats("kernel", 0.002, KernelTotals(10, 4, 4, 0.05, 2))
>>> s.rows_in, s.rows_out, s.state_rows, s.counting
(10, 4, 4, 'kernel')
>>> operator_stats("fused", 0.001, None).rows_out is None
True
>>> operator_stats("kernel", 0.001, None, ran=False).rows_in  # nothing to run this tick
0
>>> operator_stats("kernel", 0.001, None).rows_in is None  # ran, but nothing reported
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["OperatorStats", "operator_stats"]


@dataclass(frozen=True)
class OperatorStats:
    """What one operator did in one tick.

    * `rows_in` / `rows_out`: updates its kernel consumed / produced this tick (None:
      not counted, see `counting`; a windowed aggregate counts only what is exact);
    * `state_rows`: rows its state holds after the tick (None: not measured this tick);
    * `plan_seconds`: driver time of `step` (building the plan; the work runs in
      Spark, inside the jobs of the tick);
    * `kernel_seconds`: the kernel's time in Spark tasks, summed over partitions (task
      time, may exceed wall time when tasks run in parallel; None: no kernel);
    * `counting`: ``"kernel"``, ``"source"``, ``"fused"`` or ``"native"`` (see
      `sealtime.operators.Operator.counting`).
    """

    rows_in: int | None
    rows_out: int | None
    state_rows: int | None
    plan_seconds: float
    kernel_seconds: float | None
    counting: str


# Its keyword-only signature is alike only in form to others' (e.g. acquire_lease).
def operator_stats(
    counting: str,
    plan_seconds: float,
    totals: Any,
    *,
    ran: bool = True,
    rows_read: int | None = None,
) -> OperatorStats:
    """The `OperatorStats` of an operator that stepped: `totals` is what its kernel tasks
    reported (a `KernelTotals`, or None), `ran` whether its step returned a plan to run
    (False: nothing to do this tick, e.g. deferred window updates), `rows_read` a
    source's rows ingested this tick."""
    if counting == "source":
        return OperatorStats(rows_read, None, None, plan_seconds, None, counting)
    if counting != "kernel":
        return OperatorStats(None, None, None, plan_seconds, None, counting)
    if totals is None and not ran:  # nothing to run: no row went in or out
        return OperatorStats(0, 0, None, plan_seconds, 0.0, counting)
    if totals is None:  # ran, but no task reported (never a made-up zero)
        return OperatorStats(None, None, None, plan_seconds, None, counting)
    return OperatorStats(
        totals.rows_in,
        totals.rows_out,
        totals.state_rows,
        plan_seconds,
        totals.seconds,
        counting,
    )
