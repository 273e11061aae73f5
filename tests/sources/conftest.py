"""Fixtures for the source tests: real NATS JetStream and Redis servers on loopback.

A test that needs a server calls `require_server` (through the fixtures): when the server
is not reachable the test FAILS under ``CI`` (set by the CI job) and is skipped
otherwise, with the same message ("NATS JetStream on 127.0.0.1:4222 not reachable: …").
Every test gets its own stream/subject/key names (uuid) and cleans them up.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

NATS_HOST, NATS_PORT = "127.0.0.1", 4222
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
NATS_URL = f"nats://{NATS_HOST}:{NATS_PORT}"
REDIS_URL = f"redis://{REDIS_HOST}:{REDIS_PORT}"


def unreachable(what: str, host: str, port: int, reason: Any) -> None:
    """Fail (under CI) or skip (otherwise) with a message naming the server."""
    message = f"{what} on {host}:{port} not reachable: {reason}"
    if os.environ.get("CI"):
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def require_server(what: str, host: str, port: int) -> None:
    """Check that something listens on host:port (1 s timeout)."""
    try:
        with socket.create_connection((host, port), timeout=1.0):
            pass
    except OSError as exc:
        unreachable(what, host, port, exc)


class NatsStream:
    """A uniquely named JetStream stream for one test, with synchronous helpers."""

    def __init__(self, retention: str = "limits") -> None:
        tag = uuid.uuid4().hex[:10]
        self.name = f"T_{tag}"
        self.subject = f"t.{tag}.events"
        self.retention = retention

    async def _js(self) -> tuple[Any, Any]:
        import nats

        nc = await nats.connect(NATS_URL, connect_timeout=2, max_reconnect_attempts=0)
        return nc, nc.jetstream()

    def _run(self, fn: Any) -> Any:
        async def go() -> Any:
            nc, js = await self._js()
            try:
                return await fn(js)
            finally:
                await nc.close()

        return asyncio.run(asyncio.wait_for(go(), 30))

    def create(self) -> None:
        from nats.js.api import RetentionPolicy, StreamConfig

        retention = {
            "limits": RetentionPolicy.LIMITS,
            "interest": RetentionPolicy.INTEREST,
        }[self.retention]

        async def go(js: Any) -> None:
            await js.add_stream(
                StreamConfig(name=self.name, subjects=[f"{self.subject}"], retention=retention)
            )

        self._run(go)

    def publish(self, payloads: Sequence[bytes]) -> list[int]:
        """Publish and return the stream sequence numbers."""

        async def go(js: Any) -> list[int]:
            return [(await js.publish(self.subject, p)).seq for p in payloads]

        return self._run(go)

    def consumer_info(self, durable: str) -> Any:
        async def go(js: Any) -> Any:
            return await js.consumer_info(self.name, durable)

        return self._run(go)

    def stream_messages(self) -> int:
        async def go(js: Any) -> int:
            return (await js.stream_info(self.name)).state.messages

        return self._run(go)

    def delete(self) -> None:
        async def go(js: Any) -> None:
            with contextlib.suppress(Exception):
                await js.delete_stream(self.name)

        self._run(go)


def _check_jetstream() -> None:
    require_server("NATS JetStream", NATS_HOST, NATS_PORT)

    async def go() -> None:
        import nats

        nc = await nats.connect(NATS_URL, connect_timeout=2, max_reconnect_attempts=0)
        try:
            await nc.jetstream().account_info()
        finally:
            await nc.close()

    try:
        asyncio.run(asyncio.wait_for(go(), 10))
    except Exception as exc:  # JetStream disabled, auth, ...
        unreachable("NATS JetStream", NATS_HOST, NATS_PORT, exc)


@pytest.fixture
def nats_stream() -> Iterator[NatsStream]:
    """A fresh limits-retention stream (deleted afterwards)."""
    _check_jetstream()
    s = NatsStream()
    s.create()
    yield s
    s.delete()


@pytest.fixture
def nats_interest_stream() -> Iterator[NatsStream]:
    """A fresh interest-retention stream (deleted afterwards)."""
    _check_jetstream()
    s = NatsStream("interest")
    s.create()
    yield s
    s.delete()


@pytest.fixture
def redis_client() -> Iterator[Any]:
    """A redis-py client (bytes responses) on the loopback server."""
    require_server("Redis", REDIS_HOST, REDIS_PORT)
    import redis

    client = redis.Redis.from_url(REDIS_URL, socket_timeout=5)
    try:
        client.ping()
    except redis.RedisError as exc:
        unreachable("Redis", REDIS_HOST, REDIS_PORT, exc)
    yield client
    client.close()


@pytest.fixture
def redis_key(redis_client: Any) -> Iterator[str]:
    """A unique stream key, deleted afterwards."""
    key = f"sealtime:test:{uuid.uuid4().hex[:10]}"
    yield key
    redis_client.delete(key)
