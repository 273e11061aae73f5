"""Restart, checkpoints, log truncation, replay, bad input — in process.

A "restart" here abandons a Dataflow object and builds the same graph again on the same
data_dir (the SIGKILL version is tests/engine/test_crash.py). Each test compares the
exactly-once sink's content with an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sealtime as st
from sealtime.engine.bindings import BindingLog, PlanChangedError
from sealtime.sources.decode import SchemaMismatchError
from sealtime.testing import write_jsonl_files
from tests.sources.conftest import REDIS_HOST, REDIS_PORT, require_server
from tests.storage.conftest import require_postgres

SCHEMA = {"k": "long", "v": "long", "ts": "long"}


def write_input(directory: Path, files: int = 6, per_file: int = 40) -> None:
    write_jsonl_files(
        directory,
        files,
        per_file,
        lambda i, j: {"k": j % 3, "v": i * 100 + j, "ts": i * 4000 + j * 100},
    )


def build(
    spark, data_dir, input_dir, *, ck=None, truncate=True, metadata=None, name="r", retain=...
):
    flow = st.Dataflow(
        name,
        data_dir=str(data_dir),
        spark=spark,
        checkpoint_every=ck,
        truncate_log=truncate,
        metadata=metadata,
        record=False,
    )
    src = st.sources.Files(str(input_dir), schema=SCHEMA, finite=True, settle=0, max_per_read=40)
    s = flow.source("s", src, time="ts", lateness="1s", retain_history=retain)
    win = s.window(st.Tumbling("5s")).aggregate(by="k", n=st.count(), top=st.max("v"))
    totals = s.aggregate(by="k", total=st.sum("v"))  # retractions on every change
    win.sink(st.sinks.Persist("windows"))
    totals.sink(st.sinks.Persist("totals"))
    return flow


def content(flow) -> dict[str, list]:
    out = {}
    for _, sink in flow.sinks:
        rows = sink.read_arrow().to_pylist()
        out[sink.name] = sorted(tuple(sorted(r.items())) for r in rows)
    return out


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("recovery-in")
    write_input(d)
    return d


@pytest.fixture(scope="module")
def uninterrupted(spark, inputs, tmp_path_factory):
    flow = build(spark, tmp_path_factory.mktemp("recovery-ref"), inputs)
    flow.run()
    out = content(flow)
    flow.close()
    assert out["windows"] and out["totals"]
    return out


@pytest.mark.parametrize("ck", [None, 2], ids=["log-only", "checkpoints"])
def test_restarts_equal_an_uninterrupted_run(spark, inputs, uninterrupted, tmp_path, ck):
    for ticks in (2, 1, 3):
        flow = build(spark, tmp_path, inputs, ck=ck)
        flow.run(ticks=ticks)
        # abandoned without close(): like a process that died after its last tick
    flow = build(spark, tmp_path, inputs, ck=ck)
    assert flow.engine.recovered_from["ticks"] == 6
    if ck:
        assert flow.engine.recovered_from["checkpoint"] == 6
    flow.run()
    assert content(flow) == uninterrupted
    flow.close()


def test_postgres_metadata_same_code_path(spark, inputs, uninterrupted, tmp_path):
    url = require_postgres()
    schema = f"sealtime_t_{uuid.uuid4().hex[:8]}"
    metadata = f"{url}?schema={schema}"
    try:
        flow = build(spark, tmp_path, inputs, ck=2, metadata=metadata)
        flow.run(ticks=3)
        flow = build(spark, tmp_path, inputs, ck=2, metadata=metadata)
        assert flow.engine.recovered_from == {"ticks": 3, "checkpoint": 2}
        flow.run()
        assert content(flow) == uninterrupted
        flow.close()
    finally:
        import psycopg

        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_checkpoints_truncate_the_log(spark, inputs, uninterrupted, tmp_path):
    # (retain_history=0: only what recovery needs is kept)
    flow = build(spark, tmp_path, inputs, ck=2, retain=0)
    flow.run(ticks=4)
    log = tmp_path / "log" / "s"
    kept = sorted(p.name for p in log.iterdir() if p.name.endswith(".parquet"))
    written = [b["sources"]["s"]["files"] for b in flow.bindings]
    assert sum(len(f) for f in written) > len(kept), "no log file was truncated"
    # Only one checkpoint is kept.
    assert len(BindingLog(flow.metadata_store, "r").checkpoints()) == 1
    flow = build(spark, tmp_path, inputs, ck=2, retain=0)
    flow.run()
    assert content(flow) == uninterrupted
    flow.close()


def test_replay_reproduces_the_commits_bit_for_bit(spark, inputs, tmp_path):
    original = build(spark, tmp_path / "a", inputs, truncate=False)
    original.run()
    replayed = build(spark, tmp_path / "b", inputs)
    reports = replayed.replay(tmp_path / "a")
    assert len(reports) == len(original.bindings)
    for (_, a), (_, b) in zip(original.sinks, replayed.sinks, strict=True):
        batches_a, batches_b = a.shard.batches(), b.shard.batches()
        assert [(x.lower, x.upper) for x in batches_a] == [(x.lower, x.upper) for x in batches_b]
        for x, y in zip(batches_a, batches_b, strict=True):
            ta = a.shard.read_files(x.files)
            tb = b.shard.read_files(y.files)
            keys = [(c, "ascending") for c in ta.column_names]
            assert ta.sort_by(keys).equals(tb.sort_by(keys))
    original.close()
    replayed.close()


def test_replay_refuses_a_truncated_log(spark, inputs, tmp_path):
    original = build(spark, tmp_path / "a", inputs, ck=2, retain=0)
    original.run()
    with pytest.raises(ValueError, match="retain_history"):
        build(spark, tmp_path / "b", inputs).replay(tmp_path / "a")


def test_a_changed_graph_is_refused(spark, inputs, tmp_path):
    build(spark, tmp_path, inputs).run(ticks=1)
    flow = st.Dataflow("r", data_dir=str(tmp_path), spark=spark)
    src = st.sources.Files(str(inputs), schema=SCHEMA, finite=True, settle=0)
    flow.source("s", src, time="ts", lateness="1s").distinct().sink(st.sinks.Persist("windows"))
    with pytest.raises(PlanChangedError, match="new data_dir"):
        flow.run(ticks=1)


def test_malformed_records_go_to_errors_and_the_pipeline_continues(spark, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    (d / "a.jsonl").write_text(
        '{"k": 1, "v": 1, "ts": 1000}\nnot json at all\n{"k": 1, "v": "x", "ts": 1100}\n'
        '{"k": 2, "v": 5, "ts": 1200}\n'
    )
    flow = st.Dataflow("e", data_dir=str(tmp_path / "data"), spark=spark)
    s = flow.source("s", st.sources.Files(str(d), schema=SCHEMA, finite=True, settle=0), time="ts")
    totals = s.aggregate(by="k", total=st.sum("v"))
    bad = s.errors
    flow.run()
    errors = bad.updates()
    assert set(errors.column("raw").to_pylist()) == {
        "not json at all",
        '{"k": 1, "v": "x", "ts": 1100}',
    }
    assert all(r for r in errors.column("reason").to_pylist())
    assert flow.metrics()["sources"]["s"]["errors"] == 2
    got = {r["k"]: r["total"] for r in totals.to_spark().collect()}
    assert got == {1: 1, 2: 5}
    flow.close()


def test_schema_mismatch_stops_naming_source_column_and_fix(spark, tmp_path):
    d = tmp_path / "in"
    d.mkdir()
    pq.write_table(pa.table({"k": [1], "v": ["oops"], "ts": [1000]}), d / "a.parquet")
    flow = st.Dataflow("m", data_dir=str(tmp_path / "data"), spark=spark)
    src = st.sources.Files(str(d), format="parquet", schema=SCHEMA, finite=True, settle=0)
    flow.source("bids", src, time="ts").sink(st.sinks.Persist("out"))
    with pytest.raises(SchemaMismatchError) as info:
        flow.run()
    text = str(info.value)
    assert "source 'bids'" in text and "'v'" in text and "change the declared type" in text


def test_redis_acknowledgements_never_pass_the_resumption_frontier(spark, tmp_path):
    require_server("Redis", REDIS_HOST, REDIS_PORT)
    import redis

    r = redis.Redis(host=REDIS_HOST, port=REDIS_PORT)
    key = f"t:{uuid.uuid4().hex[:10]}"
    try:
        for i in range(300):
            r.xadd(key, {"data": json.dumps({"k": i % 3, "v": i, "ts": i * 100})})

        def make():
            flow = st.Dataflow("redis", data_dir=str(tmp_path), spark=spark, record=False)
            src = st.sources.RedisStream(key, schema=SCHEMA, group="g", max_per_read=40)
            s = flow.source("s", src, time="ts", lateness="1s")
            s.window(st.Tumbling("2s")).aggregate(n=st.count()).sink(st.sinks.Persist("w"))
            return flow

        def acked_ids() -> list[tuple[int, int]]:
            pending = {e["message_id"] for e in r.xpending_range(key, "g", "-", "+", 10_000)}
            delivered = r.xinfo_groups(key)[0]["last-delivered-id"]
            ids = [eid for eid, _ in r.xrange(key, "-", delivered)]
            return [_rid(eid) for eid in ids if eid not in pending]

        acked_at_all = 0
        for ticks in (3, 2, 4):
            flow = make()
            for _ in range(ticks):
                flow.run(ticks=1)
                resume = flow.resumption_frontier().get("s")
                acked = acked_ids()
                if acked:
                    assert resume is not None and max(acked) <= _rid(resume)
                acked_at_all = max(acked_at_all, len(acked))
            flow.close()
        assert acked_at_all > 0, "nothing was ever acknowledged"
    finally:
        r.delete(key)


def _rid(entry_id) -> tuple[int, int]:
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def test_failpoint_names_are_checked():
    from sealtime.failpoints import parse

    with pytest.raises(ValueError, match="unknown failpoint 'nope'"):
        parse("nope=1")
    assert os.environ.get("SEALTIME_FAILPOINTS") is None


JOB = """
import os
import sealtime as st

def build(data_dir):
    flow = st.Dataflow("cli-job", data_dir=data_dir, record=False, truncate_log=False)
    src = st.sources.Files(os.environ["JOB_INPUT"], schema={"k": "long", "v": "long", "ts": "long"},
                           finite=True, settle=0, max_per_read=60)
    s = flow.source("s", src, time="ts", lateness="1s")
    s.window(st.Tumbling("5s")).aggregate(by="k", n=st.count()).sink(st.sinks.Persist("w"))
    return flow
"""


def test_cli_run_resumes_and_replay_reproduces(spark, inputs, tmp_path, monkeypatch, capsys):
    from sealtime import cli

    job = tmp_path / "job.py"
    job.write_text(JOB)
    monkeypatch.setenv("JOB_INPUT", str(inputs))
    spec = f"{job}:build"
    assert cli.main(["run", spec, "--data-dir", str(tmp_path / "a"), "--ticks", "2"]) == 0
    assert cli.main(["run", spec, "--data-dir", str(tmp_path / "a")]) == 0
    assert "resuming 'cli-job': {'ticks': 2}" in capsys.readouterr().out
    assert (
        cli.main(["replay", spec, "--from", str(tmp_path / "a"), "--data-dir", str(tmp_path / "b")])
        == 0
    )
    out = capsys.readouterr().out
    import re

    last = re.findall(r"replay: tick (\d+)/(\d+)", out)[-1]
    assert last[0] == last[1] and f"replayed {last[0]} ticks" in out

    def commits(d):
        from sealtime.storage import MetadataStore, Shard

        store = MetadataStore.open(str(d))
        shard = Shard.open(store, "cli-job.w", d / "shards")
        got = [
            (b.lower, b.upper, shard.read_files(b.files).sort_by("window_start").to_pylist())
            for b in shard.batches()
        ]
        store.close()
        return got

    assert commits(tmp_path / "a") == commits(tmp_path / "b")


def test_health_stream_reports_status_changes(spark, tmp_path):
    missing = tmp_path / "later"
    flow = st.Dataflow("h", data_dir=str(tmp_path / "data"), spark=spark)
    s = flow.source("s", st.sources.Files(str(missing), schema=SCHEMA, settle=0))
    health = s.health
    flow.run(ticks=1)
    [(status,)] = [(r["status"],) for r in health.to_spark().collect()]
    assert status.startswith("stalled"), status
    missing.mkdir()
    (missing / "a.jsonl").write_text('{"k": 1, "v": 2, "ts": 3}\n')
    flow.run(ticks=1)
    rows = health.to_spark().collect()
    assert [(r["source"], r["status"]) for r in rows] == [("s", "running")]
    assert sorted(health.updates().column("_diff").to_pylist()) == [-1, 1, 1]
    flow.close()


def test_nexmark_subsources_are_collections(spark, tmp_path):
    flow = st.Dataflow("nx", data_dir=str(tmp_path), spark=spark)
    nx = flow.source("nx", st.sources.Nexmark(limit=500), time="date_time", lateness="1s")
    people, auctions, bids = nx["person"], nx.subsource("auction"), nx["bid"]
    per_auction = bids.aggregate(by="auction", n=st.count())
    flow.run()
    # 1:3:46 per 50 events (../shared/NEXMARK.md).
    assert [len(c.to_spark().collect()) for c in (people, auctions, bids)] == [10, 30, 460]
    assert bids.to_spark().columns == [
        "auction",
        "bidder",
        "price",
        "channel",
        "url",
        "date_time",
        "extra",
    ]
    assert sum(r["n"] for r in per_auction.to_spark().collect()) == 460
    with pytest.raises(ValueError, match="has no subsource 'bids'"):
        nx["bids"]
    flow.close()
