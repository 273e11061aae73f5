"""The `sealtime` command.

sealtime demo [--seconds 30] [--data-dir DIR] [--rate 5000]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shutil
import sys
import time
from collections.abc import Sequence

__all__ = ["main"]


def _fmt_time(ms: int | None) -> str:
    if ms is None:
        return "∞ (all sealed)"
    if ms < 0:
        return "-"
    return _dt.datetime.fromtimestamp(ms / 1000, _dt.timezone.utc).strftime("%H:%M:%S.%f")[:-3]


def demo(args: argparse.Namespace) -> int:
    """A live pipeline: generator -> event-time windows (max price, count, top-3 bids)
    -> join with a channel table -> Parquet sink and console."""
    import pyarrow as pa

    import sealtime as st
    from sealtime.sources.generator import CHANNELS, Generator

    data_dir = os.path.abspath(args.data_dir)
    # The demo owns its data directory and starts fresh each time.
    shutil.rmtree(data_dir, ignore_errors=True)
    print(f"sealtime demo: local Spark, data in {data_dir}; starting Spark…", flush=True)
    flow = st.Dataflow("demo", data_dir=data_dir, tick=args.tick, record=False)
    gen = Generator(
        seed=args.seed,
        rate=args.rate,
        start="now",
        pace=True,
        out_of_order="1s",
        late_fraction=0.002,
        late_by="10s",
    )
    bids = flow.source("bids", gen, time="date_time", lateness="2s")
    channels = flow.source(
        "channels",
        st.sources.Rows(
            {"channel": "string", "owner": "string"},
            [
                (0, {"channel": c, "owner": o})
                for c, o in zip(CHANNELS, ["apple.com", "google.com", "meta.com", "baidu.com", "-"])
            ],
        ),
    )
    windowed = bids.window(st.Tumbling(args.window))
    stats = windowed.aggregate(by="channel", max_price=st.max("price"), bids=st.count())
    enriched = stats.join(channels, on="channel")
    top3 = windowed.top_k(order_by=["-price", "event_id"], k=3).select(
        "window_start", "window_end", "auction", "bidder", "price", "channel"
    )
    enriched.sink(st.sinks.Parquet(os.path.join(data_dir, "out", "windows")))

    def show(title):
        def fn(table: pa.Table, lo: int, hi: int | None) -> None:
            for ws in sorted(set(table.column("window_start").to_pylist())):
                part = table.filter(pa.compute.equal(table.column("window_start"), ws))
                we = part.column("window_end")[0].as_py()
                print(f"\n▶ {title}: window [{_fmt_time(ws)}, {_fmt_time(we)}) sealed")
                df = part.drop_columns(["window_start", "window_end", "_time", "_diff"]).to_pandas()
                print(df.sort_values(df.columns[0]).to_string(index=False))

        return fn

    enriched.sink(st.sinks.Callback(show("max price and bids per channel")))
    top3.sink(st.sinks.Callback(show("top-3 bids")))
    bids.late.sink(
        st.sinks.Callback(lambda t, lo, hi: print(f"  ({t.num_rows} late bid(s) routed to `late`)"))
    )

    started = time.time()
    state = {"rows": 0}

    def status(report) -> None:
        state["rows"] += report.rows_in
        elapsed = max(time.time() - started, 1e-9)
        print(
            f"[tick {report.tick:>4}] frontier {_fmt_time(report.frontier)}  "
            f"events {state['rows']:,} ({state['rows'] / elapsed:,.0f}/s)  tick {report.seconds * 1000:.0f} ms",
            flush=True,
        )
        if time.time() - started >= args.seconds:
            raise _Stop

    try:
        flow.run(forever=True, on_tick=status)
    except _Stop:
        pass
    except KeyboardInterrupt:
        print("interrupted")
    m = flow.metrics()["sources"]["bids"]
    print(
        f"\ndone: {m['rows']:,} events, {m['late']} late, windows in {os.path.join(data_dir, 'out', 'windows')}"
    )
    return 0


class _Stop(Exception):
    pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sealtime", description="sealtime: stream processing with consistent time"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser(
        "demo", help="run a live generator -> windows -> join pipeline on local Spark"
    )
    d.add_argument("--seconds", type=float, default=30.0, help="how long to run (default 30)")
    d.add_argument("--data-dir", default=os.path.join("data", "demo"))
    d.add_argument("--rate", type=int, default=5000, help="events per second")
    d.add_argument("--window", default="5s")
    d.add_argument("--tick", default="1s")
    d.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
