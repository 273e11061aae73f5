"""Fixtures and helpers for the pub-sub tests: publishers that always get closed, and
bounded readers that never hang (every wait has a deadline)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pyarrow as pa
import pytest

from sealtime.pubsub import Closed, Publisher, Subscription


@pytest.fixture
def publishers() -> Iterator[list[Publisher]]:
    """A list to append started publishers to; all are closed at teardown."""
    started: list[Publisher] = []
    yield started
    for pub in started:
        pub.close()


def start(publishers: list[Publisher], *args, **kwargs) -> Publisher:
    pub = Publisher(*args, **kwargs).start()
    publishers.append(pub)
    return pub


def read_all(sub: Subscription, timeout: float = 20.0) -> list:
    """Every event up to and including `Closed`; fails the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    events = []
    while True:
        left = deadline - time.monotonic()
        assert left > 0, f"subscription did not close within {timeout} s; got {events[-5:]}"
        event = sub.next_event(timeout=left)
        if event is None:
            assert sub.closed, "next_event timed out"
            return events
        events.append(event)
        if isinstance(event, Closed):
            return events


def ids_table(ids: list[int]) -> pa.Table:
    """Rows identified by unique ids (without pa.table(dict), which imports pandas)."""
    return pa.Table.from_arrays([pa.array(ids, pa.int64())], names=["id"])
