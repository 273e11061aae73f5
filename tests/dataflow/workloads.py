"""Hypothesis strategies for dataflow workloads: random rows, times and retractions.

Retractions only remove rows inserted earlier (at a time >= the insertion), so every
accumulated multiplicity is >= 0 and a plain batch query can stand as the oracle.
Arrival order is shuffled: it must not matter.

Spark costs ~0.1 s per stage however small the data, so a hypothesis example carries a
*batch* of independent workloads run side by side: column ``ex`` numbers the workload
and is part of every key (group, join and top-k keys), so workloads never interact and
each is checked against its own oracle rows.
"""

from __future__ import annotations

from hypothesis import strategies as hs

from sealtime.sources.rows import Rows

KV = {"ex": "long", "k": "string", "v": "long"}
KW = {"ex": "long", "k": "string", "w": "long"}


@hs.composite
def updates(
    draw,
    keys=("a", "b", "c", None),
    max_rows=10,
    max_time=6,
    values=(-2, 6),
    value="v",
    retract=True,
):
    """One workload: ``[(time, row) | (time, row, -1)]``."""
    items = []
    for _ in range(draw(hs.integers(0, max_rows))):
        t = draw(hs.integers(0, max_time))
        row = {"k": draw(hs.sampled_from(keys)), value: draw(hs.integers(*values))}
        items.append((t, row))
    if retract and items:
        picks = draw(
            hs.lists(hs.integers(0, len(items) - 1), unique=True, max_size=len(items) // 2 + 1)
        )
        for i in picks:
            t, row = items[i]
            items.append((draw(hs.integers(t, max_time)), dict(row), -1))
    return items


@hs.composite
def batch_items(draw, workloads=1, value="v", **kwargs):
    """`workloads` independent workloads merged, tagged by ``ex``, arrival order shuffled."""
    items = []
    for ex in range(workloads):
        for item in draw(updates(value=value, **kwargs)):
            row = dict(item[1], ex=ex)
            items.append((item[0], row, *item[2:]))
    draw(hs.randoms(use_true_random=False)).shuffle(items)
    return items


@hs.composite
def source(draw, schema=KV, value="v", workloads=10, times_per_tick=None, **kwargs):
    items = draw(batch_items(workloads=workloads, value=value, **kwargs))
    # Several times per tick (fewer Spark jobs); one time per tick is covered by the
    # determinism and window tests, which compare tick sizes.
    if times_per_tick is None:
        times_per_tick = hs.sampled_from([3, 100])
    tpt = draw(times_per_tick) if isinstance(times_per_tick, hs.SearchStrategy) else times_per_tick
    return Rows(schema, items, times_per_tick=tpt)
