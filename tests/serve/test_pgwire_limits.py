"""Bounds: connections (53300), statement size and result size (54000), handshake
and idle timeouts. A hostile or careless client costs a bounded amount."""

from __future__ import annotations

import socket
import time

import psycopg
import pyarrow as pa
import pytest

from sealtime.serve.fake import FakeBackend
from sealtime.serve.pgwire import PgServer, ServerLimits

from .conftest import make_backend


def test_max_connections() -> None:
    with PgServer(make_backend(), port=0, limits=ServerLimits(max_connections=2)) as server:
        a, b = psycopg.connect(server.dsn()), psycopg.connect(server.dsn())
        with pytest.raises(psycopg.OperationalError) as e:
            psycopg.connect(server.dsn())
        assert e.value.sqlstate == "53300" or "too many clients" in str(e.value)
        assert "max_connections=2" in str(e.value)
        a.close()
        deadline = time.monotonic() + 5
        while server.stats()["connections"] > 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        with psycopg.connect(server.dsn()) as c:  # a freed slot is usable again
            assert c.execute("SELECT i4 FROM typed WHERE i4 = 7").fetchone() == (7,)
        b.close()


def test_result_size_limit_names_the_setting() -> None:
    big = pa.table({"s": ["x" * 100] * 50_000})
    limits = ServerLimits(max_result_bytes=1 << 20, batch_rows=1000)
    with (
        PgServer(FakeBackend({"big": big}), port=0, limits=limits) as server,
        psycopg.connect(server.dsn(), autocommit=True) as conn,
    ):
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT s FROM big").fetchall()
        assert e.value.sqlstate == "54000"
        assert "max_result_bytes=1048576" in str(e.value) and "narrow the query" in str(e.value)
        # a narrower query fits
        assert len(conn.execute("SELECT s FROM big WHERE s = 'y'").fetchall()) == 0


def test_statement_size_limit() -> None:
    limits = ServerLimits(max_statement_bytes=10_000)
    with PgServer(make_backend(), port=0, limits=limits) as server:
        conn = psycopg.connect(server.dsn(), autocommit=True)
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT i4 FROM typed WHERE txt = '" + "x" * 20_000 + "'")
        assert "max_statement_bytes=10000" in str(e.value)
        conn.close()
        with psycopg.connect(server.dsn()) as ok:  # the server goes on
            assert ok.execute("SELECT i4 FROM typed WHERE i4 = 7").fetchone() == (7,)


def test_handshake_timeout_drops_silent_sockets() -> None:
    limits = ServerLimits(handshake_timeout=0.3)
    with PgServer(make_backend(), port=0, limits=limits) as server:
        sock = socket.create_connection(("127.0.0.1", server.port))
        sock.settimeout(10)
        started = time.monotonic()
        data = sock.recv(4096)  # nothing sent: the server ends it after the timeout
        while data and not data.endswith(b"\x00\x00"):
            data += sock.recv(4096)
        assert time.monotonic() - started < 5
        assert b"handshake_timeout=0.3" in data
        sock.close()


def test_idle_timeout_closes_the_session() -> None:
    limits = ServerLimits(idle_timeout=0.3)
    with PgServer(make_backend(), port=0, limits=limits) as server:
        conn = psycopg.connect(server.dsn(), autocommit=True)
        assert server.stats()["connections"] == 1
        deadline = time.monotonic() + 5
        while server.stats()["connections"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.stats()["connections"] == 0  # closed by the server, not the client
        with pytest.raises(psycopg.OperationalError):
            conn.execute("SELECT i4 FROM typed WHERE i4 = 7")
