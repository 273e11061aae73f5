"""Hypothesis strategies for dataflow workloads: random rows, times and retractions.

Retractions only remove rows inserted earlier (at a time >= the insertion), so every
accumulated multiplicity is >= 0 and a plain batch query can stand as the oracle.
The list order is shuffled: arrival order inside a time must not matter.
"""

from __future__ import annotations

from hypothesis import strategies as hs

from sealtime.sources.rows import Rows

KV = {"k": "string", "v": "long"}
KW = {"k": "string", "w": "long"}


@hs.composite
def updates(draw, keys=("a", "b", "c", None), max_rows=10, max_time=6, values=(-2, 6), value="v", retract=True):
    items = []
    for _ in range(draw(hs.integers(0, max_rows))):
        t = draw(hs.integers(0, max_time))
        row = {"k": draw(hs.sampled_from(keys)), value: draw(hs.integers(*values))}
        items.append((t, row))
    if retract and items:
        picks = draw(hs.lists(hs.integers(0, len(items) - 1), unique=True, max_size=len(items) // 2 + 1))
        for i in picks:
            t, row = items[i]
            items.append((draw(hs.integers(t, max_time)), dict(row), -1))
    return draw(hs.permutations(items))


@hs.composite
def source(draw, schema=KV, value="v", times_per_tick=None, **kwargs):
    items = draw(updates(value=value, **kwargs))
    tpt = draw(hs.integers(1, 8)) if times_per_tick is None else times_per_tick
    return Rows(schema, items, times_per_tick=tpt)
