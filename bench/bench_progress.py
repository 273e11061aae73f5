"""Benchmark sealtime's progress tracking; writes bench/results/progress.md.

Measures
  * `MutableAntichain.update_iter`, per call, on a seeded mixed workload (int and Product
    times; increments beyond the frontier, decrements at it, frontier moves);
  * `Tracker` propagation of one change — a source capability downgrade followed by
    `propagate_all()` — through a 100-operator chain and a seeded random 1000-operator DAG.

Run:  .venv/bin/python bench/bench_progress.py [--quick]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import sys
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sealtime.progress import Add, GraphBuilder, Identity, Source, Target, Tracker  # noqa: E402
from sealtime.time import MutableAntichain, Product  # noqa: E402

RESULTS = ROOT / "bench" / "results" / "progress.md"
TARGET_CHAIN_MS = 1.0


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    k = max(0, min(len(sorted_values) - 1, int(round(q * len(sorted_values) + 0.5)) - 1))
    return sorted_values[k]


class Timings(list):  # type: ignore[type-arg]
    """Ascending wall times (µs) of each call, with the matching CPU times in `.cpu`."""

    cpu: list[float]


def timed(fn: Callable[[], Any], runs: int) -> Timings:
    """Wall and CPU time of each of `runs` calls, in microseconds, each ascending.

    CPU time (this process only) separates the cost of the code from waiting for a
    core on a loaded machine.
    """
    gc.collect()
    wall, cpu = [], []
    clock, cpu_clock = time.perf_counter_ns, time.process_time_ns
    for _ in range(runs):
        c0 = cpu_clock()
        t0 = clock()
        fn()
        t1 = clock()
        cpu.append((cpu_clock() - c0) / 1000.0)
        wall.append((t1 - t0) / 1000.0)
    out = Timings(sorted(wall))
    out.cpu = sorted(cpu)
    return out


# -- MutableAntichain.update_iter ------------------------------------------------------


def mutable_antichain_workload(kind: str, calls: int, seed: int) -> list[float]:
    """A frontier that keeps moving forward, fed batches of 1-4 updates per call."""
    rng = random.Random(seed)
    m: MutableAntichain[Any] = MutableAntichain()
    live: list[Any] = []

    def make(base: int) -> Any:
        if kind == "int":
            return base + rng.randrange(0, 8)
        return Product(base // 4 + rng.randrange(0, 3), rng.randrange(0, 6))

    batches = []
    base = 0
    for _ in range(calls):
        batch = []
        for _ in range(rng.randrange(1, 5)):
            r = rng.random()
            # Steady state: about as many retractions as insertions, at most ~64 held.
            if live and (r < 0.5 or len(live) >= 64):  # retract (often at the frontier)
                t = live.pop(0 if rng.random() < 0.6 else rng.randrange(len(live)))
                batch.append((t, -1))
            else:  # add a time at or beyond the current base
                base += rng.randrange(0, 2)
                t = make(base)
                live.append(t)
                batch.append((t, 1))
        batches.append(batch)
    it = iter(batches)

    def call() -> None:
        m.update_iter(next(it))

    return timed(call, calls)


# -- Tracker ---------------------------------------------------------------------------


def chain(n: int) -> GraphBuilder:
    """A source (node 0) feeding `n` one-input one-output operators in a line."""
    b = GraphBuilder()
    b.add_node(0, 0, 1, name="source")
    for i in range(1, n + 1):
        b.add_node(i, 1, 1)
        b.add_edge(Source(i - 1, 0), Target(i, 0))
    return b


def random_dag(n: int, sources: int, seed: int) -> GraphBuilder:
    """`sources` source nodes, then operators with 1-2 inputs from recent earlier nodes.

    Inputs come from the previous 50 nodes, so the DAG is deep as well as wide; about
    one operator in five delays times (`Add(1..3)`), the rest pass them (`Identity()`).
    """
    rng = random.Random(seed)
    b = GraphBuilder()
    for i in range(sources):
        b.add_node(i, 0, 1, name=f"source{i}")
    for i in range(sources, n):
        inputs = rng.choice((1, 1, 2))
        summary = Add(rng.randrange(1, 4)) if rng.random() < 0.2 else Identity()
        b.add_node(i, inputs, 1, [[summary] for _ in range(inputs)])
        for port in range(inputs):
            upstream = rng.randrange(max(0, i - 50), i)
            b.add_edge(Source(upstream, 0), Target(i, port))
    return b


def tracker_downgrades(builder: GraphBuilder, sources: int, runs: int, seed: int) -> dict[str, Any]:
    """Per-propagation times (µs) of one source downgrade + propagate_all().

    Also returns the build time, the first propagation time and the number of frontier
    changes each propagation reported (which explains the spread of the times).
    """
    t0 = time.perf_counter()
    tracker: Tracker = builder.build()
    build_ms = (time.perf_counter() - t0) * 1000
    caps = [tracker.capability(Source(i, 0), 0) for i in range(sources)]
    t0 = time.perf_counter()
    tracker.propagate_all()
    first_ms = (time.perf_counter() - t0) * 1000
    rng = random.Random(seed)
    changes: list[int] = []

    def one() -> None:
        cap = caps[rng.randrange(sources)]
        cap.downgrade(cap.time() + 1)
        changes.append(len(tracker.propagate_all()))

    for _ in range(50):  # warm up
        one()
    changes.clear()
    times = timed(one, runs)
    for cap in caps:
        cap.drop()
    tracker.propagate_all()
    assert not tracker.tracking_anything()
    changes.sort()
    return {
        "times": times,
        "build_ms": build_ms,
        "first_ms": first_ms,
        "changes_median": percentile(changes, 0.5),
        "changes_p99": percentile(changes, 0.99),
        "per_change_us": sum(times) / max(1, sum(changes)),
    }


# -- report ----------------------------------------------------------------------------


def machine() -> dict[str, str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "n/a"
    return {
        "cpu": model,
        "cores": str(os.cpu_count()),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "load": load,
    }


def row(name: str, times: Timings, extra: str = "") -> str:
    med, p99 = percentile(times, 0.5), percentile(times, 0.99)
    cpu_med, cpu_p99 = percentile(times.cpu, 0.5), percentile(times.cpu, 0.99)
    return (
        f"| {name} | {len(times)} | {med:,.1f} | {p99:,.1f} | {cpu_med:,.1f} | "
        f"{cpu_p99:,.1f} | {extra} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke test)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="markdown output path")
    args = parser.parse_args()
    calls = 5_000 if args.quick else 50_000
    runs = 300 if args.quick else 3_000

    info = machine()
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    command = " ".join([".venv/bin/python", "bench/bench_progress.py", *sys.argv[1:]])

    ma_int = mutable_antichain_workload("int", calls, seed=1)
    ma_prod = mutable_antichain_workload("product", calls, seed=2)
    ch = tracker_downgrades(chain(100), 1, runs, seed=3)
    dag = tracker_downgrades(random_dag(1000, sources=10, seed=42), 10, runs, seed=4)
    chain_med = percentile(ch["times"], 0.5)
    verdict = (
        f"**met** (median {chain_med / 1000:.3f} ms < {TARGET_CHAIN_MS} ms)"
        if chain_med / 1000 < TARGET_CHAIN_MS
        else f"**not met** (median {chain_med / 1000:.3f} ms ≥ {TARGET_CHAIN_MS} ms)"
    )

    lines = [
        "# Progress tracking benchmark",
        "",
        f"* date: {started}",
        f"* command: `{command}`",
        f"* machine: {info['cpu']}, {info['cores']} cores, {info['python']}",
        f"* load average while running (1/5/15 min): {info['load']}",
        "",
        "Per call, in microseconds: wall time (`perf_counter_ns`) and this process's CPU",
        "time (`process_time_ns`), each call timed separately, garbage collector enabled.",
        "Wall times include ~0.1 µs of timer overhead; CPU times also include reading the",
        "CPU clock (~1 µs), which matters only for the `MutableAntichain` rows.",
        "",
        "| what | calls | wall median | wall p99 | CPU median | CPU p99 | notes |",
        "|---|---:|---:|---:|---:|---:|---|",
        row(
            "`MutableAntichain.update_iter`, int times",
            ma_int,
            "batches of 1-4 updates; frontier moves forward",
        ),
        row(
            "`MutableAntichain.update_iter`, Product times",
            ma_prod,
            "same workload shape, partially ordered",
        ),
        row(
            "Tracker: downgrade + `propagate_all()`, 100-operator chain",
            ch["times"],
            f"{ch['changes_median']} frontier changes per propagation "
            f"({ch['per_change_us']:.2f} µs per change); build {ch['build_ms']:.1f} ms",
        ),
        row(
            "Tracker: downgrade + `propagate_all()`, 1000-operator random DAG",
            dag["times"],
            f"10 sources, a random one downgraded each time; frontier changes per "
            f"propagation: median {dag['changes_median']}, p99 {dag['changes_p99']} "
            f"({dag['per_change_us']:.2f} µs per change); build {dag['build_ms']:.1f} ms; "
            f"first propagation (10 new capabilities) {dag['first_ms']:.1f} ms",
        ),
        "",
        f"Target — one change through the 100-operator chain in under {TARGET_CHAIN_MS} ms: "
        f"{verdict}.",
        "",
        "Notes: the chain downgrade changes the frontier at all 201 ports (each reports",
        "the old time leaving and the new one joining). In the DAG a downgrade only",
        "visits the ports whose frontier changes, so the time follows the number of",
        "changes: the p99 is a downgrade whose effect reaches most of the 2000 ports, not",
        "a pause (the p99 is the same with the garbage collector disabled). The chain does",
        "identical work every time, so the gap between its median and p99 is time spent",
        "waiting for a core: this is a shared 2-core machine, and the load average above",
        "inflates every wall-clock number.",
        "",
    ]
    text = "\n".join(lines)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
