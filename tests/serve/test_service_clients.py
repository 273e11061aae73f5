"""The live service behind its wire front end, in this process on the shared Spark
session (issue 34's acceptance about clients and security, with the real service rather
than `FakeBackend`): psycopg and asyncpg get typed columns from Spark SQL views, a
cursor ``FETCH`` subscription follows a view, errors carry SQLSTATEs, a client killed
mid-``COPY`` leaves no subscriber behind, ``DROP`` deletes the object's arrangement
files, history shard and ingest log, a view whose source's log was truncated by its
``RETAIN HISTORY`` is refused, and ``sealtime serve`` beyond loopback without
passwords does not start.

One service serves the whole module (starting one costs a few seconds of Spark jobs;
the tests use objects of their own names).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest

import sealtime as st
from sealtime.serve.client import Change, Progress
from sealtime.serve.pgwire import PgServer
from sealtime.serve.service import Service, ServiceSettings
from sealtime.time.order import MIN_TIME

UTC = dt.timezone.utc


@dataclass
class Live:
    service: Service
    server: PgServer
    data_dir: Path
    root: Path

    def inbox(self, name: str) -> Path:
        path = self.root / name
        path.mkdir(exist_ok=True)
        return path

    def connect(self, **kwargs: Any) -> psycopg.Connection:
        return psycopg.connect(self.server.dsn(), autocommit=True, **kwargs)

    def run(self, sql: str) -> None:
        with self.connect() as conn:
            conn.execute(sql)


@pytest.fixture(scope="module")
def live(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    from sealtime.serve.session import ServiceBackend

    root = tmp_path_factory.mktemp("live")
    data_dir = root / "data"
    service = Service(
        ServiceSettings(data_dir=str(data_dir), tick="200ms", checkpoint_every=3),
        spark=spark,
    ).start()
    server = PgServer(ServiceBackend(service), port=0).start()
    try:
        yield Live(service, server, data_dir, root)
    finally:
        server.close()
        service.close()


def write_csv(directory: Path, i: int, header: str, lines: list[str]) -> None:
    """A file appears whole (written aside, then renamed), as the Files source expects."""
    tmp = directory / f".{i:04d}.tmp"
    tmp.write_text(header + "\n" + "".join(line + "\n" for line in lines))
    os.rename(tmp, directory / f"{i:04d}.csv")


def eventually(check: Callable[[], Any], timeout: float = 120.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        assert time.monotonic() < deadline, f"timed out waiting for {what or check}"
        time.sleep(0.2)


def select(live: Live, sql: str) -> list[tuple[Any, ...]]:
    with live.connect() as conn:
        return conn.execute(sql).fetchall()


def du(path: Path) -> int:
    """Bytes of the files under `path` (0 when it is gone)."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) if path.exists() else 0


# ---------------------------------------------------------------------- typed results

TYPED_VIEW = """CREATE VIEW typed AS SELECT
    k,
    v,
    CAST(v AS DOUBLE) / 4 AS x,
    CAST(v AS DECIMAL(12, 2)) / 8 AS amount,
    v > 2 AS big,
    TIMESTAMP_MILLIS(v * 1000 + 500) AS at,
    DATE_ADD(DATE '2024-02-28', CAST(v AS INT)) AS day
FROM t"""


def expected_typed(k: str, v: int) -> tuple[Any, ...]:
    return (
        k,
        v,
        v / 4,
        (Decimal(v) / 8).quantize(Decimal("0.000001")),
        v > 2,
        dt.datetime.fromtimestamp(v + 0.5, UTC),
        dt.date(2024, 2, 28) + dt.timedelta(days=v),
    )


def test_typed_results_psycopg_and_asyncpg(live: Live) -> None:
    inbox = live.inbox("t")
    live.run(
        f"CREATE SOURCE t FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', SETTLE '0s')"
    )
    live.run(TYPED_VIEW)
    write_csv(inbox, 0, "k,v", ["a,1", "b,3"])
    want = sorted(expected_typed(k, v) for k, v in [("a", 1), ("b", 3)])
    query = "SELECT k, v, x, amount, big, at, day FROM typed ORDER BY k"
    got = eventually(lambda: (rows := select(live, query)) and rows, what="the typed view's rows")
    assert got == want  # text format
    with live.connect() as conn:
        assert conn.cursor(binary=True).execute(query).fetchall() == want
        cur = conn.execute(query)
        assert [c.type_code for c in cur.description] == [
            psycopg.postgres.types[n].oid
            for n in ("text", "int8", "float8", "numeric", "bool", "timestamptz", "date")
        ]

    async def with_asyncpg() -> list[tuple[Any, ...]]:
        import asyncpg

        conn = await asyncpg.connect(f"postgresql://sealtime@127.0.0.1:{live.server.port}/sealtime")
        try:
            return [tuple(r) for r in await conn.fetch(query)]
        finally:
            await conn.close()

    assert asyncio.run(with_asyncpg()) == want


# ---------------------------------------------------------------------- subscriptions and errors


def test_fetch_subscription_and_sqlstates(live: Live) -> None:
    inbox = live.inbox("f")
    live.run(
        f"CREATE SOURCE f FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', SETTLE '0s')"
    )
    live.run("CREATE VIEW fsums AS SELECT k, SUM(v) AS total FROM f GROUP BY k")
    write_csv(inbox, 0, "k,v", ["a,1", "b,2"])
    url = live.server.dsn()
    acc: Counter = Counter()
    deadline = time.monotonic() + 120
    with st.connect(url) as conn, conn.subscribe("fsums", progress=True) as sub:
        written = False
        for event in sub:
            assert time.monotonic() < deadline, f"fsums is {dict(acc)} after 120 s"
            if isinstance(event, Change):
                acc[event.row] += event.diff
            elif isinstance(event, Progress) and not written and {k for k, c in acc.items() if c}:
                write_csv(inbox, 1, "k,v", ["a,10"])  # (while the cursor is open)
                written = True
            if {k for k, c in acc.items() if c} == {("a", 11), ("b", 2)}:
                break

    async def with_asyncpg() -> tuple[Counter, str]:
        import asyncpg

        conn = await asyncpg.connect(f"postgresql://sealtime@127.0.0.1:{live.server.port}/x")
        try:
            seen: Counter = Counter()
            async with conn.transaction():
                await conn.execute("DECLARE c CURSOR FOR SUBSCRIBE fsums WITH (PROGRESS)")
                progressed, until = False, time.monotonic() + 60
                while not (progressed and seen):  # (the snapshot, then a progress row)
                    assert time.monotonic() < until, f"asyncpg FETCH: {dict(seen)} in 60 s"
                    for r in await conn.fetch("FETCH ALL c WITH (timeout = '1s')"):
                        if r["mz_progressed"]:
                            progressed = True
                        else:
                            seen[(r["k"], r["total"])] += r["mz_diff"]
            with pytest.raises(asyncpg.PostgresError) as info:
                await conn.fetch("SELECT * FROM nowhere")
            return seen, info.value.sqlstate
        finally:
            await conn.close()

    seen, code = asyncio.run(with_asyncpg())
    assert {k for k, c in seen.items() if c} == {("a", 11), ("b", 2)} and code == "42P01"

    with live.connect() as conn:
        got = {}
        for sql, code in [
            ("SELECT * FROM nowhere", "42P01"),  # undefined_table
            ("SELECT k, total / 0 FROM fsums", "22012"),  # Spark's division_by_zero (ANSI)
            ("CREATE VIEW fsums AS SELECT k FROM f", "42710"),  # duplicate_object
            ("DROP SOURCE f", "2BP01"),  # dependent_objects_still_exist
            ("SELECT k FROM fsums WHERE", "42601"),  # syntax_error
        ]:
            try:
                conn.execute(sql)
                got[sql] = (None, code)
            except psycopg.Error as exc:
                got[sql] = (exc.sqlstate, code)
        assert {sql: c for sql, c in got.items() if c[0] != c[1]} == {}
        # the connection is usable after errors (autocommit: no failed transaction)
        assert conn.execute("SHOW VIEWS").fetchall()


def test_client_killed_mid_subscription_costs_nothing(live: Live) -> None:
    inbox = live.inbox("g")
    live.run(
        f"CREATE SOURCE g FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', SETTLE '0s')"
    )
    live.run("CREATE VIEW gsums AS SELECT k, SUM(v) AS total FROM g GROUP BY k")
    write_csv(inbox, 0, "k,v", ["a,1"])
    psql = shutil.which("psql")
    if psql is None:
        pytest.skip("needs the psql client")
    hub = live.service.view_state("gsums").hub
    proc = subprocess.Popen(
        [psql, "-X", "-c", "COPY (SUBSCRIBE gsums WITH (PROGRESS)) TO STDOUT", live.server.dsn()],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.count("\t") == 4, first
        assert hub.subscribers == 1 and live.server.stats()["subscriptions"] == 1
        proc.send_signal(signal.SIGKILL)  # no Terminate, no cancel: the socket just closes
        proc.wait(30)
        ticks = live.service.ticks
        eventually(lambda: hub.subscribers == 0, 30, "the hub to forget the subscriber")
        eventually(
            lambda: (
                live.server.stats() == {"connections": 0, "subscriptions": 0, "buffered_bytes": 0}
            ),
            30,
            "the server's counters back to zero",
        )
        # the view goes on sealing, with nobody to deliver to
        history = live.service.view_state("gsums").history
        upper = history.durable_upper()
        eventually(lambda: live.service.ticks >= ticks + 2, 60, "two more ticks")
        # (the history's upper moves at a tick's commit, which may end after the tick
        # counter moved: wait for it rather than read it once, which failed under load)
        eventually(lambda: history.durable_upper() > upper, 60, "the view's history to advance")
        assert live.service.failure is None
    finally:
        proc.kill()


# ---------------------------------------------------------------------- DROP and retention


def own_state_dirs(live: Live, view: str) -> list[Path]:
    """The state directories of the operators only `view` reads (none another view
    shares): what dropping it must delete."""
    from sealtime.sql import catalog as tables

    flow = live.service.flow
    plan = flow.compile()
    ids = {name: tables.lookup(flow, name).collection.node.id for name in live.service.views}
    mine = plan.upstream([ids[view]])
    for name, nid in ids.items():
        if name != view:
            mine -= plan.upstream([nid])
    ops = flow.engine.snapshot().operators
    return [Path(op.state_dir) for op in ops if op.id in mine and op.state_dir is not None]


def test_drop_view_releases_its_arrangements_and_history(live: Live) -> None:
    inbox = live.inbox("d")
    live.run(
        f"CREATE SOURCE d FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', SETTLE '0s')"
    )
    live.run("CREATE VIEW dkeep AS SELECT k, COUNT(*) AS n FROM d GROUP BY k")
    live.run("CREATE VIEW dtop AS SELECT k, MAX(v) AS top, SUM(v) AS total FROM d GROUP BY k")
    write_csv(inbox, 0, "k,v", [f"k{i % 50},{i}" for i in range(2000)])
    eventually(lambda: len(select(live, "SELECT k FROM dtop")) == 50, what="dtop's 50 keys")
    eventually(lambda: len(select(live, "SELECT k FROM dkeep")) == 50, what="dkeep's 50 keys")
    shards = live.data_dir / "shards"
    name = live.service.settings.name
    top_state, keep_state = own_state_dirs(live, "dtop"), own_state_dirs(live, "dkeep")
    history = shards / f"{name}.view.dtop"
    assert top_state and keep_state, "both aggregates keep arrangements"
    assert sum(du(p) for p in top_state) > 0 and du(history) > 0

    live.run("DROP VIEW dtop")
    # (its operators are gone from the plan: before the fix its ``dtop.errors`` table
    # kept them computed every tick, with their arrangement)
    assert [p for p in top_state if p.exists()] == [] and not history.exists()
    assert "dtop" not in {r[0] for r in select(live, "SHOW VIEWS")}
    assert all(du(p) > 0 for p in keep_state) and du(shards / f"{name}.view.dkeep") > 0

    with live.connect() as conn, pytest.raises(psycopg.Error) as info:
        conn.execute("DROP SOURCE d")
    assert info.value.sqlstate == "2BP01" and "CASCADE" in str(info.value)
    live.run("DROP SOURCE d CASCADE")
    assert [p for p in keep_state if p.exists()] == []
    assert not (shards / f"{name}.view.dkeep").exists()
    assert "dkeep" not in {r[0] for r in select(live, "SHOW VIEWS")}
    assert "d" not in {r[0] for r in select(live, "SHOW SOURCES")}
    live.run("DROP VIEW IF EXISTS dkeep")  # (nothing left: not an error)


def test_drop_source_deletes_its_ingest_log(live: Live) -> None:
    inbox = live.inbox("e")
    live.run(
        f"CREATE SOURCE e FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', SETTLE '0s')"
    )
    live.run("CREATE VIEW ecount AS SELECT COUNT(*) AS n FROM e")
    write_csv(inbox, 0, "k,v", ["a,1", "b,2"])
    eventually(lambda: select(live, "SELECT n FROM ecount") == [(2,)], what="ecount = 2")
    log = live.data_dir / "log" / "e"
    assert du(log) > 0
    live.run("DROP SOURCE e CASCADE")
    assert du(log) == 0, f"{du(log)} bytes of ingest log left behind"


def test_a_view_needing_truncated_history_is_refused(live: Live) -> None:
    inbox = live.inbox("r")
    # RETAIN HISTORY '1ms': after a checkpoint, only the newest times stay in the log
    live.run(
        f"CREATE SOURCE r FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', "
        "SETTLE '0s', RETAIN HISTORY '1ms')"
    )
    engine = live.service.flow.engine
    write_csv(inbox, 0, "k,v", ["a,1"])
    eventually(lambda: engine.snapshot().source("r").rows >= 1, what="r's first row logged")
    first = engine.snapshot().source("r").frontier  # (that row's time is below it)
    write_csv(inbox, 1, "k,v", ["b,2"])
    eventually(
        lambda: engine.retention.marks().get("r", MIN_TIME) >= first,
        what="the log of r truncated past its first row (a checkpoint every 3 ticks)",
    )
    with live.connect() as conn, pytest.raises(psycopg.Error) as info:
        conn.execute("CREATE VIEW rv AS SELECT k, COUNT(*) AS n FROM r GROUP BY k")
    assert info.value.sqlstate == "55000"
    assert "RETAIN HISTORY" in str(info.value) and "'r'" in str(info.value)
    assert "rv" not in {r[0] for r in select(live, "SHOW VIEWS")}
    assert live.service.catalog is not None and live.service.catalog.entry("rv") is None


def test_restart_brings_every_object_back(spark: Any, tmp_path: Path) -> None:
    """A service closed and started again on its data dir (``kill -9`` and a restart of
    the real command: `test_service_psql.py`, full tier) rebuilds every object from the
    catalog; a view resumes from its checkpoint and the log, another hydrates again."""
    from sealtime.serve.session import ServiceBackend

    inbox = tmp_path / "in"
    inbox.mkdir()
    settings = ServiceSettings(data_dir=str(tmp_path / "data"), tick="200ms", checkpoint_every=2)

    def start() -> tuple[Service, PgServer]:
        service = Service(settings, spark=spark).start()
        return service, PgServer(ServiceBackend(service), port=0).start()

    service, server = start()
    live = Live(service, server, tmp_path / "data", tmp_path)
    try:
        live.run(
            f"CREATE SOURCE s FROM FILES '{inbox}' (FORMAT csv, SCHEMA 'k string, v long', "
            "SETTLE '0s')"
        )
        live.run("CREATE VIEW sums AS SELECT k, SUM(v) AS total FROM s GROUP BY k")
        live.run("CREATE VIEW n AS SELECT COUNT(*) AS n FROM s")
        write_csv(inbox, 0, "k,v", ["a,1", "b,2", "a,3"])
        eventually(lambda: select(live, "SELECT n FROM n") == [(3,)], what="n = 3")
        live.run("DROP VIEW n")
    finally:
        server.close()
        service.close()
    write_csv(inbox, 1, "k,v", ["b,10", "c,5"])  # (arrives while the service is down)
    service, server = start()
    live = Live(service, server, tmp_path / "data", tmp_path)
    try:
        assert {r[0] for r in select(live, "SHOW SOURCES")} == {"s"}
        assert {r[0] for r in select(live, "SHOW VIEWS")} == {"sums"}
        want = [("a", 4), ("b", 12), ("c", 5)]
        eventually(
            lambda: select(live, "SELECT k, total FROM sums ORDER BY k") == want,
            what=f"sums = {want}",
        )
    finally:
        server.close()
        service.close()


# ---------------------------------------------------------------------- the command line


def test_serve_beyond_loopback_without_passwords_does_not_start(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "sealtime.cli", "serve", "--data-dir", str(tmp_path / "d")]
        + ["--host", "0.0.0.0", "--port", "0"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0
    assert "--password-file" in out.stderr and "0.0.0.0" in out.stderr
    assert not (tmp_path / "d" / "metadata.sqlite").exists()  # (refused before anything opened)
