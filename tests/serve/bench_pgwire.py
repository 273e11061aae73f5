"""Measurements of the wire front end for docs/pgwire.md (not a test; run it alone):

    .venv/bin/python tests/serve/bench_pgwire.py

The server runs in a child process (`serve` below) over a `FakeBackend`, so the
clients measured here do not share its interpreter: connection setup (trust, SCRAM),
SELECT of a 1M-row Arrow table to psycopg (text, binary), asyncpg and raw COPY,
subscription throughput (COPY and FETCH) and latency with the backend emitting
updates, and the server's memory with a stalled subscriber. Both processes share the
machine's 2 cores.
"""

from __future__ import annotations

import asyncio
import os
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROWS = 1_000_000
EVENTS, PER_EVENT = 200, 5000


def serve(port_file: str, password_file: str, mode: str) -> None:
    """The child: a PgServer over a FakeBackend; `mode` ``emit`` adds a thread that,
    once a subscription is open, emits EVENTS updates of PER_EVENT rows; ``latency``
    one row every 5 ms stamped with time.monotonic_ns (one clock for both processes)."""
    import threading

    import numpy as np
    import pyarrow as pa

    from sealtime.serve.backend import Update
    from sealtime.serve.fake import FakeBackend
    from sealtime.serve.pgwire import PgServer, ServerLimits

    rng = np.random.default_rng(1)
    big = pa.table(
        {
            "id": pa.array(np.arange(ROWS), pa.int64()),
            "price": pa.array(rng.random(ROWS) * 100),
            "name": pa.array(np.char.add("item-", np.arange(ROWS).astype(str))),
            "ok": pa.array(np.arange(ROWS) % 2 == 0),
        }
    )
    empty = {
        "k": pa.array([], pa.int64()),
        "x": pa.array([], pa.float64()),
        "_time": pa.array([], pa.int64()),
        "_diff": pa.array([], pa.int64()),
    }
    backend = FakeBackend({"big": big, "v": pa.table(empty)}, {"v": 1})
    limits = ServerLimits(max_result_bytes=1 << 31, subscription_buffer_bytes=64 << 20)
    server = PgServer(backend, port=0, limits=limits, password_file=password_file or None).start()

    def emit() -> None:
        while not backend.streams:
            time.sleep(0.001)
        if mode in ("emit", "flood"):
            for i in range(EVENTS * (5 if mode == "flood" else 1)):
                b = pa.table(
                    {
                        "k": pa.array(np.arange(PER_EVENT) + i * PER_EVENT, pa.int64()),
                        "x": pa.array(rng.random(PER_EVENT)),
                        "_time": pa.array(np.full(PER_EVENT, 10 + i), pa.int64()),
                        "_diff": pa.array(np.ones(PER_EVENT, np.int64)),
                    }
                )
                if mode == "flood":  # straight to the subscriber: the fake keeps no history
                    backend.streams[0].put(Update(b.combine_chunks().to_batches()[0]))
                else:
                    backend.advance("v", b, 11 + i)
                if backend.streams[0].closed.is_set():
                    break
        else:
            for i in range(300):
                time.sleep(0.005)
                one = pa.table(
                    {
                        "k": pa.array([time.monotonic_ns()], pa.int64()),
                        "x": [0.5],
                        "_time": [10 + i],
                        "_diff": [1],
                    }
                )
                backend.advance("v", one, 11 + i)
        backend.finish("v")

    if mode in ("emit", "flood", "latency"):
        threading.Thread(target=emit, daemon=True).start()
    with open(port_file, "w") as f:
        f.write(str(server.port))
    sys.stdin.read()  # until the parent closes our stdin
    server.close()


class Child:
    def __init__(self, mode: str = "", password_file: str = "") -> None:
        self.port_file = tempfile.mktemp()
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "serve", self.port_file, password_file, mode],
            stdin=subprocess.PIPE,
        )
        self.port = 0
        while not self.port:  # the child writes its port once it listens
            time.sleep(0.05)
            if os.path.exists(self.port_file):
                with open(self.port_file) as f:
                    self.port = int(f.read() or 0)

    def dsn(self, user: str = "u") -> str:
        return f"host=127.0.0.1 port={self.port} user={user} dbname=d"

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(30)
        os.unlink(self.port_file)


def raw_login(port: int, rcvbuf: int | None = None) -> socket.socket:
    sock = socket.socket()
    if rcvbuf:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    sock.connect(("127.0.0.1", port))
    params = b"user\x00u\x00database\x00d\x00\x00"
    sock.sendall(struct.pack("!ii", 8 + len(params), 196608) + params)
    data = b""
    while not data.endswith(b"Z\x00\x00\x00\x05I"):
        data += sock.recv(4096)
    return sock


def raw_read(port: int, query: bytes) -> tuple[float, int]:
    """Seconds and bytes until ReadyForQuery, reading the socket without parsing rows."""
    sock = raw_login(port)
    q = query + b"\x00"
    t = time.perf_counter()
    sock.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)
    size, tail = 0, b""
    while not tail.endswith(b"Z\x00\x00\x00\x05I"):
        chunk = sock.recv(1 << 20)
        size += len(chunk)
        tail = (tail + chunk)[-16:]
    dt = time.perf_counter() - t
    sock.close()
    return dt, size


def postgres_baseline() -> None:
    """The same SELECT from the PostgreSQL server on this machine, for scale."""
    import psycopg

    try:
        conn = psycopg.connect(
            "host=127.0.0.1 port=5432 user=postgres dbname=test", autocommit=True
        )
    except psycopg.OperationalError as e:
        print(f"(no PostgreSQL baseline: {e})")
        return
    with conn:
        conn.execute(
            "CREATE TEMP TABLE big AS SELECT g::int8 AS id, random() * 100 AS price, "
            "'item-' || g AS name, g % 2 = 0 AS ok FROM generate_series(0, 999999) g"
        )
        for binary in (False, True):
            t = time.perf_counter()
            n = len(conn.cursor(binary=binary).execute("SELECT * FROM big").fetchall())
            dt = time.perf_counter() - t
            print(
                f"baseline: PostgreSQL 15, same SELECT -> psycopg {'binary' if binary else 'text'}: {dt:.2f} s, {n / dt:,.0f} rows/s"
            )


def median_ms(fn, n: int = 50) -> float:  # noqa: ANN001
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def main() -> None:
    import asyncpg
    import psycopg

    from sealtime.serve.pgwire.auth import scram_verifier

    with tempfile.NamedTemporaryFile("w", delete=False) as f:
        f.write(f"alice:{scram_verifier('pw')}\n")
    child = Child()
    secured = Child(password_file=f.name)
    print(
        f"connect + close (trust): {median_ms(lambda: psycopg.connect(child.dsn()).close()):.2f} ms median of 50"
    )
    print(
        "connect + close (SCRAM-SHA-256, 4096 iterations): "
        f"{median_ms(lambda: psycopg.connect(secured.dsn('alice'), password='pw').close()):.2f} ms median of 50"
    )
    secured.stop()
    os.unlink(f.name)

    postgres_baseline()
    for binary in (False, True):
        with psycopg.connect(child.dsn()) as conn:
            t = time.perf_counter()
            n = len(conn.cursor(binary=binary).execute("SELECT * FROM big").fetchall())
            dt = time.perf_counter() - t
        print(
            f"SELECT 1M rows x (int8, float8, text, bool) -> psycopg {'binary' if binary else 'text'}: "
            f"{dt:.2f} s, {n / dt:,.0f} rows/s"
        )

    async def apg() -> tuple[int, float]:
        conn = await asyncpg.connect(host="127.0.0.1", port=child.port, user="u", database="d")
        t = time.perf_counter()
        rows = await conn.fetch("SELECT * FROM big")
        dt = time.perf_counter() - t
        await conn.close()
        return len(rows), dt

    n, dt = asyncio.run(apg())
    print(f"SELECT 1M rows -> asyncpg (binary): {dt:.2f} s, {n / dt:,.0f} rows/s")
    with psycopg.connect(child.dsn(), autocommit=True) as conn:
        t = time.perf_counter()
        with conn.cursor().copy("COPY (SELECT * FROM big) TO STDOUT") as copy:
            total = sum(len(b) for b in copy)
        dt = time.perf_counter() - t
    print(
        f"COPY (SELECT 1M rows) TO STDOUT -> psycopg, one bytes object per row ({total / 1e6:.0f} MB): {dt:.2f} s, {ROWS / dt:,.0f} rows/s"
    )
    for query, what in (
        (b"SELECT * FROM big", "DataRow text"),
        (b"COPY (SELECT * FROM big) TO STDOUT", "CopyData"),
    ):
        dt, size = raw_read(child.port, query)
        print(
            f"{query.decode()} -> a socket reader that parses nothing ({what}, {size / 1e6:.0f} MB): {dt:.2f} s, {ROWS / dt:,.0f} rows/s"
        )
    child.stop()

    child = Child("emit")
    with psycopg.connect(child.dsn(), autocommit=True) as conn:
        t = time.perf_counter()
        with conn.cursor().copy("COPY (SUBSCRIBE v WITH (SNAPSHOT false)) TO STDOUT") as copy:
            got = sum(1 for _ in copy)
        dt = time.perf_counter() - t
    print(
        f"SUBSCRIBE via COPY ({EVENTS} updates of {PER_EVENT} rows): {got:,} rows in {dt:.2f} s, {got / dt:,.0f} rows/s"
    )
    child.stop()

    child = Child("emit")
    with psycopg.connect(child.dsn()) as conn:
        cur = conn.cursor()
        cur.execute("DECLARE c CURSOR FOR SUBSCRIBE v WITH (SNAPSHOT false)")
        t = time.perf_counter()
        got = 0
        while True:
            cur.execute("FETCH ALL c")
            k = len(cur.fetchall())
            if k == 0:
                break
            got += k
        dt = time.perf_counter() - t
    print(
        f"SUBSCRIBE via DECLARE/FETCH ALL (typed rows): {got:,} rows in {dt:.2f} s, {got / dt:,.0f} rows/s"
    )
    child.stop()

    child = Child("latency")
    lat = []
    with (
        psycopg.connect(child.dsn(), autocommit=True) as conn,
        conn.cursor().copy("COPY (SUBSCRIBE v WITH (SNAPSHOT false)) TO STDOUT") as copy,
    ):
        for line in copy:
            sent = int(bytes(line).split(b"\t")[2])
            lat.append((time.monotonic_ns() - sent) / 1e6)
    lat.sort()
    print(
        f"SUBSCRIBE latency, update emitted -> row at psycopg ({len(lat)} updates): "
        f"p50 {lat[len(lat) // 2]:.2f} ms, p99 {lat[int(len(lat) * 0.99)]:.2f} ms"
    )
    child.stop()

    child = Child("flood")
    sock = raw_login(child.port, rcvbuf=4096)
    before = child.rss_mb()
    q = b"COPY (SUBSCRIBE v) TO STDOUT\x00"
    sock.sendall(b"Q" + struct.pack("!i", 4 + len(q)) + q)  # and never read
    peak = before
    deadline = time.monotonic() + 20
    while child.proc.poll() is None and time.monotonic() < deadline:
        peak = max(peak, child.rss_mb())
        sock.settimeout(0.01)
        try:
            if sock.recv(1, socket.MSG_PEEK) == b"":
                break  # the server hung up
        except (TimeoutError, BlockingIOError):
            pass
        time.sleep(0.01)
    sock.setblocking(True)
    sock.settimeout(10)
    received = b""
    try:
        while chunk := sock.recv(1 << 16):
            received += chunk
    except OSError:
        pass
    cut = b"fell behind at time" in received
    print(
        f"stalled subscriber offered up to {5 * EVENTS} x {PER_EVENT} rows (~{5 * EVENTS * PER_EVENT * 32 / 2**20:.0f} MiB Arrow), "
        f"subscription_buffer_bytes=64 MiB: cut with 'fell behind' = {cut}; server RSS {before:.0f} MiB -> peak {peak:.0f} MiB"
    )
    sock.close()
    child.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(*sys.argv[2:5])
    else:
        main()
