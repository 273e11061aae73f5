"""`st.connect`: a DB-API connection (psycopg) with ``subscribe(view)`` of typed
``(time, diff, row)`` changes and progress."""

from __future__ import annotations

import pyarrow as pa
import pytest

import sealtime as st
from sealtime.errors import ConfigError
from sealtime.serve.client import Change, Progress
from sealtime.serve.fake import FakeBackend
from sealtime.serve.pgwire import PgServer


def _url(server: PgServer) -> str:
    return f"postgresql://sealtime@127.0.0.1:{server.port}/sealtime"


def test_connect_is_a_dbapi_connection(server: PgServer) -> None:
    with st.connect(_url(server)) as conn:
        cur = conn.cursor()
        cur.execute("SELECT i8, txt FROM typed WHERE i4 = %s", (7,))
        assert cur.fetchall() == [(1, "a")]
        assert conn.autocommit  # each statement stands alone


def test_subscribe_yields_typed_changes_and_progress(
    server: PgServer, backend: FakeBackend
) -> None:
    with st.connect(_url(server)) as conn, conn.subscribe("v", progress=True) as sub:
        # snapshot at 2999: a's insert and retraction cancel, b stays; then progress
        assert [next(sub), next(sub)] == [Change(2999, 1, ("b", 2)), Progress(3000)]
        backend.advance(
            "v",
            pa.table({"k": ["b", "c"], "x": [2, 3], "_time": [3500, 3500], "_diff": [-1, 1]}),
            4000,
        )
        got = [next(sub) for _ in range(3)]
        assert got == [Change(3500, -1, ("b", 2)), Change(3500, 1, ("c", 3)), Progress(4000)]
        time, diff, row = got[1]
        assert (type(time), type(diff), type(row[1])) == (int, int, int)
        stream = backend.streams[-1]
    assert stream.closed.wait(5)  # leaving the block closes the subscription


def test_subscribe_ends_with_the_view_and_connection_is_reusable(
    server: PgServer, backend: FakeBackend
) -> None:
    with st.connect(_url(server)) as conn:
        sub = conn.subscribe("v", snapshot=False, as_of=500)
        backend.finish("v")
        assert list(sub) == [
            Change(1000, 1, ("a", 1)),
            Change(2000, 1, ("b", 2)),
            Change(2500, -1, ("a", 1)),
        ]
        sub.close()
        assert conn.execute("SELECT i4 FROM typed WHERE i4 = 7").fetchone() == (7,)


def test_subscribe_checks_its_arguments(server: PgServer) -> None:
    with st.connect(_url(server)) as conn:
        with pytest.raises(ConfigError, match="view"):
            conn.subscribe("v; DROP VIEW v")
        with pytest.raises(ConfigError, match="as_of"):
            conn.subscribe("v", as_of=-1)
