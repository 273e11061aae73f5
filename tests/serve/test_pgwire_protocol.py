"""The protocol with real drivers: extended queries with parameters, prepared
statements, portals with row limits, transactions, client settings, errors with
SQLSTATE and the message of docs/sql.md."""

from __future__ import annotations

import asyncio
import subprocess

import asyncpg
import psycopg
import pytest

from sealtime.serve.fake import FakeBackend
from sealtime.serve.pgwire import PgServer

from .conftest import TYPED


def test_parameters_psycopg(server: PgServer) -> None:
    with psycopg.connect(server.dsn()) as conn:
        assert conn.execute("SELECT i8 FROM typed WHERE i4 = %s", [7]).fetchall() == [(1,)]
        text = TYPED["txt"][1].as_py()
        assert conn.execute("SELECT i4 FROM typed WHERE txt = %s", [text]).fetchall() == [
            (-(2**31),)
        ]
        # a value is a literal, never SQL
        assert (
            conn.execute("SELECT i4 FROM typed WHERE txt = %s", ["a' OR 'x'='x"]).fetchall() == []
        )
        assert conn.execute("SELECT i4 FROM typed WHERE flag = %s", [True]).fetchall() == [(7,)]


def test_parameters_asyncpg_are_typed_from_the_query(server: PgServer) -> None:
    async def main() -> None:
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="u", database="d")
        try:
            # $1 compared with i4: int4, so asyncpg sends (and needs) an int
            assert await conn.fetchval("SELECT i8 FROM typed WHERE i4 = $1", 7) == 1
            assert await conn.fetchval("SELECT i4 FROM typed WHERE txt = $1", "a") == 7
            assert await conn.fetchval("SELECT i4 FROM typed WHERE f8 > $1::double", 1.0) == 7
            stmt = await conn.prepare("SELECT i8 FROM typed WHERE i4 = $1")
            assert [await stmt.fetchval(v) for v in (7, -(2**31), 0)] == [1, -(2**62), None]
            with pytest.raises(asyncpg.PostgresError) as e:
                await conn.fetch("SELECT * FROM missing WHERE a = $1", 1)
            assert e.value.sqlstate == "42P01"
        finally:
            await conn.close()

    asyncio.run(main())


def test_bad_parameter_value_is_22P02(server: PgServer) -> None:
    with psycopg.connect(server.dsn()) as conn:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT i4 FROM typed WHERE i4 = %s::bigint", ["7; DROP VIEW v"])
        assert e.value.sqlstate == "22P02"


@pytest.mark.parametrize(
    ("sql", "sqlstate", "text"),
    [
        ("SELECT 1/0", "22012", "Division by zero"),
        ("SELECT * FROM nope", "42P01", "no source or view named 'nope'"),
        ("SELECT FROM WHERE", "42601", "syntax"),
        ("CREATE VIEW v AS SELECT 1", "42710", "exists"),
        ("DROP VIEW nope", "42P01", "no view named"),
        ("SELECT * FROM typed ORDER BY", "42601", "syntax"),
        ("FETCH 1 nocursor", "34000", 'cursor "nocursor" does not exist'),
    ],
)
def test_errors_carry_sqlstate(server: PgServer, sql: str, sqlstate: str, text: str) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as e:
            conn.execute(sql)
        assert e.value.sqlstate == sqlstate
        assert text in str(e.value)
        assert conn.execute("SELECT i4 FROM typed WHERE i4 = 7").fetchall() == [(7,)]  # goes on


def test_dependent_objects_and_cascade(server: PgServer) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("CREATE VIEW w AS SELECT i4 FROM typed")
        conn.execute("CREATE VIEW w2 AS SELECT i4 FROM w")
        with pytest.raises(psycopg.Error) as e:
            conn.execute("DROP VIEW w")
        assert e.value.sqlstate == "2BP01" and "w2" in str(e.value)
        assert conn.execute("DROP VIEW w CASCADE").statusmessage == "DROP VIEW"
        assert sorted(r[0] for r in conn.execute("SHOW VIEWS").fetchall()) == ["typed", "v"]


def test_failed_transaction_until_rollback(server: PgServer) -> None:
    with psycopg.connect(server.dsn()) as conn:  # psycopg opens a transaction
        with pytest.raises(psycopg.Error):
            conn.execute("SELECT 1/0")
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SELECT i4 FROM typed")
        assert e.value.sqlstate == "25P02"
        conn.rollback()
        assert len(conn.execute("SELECT i4 FROM typed").fetchall()) == 3


def test_client_settings_set_and_show(server: PgServer) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        conn.execute("SET extra_float_digits = 3")
        conn.execute("SET application_name TO 'tester'")
        assert conn.execute("SHOW extra_float_digits").fetchone() == ("3",)
        assert conn.execute("SHOW application_name").fetchone() == ("tester",)
        assert conn.info.parameter_status("application_name") == "tester"
        assert conn.info.parameter_status("TimeZone") == "UTC"
        assert conn.info.parameter_status("integer_datetimes") == "on"
        with pytest.raises(psycopg.Error) as e:
            conn.execute("SET client_encoding TO 'LATIN1'")
        assert e.value.sqlstate == "0A000"


def test_server_side_cursor_of_a_select_fetches_in_parts(server: PgServer) -> None:
    # DECLARE "c" CURSOR ... FOR SELECT, then FETCH FORWARD n FROM "c"
    with psycopg.connect(server.dsn()) as conn, conn.cursor(name="c") as cur:
        cur.execute("SELECT i4 FROM typed")
        assert cur.fetchmany(2) == [(7,), (-(2**31),)]
        assert cur.fetchall() == [(None,)]


def test_portal_row_limit_asyncpg_cursor(server: PgServer) -> None:
    async def main() -> list[int]:
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="u", database="d")
        try:
            async with conn.transaction():
                # Execute with a row limit, PortalSuspended, Execute again
                return [r[0] async for r in conn.cursor("SELECT i4 FROM typed", prefetch=1)]
        finally:
            await conn.close()

    assert asyncio.run(main()) == [7, -(2**31), None]


def test_several_statements_in_one_simple_query(server: PgServer, psql: str) -> None:
    run = subprocess.run(
        [
            psql,
            server.dsn(),
            "-At",
            "-c",
            "SELECT i4 FROM typed WHERE i4 = 7; SELECT 1/0; SELECT 2",
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.stdout.splitlines() == ["7"]  # the error stops the rest, as in PostgreSQL
    assert "ERROR:  [DIVIDE_BY_ZERO]" in run.stderr and run.returncode == 1


def test_slow_statement_does_not_block_other_connections() -> None:
    """A backend call runs in the pool: a second client is served meanwhile."""
    import threading

    release = threading.Event()

    class Slow(FakeBackend):
        def open_session(self, user: str, database: str):  # type: ignore[override]
            session = super().open_session(user, database)
            execute = session.execute

            def slow(sql: str):  # type: ignore[no-untyped-def]
                if "slow" in sql:
                    assert release.wait(30)
                return execute(sql)

            session.execute = slow  # type: ignore[method-assign]
            return session

    backend = Slow({"slow": TYPED, "t": TYPED})
    with (
        PgServer(backend, port=0) as server,
        psycopg.connect(server.dsn()) as a,
        psycopg.connect(server.dsn()) as b,
    ):
        done = []
        t = threading.Thread(
            target=lambda: done.append(a.execute("SELECT i4 FROM slow").fetchall())
        )
        t.start()
        assert len(b.execute("SELECT i4 FROM t").fetchall()) == 3  # while a waits
        assert not done
        release.set()
        t.join(30)
        assert len(done[0]) == 3
