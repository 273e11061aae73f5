"""Tests of `RedisStream` against a real Redis server on 127.0.0.1:6379."""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from sealtime.sources.redis_streams import RedisStream, parse_id
from tests.sources.conftest import REDIS_URL

SCHEMA = {"i": "long", "s": "string"}


def add(client: Any, key: str, lo: int, hi: int) -> list[str]:
    pipe = client.pipeline()
    for i in range(lo, hi):
        pipe.xadd(key, {"data": json.dumps({"i": i, "s": f"m{i}"})})
    return [x.decode() for x in pipe.execute()]


def source(key: str, **kw) -> RedisStream:
    kw.setdefault("group", "g")
    return RedisStream(key, url=REDIS_URL, schema=kw.pop("schema", SCHEMA), **kw)


def read_until(reader, n: int, max_rows: int | None = None, tries: int = 50):
    got: list[int] = []
    batches = []
    for _ in range(tries):
        b = reader.read(max_rows)
        batches.append(b)
        got.extend(b.data.column("i").to_pylist())
        if len(got) >= n:
            break
    return got, batches


def pending_ids(client: Any, key: str, group: str = "g") -> list[str]:
    return [p["message_id"].decode() for p in client.xpending_range(key, group, "-", "+", 100_000)]


def test_reads_everything_once(redis_client, redis_key):
    ids = add(redis_client, redis_key, 0, 250)
    src = source(redis_key, count=64, id_column="_id")
    r = src.open()
    got, batches = read_until(r, 250, max_rows=100)
    assert got == list(range(250))
    assert batches[-1].position == ids[-1]
    assert json.loads(json.dumps(batches[-1].position)) == ids[-1]
    assert pa.concat_tables([b.data for b in batches]).column("_id").to_pylist() == ids
    more = r.read()
    assert more.data.num_rows == 0 and more.position == ids[-1]
    assert r.health() == "running"
    r.close()


def test_restart_rereads_delivered_but_unacknowledged_entries(redis_client, redis_key):
    add(redis_client, redis_key, 0, 100)
    src = source(redis_key, count=16)
    r = src.open()
    first, batches = read_until(r, 30, max_rows=30)
    pos = batches[-1].position
    r.acknowledge(pos)
    read_until(r, 45, max_rows=45)  # delivered to the group, never acknowledged
    r.close()  # "crash"
    assert len(pending_ids(redis_client, redis_key)) == 45
    r = src.open(pos)
    add(redis_client, redis_key, 100, 120)
    rest, batches = read_until(r, 90, max_rows=25)
    assert first + rest == list(range(120))
    r.acknowledge(batches[-1].position)
    assert pending_ids(redis_client, redis_key) == []
    r.close()


def test_restart_from_an_older_position_rereads_from_there(redis_client, redis_key):
    ids = add(redis_client, redis_key, 0, 40)
    src = source(redis_key)
    r = src.open()
    read_until(r, 40)
    r.acknowledge(ids[-1])
    r.close()
    r = src.open(ids[9])  # e.g. the engine restored an older resumption frontier
    rest, _ = read_until(r, 30)
    assert rest == list(range(10, 40))
    r.close()


def test_group_behind_the_position_is_moved(redis_client, redis_key):
    ids = add(redis_client, redis_key, 0, 30)
    redis_client.xgroup_create(redis_key, "g", id="0")  # a group that delivered nothing
    r = source(redis_key).open(ids[19])
    rest, _ = read_until(r, 10)
    assert rest == list(range(20, 30))
    assert pending_ids(redis_client, redis_key) == ids[20:]  # never delivered 0..19
    r.close()


def test_acknowledgement_never_passes_the_position(redis_client, redis_key):
    ids = add(redis_client, redis_key, 0, 60)
    src = source(redis_key, count=7)
    r = src.open()
    b1 = r.read(20)
    b2 = r.read(20)
    assert b1.position == ids[19] and b2.position == ids[39]
    assert pending_ids(redis_client, redis_key) == ids[:40]
    r.acknowledge(b1.position)
    assert pending_ids(redis_client, redis_key) == ids[20:40]
    r.acknowledge(ids[25])  # any ID: acks exactly the entries ≤ it
    assert pending_ids(redis_client, redis_key) == ids[26:40]
    r.acknowledge(b1.position)  # older: ignored
    r.acknowledge(ids[25])  # idempotent
    assert pending_ids(redis_client, redis_key) == ids[26:40]
    read_until(r, 20)
    r.acknowledge(b2.position)
    pend = pending_ids(redis_client, redis_key)
    assert pend == ids[40:]
    assert all(parse_id(p) > parse_id(b2.position) for p in pend)
    group = next(g for g in redis_client.xinfo_groups(redis_key) if g["name"] == b"g")
    assert group["pending"] == 20
    r.close()


def test_malformed_entries_go_to_errors(redis_client, redis_key):
    add(redis_client, redis_key, 0, 2)
    for raw in ["{oops", "", '{"i": "x"}', "[1]"]:
        redis_client.xadd(redis_key, {"data": raw})
    redis_client.xadd(redis_key, {"other": "field"})
    add(redis_client, redis_key, 2, 4)
    r = source(redis_key, id_column="_id").open()
    b = r.read()
    assert b.data.column("i").to_pylist() == [0, 1, 2, 3]
    assert b.data.column("_id").null_count == 0
    errs = b.errors.to_pylist()
    assert sorted(e["raw"] for e in errs) == sorted(
        ['{"other": "field"}', "{oops", "", '{"i": "x"}', "[1]"]
    )
    assert any("has no field 'data'" in e["reason"] for e in errs)
    assert all(e["reason"].startswith(redis_key) for e in errs)
    r.close()


def test_fields_format_casts_values(redis_client, redis_key):
    redis_client.xadd(redis_key, {"k": "a", "v": "1", "t": "2015-07-15T00:00:00Z"})
    redis_client.xadd(redis_key, {"k": "b", "v": "oops", "t": "1436918400000"})
    redis_client.xadd(redis_key, {"k": "c", "t": "2015-07-15 00:00:02"})  # v missing: null
    schema = {"k": "string", "v": "long", "t": "timestamp"}
    r = source(redis_key, schema=schema, format="fields", id_column="_id").open()
    b = r.read()
    assert b.data.column("k").to_pylist() == ["a", "c"]
    assert b.data.column("v").to_pylist() == [1, None]
    assert b.data.column("t").cast(pa.int64()).to_pylist() == [1436918400000, 1436918402000]
    assert len(b.data.column("_id")) == 2
    err = b.errors.to_pylist()[0]
    assert json.loads(err["raw"]) == {"k": "b", "v": "oops", "t": "1436918400000"}
    assert "column 'v'" in err["reason"]
    r.close()


def test_wrong_key_type_fails_clearly(redis_client, redis_key):
    redis_client.set(redis_key, "a string")
    r = source(redis_key).open()
    assert r.health().startswith("failed: ")
    with pytest.raises(RuntimeError, match="is a stream"):
        r.read()
    r.close()


def test_deleted_group_is_recreated_at_the_position(redis_client, redis_key):
    add(redis_client, redis_key, 0, 10)
    r = source(redis_key).open()
    b = r.read(5)
    redis_client.xgroup_destroy(redis_key, "g")
    got, _ = read_until(r, 5, tries=5)
    if len(got) < 5:  # the first read after the loss only notices it
        got += read_until(r, 5 - len(got))[0]
    assert b.data.column("i").to_pylist() + got == list(range(10))
    r.close()


def test_unreachable_server_is_stalled_not_an_exception():
    src = RedisStream("k", url="redis://127.0.0.1:1", schema=SCHEMA, socket_timeout=0.3)
    r = src.open("5-0")
    assert r.health() == "stalled"
    b = r.read()
    assert b.data.num_rows == 0 and b.position == "5-0"
    r.close()


def test_bad_position():
    with pytest.raises(ValueError, match="entry ID"):
        RedisStream("k", schema=SCHEMA).open(12)
