"""Who may connect: trust on loopback; with a password file, SCRAM-SHA-256 or md5
(psql with PGPASSWORD, psycopg and asyncpg with password=), a wrong password refused
with 28P01; beyond loopback, a password file is required."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

import asyncpg
import psycopg
import pytest

from sealtime.errors import ConfigError
from sealtime.serve.pgwire import PgServer
from sealtime.serve.pgwire.auth import md5_hash, scram_verifier

from .conftest import make_backend


@pytest.fixture
def password_file(tmp_path: Path) -> str:
    path = tmp_path / "passwords"
    path.write_text(
        "# user:password, or a verifier\n"
        "alice:wonderland\n"
        f"bob:{scram_verifier('builder')}\n"
        f"carol:{md5_hash('singer', 'carol')}\n"
    )
    return str(path)


def _psql(psql: str, server: PgServer, user: str, password: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PGPASSWORD": password}
    return subprocess.run(
        [psql, server.dsn(user=user), "-Atc", "SELECT i4 FROM typed WHERE i4 = 7"],
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )


@pytest.mark.parametrize("method", ["scram-sha-256", "md5"])
def test_passwords_psql_psycopg_asyncpg(psql: str, password_file: str, method: str) -> None:
    with PgServer(
        make_backend(), port=0, password_file=password_file, auth_method=method
    ) as server:
        for user, password in [("alice", "wonderland"), ("bob", "builder"), ("carol", "singer")]:
            ok = _psql(psql, server, user, password)
            assert (ok.returncode, ok.stdout.strip()) == (0, "7"), ok.stderr
            with psycopg.connect(server.dsn(user=user), password=password) as conn:
                assert conn.execute("SELECT i4 FROM typed WHERE i4 = 7").fetchone() == (7,)

            async def login(user: str = user, password: str = password) -> int:
                conn = await asyncpg.connect(
                    host="127.0.0.1", port=server.port, user=user, password=password, database="d"
                )
                try:
                    return await conn.fetchval("SELECT i4 FROM typed WHERE i4 = 7")
                finally:
                    await conn.close()

            assert asyncio.run(login()) == 7


@pytest.mark.parametrize("method", ["scram-sha-256", "md5"])
def test_wrong_password_or_unknown_user_is_28P01(
    psql: str, password_file: str, method: str
) -> None:
    with PgServer(
        make_backend(), port=0, password_file=password_file, auth_method=method
    ) as server:
        for user, password in [
            ("alice", "nope"),
            ("bob", "wonderland"),
            ("carol", "x"),
            ("mallory", "x"),
        ]:
            with pytest.raises(psycopg.OperationalError) as e:
                psycopg.connect(server.dsn(user=user), password=password)
            assert e.value.sqlstate == "28P01" or "password authentication failed" in str(e.value)
            bad = _psql(psql, server, user, password)
            assert bad.returncode == 2 and "password authentication failed" in bad.stderr
        assert server.stats()["connections"] == 0


def test_trust_on_loopback_without_password_file(server: PgServer) -> None:
    with psycopg.connect(server.dsn(user="anyone")) as conn:
        assert conn.execute("SHOW session_authorization").fetchone() == ("anyone",)


def test_non_loopback_without_password_file_is_refused(password_file: str) -> None:
    with pytest.raises(ConfigError, match="--host 0.0.0.0.*--password-file"):
        PgServer(make_backend(), host="0.0.0.0", port=0)
    # with a password file it starts (and asks for passwords)
    with (
        PgServer(make_backend(), host="0.0.0.0", port=0, password_file=password_file) as server,
        pytest.raises(psycopg.OperationalError),
    ):
        psycopg.connect(server.dsn(user="alice"), password="nope")


def test_bad_password_file_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "p"
    path.write_text("alice:x\nno colon here\n")
    with pytest.raises(ConfigError, match="line 2"):
        PgServer(make_backend(), port=0, password_file=str(path))
