"""`col.timeout(by, after)` and `st.sources.Timer(every)`: time that flows without data,
stamped by the logical clock only.

The timeout is checked against a hand-written oracle and across tick sizes; the timer
with an injected clock (no test here is timed)."""

from __future__ import annotations

import random

import pytest

import sealtime as st
from sealtime.sources import Rows

SCHEMA = {"k": "string", "v": "long"}


def workload(seed: int, n: int = 80) -> list[tuple]:
    rng = random.Random(seed)
    items: list[tuple] = []
    for _ in range(n):
        t = rng.randrange(0, 4_000)
        row = {"k": rng.choice(["a", "b", "c", None]), "v": rng.randrange(3)}
        items.append((t, row))
        if rng.random() < 0.15:  # an update that cancels out at its time: not activity
            items.append((t, {"k": "z", "v": 9}))
            items.append((t, {"k": "z", "v": 9}, -1))
    items.append((9_000, {"k": "end", "v": 0}))  # seals everything below
    return items


def oracle(items: list[tuple], after: int, sealed: int) -> list[tuple]:
    """(k, last_update, timed_out_at, _time) of every timeout at a time < sealed."""
    net: dict[tuple, int] = {}
    for item in items:
        key = (item[1]["k"], item[1]["v"], item[0])
        net[key] = net.get(key, 0) + (item[2] if len(item) == 3 else 1)
    times: dict[object, list[int]] = {}
    for (k, _, t), d in net.items():
        if d != 0:
            times.setdefault(k, []).append(t)
    out = []
    for k, ts in times.items():
        ts = sorted(set(ts))
        for i, t in enumerate(ts):
            quiet = i + 1 == len(ts) or ts[i + 1] > t + after
            if quiet and t + after < sealed:
                out.append((k, t, t + after, t + after))
    return sorted(out, key=repr)


def rows(table) -> list[tuple]:
    assert set(table.column("_diff").to_pylist()) <= {1}
    return sorted(
        ((r["k"], r["last_update"], r["timed_out_at"], r["_time"]) for r in table.to_pylist()),
        key=repr,
    )


# 3 times a tick is many ticks (44 s on 2 workers): the full tier's; the default tier
# runs 1000 (every time in one tick) and the replay tests' timeouts.
@pytest.mark.parametrize("per_tick", [pytest.param(3, marks=pytest.mark.full), 1000])
def test_timeout_matches_oracle(make_flow, per_tick):
    items = workload(5)
    flow = make_flow()
    src = flow.source("s", Rows(SCHEMA, items, times_per_tick=per_tick))
    out = src.timeout(by="k", after="500ms")
    flow.run(ticks=3 if per_tick == 1000 else 10_000)
    # (per_tick=1000: everything is read in the first tick; the source ends at once)
    want = oracle(items, 500, 10**18)
    assert rows(out.updates()) == want
    assert len(want) > 10 and "z" not in {w[0] for w in want}
    assert None in {w[0] for w in want}  # a null key times out like any other


def test_timeout_emits_as_the_frontier_passes(make_flow):
    items = [(0, {"k": "a", "v": 1}), (300, {"k": "a", "v": 1}), (2_000, {"k": "b", "v": 1})]
    items += [(3_000, {"k": "x", "v": 1})]
    flow = make_flow()
    src = flow.source("s", Rows(SCHEMA, items))
    out = src.timeout(by="k", after="1s")
    flow.run(ticks=3)  # sealed: times < 3000 (the frontier is the next time, 3000)
    assert rows(out.updates()) == [("a", 300, 1300, 1300)]
    flow.run()  # the source ends: every pending key times out
    assert rows(out.updates()) == [
        ("a", 300, 1300, 1300),
        ("b", 2000, 3000, 3000),
        ("x", 3000, 4000, 4000),
    ]


def test_timeout_settings_are_checked(make_flow):
    flow = make_flow()
    src = flow.source("s", Rows(SCHEMA, [(0, {"k": "a", "v": 1})]))
    with pytest.raises(ValueError, match=r"no column\(s\) \['nope'\]"):
        src.timeout(by="nope", after="1s")
    with pytest.raises(ValueError, match=r"timeout\(after\)='soon' is not a duration"):
        src.timeout(by="k", after="soon")
    with pytest.raises(ValueError, match=r"timeout\(after=0\) must be > 0"):
        src.timeout(by="k", after=0)


class Clock:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


def test_timer_fires_on_the_logical_clock_and_replays(make_flow, spark, tmp_path):
    def build(data_dir, clock):
        flow = st.Dataflow(
            "timer", data_dir=str(data_dir), spark=spark, clock=clock, truncate_log=False
        )
        fired = flow.source("timer", st.sources.Timer(every="10s"))
        fired.sink(st.sinks.Persist("fired"))
        per_min = fired.window(st.Tumbling("1m")).aggregate(n=st.count())
        return flow, fired, per_min

    clock = Clock(1_000_005_000)
    flow, fired, per_min = build(tmp_path / "a", clock)
    for step in [3_000] * 5 + [25_000, 40_000, 7_000]:  # ticks slower than the period too
        clock.ms += step
        flow.run(ticks=1)
    got = [(r["fired_at"], r["seq"], r["_time"]) for r in fired.updates().to_pylist()]
    start, end = 1_000_008_000, clock.ms  # first tick's binding time, last one's
    want = [(t, t // 10_000, t) for t in range(start - start % 10_000 + 10_000, end + 1, 10_000)]
    assert got == want and len(want) == 9  # ..010 000 to ..090 000
    assert fired.frontier == end + 1
    windows = [(r["window_start"], r["n"]) for r in per_min.updates().to_pylist()]
    # [999 960 000, ..020 000) holds ..010 000; [..020 000, ..080 000) six firings; the
    # window from ..080 000 is still open at the frontier ..092 001.
    assert windows == [(999_960_000, 1), (1_000_020_000, 6)]
    shard = flow.sinks[0].sink.shard
    original = [(b.lower, b.upper, shard.read_files(b.files).to_pylist()) for b in shard.batches()]
    flow.close()
    # Replay: the same firings at the same logical times, whatever the clock says now.
    replayed, _, _ = build(tmp_path / "b", Clock(0))
    replayed.replay(tmp_path / "a", name="timer")
    shard = replayed.sinks[0].sink.shard
    again = [(b.lower, b.upper, shard.read_files(b.files).to_pylist()) for b in shard.batches()]
    assert again == original
    replayed.close()
    assert hasattr(st.sources, "Timer")
