"""Typed results over the wire: every supported type, NULLs, text format (psycopg,
psql) and binary format (asyncpg), against the Arrow values the backend returned."""

from __future__ import annotations

import asyncio
import math
import subprocess

import asyncpg
import psycopg
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.serve.backend import PgType, pg_type
from sealtime.serve.fake import FakeBackend
from sealtime.serve.pgwire import PgServer

from ..conftest import examples
from .conftest import TYPED

EXPECTED_OIDS = {
    "i8": PgType.INT8,
    "i4": PgType.INT4,
    "f8": PgType.FLOAT8,
    "num": PgType.NUMERIC,
    "txt": PgType.TEXT,
    "flag": PgType.BOOL,
    "ts": PgType.TIMESTAMPTZ,
    "day": PgType.DATE,
    "raw": PgType.BYTEA,
}


def _rows(table: pa.Table) -> list[tuple]:
    return [tuple(r.values()) for r in table.to_pylist()]


def test_psycopg_typed_results(server: PgServer) -> None:
    with psycopg.connect(server.dsn()) as conn:
        cur = conn.execute("SELECT * FROM typed")
        assert [d.name for d in cur.description] == TYPED.schema.names
        assert [d.type_code for d in cur.description] == [
            EXPECTED_OIDS[n].oid for n in TYPED.schema.names
        ]
        assert cur.fetchall() == _rows(TYPED)


def test_psycopg_binary_results(server: PgServer) -> None:
    with psycopg.connect(server.dsn()) as conn:
        rows = conn.cursor(binary=True).execute("SELECT * FROM typed").fetchall()
    assert rows == _rows(TYPED)


def test_asyncpg_typed_results(server: PgServer) -> None:
    async def main() -> list[tuple]:
        conn = await asyncpg.connect(host="127.0.0.1", port=server.port, user="u", database="d")
        try:
            return [tuple(r.values()) for r in await conn.fetch("SELECT * FROM typed")]
        finally:
            await conn.close()

    assert asyncio.run(main()) == _rows(TYPED)


def test_psql_prints_text_format(server: PgServer, psql: str) -> None:
    out = subprocess.run(
        [psql, server.dsn(), "-AtF,", "-c", "SELECT i8, f8, num, flag, ts, day, raw FROM typed"],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    assert out.splitlines() == [
        "1,1.5,1.50,t,2024-01-01 12:00:00.5+00,2024-02-29,\\x00ff",
        "-4611686018427387904,0.3333333333333333,-12345678.01,f,1999-12-31 23:59:59+00,1970-01-01,\\x",
        ",,,,,,",
    ]


def test_pg_type_of_each_column() -> None:
    assert {f.name: pg_type(f.type) for f in TYPED.schema} == EXPECTED_OIDS


values = st.one_of(
    st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), max_size=40).map(
        lambda v: pa.array(v, pa.int64())
    ),
    st.lists(st.one_of(st.none(), st.floats(allow_nan=False)), max_size=40).map(
        lambda v: pa.array(v, pa.float64())
    ),
    st.lists(
        st.one_of(
            st.none(),
            st.text(
                alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")
            ),
        ),
        max_size=40,
    ).map(lambda v: pa.array(v, pa.string())),
    st.lists(
        st.one_of(
            st.none(),
            st.decimals(
                allow_nan=False,
                allow_infinity=False,
                places=3,
                min_value=-(10**14),
                max_value=10**14,
            ),
        ),
        max_size=40,
    ).map(lambda v: pa.array(v, pa.decimal128(18, 3))),
    st.lists(
        st.one_of(
            st.none(),
            st.decimals(
                allow_nan=False,
                allow_infinity=False,
                places=5,
                min_value=-(10**30),
                max_value=10**30,
            ),
        ),
        max_size=20,
    ).map(lambda v: pa.array(v, pa.decimal128(38, 5))),
)


def _same(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return a == b


@given(column=values)
@settings(max_examples=examples(60, 15), deadline=None)
def test_any_values_round_trip_text_and_binary(column: pa.Array) -> None:
    """What the backend returns is what both formats deliver, value for value."""
    backend = FakeBackend({"t": pa.table({"c": column})})
    expected = column.to_pylist()
    with PgServer(backend, port=0) as server, psycopg.connect(server.dsn()) as conn:
        text = [r[0] for r in conn.execute("SELECT c FROM t").fetchall()]
        binary = [r[0] for r in conn.cursor(binary=True).execute("SELECT c FROM t").fetchall()]
    assert all(map(_same, text, expected)) and len(text) == len(expected)
    assert all(map(_same, binary, expected)) and len(binary) == len(expected)
