"""One owner per data dir, with fencing (issue 32, item 1).

* Two writers: a second ``sealtime run`` into a data dir a live run owns is refused with a
  message naming the first (host, pid, since when); the first finishes and its output
  equals pandas.
* A paused owner: SIGSTOP the owner, let its lease expire, run a second owner to the end,
  SIGCONT the first: it commits nothing more (no binding, checkpoint, truncation mark or
  sink commit) and stops with the fencing error; the output equals pandas and a restart
  still reads every file — on SQLite and on PostgreSQL metadata.
* In process: a second `Dataflow` on the same data dir takes over (a restart) and the
  first is fenced; a replay reads another run's data dir without taking it over.
* Files: arrangements and spills restored from an older epoch's (or an owner-less)
  checkpoint are read, and written and collected only under the new epoch.

The child processes run `tests.engine.ownership_job` with ``sealtime run``; a gate in the
job holds the first owner still at a known point, outside any metadata transaction.
"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sealtime as st
from sealtime.arrangement.arrangement import Arrangement
from sealtime.arrangement.runs import spine_name, write_run
from sealtime.engine.bindings import BindingLog
from sealtime.errors import DataDirOwnedError, FencedError
from sealtime.sinks.parquet import Parquet
from sealtime.spark.spill import SpillStore
from sealtime.storage import MetadataStore, Shard
from sealtime.storage.ownership import (
    ProcessIdentity,
    acquire_lease,
    database_clock,
    read_owner,
)
from tests.storage.conftest import require_postgres

ROOT = Path(__file__).resolve().parents[2]
CHANNELS = ["web", "app", "tv", "api"]
BASE = 1_700_000_000_000
WINDOW = 10_000


# ------------------------------------------------------------------ inputs and oracles
def events(n: int = 2000, seed: int = 11) -> list[dict]:
    """Bids 20 ms apart in event time, jittered by less than the 2 s lateness (none is
    late, so a batch computation is the oracle)."""
    rng = random.Random(seed)
    return [
        {
            "bid": i,
            "channel": CHANNELS[rng.randrange(len(CHANNELS))],
            "price": rng.randrange(1, 10_000),
            "ts": BASE + i * 20 + rng.randrange(-500, 500),
        }
        for i in range(n)
    ]


def write_files(directory: Path, rows: list[dict], per_file: int = 500) -> None:
    directory.mkdir(parents=True)
    for i in range(0, len(rows), per_file):
        with open(directory / f"bids-{i // per_file:04d}.jsonl", "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows[i : i + per_file])


WINDOW_COLUMNS = ["channel", "window_start", "window_end", "max_price", "bids", "_time", "_diff"]


def canon(df: pd.DataFrame) -> pd.DataFrame:
    df = df[WINDOW_COLUMNS].copy()
    for c in WINDOW_COLUMNS[1:]:
        df[c] = df[c].astype("int64")
    return df.sort_values(WINDOW_COLUMNS).reset_index(drop=True)


def expected_windows(rows: list[dict]) -> pd.DataFrame:
    """Each window once, at its last time (pandas over the input)."""
    df = pd.DataFrame(rows)
    df["window_start"] = df["ts"] // WINDOW * WINDOW
    g = (
        df.groupby(["channel", "window_start"])
        .agg(max_price=("price", "max"), bids=("price", "size"))
        .reset_index()
    )
    g["window_end"] = g["window_start"] + WINDOW
    g["_time"], g["_diff"] = g["window_end"] - 1, 1
    return canon(g)


def expected_totals(rows: list[dict]) -> dict[str, int]:
    return {k: int(v) for k, v in pd.DataFrame(rows).groupby("channel")["price"].sum().items()}


# ------------------------------------------------------------------ reading a data dir
def open_store(data: Path, metadata: str | None) -> MetadataStore:
    return MetadataStore.open(metadata or str(data))


def windows_output(data: Path, metadata: str | None) -> pd.DataFrame:
    store = open_store(data, metadata)
    try:
        shard = Shard.open(store, "own.windows", data / "shards")
        files = [f for b in shard.batches() for f in b.files]
        table = shard.read_files(files) if files else shard.full_schema.empty_table()
    finally:
        store.close()
    return canon(table.to_pandas())


def totals_output(data: Path) -> dict[str, int]:
    """The Parquet sink's committed updates, consolidated: the final total per channel."""
    sink = Parquet(str(data / "out" / "totals"))
    tables = [pq.read_table(d) for d in sink.directories()]
    df = pa.concat_tables([t for t in tables if t.num_rows]).to_pandas()
    net = df.groupby(["channel", "total"])["_diff"].sum().reset_index()
    net = net[net["_diff"] != 0]
    assert (net["_diff"] == 1).all(), net
    assert net["channel"].is_unique, net
    return {r.channel: int(r.total) for r in net.itertuples()}


def durable_state(data: Path, metadata: str | None) -> dict:
    """Everything a writer commits: bindings, checkpoints, the shard's batches and
    upper, the Parquet sink's commit records, the key-value rows (truncation marks, the
    Parquet sink's last commit)."""
    store = open_store(data, metadata)
    try:
        log = BindingLog(store, "own")
        shard = Shard.open(store, "own.windows", data / "shards")
        return {
            "bindings": [(b.tick, b.into_time) for b in log.load()],
            "checkpoints": [tick for tick, _ in log.checkpoints()],
            "batches": [(b.seq, b.lower, b.upper, b.files) for b in shard.batches()],
            "upper": shard.upper,
            "records": [c["dir"] for c in Parquet(str(data / "out" / "totals")).commits()],
            "kv": store.query("SELECT namespace, key, value FROM sealtime_kv ORDER BY 1, 2"),
        }
    finally:
        store.close()


def owner(store: MetadataStore, data: Path):
    """The owner record of the data dir, and the database's clock now."""
    found = read_owner(store, str(data), "own")
    with store.transaction(readonly=True) as tx:
        return found, database_clock(tx)


# ------------------------------------------------------------------ child processes
class Run:
    """``sealtime run tests.engine.ownership_job:build`` in a child process (output to a
    file, so a full pipe never blocks it)."""

    def __init__(self, data: Path, env: dict, log: Path, *args: str) -> None:
        self.log = log
        child_env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
        child_env.pop("SEALTIME_FAILPOINTS", None)
        cmd = [sys.executable, "-m", "sealtime.cli", "run", "tests.engine.ownership_job:build"]
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [*cmd, "--data-dir", str(data), *args],
                env=child_env,
                cwd=ROOT,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.pid = self.proc.pid

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"run timed out after {timeout} s:\n{self.output()}") from None

    def output(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


def wait_until(condition, what: str, run: Run | None = None, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if run is not None and run.proc.poll() is not None:
            raise AssertionError(f"the run ended while waiting for {what}:\n{run.output()}")
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture
def scenario(tmp_path):
    rows = events()
    write_files(tmp_path / "in", rows)
    runs: list[Run] = []
    yield rows, {"OWN_INPUT": str(tmp_path / "in")}, runs
    for r in runs:
        r.kill()


def test_a_second_writer_is_refused_naming_the_first(tmp_path, scenario):
    _, _, runs = scenario
    # (800 bids, 4 ticks: the refusal needs only a live owner; the paused-owner test
    # below runs the scenario's 2,000)
    rows = events(800)
    write_files(tmp_path / "in-small", rows)
    env = {"OWN_INPUT": str(tmp_path / "in-small")}
    data, gate = tmp_path / "data", tmp_path / "gate"
    first = Run(data, {**env, "OWN_GATE": str(gate)}, tmp_path / "first.log")
    runs.append(first)
    wait_until(lambda: Path(f"{gate}.waiting").exists(), "the first run's gate", first)
    before = durable_state(data, None)

    second = Run(data, env, tmp_path / "second.log")
    runs.append(second)
    assert second.wait(timeout=300) == 3, second.output()
    text = second.output()
    host = socket.gethostname()
    for part in (
        "sealtime run: refused: Dataflow 'own' on data dir",
        f"owned by pid {first.pid} on host {host!r} since 20",
        "Stop that process first",
    ):
        assert part in text, (part, text)
    assert durable_state(data, None) == before  # the refused run wrote nothing

    gate.touch()
    assert first.wait(timeout=600) == 0, first.output()
    pd.testing.assert_frame_equal(windows_output(data, None), expected_windows(rows))
    assert totals_output(data) == expected_totals(rows)
    with open_store(data, None) as store:
        record, _ = owner(store, data)
    assert (record.epoch, record.process.pid, record.released) == (1, first.pid, True)


# The full tier's (three child runs and a SIGSTOP, 1.5-2 min per backend); the default
# tier fences a paused owner in process (test_a_second_dataflow_in_process_takes_over_and_
# fences_the_first, and tests/storage/test_ownership.py on both backends).
@pytest.mark.full
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_paused_owner_commits_nothing_after_a_takeover(tmp_path, scenario, backend):
    rows, env, runs = scenario
    metadata = None
    if backend == "postgresql":
        url = require_postgres()
        schema = f"sealtime_own_{uuid.uuid4().hex[:8]}"
        metadata = f"{url}?schema={schema}"
        env = {**env, "OWN_METADATA": metadata}
    try:
        paused_owner_scenario(tmp_path, rows, env, runs, metadata)
    finally:
        if metadata is not None:
            import psycopg

            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def paused_owner_scenario(tmp_path, rows, env, runs, metadata) -> None:
    data, gate = tmp_path / "data", tmp_path / "gate"
    first = Run(data, {**env, "OWN_GATE": str(gate)}, tmp_path / "first.log", "--lease", "3s")
    runs.append(first)
    wait_until(lambda: Path(f"{gate}.waiting").exists(), "the first run's gate", first)
    watch = open_store(data, metadata)
    # Stop it right after a renewal: its heartbeat then sleeps, so no transaction is open.
    renewed = owner(watch, data)[0].renewed_at
    wait_until(lambda: owner(watch, data)[0].renewed_at != renewed, "a renewal", first)
    os.kill(first.pid, signal.SIGSTOP)

    def expired() -> bool:
        record, now = owner(watch, data)
        return record.expires_at < now

    wait_until(expired, "the paused owner's lease to expire", timeout=60)
    paused_at = durable_state(data, metadata)
    assert paused_at["bindings"], "the first owner committed nothing before the pause"

    second = Run(data, env, tmp_path / "second.log", "--lease", "3s")
    runs.append(second)
    assert second.wait(timeout=600) == 0, second.output()
    taken = durable_state(data, metadata)
    record, _ = owner(watch, data)
    watch.close()
    assert (record.epoch, record.process.pid) == (2, second.pid)
    assert len(taken["bindings"]) > len(paused_at["bindings"])

    gate.touch()
    os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=300) == 4, first.output()
    text = first.output()
    assert "sealtime run: stopped: Dataflow 'own'" in text and "was fenced" in text, text
    assert f"pid {second.pid} on host" in text, text
    assert durable_state(data, metadata) == taken  # nothing committed after the takeover
    pd.testing.assert_frame_equal(windows_output(data, metadata), expected_windows(rows))
    assert totals_output(data) == expected_totals(rows)

    # A restart reads every file the second owner's checkpoint and bindings name (the
    # first one deleted and overwrote none of them); its output stays the same.
    third = Run(data, env, tmp_path / "third.log")
    runs.append(third)
    assert third.wait(timeout=600) == 0, third.output()
    after = durable_state(data, metadata)
    assert after["bindings"][: len(taken["bindings"])] == taken["bindings"]
    pd.testing.assert_frame_equal(windows_output(data, metadata), expected_windows(rows))
    assert totals_output(data) == expected_totals(rows)


# ------------------------------------------------------------------ in process
SMALL = {"k": "long", "v": "long"}


def small_flow(
    spark, data: Path, rows: list, truncate: bool = True
) -> tuple[st.Dataflow, st.sinks.Persist]:
    flow = st.Dataflow(
        "small",
        data_dir=str(data),
        spark=spark,
        record=False,
        checkpoint_every=2,
        truncate_log=truncate,
    )
    src = flow.source("s", st.sources.Rows(SMALL, rows))
    sink = st.sinks.Persist("sums")
    src.aggregate(by="k", total=st.sum("v")).sink(sink)
    return flow, sink


def net(sink: st.sinks.Persist) -> dict:
    df = sink.read_arrow().to_pandas()
    df = df.groupby(["k", "total"])["_diff"].sum().reset_index()
    return {int(r.k): int(r.total) for r in df[df["_diff"] != 0].itertuples()}


def test_a_second_dataflow_in_process_takes_over_and_fences_the_first(spark, tmp_path):
    rows = [(t * 1000, {"k": t % 2, "v": t}) for t in range(1, 9)]
    data = tmp_path / "d"
    first, _ = small_flow(spark, data, rows)
    first.run(ticks=2)
    second, sink = small_flow(spark, data, rows)
    second.run()
    with pytest.raises(FencedError, match="was fenced"):
        first.run(ticks=1)  # its next binding would land after the takeover
    assert net(sink) == {k: sum(t for t in range(1, 9) if t % 2 == k) for k in (0, 1)}
    record = read_owner(second.metadata_store, str(data), "small")
    assert record.epoch == 2
    # Its files went under its epoch; the log files of the first are the first's.
    assert (data / "log" / "s" / "e2").is_dir()
    second.close()
    with MetadataStore.open(str(data)) as store:
        assert read_owner(store, str(data), "small").released


def test_a_replay_reads_another_data_dir_without_taking_it(spark, tmp_path):
    rows = [(t * 1000, {"k": t % 3, "v": t}) for t in range(1, 7)]
    old, new = tmp_path / "old", tmp_path / "new"
    flow, _ = small_flow(spark, old, rows, truncate=False)
    flow.run()
    flow.close()
    # The old run's data dir is owned by a live process elsewhere now.
    old_store = MetadataStore.open(str(old))
    acquire_lease(
        old_store, str(old), "small", process=ProcessIdentity("elsewhere", 9), heartbeat=False
    )
    held = read_owner(old_store, str(old), "small")
    replay, sink = small_flow(spark, new, rows)
    replay.replay(str(old))
    assert net(sink) == {k: sum(t for t in range(1, 7) if t % 3 == k) for k in (0, 1, 2)}
    assert read_owner(old_store, str(old), "small") == held  # not taken, not touched
    replay.close()
    # Its own data dir is owned like any other: a live owner refuses it, when it appears
    # after the Dataflow was made (the engine's claim) and before (at once, no engine).
    again, _ = small_flow(spark, new, rows)
    new_store = MetadataStore.open(str(new))
    acquire_lease(
        new_store, str(new), "small", process=ProcessIdentity("elsewhere", 9), heartbeat=False
    )
    with pytest.raises(DataDirOwnedError, match="pid 9 on host 'elsewhere'"):
        again.run()
    with pytest.raises(DataDirOwnedError, match="pid 9 on host 'elsewhere'"):
        small_flow(spark, new, rows)
    for s in (old_store, new_store):
        s.close()


def test_the_dataflows_lease_and_takeover_settings(spark, tmp_path):
    """``Dataflow(lease=..., takeover=...)``: the owner record's lease length, and a live
    owner replaced (fenced) only when asked."""
    data = tmp_path / "d"
    flow = st.Dataflow("owned", data_dir=str(data), spark=spark, record=False, lease="7s")
    flow.source("s", st.sources.Rows(SMALL, [(1000, {"k": 1, "v": 1})]))
    assert flow.engine.tick_no == 0  # (the engine took the data dir)
    record = read_owner(flow.metadata_store, str(data), "owned")
    assert record.expires_at - record.renewed_at == pytest.approx(7.0)
    flow.close()
    # A live owner elsewhere.
    elsewhere = ProcessIdentity("elsewhere", 9)
    with MetadataStore.open(str(data)) as store:
        acquire_lease(store, str(data), "owned", process=elsewhere, heartbeat=False)
    with pytest.raises(DataDirOwnedError, match="pid 9 on host 'elsewhere'"):
        st.Dataflow("owned", data_dir=str(data), spark=spark)
    again = st.Dataflow("owned", data_dir=str(data), spark=spark, takeover=True)
    again.source("s", st.sources.Rows(SMALL, [(1000, {"k": 1, "v": 1})]))
    again.run()
    assert read_owner(again.metadata_store, str(data), "owned").epoch == 3
    again.close()
    with pytest.raises(st.errors.ConfigError, match="lease='soon'"):
        st.Dataflow("owned", data_dir=str(data), spark=spark, lease="soon")


# ------------------------------------------------------------------ files by epoch
def test_arrangements_restore_older_epochs_and_write_only_their_own(tmp_path):
    data = tmp_path / "d"
    directory = str(data / "state" / "n0001-reduce" / "arrangement")
    legacy = Path(directory) / "p0000"  # written before data dirs had owners
    for first, last in [(1, 2), (3, 3), (4, 4)]:
        write_run(str(legacy), spine_name(first, last), pa.table({"__h": [first]}))
    stores = [MetadataStore.open(str(data)) for _ in range(3)]
    acquire_lease(stores[0], str(data), "f", heartbeat=False)
    one = Arrangement(directory, partitions=1)
    one.restore({"version": 3, "partitions": 1})  # a checkpoint without an epoch
    assert sorted(one.partition(0).names()) == [spine_name(1, 2), spine_name(3, 3)]
    assert legacy.is_dir()  # still what the recorded checkpoint refers to
    write_run(one.partition(0), spine_name(4, 4), pa.table({"__h": [4]}))
    one.advance()
    one.pin()  # this epoch's checkpoint at version 4 ...
    checkpoint = one.state()
    one.finish_tick()  # ... recorded: the runs from before owners go
    assert not legacy.exists()

    acquire_lease(stores[1], str(data), "f", heartbeat=False)  # a takeover: epoch 2
    two = Arrangement(directory, partitions=1)
    two.restore(checkpoint)
    assert checkpoint["epoch"] == 1 and two.epoch == 2
    assert sorted(two.partition(0).names()) == sorted(one.partition(0).names())
    write_run(two.partition(0), spine_name(5, 5), pa.table({"__h": [5]}))
    two.advance()
    # The fenced first owner goes on collecting: only its own directory.
    write_run(one.partition(0), spine_name(1, 5), pa.table({"__h": [9]}))
    one.advance()
    one.finish_tick()
    assert (Path(directory) / "e2" / "p0000" / spine_name(5, 5)).exists()
    assert sorted(two.partition(0).names()) == sorted(
        [spine_name(1, 2), spine_name(3, 3), spine_name(4, 4), spine_name(5, 5)]
    )
    # Epoch 1's directory goes once epoch 2's own checkpoint is recorded.
    two.pin()
    two.finish_tick()
    assert sorted(p.name for p in Path(directory).iterdir()) == ["e2"]
    for s in stores:
        s.close()


def test_spills_collect_only_their_epoch_and_older_ones(tmp_path):
    data = tmp_path / "d"
    spill_dir = str(data / "spill" / "pending")
    data.mkdir()
    stores = [MetadataStore.open(str(data)) for _ in range(2)]
    acquire_lease(stores[0], str(data), "f", heartbeat=False)
    old = SpillStore(None, spill_dir)
    acquire_lease(stores[1], str(data), "f", heartbeat=False)
    new = SpillStore(None, spill_dir)
    paths = {
        "legacy": str(Path(spill_dir) / "n1-p0" / "g00000001"),
        "old": old.path("n1-p0", 2),
        "new": new.path("n1-p0", 3),
        "new-pinned": new.path("n1-p0", 1),
    }
    for p in paths.values():
        Path(p).mkdir(parents=True)
        (Path(p) / "part-0.parquet").write_bytes(b"x")
    assert paths["new"].endswith("g00000003-e2")
    new.pinned = {paths["new-pinned"]}
    new.live = {"n1-p0": paths["new"]}
    old.collect_garbage()  # the fenced owner: its own and older generations only
    assert {k for k, p in paths.items() if Path(p).exists()} == {"new", "new-pinned"}
    old.remove_all()
    assert Path(paths["new"]).exists() and Path(paths["new-pinned"]).exists()
    new.live = {}
    new.collect_garbage()
    assert {k for k, p in paths.items() if Path(p).exists()} == {"new-pinned"}
    for s in stores:
        s.close()
