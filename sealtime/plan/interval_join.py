"""`IntervalJoin`: an inner join whose matches lie in a bounded interval of time.

``a JOIN b ON a.k = b.k AND b.ts BETWEEN a.ts + lower AND a.ts + upper`` where ``a.ts``
and ``b.ts`` are the rows' times (their event-time columns): the same output as `Join`,
but a row is kept in its side's arrangement only while a row of the other side that
arrives later could still match it. Updates after the frontier F have times >= F, so a
row ``x`` of ``a`` can match no later ``b`` once ``F > x.ts + upper``, and a row ``y``
of ``b`` no later ``a`` once ``F > y.ts - lower``; the arrangements drop them then.

>>> IntervalJoin.kind
'interval_join'
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .join import Join

__all__ = ["IntervalJoin"]


@dataclass(frozen=True, eq=False, kw_only=True)
class IntervalJoin(Join):
    """`Join` on `on` whose matches satisfy ``lower <= right time - left time <= upper``
    (ms, the rows' logical times; the caller filters the output by that condition: this
    node only bounds the state). `left_expiry` / `right_expiry` name a column of each
    input holding the frontier at which its row can match nothing more (``time + upper
    + 1`` / ``time - lower + 1``)."""

    lower: int
    upper: int
    left_expiry: str
    right_expiry: str

    kind: ClassVar[str] = "interval_join"
