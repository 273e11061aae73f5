"""Fixtures for the storage tests: every store-level test runs on SQLite AND PostgreSQL.

PostgreSQL is expected at 127.0.0.1:5432 with trust auth (role ``root`` or ``postgres``,
database ``test``; override with SEALTIME_TEST_PG_URL). Each test gets its own schema
(``sealtime_t_<run>_<n>``), dropped afterwards, so runs never collide. If the server is
unreachable the PostgreSQL variants are skipped — or FAIL when the env var CI is set.
"""

from __future__ import annotations

import functools
import itertools
import os
import uuid
from collections.abc import Callable, Iterator

import pytest

from sealtime.storage import MetadataStore, redact_url

PG_CANDIDATES = [
    os.environ.get("SEALTIME_TEST_PG_URL"),
    "postgresql://root@127.0.0.1:5432/test",
    "postgresql://postgres@127.0.0.1:5432/test",
]
RUN_ID = uuid.uuid4().hex[:8]
_counter = itertools.count()


@functools.cache
def _pg_probe() -> tuple[str | None, str]:
    """The first candidate URL that accepts a connection, or None and the errors."""
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover
        return None, f"psycopg is not installed ({exc})"
    errors = []
    for url in PG_CANDIDATES:
        if not url:
            continue
        try:
            with psycopg.connect(url, connect_timeout=3, autocommit=True) as conn:
                conn.execute("SELECT 1")
            return url, ""
        except Exception as exc:
            errors.append(f"{redact_url(url)}: {' '.join(str(exc).split())}")
    return None, "; ".join(errors)


def require_postgres() -> str:
    """The PostgreSQL URL to test against; skip (or fail under CI) if unreachable."""
    url, err = _pg_probe()
    if url is None:
        msg = f"PostgreSQL on 127.0.0.1:5432 not reachable: {err}"
        if os.environ.get("CI"):
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)
    return url


def _drop_schema(url: str, schema: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.fixture(params=["sqlite", "postgresql"])
def store_spec(request, tmp_path) -> Iterator[tuple[str, str | None]]:
    """(url, schema) of a fresh, empty metadata store for this test."""
    if request.param == "sqlite":
        yield str(tmp_path / "meta.db"), None
        return
    url = require_postgres()
    schema = f"sealtime_t_{RUN_ID}_{next(_counter)}"
    try:
        yield url, schema
    finally:
        _drop_schema(url, schema)


@pytest.fixture
def open_store(store_spec) -> Iterator[Callable[[], MetadataStore]]:
    """Open another `MetadataStore` on this test's database (separate connections)."""
    opened: list[MetadataStore] = []
    url, schema = store_spec

    def factory() -> MetadataStore:
        store = MetadataStore.open(url, schema=schema)
        opened.append(store)
        return store

    yield factory
    for store in opened:
        store.close()


@pytest.fixture
def store(open_store) -> MetadataStore:
    """A fresh metadata store (SQLite file or a private PostgreSQL schema)."""
    return open_store()
