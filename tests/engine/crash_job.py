"""The dataflow of the crash tests, as a job (`sealtime run tests.engine.crash_job:build`).

source (files or NATS JetStream, event time, lateness 2 s) -> 10 s tumbling window
aggregate per channel -> join with a channel table -> Persist sink. Checkpoints every 3
ticks with log truncation, so recovery exercises checkpoint + log replay. A second sink
takes the filtered bids as Arrow: it collects ahead, so the ticks between checkpoints
read ahead (the next binding minted while the tick collects), and kills land there too.

Configured by environment variables (the test sets them for the child process):
``CRASH_SOURCE`` = ``files`` | ``nats``; ``CRASH_INPUT`` (files: the directory);
``CRASH_STREAM``/``CRASH_SUBJECT`` (nats).
"""

from __future__ import annotations

import os

import sealtime as st

SCHEMA = {"bid": "long", "channel": "string", "price": "long", "ts": "long"}
CHANNELS = [("web", "apple.com"), ("app", "google.com"), ("tv", "meta.com"), ("api", "-")]
PER_TICK = 250


def per_tick() -> int:
    """Rows per tick: `PER_TICK`, or CRASH_PER_TICK (read at build time). The NATS test
    reads in smaller ticks so its input outlasts the kills (a run with no input left
    reaches no sink failpoint)."""
    return int(os.environ.get("CRASH_PER_TICK", PER_TICK))


def source():
    kind = os.environ.get("CRASH_SOURCE", "files")
    if kind == "files":
        return st.sources.Files(
            os.environ["CRASH_INPUT"],
            format="jsonl",
            schema=SCHEMA,
            finite=True,
            settle=0,
            max_per_read=per_tick(),
        )
    return source_for_nats(os.environ["CRASH_SUBJECT"], os.environ["CRASH_STREAM"])


def source_for_nats(subject: str, stream: str):
    return st.sources.NatsJetStream(subject, stream=stream, schema=SCHEMA, max_per_read=per_tick())


def build(data_dir: str, spark=None) -> st.Dataflow:
    flow = st.Dataflow(
        "crash",
        data_dir=data_dir,
        spark=spark,
        record=False,
        checkpoint_every=3,
        truncate_log=True,
        shuffle_partitions=2,
    )
    bids = flow.source("bids", source(), time="ts", lateness="2s", max_rows_per_tick=per_tick())
    channels = flow.source(
        "channels",
        st.sources.Rows(
            {"channel": "string", "owner": "string"},
            [(0, {"channel": c, "owner": o}) for c, o in CHANNELS],
        ),
    )
    stats = bids.window(st.Tumbling("10s")).aggregate(
        by="channel", max_price=st.max("price"), bids=st.count()
    )
    stats.join(channels, on="channel").sink(st.sinks.Persist("windows"))
    # An Arrow sink of a per-row collection: it collects ahead, so ticks read ahead (the
    # next binding is minted while this tick collects; failpoint tick.read_ahead).
    bids.filter("price > 0").select("bid", "ts").sink(st.sinks.Callback(_discard))
    return flow


def _discard(table, lo, hi) -> None:
    """The Arrow sink's callback (its rows are not checked: only the Persist sink is)."""
