"""Fixtures of the wire front end's tests: a `FakeBackend` with a table of every type and
a view with a history, and a `PgServer` on an ephemeral loopback port. No Spark and no
PostgreSQL server: the clients (psql, psycopg, asyncpg) talk to sealtime's server."""

from __future__ import annotations

import datetime as dt
import shutil
from collections.abc import Iterator
from decimal import Decimal

import pyarrow as pa
import pytest

from sealtime.serve.fake import FakeBackend
from sealtime.serve.pgwire import PgServer, ServerLimits

UTC = dt.timezone.utc

#: one column per PostgreSQL type the front end sends, with a NULL in each
TYPED = pa.table(
    {
        "i8": pa.array([1, -(2**62), None], pa.int64()),
        "i4": pa.array([7, -(2**31), None], pa.int32()),
        "f8": pa.array([1.5, 1 / 3, None], pa.float64()),
        "num": pa.array([Decimal("1.50"), Decimal("-12345678.01"), None], pa.decimal128(12, 2)),
        "txt": pa.array(["a", "tab\there 'q' \\ é", None], pa.string()),
        "flag": pa.array([True, False, None], pa.bool_()),
        "ts": pa.array(
            [
                dt.datetime(2024, 1, 1, 12, 0, 0, 500000),
                dt.datetime(1999, 12, 31, 23, 59, 59),
                None,
            ],
            pa.timestamp("us", tz="UTC"),
        ),
        "day": pa.array([dt.date(2024, 2, 29), dt.date(1970, 1, 1), None], pa.date32()),
        "raw": pa.array([b"\x00\xff", b"", None], pa.binary()),
    }
)

#: a view's history: (k, x) rows with times and diffs, sealed before 3000
VIEW = pa.table(
    {
        "k": ["a", "b", "a"],
        "x": pa.array([1, 2, 1], pa.int64()),
        "_time": pa.array([1000, 2000, 2500], pa.int64()),
        "_diff": pa.array([1, 1, -1], pa.int64()),
    }
)


def make_backend() -> FakeBackend:
    return FakeBackend({"typed": TYPED, "v": VIEW}, {"v": 3000})


@pytest.fixture
def backend() -> FakeBackend:
    return make_backend()


@pytest.fixture
def server(backend: FakeBackend) -> Iterator[PgServer]:
    with PgServer(backend, port=0, limits=ServerLimits(idle_timeout=60)) as s:
        yield s


@pytest.fixture
def psql() -> str:
    path = shutil.which("psql")
    if path is None:
        pytest.fail("psql not found: apt-get install postgresql-client", pytrace=False)
    return path
