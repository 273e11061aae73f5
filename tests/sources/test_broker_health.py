"""`BrokerHealth`: the status, retry pacing (backoff) and failure logic that the NATS and
Redis readers share, with an injected clock (no server needed)."""

from __future__ import annotations

import pytest

from sealtime.sources.base import BrokerFailed, BrokerHealth, BrokerReader
from sealtime.sources.nats import NatsJetStreamReader
from sealtime.sources.redis_streams import RedisStreamReader


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def down() -> None:
    raise ConnectionError("refused")


def test_backoff_doubles_up_to_the_cap_and_resets_on_success():
    clock = Clock()
    h = BrokerHealth("B", retry_interval=1.0, max_retry_interval=5.0, clock=clock)
    attempts: list[float] = []

    def attempt() -> None:
        attempts.append(clock.now)
        down()

    h.setup(attempt, force=True)
    for _ in range(80):  # 40 s of reads, one every 0.5 s
        clock.now += 0.5
        h.setup(attempt)
    gaps = [round(b - a, 1) for a, b in zip(attempts, attempts[1:], strict=False)]
    assert gaps[:4] == [1.0, 2.0, 4.0, 5.0] and set(gaps[3:]) == {5.0}
    assert h.health() == "stalled" and h.reason == "ConnectionError: refused"
    clock.now += 5.0
    assert h.setup(lambda: None) and h.health() == "running"
    assert h.delay == 1.0  # reset


def test_permanent_failure_is_final_and_raises_with_the_source_name():
    h = BrokerHealth("Redis('k')", retry_interval=1.0)

    def missing() -> None:
        raise BrokerFailed("stream 'S' not found")

    assert not h.setup(missing, force=True)
    assert h.health() == "failed: stream 'S' not found"
    h.stall(ConnectionError("x"))  # a failure stays
    h.running()
    assert h.failed
    with pytest.raises(RuntimeError, match=r"Redis\('k'\): stream 'S' not found"):
        h.connect(lambda: None)


def test_connect_before_a_read():
    clock = Clock()
    h = BrokerHealth("B", retry_interval=1.0, clock=clock)
    assert not h.connect(down)  # stalled: the read returns an empty batch
    assert not h.connect(lambda: None)  # not due yet
    clock.now += 1.0
    assert h.connect(lambda: None) and h.health() == "running"
    calls = []
    assert h.connect(lambda: calls.append(1)) and calls == []  # ready: nothing to do
    assert h.connect(lambda: calls.append(1), reset=True) and calls == [1]  # at once


def test_stall_while_ready_and_retry_now():
    clock = Clock()
    h = BrokerHealth("B", retry_interval=10.0, clock=clock)
    h.setup(lambda: None, force=True)
    h.stall("disconnected; reconnecting")  # the client library reconnects by itself
    assert h.ready and h.health() == "stalled"
    h.running()
    h.stall(TimeoutError("slow"), reconnect=True)
    assert not h.ready and h.reason == "TimeoutError: slow"
    h.setup(down)
    h.retry_now()
    assert h.setup(lambda: None)  # ran although the delay had not passed


def test_non_transient_errors_propagate():
    h = BrokerHealth("B", retry_interval=1.0)

    def bug() -> None:
        raise KeyError("bug")

    with pytest.raises(KeyError):
        h.setup(bug, force=True, transient=(ConnectionError,))


def test_both_broker_readers_share_it():
    assert issubclass(NatsJetStreamReader, BrokerReader)
    assert issubclass(RedisStreamReader, BrokerReader)
    for cls in (NatsJetStreamReader, RedisStreamReader):
        assert "health" not in vars(cls)  # the health is BrokerReader's
