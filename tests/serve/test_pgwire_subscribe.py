"""SUBSCRIBE over the wire: cursors (DECLARE/FETCH with Materialize's timeout
semantics), COPY TO STDOUT from psycopg and psql (Ctrl-C cancels), a client killed
mid-subscription, and a subscriber that does not read (cut, memory bounded)."""

from __future__ import annotations

import signal
import socket
import struct
import subprocess
import sys
import textwrap
import time

import psycopg
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.columns import consolidate
from sealtime.serve.fake import FakeBackend
from sealtime.serve.pgwire import PgServer, ServerLimits

from ..conftest import examples
from .conftest import VIEW


def _update(k: str, x: int, t: int, diff: int = 1) -> pa.Table:
    return pa.table({"k": [k], "x": pa.array([x], pa.int64()), "_time": [t], "_diff": [diff]})


def _snapshot_rows(as_of: int) -> list[tuple]:
    snap = consolidate(VIEW.drop_columns(["_time"]))
    return sorted(
        (as_of, False, d, k, x)
        for k, x, d in zip(*(snap[c].to_pylist() for c in ("k", "x", "_diff")))
    )


def test_declare_fetch_with_timeout(server: PgServer, backend: FakeBackend) -> None:
    with psycopg.connect(server.dsn()) as conn:
        cur = conn.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE v WITH (PROGRESS)")
        cur.execute("FETCH ALL c WITH (timeout = '1s')")
        assert [d.name for d in cur.description] == [
            "mz_timestamp",
            "mz_progressed",
            "mz_diff",
            "k",
            "x",
        ]
        rows = cur.fetchall()
        while rows[-1][1] is not True:  # (FETCH returns what is there: the rest may follow)
            cur.execute("FETCH ALL c WITH (timeout = '1s')")
            rows += cur.fetchall()
        # the snapshot at the latest sealed time (2999), then progress to 3000
        assert sorted(rows[:-1]) == _snapshot_rows(2999)
        assert rows[-1] == (3000, True, None, None, None)
        # nothing new: FETCH waits for the timeout, then returns no rows
        started = time.monotonic()
        cur.execute("FETCH ALL c WITH (timeout = '300ms')")
        assert cur.fetchall() == [] and time.monotonic() - started >= 0.29
        # new updates: FETCH returns at once, count-limited
        backend.advance("v", pa.concat_tables([_update("c", 3, 3100), _update("d", 4, 3200)]), 4000)
        cur.execute("FETCH 2 c WITH (timeout = '10s')")
        assert cur.fetchall() == [(3100, False, 1, "c", 3), (3200, False, 1, "d", 4)]
        cur.execute("FETCH ALL c")
        assert cur.fetchall() == [(4000, True, None, None, None)]
        stream = backend.streams[-1]
        cur.execute("CLOSE c")
        assert stream.closed.wait(5)  # the service is told


def test_fetch_without_timeout_waits_for_a_row(server: PgServer, backend: FakeBackend) -> None:
    import threading

    with psycopg.connect(server.dsn()) as conn:
        cur = conn.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE v WITH (SNAPSHOT false)")
        threading.Timer(0.3, backend.advance, ["v", _update("z", 9, 3500), 4000]).start()
        cur.execute("FETCH ALL c")
        assert cur.fetchall() == [(3500, 1, "z", 9)]
        backend.finish("v")
        cur.execute("FETCH ALL c")  # the subscription ended: no rows, no wait
        assert cur.fetchall() == []


def test_subscribe_as_of_replays_history(server: PgServer) -> None:
    with psycopg.connect(server.dsn()) as conn:
        cur = conn.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE v AS OF 1500")
        cur.execute("FETCH ALL c WITH (timeout = '1s')")
        assert cur.fetchall() == [(1500, 1, "a", 1), (2000, 1, "b", 2), (2500, -1, "a", 1)]


def test_declare_outside_a_transaction_is_refused(server: PgServer) -> None:
    with psycopg.connect(server.dsn(), autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as e:
            conn.execute("DECLARE c CURSOR FOR SUBSCRIBE v")
        assert e.value.sqlstate == "25P01"


def test_copy_subscribe_psycopg(server: PgServer, backend: FakeBackend) -> None:
    with (
        psycopg.connect(server.dsn(), autocommit=True) as conn,
        conn.cursor().copy("COPY (SUBSCRIBE v WITH (PROGRESS)) TO STDOUT") as copy,
    ):
        copy.set_types(["numeric", "bool", "int8", "text", "int8"])
        rows = copy.rows()
        got = [next(rows) for _ in range(2)]
        assert sorted(got[:1]) == _snapshot_rows(2999) and got[1][:2] == (3000, True)
        backend.advance("v", _update("tab\tq", 5, 3300), 3400)
        assert next(rows) == (3300, False, 1, "tab\tq", 5)
        assert next(rows) == (3400, True, None, None, None)
        backend.finish("v")
        assert list(rows) == []  # COPY ends with the subscription


def test_psql_copy_streams_and_ctrl_c_cancels(
    server: PgServer, backend: FakeBackend, psql: str
) -> None:
    proc = subprocess.Popen(
        # stdbuf: psql writes COPY rows with stdio, block-buffered on a pipe
        ["stdbuf", "-oL", psql, server.dsn(), "-c", "COPY (SUBSCRIBE v WITH (PROGRESS)) TO STDOUT"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(2)]  # snapshot row, progress
        assert lines[1] == "3000\tt\t\\N\t\\N\t\\N\n"
        backend.advance("v", _update("e", 7, 3700), 3800)
        assert proc.stdout.readline() == "3700\tf\t1\te\t7\n"  # streamed, not buffered
        stream = backend.streams[-1]
        proc.send_signal(signal.SIGINT)  # psql sends a CancelRequest
        _, err = proc.communicate(timeout=20)
        assert "canceling statement due to user request" in err
        assert stream.closed.wait(5)
    finally:
        proc.kill()
        proc.wait()


def test_psql_quits_cleanly(server: PgServer, psql: str) -> None:
    run = subprocess.run(
        [psql, server.dsn(), "-At"],
        input="SELECT i4 FROM typed WHERE i4 = 7;\n\\q\n",
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0 and run.stdout.strip() == "7"
    assert server.stats()["connections"] == 0 or _eventually(
        lambda: server.stats()["connections"] == 0
    )


def _eventually(check, timeout: float = 5.0) -> bool:  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.02)
    return False


def test_client_killed_mid_subscription_costs_nothing(
    server: PgServer, backend: FakeBackend
) -> None:
    code = textwrap.dedent(f"""
        import psycopg, sys
        with psycopg.connect({server.dsn()!r}, autocommit=True) as conn:
            with conn.cursor().copy("COPY (SUBSCRIBE v) TO STDOUT") as copy:
                for row in copy:
                    print("row", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "row\n"
        assert server.stats()["subscriptions"] == 1
        stream = backend.streams[-1]
        proc.kill()  # SIGKILL: no Terminate, no cancel
        proc.wait()
        assert stream.closed.wait(5)  # the service was told, without any new update
        assert _eventually(
            lambda: server.stats() == {"connections": 0, "subscriptions": 0, "buffered_bytes": 0}
        )
    finally:
        proc.kill()


def _raw_login(port: int) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a client that barely reads
    sock.connect(("127.0.0.1", port))
    params = b"user\x00u\x00database\x00d\x00\x00"
    sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    data = b""
    while not data.endswith(b"Z\x00\x00\x00\x05I"):
        data += sock.recv(4096)
    return sock


def test_stalled_subscriber_is_cut_and_memory_stays_bounded() -> None:
    limit = 1 << 20
    backend = FakeBackend({"v": VIEW}, {"v": 3000})
    with PgServer(backend, port=0, limits=ServerLimits(subscription_buffer_bytes=limit)) as server:
        sock = _raw_login(server.port)
        query = b"COPY (SUBSCRIBE v) TO STDOUT\x00"
        sock.sendall(b"Q" + struct.pack("!i", 4 + len(query)) + query)  # ... and never read
        assert _eventually(lambda: len(backend.streams) == 1)
        stream = backend.streams[0]
        big = pa.table({"k": ["x" * 1000] * 1000, "x": pa.array(range(1000), pa.int64())})
        peak = 0
        for i in range(100):  # ~100 MB of updates offered to a client that reads nothing
            t = 4000 + i
            batch = big.append_column("_time", pa.array([t] * 1000, pa.int64())).append_column(
                "_diff", pa.array([1] * 1000, pa.int64())
            )
            backend.advance("v", batch, t + 1)
            peak = max(peak, server.stats()["buffered_bytes"])
            if stream.closed.is_set():
                break
        assert stream.closed.wait(10), "the stalled subscriber was not cut"
        assert peak <= limit + big.nbytes  # bounded: the limit and one event
        assert _eventually(lambda: server.stats()["buffered_bytes"] == 0)
        sock.settimeout(10)
        received = b""
        try:
            while chunk := sock.recv(1 << 16):
                received += chunk
        except OSError:
            pass
        assert b"fell behind at time" in received
        sock.close()


@given(
    sizes=st.lists(st.integers(0, 40), min_size=1, max_size=8),
    batch_rows=st.integers(1, 64),
    fetch=st.integers(1, 30),
)
@settings(max_examples=examples(30, 10), deadline=None)
def test_received_rows_do_not_depend_on_slicing(
    sizes: list[int], batch_rows: int, fetch: int
) -> None:
    """The same updates give the same rows, in the same order, through COPY and through
    FETCH n, whatever the encoder's slice size and the FETCH size."""
    backend = FakeBackend({"v": VIEW.slice(0, 0)}, {"v": 1})
    updates, expected, t = [], [], 10
    for i, size in enumerate(sizes):
        # in the order a backend sends them (retractions first, then by row)
        triples = sorted((1 if j % 3 else -1, f"k{i}\t{j}", j) for j in range(size))
        rows = pa.table(
            {
                "k": [k for _, k, _ in triples],
                "x": pa.array([x for _, _, x in triples], pa.int64()),
                "_time": pa.array([t] * size, pa.int64()),
                "_diff": pa.array([d for d, _, _ in triples], pa.int64()),
            }
        )
        updates.append((rows, t + 1))
        expected += [(t, False, d, k, x) for d, k, x in triples]
        expected.append((t + 1, True, None, None, None))
        t += 1
    limits = ServerLimits(batch_rows=batch_rows)
    with PgServer(backend, port=0, limits=limits) as server, psycopg.connect(server.dsn()) as conn:
        cur = conn.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE v WITH (PROGRESS, SNAPSHOT false)")
        with psycopg.connect(server.dsn(), autocommit=True) as other:
            copy_cm = other.cursor().copy(
                "COPY (SUBSCRIBE v WITH (PROGRESS, SNAPSHOT false)) TO STDOUT"
            )
            with copy_cm as copy:
                copy.set_types(["numeric", "bool", "int8", "text", "int8"])
                assert _eventually(lambda: len(backend.streams) == 2)
                for rows, frontier in updates:
                    backend.advance("v", rows, frontier)
                backend.finish("v")
                copied = [(int(r[0]), *r[1:]) for r in copy.rows()]
        fetched = []
        while True:
            cur.execute(f"FETCH {fetch} c")
            got = cur.fetchall()
            if not got:
                break
            fetched += [(int(r[0]), *r[1:]) for r in got]
    head = (1, True, None, None, None)  # the frontier when the subscription started
    assert copied == [head, *expected]
    assert fetched == [head, *expected]
