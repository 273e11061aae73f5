"""Exact decoding through the real brokers (issue 32, item 3): arbitrary messages
published to NATS JetStream or added to a Redis stream, read back in arbitrary batches
(fetch sizes, read sizes), give exactly one data row or one errors row each, as the
reference decoder of `tests.sources.test_exact_decoding` says. Few examples: each one
creates a stream on the server (the pure decoder property has many more).

Needs NATS JetStream on 127.0.0.1:4222 and Redis on 127.0.0.1:6379 (fail under CI,
else skip, as the other broker tests).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealtime.sources.nats import NatsJetStream
from sealtime.sources.redis_streams import RedisStream
from tests.sources.conftest import NATS_URL, REDIS_URL, NatsStream, _check_jetstream
from tests.sources.test_exact_decoding import SCHEMA, check_exact, messages, reference_json

BROKER = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


def read_all(reader: Any, n: int, max_rows: int) -> tuple[list[dict], list[dict]]:
    """Read until `n` messages came out (rows + errors), in batches of `max_rows`."""
    rows: list[dict] = []
    errors: list[dict] = []
    for _ in range(200):
        if len(rows) + len(errors) >= n:
            break
        b = reader.read(max_rows)
        rows += b.data.to_pylist()
        errors += b.errors.to_pylist() if b.errors is not None else []
    return rows, errors


@pytest.fixture(scope="module")
def jetstream() -> None:
    _check_jetstream()


@BROKER
@given(
    msgs=st.lists(messages, min_size=1, max_size=12),
    fetch=st.integers(1, 5),
    max_rows=st.integers(1, 6),
)
def test_nats_every_message_is_one_row_or_one_error(jetstream, msgs, fetch, max_rows):
    stream = NatsStream()
    stream.create()
    try:
        stream.publish(msgs)
        src = NatsJetStream(
            stream.subject,
            stream=stream.name,
            url=NATS_URL,
            durable=f"x_{uuid.uuid4().hex[:8]}",
            schema=SCHEMA,
            fetch_batch=fetch,
        )
        reader = src.open()
        try:
            rows, errors = read_all(reader, len(msgs), max_rows)
        finally:
            reader.close()
    finally:
        stream.delete()
    check_exact(msgs, rows, errors, reference_json)
    assert all(e["reason"].startswith(stream.name) for e in errors)


@BROKER
@given(
    msgs=st.lists(messages, min_size=1, max_size=12),
    count=st.integers(1, 5),
    max_rows=st.integers(1, 6),
)
def test_redis_every_entry_is_one_row_or_one_error(redis_client, msgs, count, max_rows):
    key = f"sealtime:test:{uuid.uuid4().hex[:10]}"
    try:
        pipe = redis_client.pipeline()
        for m in msgs:
            pipe.xadd(key, {"data": m})
        pipe.execute()
        src = RedisStream(key, url=REDIS_URL, group="g", schema=SCHEMA, count=count)
        reader = src.open()
        try:
            rows, errors = read_all(reader, len(msgs), max_rows)
        finally:
            reader.close()
    finally:
        redis_client.delete(key)
    check_exact(msgs, rows, errors, reference_json)
    assert all(e["reason"].startswith(key) for e in errors)


def test_redis_fields_that_are_not_utf8_are_errors(redis_client, redis_key):
    """The ``fields`` format: a value that is not UTF-8 makes its entry an error (it is
    never decoded with U+FFFD into a data row); the reason carries its exact bytes."""
    redis_client.xadd(redis_key, {"k": b"ok", "v": b"1"})
    redis_client.xadd(redis_key, {"k": b"caf\xe9", "v": b"2"})
    redis_client.xadd(redis_key, {"k": b"fine", "v": b"\xff"})
    schema = {"k": "string", "v": "long"}
    reader = RedisStream(redis_key, url=REDIS_URL, group="g", schema=schema, format="fields").open()
    try:
        b = reader.read()
    finally:
        reader.close()
    assert b.data.to_pylist() == [{"k": "ok", "v": 1}]
    reasons = b.errors.column("reason").to_pylist()
    assert "field 'k' is not valid UTF-8 (its bytes in base64: Y2Fm6Q==)" in reasons[0]
    assert "field 'v' is not valid UTF-8" in reasons[1]
