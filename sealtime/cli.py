"""The `sealtime` command.

sealtime demo [--seconds 30] [--data-dir DIR] [--rate 5000]

``run`` and ``replay`` own the data dir they write (`sealtime.storage.ownership`): a
second one into the same dir exits with status 3 and a message naming the owner; an
owner fenced by a takeover exits with status 4. ``--lease`` sets the lease length,
``--takeover`` replaces a live owner (which is fenced).

Every command runs through `sealtime.summaries.run_command`: Spark's and Python's
diagnostics go to ``<data dir>/logs/<command>.log``, and a failure prints one line first
(what failed, the path or setting, the errno, the fix) and then where its full trace
is; ``--verbose`` prints everything on the terminal instead. ``replay
--from-checkpoint latest|TICK`` starts from a checkpoint of the original when its log no
longer reaches back to the beginning (``retain_history``, docs/durability.md).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import shutil
import sys
import time
from collections.abc import Callable, Sequence

from .columns import DIFF, TIME

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
    # The demo owns its data directory and starts fresh each time (its log stays).
    for name in os.listdir(data_dir) if os.path.isdir(data_dir) else []:
        if name != "logs":
            path = os.path.join(data_dir, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                os.unlink(path)
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
                df = part.drop_columns(["window_start", "window_end", TIME, DIFF]).to_pandas()
                print(df.sort_values(df.columns[0]).to_string(index=False))

        return fn

    enriched.sink(st.sinks.Callback(show("max price and bids per channel")))
    top3.sink(st.sinks.Callback(show("top-3 bids")))
    bids.late.sink(
        st.sinks.Callback(lambda t, lo, hi: print(f"  ({t.num_rows} late bid(s) routed to `late`)"))
    )

    from sealtime.ui import TickProgress

    if getattr(args, "ui", None):
        from sealtime.pubsub import parse_address

        print(f"web view: {flow.serve_ui(*parse_address(args.ui)).url}", flush=True)
    started = time.time()
    line = TickProgress("demo", file=sys.stdout, every=1)  # one status line per tick

    def status(report) -> None:
        line(report)
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


def _default_catalog(args: argparse.Namespace) -> str:
    catalog = args.catalog or os.environ.get("SEALTIME_CATALOG")
    if not catalog:
        raise SystemExit(
            "sealtime: pass --catalog DATA_DIR|HOST:PORT|postgresql://... (or set SEALTIME_CATALOG)"
        )
    return catalog


def catalog_cmd(args: argparse.Namespace) -> int:
    """List the catalog: one line per partition of every publication."""
    from sealtime.pubsub.catalog import open_catalog

    entries = open_catalog(_default_catalog(args)).entries()
    print(f"{'NAME':<24} {'PART':>4} {'MODE':<6} {'ADDRESS':<22} {'DATAFLOW':<12} COLUMNS")
    for e in entries:
        schema = e.arrow_schema
        cols = ", ".join(f"{f.name} {f.type}" for f in schema) if schema is not None else "?"
        part = f"{e.partition}/{e.partitions}"
        print(f"{e.name:<24} {part:>4} {e.mode:<6} {e.address:<22} {e.dataflow:<12} {cols}")
    print(f"({len(entries)} entries)", flush=True)
    return 0


def subscribe_cmd(args: argparse.Namespace) -> int:
    """Print a subscription's snapshot, updates and progress until it ends."""
    from sealtime.pubsub import Closed, Data, Epoch, Progress, Snapshot, subscribe

    sub = subscribe(args.name, catalog=_default_catalog(args), mode=args.mode, timeout=args.timeout)
    count = 0
    with sub:
        for event in sub:
            if isinstance(event, Snapshot):
                print(f"snapshot as_of={list(event.as_of.elements())} rows={event.table.num_rows}")
                for row in event.table.to_pylist():
                    print(f"  {row}")
            elif isinstance(event, Epoch | Data):
                print(f"time {event.time} rows={event.table.num_rows}")
                for row in event.table.to_pylist():
                    print(f"  {row}")
            elif isinstance(event, Progress):
                print(f"progress {list(event.lower.elements())}", flush=True)
                if event.lower.is_empty():
                    break
            elif isinstance(event, Closed):
                print(f"closed: {event.reason}", flush=True)
                return 1
            count += 1
            if args.max_events and count >= args.max_events:
                break
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="sealtime", description="sealtime: stream processing with consistent time"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser(
        "run", help="run a job (module:function building a Dataflow); resumes its data dir"
    )
    r.add_argument(
        "job", help="'package.module:function', 'file.py:function' or a pipeline 'file.sql'"
    )
    r.add_argument("--data-dir", required=True)
    r.add_argument("--ticks", type=int, default=None, help="stop after N ticks")
    r.add_argument("--forever", action="store_true", help="run until interrupted")
    r.add_argument("--ui", metavar="[HOST:]PORT", help="serve the live web view (loopback)")
    _ownership_options(r)
    rp = sub.add_parser(
        "replay", help="re-run a job from another run's ingest log; outputs go to a new dir"
    )
    rp.add_argument("job", help="'package.module:function' or 'file.py:function'")
    rp.add_argument("--from", dest="from_dir", required=True, help="data dir of the run")
    rp.add_argument("--data-dir", required=True, help="a new, empty data dir")
    rp.add_argument("--name", default=None, help="the original dataflow's name if it differs")
    rp.add_argument(
        "--then-live",
        action="store_true",
        help="after the recorded ticks, continue with live input (time reset, timer gap policy)",
    )
    rp.add_argument(
        "--ticks", type=int, default=None, help="with --then-live: stop after N live ticks"
    )
    rp.add_argument(
        "--from-checkpoint",
        default=None,
        metavar="latest|TICK",
        help="start from that checkpoint of the run (its log no longer reaches back to the "
        "beginning: retain_history); its sinks receive the commits after it",
    )
    _ownership_options(rp)
    d = sub.add_parser(
        "demo", help="run a live generator -> windows -> join pipeline on local Spark"
    )
    d.add_argument("--seconds", type=float, default=30.0, help="how long to run (default 30)")
    d.add_argument("--data-dir", default=os.path.join("data", "demo"))
    d.add_argument("--rate", type=int, default=5000, help="events per second")
    d.add_argument("--window", default="5s")
    d.add_argument("--tick", default="1s")
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--ui", metavar="[HOST:]PORT", help="serve the live web view (loopback)")
    st_ = sub.add_parser("status", help="show a job's bindings, frontiers, checkpoints, shards")
    st_.add_argument("--data-dir", required=True, help="the job's data dir")
    st_.add_argument("--metadata", default=None, help="postgresql:// URL of a shared store")
    st_.add_argument("--json", action="store_true", help="machine-readable output")
    c = sub.add_parser("catalog", help="list the published streams and views")
    c.add_argument("--catalog", help="data dir, catalog HOST:PORT or postgresql:// URL")
    sb = sub.add_parser("subscribe", help="print a publication's updates and progress")
    sb.add_argument("name")
    sb.add_argument("--catalog", help="data dir, catalog HOST:PORT or postgresql:// URL")
    sb.add_argument("--mode", choices=["stream", "view"], default="stream")
    sb.add_argument("--max-events", type=int, default=0, help="stop after N events")
    sb.add_argument("--timeout", type=float, default=10.0, help="connect timeout (s)")
    sv = sub.add_parser(
        "serve", help="the live service: views created while it runs, behind a PostgreSQL port"
    )
    from .serve.main import add_arguments

    add_arguments(sv)
    _ownership_options(sv)
    q = sub.add_parser(
        "sql", help="interactive SQL shell: CREATE SOURCE/VIEW, SUBSCRIBE, SELECT ... AS OF"
    )
    q.add_argument("--data-dir", required=True)
    q.add_argument("--name", default="sql", help="the dataflow's name in the data dir")
    for command in sub.choices.values():
        command.add_argument(
            "--verbose",
            action="store_true",
            help="print diagnostics and a failure's full trace here, not only in "
            "<data dir>/logs/<command>.log",
        )
    args = parser.parse_args(argv)
    from .summaries import run_command

    def body() -> int:
        if args.command in ("run", "replay", "serve"):
            from .storage.ownership import lease_settings

            with lease_settings(lease=args.lease, takeover=args.takeover):
                return _dispatch(args)
        return _dispatch(args)

    # (the commands that write a data dir keep their log in it)
    writes = args.command in ("run", "replay", "serve", "sql", "demo")
    return run_command(
        args.command,
        body,
        data_dir=getattr(args, "data_dir", None) if writes else None,
        verbose=args.verbose,
    )


def _ownership_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--lease",
        default=None,
        metavar="DURATION",
        help="how long the data dir stays owned without renewal (default 30s, $SEALTIME_LEASE)",
    )
    p.add_argument(
        "--takeover",
        action="store_true",
        help="take the data dir over even from a live owner (it is fenced: commits nothing more)",
    )


def _run(runner: Callable[..., int], args: argparse.Namespace) -> int:
    """`sealtime run`: a SQL file's or a Python job's runner, with the same options."""
    return runner(
        args.job,
        args.data_dir,
        ticks=args.ticks,
        forever=args.forever,
        out=sys.stdout,
        ui=args.ui,
    )


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "catalog":
        return catalog_cmd(args)
    if args.command == "subscribe":
        return subscribe_cmd(args)
    if args.command == "serve":
        from sealtime.serve.main import serve

        return serve(args)
    if args.command == "sql":
        from sealtime.sql.shell import run_shell

        return run_shell(args.data_dir, name=args.name)
    if args.command == "run" and args.job.endswith(".sql"):
        from sealtime.errors import SealtimeError
        from sealtime.sql import SqlError
        from sealtime.sql.pipeline import run_file

        try:
            return _run(run_file, args)
        except SqlError as e:
            print(f"sealtime run {args.job}: {e}", file=sys.stderr, flush=True)
            return 2
        except (SealtimeError, FileNotFoundError) as e:
            # (bad input or a missing directory: the message says what to fix, no trace)
            print(f"sealtime run {args.job}: {type(e).__name__}: {e}", file=sys.stderr)
            return 2
    if args.command == "run":
        from sealtime.jobs import run_job

        return _run(run_job, args)
    if args.command == "replay":
        from sealtime.jobs import replay_job

        replay_job(
            args.job,
            args.from_dir,
            args.data_dir,
            name=args.name,
            then_live=args.then_live,
            ticks=args.ticks,
            forever=args.then_live and args.ticks is None,
            out=sys.stdout,
            from_checkpoint=args.from_checkpoint,
        )
        return 0
    if args.command == "demo":
        return demo(args)
    if args.command == "status":
        from sealtime.ui.status import status_cmd

        return status_cmd(args.data_dir, metadata=args.metadata, as_json=args.json, out=sys.stdout)
    return 2


if __name__ == "__main__":
    sys.exit(main())
