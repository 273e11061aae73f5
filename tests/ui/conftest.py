"""Fixtures of the UI tests: a source the test feeds while the job runs, a job running
tick by tick on a background thread with an injected clock, and headless Chromium."""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from typing import Any

import pyarrow as pa
import pytest

import sealtime as st
from sealtime.sources.base import ReadBatch, Source, SourceReader

BASE = 1_700_000_000_000  # ms
SCHEMA = pa.schema([("id", pa.int64()), ("ts", pa.int64())])


class Feed(Source):
    """An unbounded source whose rows the test appends while the job runs."""

    schema = SCHEMA

    def __init__(self) -> None:
        self.rows: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def push(self, *rows: tuple[int, int]) -> None:
        with self.lock:
            self.rows.extend(rows)

    @property
    def finite(self) -> bool:
        return False

    def open(self, position: Any = None) -> SourceReader:
        return _FeedReader(self, position or 0)


class _FeedReader(SourceReader):
    def __init__(self, feed: Feed, at: int) -> None:
        self.feed, self.at = feed, at

    def read(self, max_rows: int | None = None) -> ReadBatch:
        with self.feed.lock:
            rows = self.feed.rows[self.at :]
        self.at += len(rows)
        table = pa.table({"id": [r[0] for r in rows], "ts": [r[1] for r in rows]}, schema=SCHEMA)
        return ReadBatch(table, position=self.at)


class Clock:
    """The ticker's clock, moved one second per tick by the job thread."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def __call__(self) -> float:
        return self.ms / 1000


class Job:
    """A dataflow run one tick at a time on a thread; each tick the clock moves 1 s and
    the feed gets 3 rows at the new time (so frontiers advance)."""

    def __init__(self, flow: st.Dataflow, feed: Feed, clock: Clock, pause: float = 0.15) -> None:
        self.flow, self.feed, self.clock, self.pause = flow, feed, clock, pause
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.ticks = 0
        self.next_id = 0
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        try:
            while not self.stop.is_set():
                self.clock.ms += 1000
                rows = [(self.next_id + i, self.clock.ms - 300 * i) for i in range(3)]
                self.next_id += 3
                self.feed.push(*rows)
                self.flow.run(ticks=1)
                self.ticks += 1
                time.sleep(self.pause)
        except BaseException as exc:  # surfaced by the test
            self.error = exc

    def start(self) -> Job:
        self.thread.start()
        return self

    def wait_ticks(self, n: int, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.ticks < n:
            assert self.error is None, self.error
            assert time.monotonic() < deadline, f"job made {self.ticks} ticks, not {n}"
            time.sleep(0.05)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert self.error is None, self.error


def build_flow(spark, data_dir: str, clock: Clock, feed: Feed) -> st.Dataflow:
    flow = st.Dataflow(
        "ui", data_dir=data_dir, spark=spark, clock=clock, record=False, checkpoint_every=5
    )
    events = flow.source("events", feed, time="ts", lateness="1s")
    # Mostly stateless (no Python workers to start, so ticks stay short on a busy
    # machine), plus one keyed aggregate whose kernel counts rows and state per tick
    # (no sink reads it: the engine still runs it, as it must write its state).
    kept = events.filter("id >= 0").select("id", "ts")
    kept.sink(st.sinks.Persist("kept"))
    kept.aggregate(by="id", n=st.count())
    return flow


@pytest.fixture
def job(spark):
    """A running job with its web view; yields the `Job` (``job.flow``, ``job.feed``)."""
    data_dir = tempfile.mkdtemp(prefix="sealtime-ui-")
    clock, feed = Clock(BASE), Feed()
    flow = build_flow(spark, data_dir, clock, feed)
    flow.serve_ui()
    running = Job(flow, feed, clock).start()
    yield running
    try:
        running.close()
    finally:
        flow.close()
        shutil.rmtree(data_dir, ignore_errors=True)


CHROMIUM = os.environ.get("SEALTIME_CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("SEALTIME_CHROMEDRIVER", "/usr/bin/chromedriver")


@pytest.fixture(scope="session")
def browser():
    """Headless Chromium through Selenium. Missing under CI=true: the test FAILS."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not os.path.exists(p)]
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        missing.append("selenium (pip install -e '.[test]')")
    if missing:
        message = (
            f"browser test needs {', '.join(missing)}: run "
            "`apt-get install -y chromium chromium-driver` (scripts/test does it)"
        )
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"):
        options.add_argument(arg)
    options.add_argument("--window-size=1400,1000")
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    yield driver
    driver.quit()
