"""Benchmark of sealtime.pubsub on loopback: fan-out throughput and sealing latency.

* throughput: one publisher sends epochs of `--rows` rows (an Arrow batch: int64 id,
  float64 value) and seals each one; 1, 10 and 100 subscribers (stream mode, atomic
  epochs) run in worker processes, one thread per subscription. Reported: rows delivered
  to all subscribers per second (and MB/s of payload), from the first send until the last
  subscriber saw the stream end.
* latency: one small row per epoch, paced; the time from `advance_lower` (the epoch is
  sealed) to the subscriber receiving the matching `Progress` (after its `Epoch`),
  p50/p99, for 1 and 10 subscribers.

Writes markdown to bench/results/pubsub.md (machine, date, exact command).

    .venv/bin/python bench/bench_pubsub.py            # full run
    .venv/bin/python bench/bench_pubsub.py --quick    # smaller, for a smoke test
"""

from __future__ import annotations

import argparse
import datetime as dt
import multiprocessing as mp
import os
import platform
import shlex
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sealtime.pubsub import Closed, Epoch, Progress, Publisher, subscribe_stream  # noqa: E402


def _worker(address, n_subs: int, conn, mode: str) -> None:
    """Runs `n_subs` subscriptions (one thread each); reports per-subscription results."""
    subs = [subscribe_stream(address, timeout=60) for _ in range(n_subs)]
    conn.send("ready")
    results: list = [None] * n_subs

    def run(i: int) -> None:
        sub = subs[i]
        rows = 0
        epochs = 0
        progress_at: dict = {}
        end = None
        for event in sub:
            if isinstance(event, Epoch):
                rows += event.table.num_rows
                epochs += 1
            elif isinstance(event, Progress):
                if mode == "latency" and len(event.lower) == 1:
                    progress_at[event.lower.elements()[0]] = time.monotonic()
            elif isinstance(event, Closed):
                end = time.monotonic()
        results[i] = (rows, epochs, end, progress_at, sub.reason)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n_subs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    conn.send(results)


def _spawn_subscribers(address, n_subs: int, mode: str, procs: int):
    ctx = mp.get_context("spawn")
    per = [n_subs // procs + (1 if i < n_subs % procs else 0) for i in range(procs)]
    workers = []
    for n in per:
        if n == 0:
            continue
        parent, child = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(address, n, child, mode), daemon=True)
        p.start()
        workers.append((p, parent))
    for _, parent in workers:
        if not parent.poll(120):
            raise RuntimeError("subscriber worker did not start")
        assert parent.recv() == "ready"
    return workers


def _collect(workers) -> list:
    results = []
    for p, parent in workers:
        if not parent.poll(600):
            raise RuntimeError("subscriber worker did not finish")
        results.extend(parent.recv())
        p.join(timeout=30)
    return results


def throughput(n_subs: int, epochs: int, rows: int, procs: int) -> dict:
    table = pa.Table.from_arrays(
        [pa.array(np.arange(rows, dtype=np.int64)), pa.array(np.random.rand(rows))],
        names=["id", "value"],
    )
    with Publisher(
        "bench", max_queue=1 << 30, max_queue_bytes=1 << 40, close_timeout=120
    ).start() as pub:
        workers = _spawn_subscribers(pub.address, n_subs, "throughput", procs)
        start = time.monotonic()
        for t in range(epochs):
            pub.send(t, table)
            pub.advance_lower([t + 1])
        pub.advance_lower([])
        send_done = time.monotonic()
        pub.close("done")
        results = _collect(workers)
    end = max(r[2] for r in results)
    delivered = sum(r[0] for r in results)
    expected = n_subs * epochs * rows
    assert delivered == expected, (delivered, expected, {r[4] for r in results})
    elapsed = end - start
    payload = table.nbytes
    return {
        "subscribers": n_subs,
        "epochs": epochs,
        "rows_per_epoch": rows,
        "elapsed_s": elapsed,
        "publish_s": send_done - start,
        "rows_per_s": delivered / elapsed,
        "mb_per_s": n_subs * epochs * payload / elapsed / 1e6,
    }


def latency(n_subs: int, epochs: int, pace: float, procs: int) -> dict:
    table = pa.Table.from_arrays([pa.array(np.zeros(1, dtype=np.int64))], names=["id"])
    sealed_at: dict[int, float] = {}
    with Publisher("lat", close_timeout=60).start() as pub:
        workers = _spawn_subscribers(pub.address, n_subs, "latency", procs)
        for t in range(epochs):
            pub.send(t, table)
            sealed_at[t + 1] = time.monotonic()
            pub.advance_lower([t + 1])
            time.sleep(pace)
        pub.advance_lower([])
        pub.close("done")
        results = _collect(workers)
    lat = [(at - sealed_at[t]) * 1000 for r in results for t, at in r[3].items() if t in sealed_at]
    lat.sort()
    return {
        "subscribers": n_subs,
        "samples": len(lat),
        "p50_ms": statistics.median(lat),
        "p99_ms": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "max_ms": lat[-1],
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=10_000, help="rows per epoch (batch)")
    parser.add_argument("--procs", type=int, default=2, help="subscriber worker processes")
    parser.add_argument("--quick", action="store_true", help="fewer epochs (smoke test)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "pubsub.md"))
    args = parser.parse_args()
    scale = 0.1 if args.quick else 1.0
    load_before = os.getloadavg()

    plan = [(1, 400), (10, 200), (100, 40)]
    tp = []
    for n_subs, epochs in plan:
        r = throughput(n_subs, max(4, int(epochs * scale)), args.rows, args.procs)
        print(
            f"throughput {n_subs:>3} subscribers: {r['rows_per_s'] / 1e6:8.2f} M rows/s "
            f"({r['mb_per_s']:.0f} MB/s) in {r['elapsed_s']:.2f} s",
            flush=True,
        )
        tp.append(r)
    lat = []
    for n_subs in (1, 10):
        r = latency(n_subs, max(20, int(500 * scale)), 0.005, args.procs)
        print(
            f"latency    {n_subs:>3} subscribers: p50 {r['p50_ms']:.2f} ms, "
            f"p99 {r['p99_ms']:.2f} ms (n={r['samples']})",
            flush=True,
        )
        lat.append(r)

    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", *sys.argv])
    lines = [
        "# sealtime.pubsub benchmark",
        "",
        f"* date: {dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}",
        f"* machine: {_cpu_model()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}",
        f"* python {platform.python_version()}, pyarrow {pa.__version__}",
        "* load average before the run (1/5/15 min): "
        + " / ".join(f"{x:.1f}" for x in load_before)
        + " (the machine was shared with other jobs; numbers are indicative)",
        f"* command: `{command}`",
        "* setup: one publisher (asyncio thread) and the subscribers on loopback; "
        f"subscribers in {args.procs} worker processes, one thread per subscription; "
        "stream mode, atomic epochs (each epoch buffered and released when sealed).",
        "",
        "## Fan-out throughput",
        "",
        f"Each epoch is one Arrow batch of {args.rows} rows (int64 `id`, float64 `value`, "
        f"{args.rows * 16 / 1e3:.0f} kB), sealed right after it is sent; rows/s counts rows "
        "delivered to all subscribers, from the first send to the last subscriber's end.",
        "",
        "| subscribers | epochs | rows delivered | elapsed (s) | rows/s delivered | payload MB/s |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in tp:
        delivered = r["subscribers"] * r["epochs"] * r["rows_per_epoch"]
        lines.append(
            f"| {r['subscribers']} | {r['epochs']} | {delivered:,} | {r['elapsed_s']:.2f} | "
            f"{r['rows_per_s']:,.0f} | {r['mb_per_s']:.0f} |"
        )
    lines += [
        "",
        "## Sealing latency",
        "",
        "One row per epoch, an epoch every 5 ms; latency = time from `advance_lower` "
        "(the epoch is sealed) until the subscriber has received the `Progress` that "
        "follows the epoch's `Epoch` event (monotonic clock, same machine).",
        "",
        "| subscribers | samples | p50 (ms) | p99 (ms) | max (ms) |",
        "|---:|---:|---:|---:|---:|",
    ]
    for r in lat:
        lines.append(
            f"| {r['subscribers']} | {r['samples']} | {r['p50_ms']:.2f} | "
            f"{r['p99_ms']:.2f} | {r['max_ms']:.2f} |"
        )
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
