"""Scale benchmark of the live service (issue 34): hundreds of views, a thousand subscribers.

One `Service` (the engine of ``sealtime serve``) with its PostgreSQL wire front end
(`PgServer`) runs in this process, over ``CREATE SOURCE nx FROM NEXMARK (RATE 10000,
MAX ROWS PER TICK 10000)`` ticking every second: 10,000 events a tick, i.e. 10k events/s
while a tick takes at most its second (the generator is not paced by the wall clock; a
longer tick reads the same 10,000 events, so the rate falls with the tick). In-process
rather than ``sealtime serve`` as a subprocess, because the numbers come from the
service's own tick reports (`flow.tick_observers`), the fused/unfused A/B needs the
engine's setting, and the JVM is a separate process either way: the memory reported is
this process's RSS plus its JVM's. The subscribers run in another process (``--role
subscribers``), so that their decoding does not share the server's GIL.

Phases (``--phases``, default all, hydration first: its services warm the JVM up for
the growth run; each writes its part of bench/results/live_views.json
and the markdown bench/results/live_views.md is rendered from that file):

* ``growth``: views added one after another up to ``--views`` (200; one per tick up to
  25, then in batches of ``--batch``) from four Nexmark shapes with different parameters
  (`view_specs`), a third of them reading one of two shared aggregates (same input, same
  key: one arrangement each). At 1, 10, 25, 50, 100, 200 views: tick seconds p50/p99
  over ``--window`` ticks, memory, load. The first views are published (``PUBLISH v AS
  VIEW``) and the subscriber process holds ``--subscribers`` pub-sub view subscriptions
  plus ``--pg-subscribers`` ``DECLARE c CURSOR FOR SUBSCRIBE ...; FETCH ALL c`` over
  pgwire; each records, per update batch, the time and its arrival wall time. Lag of a
  batch at time t = how many ticks sealed after the tick that sealed t before the batch
  arrived (0: before the next tick). Also measured: the seal interval of the ticks right
  after a view was added versus the others (the "adding a view delays other views by at
  most one tick" target), and each view's CREATE -> live time against its history.
  At the end every view's contents ``SELECT * FROM v AS OF t`` (over pgwire) are compared
  with ``spark.sql`` of the view's text over the Nexmark events the source logged up to
  t (regenerated from the binding's position: the generator is a function of the event
  number), and one pub-sub subscriber per published view's accumulated snapshot and
  updates with the same reference at its last progress.
* ``sharing``: a fresh service with one shared aggregate; +20 unshared views of the same
  shape (own filters, own arrangements), their marginal tick cost; DROP them; +20 views
  over the shared aggregate, their marginal tick cost.
* ``hydration``: a fresh service each, one view created after 1, 5 and 20 ticks of
  history: CREATE -> live seconds.
* ``steady`` (not in the default list): ``--views`` views created in batches of 50,
  then the tick with the sink stage collecting together, alone and together again.
* ``fuse``: ``--ab-views`` views, fused (the default) and with ``Dataflow(fuse=False)``.
  `sealtime.serve.ServiceSettings` has no such setting: for this A/B only, the benchmark
  replaces ``sealtime.flow.Dataflow`` with a subclass that passes ``fuse=False``
  (`no_fusion`).

Every result row carries the 1-minute load average (``uptime``) when it was measured:
the machine is shared.

    .venv/bin/python bench/live_views.py                 # everything (about an hour)
    .venv/bin/python bench/live_views.py --quick         # 20 views, 100 + 10 subscribers
    .venv/bin/python bench/live_views.py --phases growth --views 200
    .venv/bin/python bench/live_views.py --report        # re-render the markdown

The full run's results go to bench/results/live_views.{json,md} (a section of
BENCHMARKS.md, with the hand-written bench/results/notes/live_views.md), the others'
(``--quick``, ``--results NAME``) to bench/results/live_views_runs/.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results"
SOURCE_SQL = "CREATE SOURCE nx FROM NEXMARK (RATE 10000, MAX ROWS PER TICK 10000)"
EVENTS_PER_TICK = 10_000
CHECKPOINTS = (1, 10, 25, 50, 100, 200)
#: views added one per tick up to this count (the add-delay measurement), then batches
SINGLE_ADDS = 25


# ---------------------------------------------------------------------- the views


@dataclass(frozen=True)
class ViewSpec:
    """One view: its name, shape (`family`), whether it reads a shared aggregate, and its
    query with ``{bid}``/``{auction}`` for the tables (``nx.bid`` in the service, the
    reference's temporary views in the check)."""

    name: str
    family: str
    shared: bool
    template: str

    def sql(self, bid: str = "nx.bid", auction: str = "nx.auction") -> str:
        return self.template.format(bid=bid, auction=auction)

    def create(self) -> str:
        return f"CREATE VIEW {self.name} AS {self.sql()}"


#: the two shared aggregates: every view of family S reads one of them, unchanged (its
#: sub-plan has one fingerprint, so the service builds it, and its arrangement, once)
SHARED_BY_AUCTION = "SELECT auction, SUM(price) AS total, COUNT(*) AS n FROM {bid} GROUP BY auction"
SHARED_BY_BIDDER = "SELECT bidder, COUNT(*) AS n, MAX(price) AS top FROM {bid} GROUP BY bidder"


def unshared_spec(name: str, j: int) -> ViewSpec:
    """Family A: bid sums per auction over a slice of the bidders (own arrangement)."""
    m = 101 + 2 * (j // 101)
    return ViewSpec(
        name,
        "A",
        False,
        "SELECT auction, SUM(price) AS total, COUNT(*) AS n FROM {bid} "
        f"WHERE bidder % {m} = {j % 101} GROUP BY auction",
    )


def shared_spec(name: str, j: int, by_bidder: bool | None = None) -> ViewSpec:
    """Family S: a filter over one of the shared aggregates."""
    if by_bidder is None:
        by_bidder = j % 2 == 1
    if by_bidder:
        return ViewSpec(
            name,
            "S",
            True,
            f"SELECT bidder, n, top FROM ({SHARED_BY_BIDDER}) WHERE n >= {1 + j // 2}",
        )
    return ViewSpec(
        name,
        "S",
        True,
        f"SELECT auction, total, n FROM ({SHARED_BY_AUCTION}) WHERE total > {5000 * (j // 2)}",
    )


def view_specs(n: int) -> list[ViewSpec]:
    """`n` views: every third reads a shared aggregate (family S); the others cycle
    through A (bid sums per auction, a bidder slice), B (sellers' auctions of one
    category: count and top initial bid) and C (top bid per auction above a price, an
    auction slice), each with its own parameters."""
    out: list[ViewSpec] = []
    counts = {"A": 0, "B": 0, "C": 0, "S": 0}
    for i in range(n):
        if i % 3 == 2:
            family = "S"
        else:
            family = "ABC"[(i - i // 3) % 3]
        j = counts[family]
        counts[family] += 1
        name = f"v{i:03d}_{family.lower()}"
        if family == "A":
            out.append(unshared_spec(name, j))
        elif family == "B":
            out.append(
                ViewSpec(
                    name,
                    "B",
                    False,
                    "SELECT seller, COUNT(*) AS n, MAX(initial_bid) AS top FROM {auction} "
                    f"WHERE category = {10 + j % 5} AND seller % 17 = {(j // 5) % 17} "
                    "GROUP BY seller",
                )
            )
        elif family == "C":
            out.append(
                ViewSpec(
                    name,
                    "C",
                    False,
                    "SELECT auction, MAX(price) AS top, COUNT(*) AS n FROM {bid} "
                    f"WHERE price > {1000 * (j % 7)} AND auction % 13 = {(j // 7) % 13} "
                    "GROUP BY auction",
                )
            )
        else:
            out.append(shared_spec(name, j))
    return out


# ---------------------------------------------------------------------- measuring


@dataclass
class TickRecord:
    """One tick as the service ran it: its report's numbers, the wall time it ended
    (its times sealed, its sinks and publishers served), and the views it held."""

    tick: int
    into_time: int
    frontier: int | None
    rows_in: int
    seconds: float
    end_wall: float
    hydrating: int
    views: int


class Recorder:
    """A tick observer of the service's dataflow: one `TickRecord` per tick."""

    def __init__(self, service: Any) -> None:
        self.service = service
        self.ticks: list[TickRecord] = []
        self._cond = threading.Condition()

    def __call__(self, engine: Any, report: Any) -> None:
        rec = TickRecord(
            report.tick,
            report.into_time,
            report.frontier,
            report.rows_in,
            report.seconds,
            time.time(),
            len(engine.hydrating()),
            len(self.service.views),
        )
        with self._cond:
            self.ticks.append(rec)
            self._cond.notify_all()

    def wait(self, n: int, timeout: float = 3600) -> list[TickRecord]:
        """The next `n` ticks (waits for them)."""
        with self._cond:
            start = len(self.ticks)
            deadline = time.monotonic() + timeout
            while len(self.ticks) < start + n:
                left = deadline - time.monotonic()
                if left <= 0 or self.service.failure is not None:
                    raise RuntimeError(
                        f"waited for {n} ticks: {self.service.failure or 'timed out'}"
                    )
                self._cond.wait(min(left, 1.0))
            return list(self.ticks[start : start + n])


def pct(values: Sequence[float], q: float) -> float | None:
    """The `q` percentile (linear interpolation; over ~10 ticks p99 is about the max)."""
    if not values:
        return None
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q))


def load() -> float:
    return round(os.getloadavg()[0], 1)


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            out.append(child)
            stack.append(child)
    return out


def _is_java(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"java" in f.read().split(b"\0")[0]
    except OSError:
        return False


def memory(exclude: Sequence[int] = ()) -> dict[str, float]:
    """This process's RSS, its JVM's (the Spark driver) and the Python workers' (MB);
    `exclude`: child processes that are not the service's (the subscribers)."""
    skip = set(exclude)
    for pid in exclude:
        skip.update(_descendants(pid))
    kids = [p for p in _descendants(os.getpid()) if p not in skip]
    jvm = sum(_rss_mb(p) for p in kids if _is_java(p))
    workers = sum(_rss_mb(p) for p in kids if not _is_java(p))
    return {
        "python_mb": round(_rss_mb(os.getpid()), 1),
        "jvm_mb": round(jvm, 1),
        "workers_mb": round(workers, 1),
    }


def tick_stats(ticks: Sequence[TickRecord]) -> dict[str, Any]:
    secs = [t.seconds for t in ticks]
    gaps = [b.end_wall - a.end_wall for a, b in zip(ticks, ticks[1:])]
    return {
        "ticks": len(ticks),
        "p50": pct(secs, 50),
        "p99": pct(secs, 99),
        "seal_interval_p50": pct(gaps, 50),
        "rows_per_tick": statistics.median(t.rows_in for t in ticks) if ticks else None,
        "events_per_s": (
            sum(t.rows_in for t in ticks[1:]) / (ticks[-1].end_wall - ticks[0].end_wall)
            if len(ticks) > 2
            else None
        ),
    }


# ---------------------------------------------------------------------- the service


@contextlib.contextmanager
def no_fusion() -> Iterator[None]:
    """Services built inside run their keyed operators each alone (``fuse=False``).

    `ServiceSettings` has no fuse setting: this replaces the `Dataflow` class the
    service builds (``sealtime.flow.Dataflow``, imported when the service opens) for the
    A/B only."""
    import sealtime.flow as flow_module

    original = flow_module.Dataflow

    class Unfused(original):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            kwargs["fuse"] = False
            super().__init__(*args, **kwargs)

    flow_module.Dataflow = Unfused  # type: ignore[misc]
    try:
        yield
    finally:
        flow_module.Dataflow = original  # type: ignore[misc]


class Server:
    """A `Service` on a fresh data dir with its wire front end and a `Recorder`."""

    def __init__(self, spark: Any, work: Path, label: str, *, fuse: bool = True) -> None:
        from sealtime.serve.pgwire import PgServer
        from sealtime.serve.service import Service, ServiceSettings
        from sealtime.serve.session import ServiceBackend

        self.data_dir = tempfile.mkdtemp(prefix=f"{label}-", dir=work)
        settings = ServiceSettings(data_dir=self.data_dir, tick="1s")
        with no_fusion() if not fuse else contextlib.nullcontext():
            self.service = Service(settings, spark=spark).start()
        self.recorder = Recorder(self.service)
        self.service.flow.tick_observers.append(self.recorder)
        self.pg = PgServer(ServiceBackend(self.service), port=0).start()
        self.service.create(SOURCE_SQL, "bench")

    @property
    def dsn(self) -> str:
        return self.pg.dsn()

    def create(self, specs: Sequence[ViewSpec], *, live: bool = True) -> list[dict[str, Any]]:
        """Create `specs` at once (queued together: applied between the same two ticks
        when the ticker is free), then wait until they are live. Per view: the wall
        times of the request, of the reply (applied) and of live, and the ticks of
        history it hydrated from."""
        ticks_before = self.service.ticks
        out: list[dict[str, Any]] = []

        def one(spec: ViewSpec) -> dict[str, Any]:
            t0 = time.time()
            self.service.create(spec.create(), "bench")
            return {"view": spec.name, "asked": t0, "applied": time.time()}

        with ThreadPoolExecutor(max(1, len(specs))) as pool:
            out = list(pool.map(one, specs))
        if live:
            for row, spec in zip(out, specs):
                self.service.wait_live(spec.name, timeout=3600)
                row["live"] = time.time()
                row["history_ticks"] = ticks_before
        return out

    def create_published(self, spec: ViewSpec) -> dict[str, Any]:
        """CREATE VIEW and ``PUBLISH v AS VIEW`` applied to the engine together.

        A workaround, for this benchmark only: a PUBLISH of a view that is already in
        the engine never delivers (the engine's `LivePlan.extend` adds a new sink only
        with new nodes: a sink alone on a live view is dropped, so subscribers get an
        empty snapshot and no progress). Applied with the view's nodes, the publication
        hydrates with the view. This does what `Service.create` does for the two
        statements, with one `apply_changes` between them and the catalog."""
        from sealtime.serve.catalog import ObjectKind
        from sealtime.sql.statements import parse_statement, split

        svc = self.service
        topic = f"{spec.name}_pub"
        stmts = split(f"{spec.create()}; PUBLISH {spec.name} AS VIEW WITH (TOPIC '{topic}')")
        view, publish = (parse_statement(s) for s in stmts)

        def apply() -> None:
            reads = svc._build(view)
            svc._build(publish)
            svc.flow.apply_changes()
            svc._hydrating.add(spec.name)
            svc.catalog.add(
                ObjectKind.VIEW, spec.name, stmts[0].source_text, owner="bench", depends=reads
            )
            svc.catalog.add(
                ObjectKind.PUBLICATION,
                topic,
                stmts[1].source_text,
                owner="bench",
                depends=(spec.name,),
            )
            svc._save_ids()

        t0, history = time.time(), svc.ticks
        svc.submit(apply)
        row = {"view": spec.name, "asked": t0, "applied": time.time(), "history_ticks": history}
        svc.wait_live(spec.name, timeout=3600)
        row["live"] = time.time()
        row["address"] = list(svc.flow.publications[topic].address)
        return row

    def close(self) -> None:
        self.pg.close()
        self.service.close()


# ---------------------------------------------------------------------- subscribers


def subscribers_main(config_path: str) -> None:
    """The subscriber process: pub-sub view subscriptions and pgwire cursor
    subscriptions, one thread each; 'ready' on stdout once all are connected; on a line
    on stdin (or its end) they stop and the results go to ``config['out']``."""
    import psycopg
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sealtime.pubsub import Closed, Epoch, Progress, Snapshot, subscribe_view

    config = json.loads(Path(config_path).read_text())
    threading.stack_size(512 * 1024)
    stop = threading.Event()
    results: list[dict[str, Any]] = []
    lock = threading.Lock()
    connected = threading.Semaphore(0)

    def pubsub(i: int, view: str, address: list[Any], keep: bool) -> None:
        rec: dict[str, Any] = {"kind": "pubsub", "view": view, "batches": [], "error": None}
        acc: list[tuple[int | None, pa.Table]] = []  # (time: None for the snapshot)
        lower = None
        try:
            sub = subscribe_view(tuple(address), timeout=120)
        except Exception as exc:  # (recorded: a subscriber that could not connect)
            rec["error"] = f"connect: {exc}"
            connected.release()
            with lock:
                results.append(rec)
            return
        rec["connected"] = time.time()
        connected.release()
        try:
            while not stop.is_set():
                ev = sub.next_event(timeout=1.0)
                if ev is None:
                    continue
                now = time.time()
                if isinstance(ev, Epoch):
                    rec["batches"].append((int(ev.time), now))
                    if keep:
                        acc.append((int(ev.time), ev.table))
                elif isinstance(ev, Snapshot):
                    rec["snapshot_as_of"] = [int(t) for t in ev.as_of.elements()]
                    if keep:
                        acc.append((None, ev.table))
                elif isinstance(ev, Progress):
                    elems = list(ev.lower.elements())
                    lower = int(elems[0]) if elems else None
                elif isinstance(ev, Closed):
                    rec["error"] = f"closed: {ev.reason}"
                    break
        except Exception as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            sub.close()
        if keep and acc and lower is not None:
            path = Path(config["out"]).with_name(f"acc_{view}.parquet")
            # (the contents before `lower`: epochs at later times arrived after it)
            cols = [c for c in acc[-1][1].column_names if c != "_time"]
            tables = [t.select(cols) for at, t in acc if t.num_rows and (at is None or at < lower)]
            if tables:
                pq.write_table(pa.concat_tables(tables), path)
                rec["accumulated"] = {"path": str(path), "lower": lower}
        with lock:
            results.append(rec)

    def pgwire(i: int, view: str) -> None:
        rec: dict[str, Any] = {"kind": "pgwire", "view": view, "batches": [], "error": None}
        try:
            conn = psycopg.connect(config["dsn"], autocommit=True, connect_timeout=120)
            cur = conn.cursor()
            cur.execute("BEGIN")
            cur.execute(f"DECLARE c CURSOR FOR SUBSCRIBE {view} WITH (PROGRESS, SNAPSHOT false)")
        except Exception as exc:
            rec["error"] = f"connect: {exc}"
            connected.release()
            with lock:
                results.append(rec)
            return
        rec["connected"] = time.time()
        connected.release()
        try:
            while not stop.is_set():
                cur.execute("FETCH ALL c WITH (timeout = '1s')")
                rows = cur.fetchall()
                now = time.time()
                for t in sorted({int(r[0]) for r in rows if not r[1]}):
                    rec["batches"].append((t, now))
        except Exception as exc:
            rec["error"] = f"{type(exc).__name__}: {exc}"
        finally:
            with contextlib.suppress(Exception):
                conn.close()
        with lock:
            results.append(rec)

    threads = []
    pubs = config["pubsub"]  # [[view, address], ...]
    for i in range(config["n_pubsub"]):
        view, address = pubs[i % len(pubs)]
        keep = i < len(pubs)  # one accumulating subscriber per published view
        threads.append(threading.Thread(target=pubsub, args=(i, view, address, keep)))
    views = config["pg_views"]
    for i in range(config["n_pg"]):
        threads.append(threading.Thread(target=pgwire, args=(i, views[i % len(views)])))
    for th in threads:
        th.start()
        time.sleep(0.005)  # (a thousand handshakes, not all in the same millisecond)
    for _ in threads:
        connected.acquire()
    print("ready", flush=True)
    sys.stdin.readline()
    stop.set()
    for th in threads:
        th.join(30)
    out = {"results": results, "rss_mb": round(_rss_mb(os.getpid()), 1)}
    Path(config["out"]).write_text(json.dumps(out))
    print("done", flush=True)


class Subscribers:
    """The subscriber process (see `subscribers_main`)."""

    def __init__(self, work: Path, config: dict[str, Any]) -> None:
        self.out = work / "subscribers.json"
        config = {**config, "out": str(self.out)}
        cfg = work / "subscribers_config.json"
        cfg.write_text(json.dumps(config))
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--role", "subscribers", "--config", str(cfg)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        t0 = time.time()
        line = self.proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"the subscriber process did not start: {line!r}")
        self.connect_seconds = time.time() - t0

    def rss_mb(self) -> float:
        return round(_rss_mb(self.proc.pid), 1)

    def stop(self) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write("stop\n")
        self.proc.stdin.flush()
        self.proc.wait(600)
        return json.loads(self.out.read_text())


def lag_report(results: Sequence[dict[str, Any]], ticks: Sequence[TickRecord]) -> dict[str, Any]:
    """Per update batch, its lag in ticks (ticks that ended after the one that sealed
    its time and before it arrived) and in seconds (arrival minus that tick's end);
    p99 per subscriber, then the largest and the median of those."""
    fronts = [(t.frontier if t.frontier is not None else 2**62) for t in ticks]
    ends = [t.end_wall for t in ticks]
    per_sub_ticks, per_sub_secs, all_ticks, unmatched = [], [], [], 0
    by_kind: dict[str, list[float]] = {}
    for rec in results:
        lt, ls = [], []
        for t, arrival in rec["batches"]:
            k = bisect.bisect_right(fronts, t)  # the first tick whose frontier passed t
            if k >= len(ticks):
                unmatched += 1
                continue
            later = bisect.bisect_right(ends, arrival) - (k + 1)
            lt.append(max(0, later))
            ls.append(arrival - ends[k])
        if lt:
            per_sub_ticks.append(pct(lt, 99))
            per_sub_secs.append(pct(ls, 99))
            all_ticks.extend(lt)
            by_kind.setdefault(rec["kind"], []).append(pct(lt, 99))
    return {
        "subscribers": len(results),
        "with_batches": len(per_sub_ticks),
        "errors": sorted({r["error"] for r in results if r["error"]})[:5],
        "error_count": sum(1 for r in results if r["error"]),
        "batches": len(all_ticks),
        "unmatched": unmatched,
        "lag_ticks_p99_max": max(per_sub_ticks) if per_sub_ticks else None,
        "lag_ticks_p99_median": pct(per_sub_ticks, 50),
        "lag_ticks_p99_all": pct(all_ticks, 99),
        "lag_seconds_p99_max": max(per_sub_secs) if per_sub_secs else None,
        "lag_seconds_p99_median": pct(per_sub_secs, 50),
        "lag_ticks_p99_max_by_kind": {k: max(v) for k, v in by_kind.items()},
    }


# ---------------------------------------------------------------------- the check


def _position_at(server: Server, into_time: int) -> int:
    """Events the source had logged at times <= `into_time` (the binding's position)."""
    from sealtime.engine.bindings import BindingLog

    bindings = BindingLog(server.service.flow.metadata_store, "sealtime").load()
    best = [b for b in bindings if b.into_time <= into_time and "nx" in b.sources]
    return int(max(best, key=lambda b: b.into_time).sources["nx"].position)


def _reference_tables(spark: Any, events: int) -> None:
    """The Nexmark events 0..`events` as temporary views ``ref_bid``/``ref_auction``."""
    from sealtime.sources.nexmark import Nexmark

    parts = Nexmark(rate=10_000).split(Nexmark(rate=10_000).generate(0, events))
    bid = parts["bid"].select(["auction", "bidder", "price"])
    auction = parts["auction"].select(["id", "seller", "category", "initial_bid"])
    for name, table in (("ref_bid", bid), ("ref_auction", auction)):
        if spark.catalog.tableExists(name):
            spark.catalog.uncacheTable(name)
        frame = spark.createDataFrame(table).cache()  # (read by every view's query)
        frame.createOrReplaceTempView(name)


def _rows(values: Any) -> list[tuple[Any, ...]]:
    out = []
    for row in values:
        out.append(tuple(float(v) if isinstance(v, float) else v for v in row))
    return sorted(out, key=repr)


def _consolidated(table: Any) -> list[tuple[Any, ...]]:
    """Rows of an update table (with ``_diff``) accumulated: each row its count times."""
    from collections import Counter

    data = [c for c in table.column_names if not c.startswith("_")]
    counts: Counter = Counter()
    for row in zip(*(table.column(c).to_pylist() for c in data), table.column("_diff").to_pylist()):
        counts[row[:-1]] += row[-1]
    out = []
    for row, n in counts.items():
        if n < 0:
            raise AssertionError(f"negative multiplicity {n} for {row}")
        out.extend([row] * n)
    return _rows(out)


def check_views(
    spark: Any,
    server: Server,
    specs: Sequence[ViewSpec],
    accumulated: Sequence[dict[str, Any]],
    step: int = 1,
) -> dict[str, Any]:
    """Every view's contents at the last sealed time (SELECT ... AS OF over pgwire) and
    the accumulated pub-sub subscriptions, against spark.sql over the logged events.
    `step`: every view (1) or every `step`-th."""
    by_name = {s.name: s for s in specs}
    specs = specs[::step]
    import psycopg
    import pyarrow.parquet as pq

    last = server.recorder.ticks[-1]
    as_of = last.into_time
    got: dict[str, list[tuple[Any, ...]]] = {}
    t0 = time.time()
    with psycopg.connect(server.dsn, autocommit=True) as conn:
        for spec in specs:  # (every view, or every k-th: --check-views)
            got[spec.name] = _rows(conn.execute(f"SELECT * FROM {spec.name} AS OF {as_of}"))
    read_s = time.time() - t0
    out: dict[str, Any] = {"as_of": as_of, "views": len(specs), "mismatched": [], "rows": 0}
    t0 = time.time()

    def compare(tag: str, spec: ViewSpec, rows: list[tuple[Any, ...]]) -> None:
        want = _rows(spark.sql(spec.sql("ref_bid", "ref_auction")).collect())
        out["rows"] += len(want)
        if rows != want:
            out["mismatched"].append(
                {"view": spec.name, "what": tag, "got": len(rows), "want": len(want)}
            )

    _reference_tables(spark, _position_at(server, as_of))
    for spec in specs:
        compare("select", spec, got[spec.name])
    out["events"] = _position_at(server, as_of)
    subs = []
    for acc in accumulated:
        at = acc["lower"] - 1  # (every update before the lower frontier arrived)
        _reference_tables(spark, _position_at(server, at))
        table = pq.read_table(acc["path"])
        compare(f"pubsub@{at}", by_name[acc["view"]], _consolidated(table))
        subs.append(acc["view"])
    out["subscriptions_checked"] = subs
    out["select_seconds"] = round(read_s, 1)
    out["reference_seconds"] = round(time.time() - t0, 1)
    out["ok"] = not out["mismatched"]
    return out


# ---------------------------------------------------------------------- phases


def measure(server: Server, window: int, subs: Subscribers | None = None) -> dict[str, Any]:
    """Tick stats over the next `window` ticks (after two to settle), memory, load."""
    server.recorder.wait(2)
    ticks = server.recorder.wait(window)
    row = {**tick_stats(ticks), **memory([subs.proc.pid] if subs else []), "load": load()}
    row["subscriber_mb"] = subs.rss_mb() if subs is not None else None
    row["first_tick"], row["last_tick"] = ticks[0].tick, ticks[-1].tick
    return row


def phase_growth(spark: Any, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    specs = view_specs(args.views)
    server = Server(spark, work, "growth")
    created: list[dict[str, Any]] = []
    checkpoints: list[dict[str, Any]] = []
    subs: Subscribers | None = None
    marks = [c for c in CHECKPOINTS if c < args.views] + [args.views]
    n_pub = min(args.published, args.views)
    t_start = time.time()
    try:
        server.recorder.wait(2)  # (the source's first ticks)
        i = 0
        pubs = []
        while i < len(specs):
            if i < n_pub:  # (published with their views: see `Server.create_published`)
                row = server.create_published(specs[i])
                pubs.append([specs[i].name, row.pop("address")])
                created.append(row)
                i += 1
            else:
                size = 1 if i < SINGLE_ADDS else args.batch
                nxt = min(m for m in marks if m > i)
                batch = specs[i : min(i + size, nxt)]
                created.extend(server.create(batch))
                i += len(batch)
            print(f"{i} views ({time.time() - t_start:.0f} s, load {load()})", flush=True)
            if i == n_pub and subs is None:
                subs = Subscribers(
                    work,
                    {
                        "dsn": server.dsn,
                        "pubsub": pubs,
                        "n_pubsub": args.subscribers,
                        "pg_views": [s.name for s in specs[:n_pub]],
                        "n_pg": args.pg_subscribers,
                    },
                )
                print(f"subscribers connected in {subs.connect_seconds:.0f} s", flush=True)
            if i in marks:
                row = {"views": i, **measure(server, args.window, subs)}
                row["subscribers"] = subs is not None
                checkpoints.append(row)
                print(json.dumps(row), flush=True)
        snap = server.service.flow.engine.snapshot()
        arrangements = sorted({o.state_dir for o in snap.operators if o.stateful and o.state_dir})
        fused = sum(1 for o in snap.operators if o.fused_with)
        result: dict[str, Any] = {
            "views": args.views,
            "checkpoints": checkpoints,
            "arrangements": len(arrangements),
            "operators": len(snap.operators),
            "fused_operators": fused,
            "created": created,
        }
        if subs is not None:
            sub_out = subs.stop()
            subs = None
            ticks = server.recorder.ticks
            result["lag"] = lag_report(sub_out["results"], ticks)
            steady = [c for c in checkpoints if c["views"] == args.views][0]
            since = next(t.end_wall for t in ticks if t.tick == steady["first_tick"])
            window = [
                {**r, "batches": [b for b in r["batches"] if b[1] >= since]}
                for r in sub_out["results"]
            ]
            result["lag_at_max_views"] = lag_report(window, ticks)
            result["subscriber_process_mb"] = sub_out["rss_mb"]
            accumulated = [
                r["accumulated"] | {"view": r["view"]}
                for r in sub_out["results"]
                if r.get("accumulated")
            ]
        else:
            accumulated = []
        result["add_delay"] = add_delay(server.recorder.ticks, created)
        step = max(1, len(specs) // args.check_views) if args.check_views else 1
        result["check"] = check_views(spark, server, specs, accumulated, step)
        result["ticks"] = [asdict(t) for t in server.recorder.ticks]
        return result
    finally:
        if subs is not None:
            with contextlib.suppress(Exception):
                subs.stop()
        server.close()


def add_delay(ticks: Sequence[TickRecord], created: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Seal intervals (end of one tick to the end of the next) of the ticks right after
    a single view was applied, against the other ticks at the same view count."""
    ends = [t.end_wall for t in ticks]
    single = [c for c in created if int(c["view"][1:4]) < SINGLE_ADDS]
    rows = []
    touched: set[int] = set()
    for c in single:
        k = bisect.bisect_left(ends, c["applied"])  # the first tick ending after the add
        if 0 < k < len(ticks):
            touched.add(k)
            rows.append((ticks[k].views, ends[k] - ends[k - 1], ticks[k].seconds))
    quiet = [
        (t.views, ends[k] - ends[k - 1], t.seconds)
        for k, t in enumerate(ticks)
        if k > 0 and k not in touched and t.hydrating == 0 and t.views <= SINGLE_ADDS
    ]
    quiet_gap = pct([q[1] for q in quiet], 50)
    delays = [r[1] - quiet_gap for r in rows] if quiet_gap is not None else []
    return {
        "adds": len(rows),
        "seal_interval_after_add_p50": pct([r[1] for r in rows], 50),
        "seal_interval_after_add_max": max((r[1] for r in rows), default=None),
        "seal_interval_quiet_p50": quiet_gap,
        "tick_seconds_after_add_p50": pct([r[2] for r in rows], 50),
        "tick_seconds_quiet_p50": pct([q[2] for q in quiet], 50),
        "extra_delay_p50": pct(delays, 50),
        "extra_delay_max": max(delays, default=None),
        "hydrating_tick_seconds_p50": pct(
            [t.seconds for t in ticks if t.hydrating and t.views <= SINGLE_ADDS], 50
        ),
    }


def phase_sharing(spark: Any, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    n = args.share_views
    server = Server(spark, work, "sharing")
    try:
        server.recorder.wait(2)
        server.create([shared_spec("base", 0, by_bidder=False)])
        base = measure(server, args.window)
        unshared = [unshared_spec(f"u{j:02d}", j) for j in range(n)]
        server.create(unshared)
        with_unshared = measure(server, args.window)
        for spec in unshared:
            server.service.drop("VIEW", spec.name, if_exists=False, cascade=False)
        base_again = measure(server, args.window)
        shared = [shared_spec(f"s{j:02d}", j + 1, by_bidder=False) for j in range(n)]
        server.create(shared)
        with_shared = measure(server, args.window)
        snap = server.service.flow.engine.snapshot()
        arrangements = len({o.state_dir for o in snap.operators if o.stateful and o.state_dir})
    finally:
        server.close()
    u = (with_unshared["p50"] - base["p50"]) / n
    s = (with_shared["p50"] - base_again["p50"]) / n
    return {
        "views": n,
        "base": base,
        "with_unshared": with_unshared,
        "base_again": base_again,
        "with_shared": with_shared,
        "marginal_unshared_s": u,
        "marginal_shared_s": s,
        "ratio": s / u if u > 0 else None,
        "arrangements_at_end": arrangements,
    }


def phase_hydration(spark: Any, work: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    warm = Server(spark, work, "hydration-warm-up")  # (not measured: a cold JVM's first view)
    try:
        warm.recorder.wait(1)
        warm.create([unshared_spec("h", 7)])
    finally:
        warm.close()
    for history in args.history:
        server = Server(spark, work, f"hydration{history}")
        try:
            server.recorder.wait(history)
            (made,) = server.create([unshared_spec("h", 7)])
            server.recorder.wait(1)  # (the tick that merged it is still running at live)
            during = [  # (the ticks that ran while it hydrated: its last one ends after)
                t
                for t in server.recorder.ticks
                if t.end_wall >= made["asked"] and t.end_wall - t.seconds <= made["live"]
            ]
            rows.append(
                {
                    "history_ticks": server.service.ticks,
                    "history_events": _position_at(server, server.recorder.ticks[-1].into_time),
                    "create_s": made["applied"] - made["asked"],
                    "create_to_live_s": made["live"] - made["asked"],
                    "ticks_until_live": len(during),
                    "tick_p50_meanwhile": pct([t.seconds for t in during], 50),
                    "load": load(),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
        finally:
            server.close()
    return rows


def phase_fuse(spark: Any, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    specs = view_specs(args.ab_views)
    out = {}
    for label, fuse in (("fused", True), ("unfused", False)):
        server = Server(spark, work, label, fuse=fuse)
        try:
            server.recorder.wait(1)
            t0 = time.time()
            server.create(specs)
            out[f"{label}_create_s"] = time.time() - t0
            out[label] = measure(server, args.window)
            print(label, json.dumps(out[label]), flush=True)
        finally:
            server.close()
    out["views"] = args.ab_views
    return out


def phase_steady(spark: Any, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """``--views`` views created in batches of 50, then windows of ``--window`` ticks
    with the sink stage collecting together, alone, together again (one process: an
    A/B/A of `SinkStage.together` at a fixed view count)."""
    specs = view_specs(args.views)
    server = Server(spark, work, "steady")
    out: dict[str, Any] = {"views": args.views, "windows": []}
    try:
        server.recorder.wait(2)
        t0 = time.time()
        for i in range(0, len(specs), 50):
            server.create(specs[i : i + 50])
            print(f"{min(i + 50, len(specs))} views ({time.time() - t0:.0f} s)", flush=True)
        out["create_s"] = time.time() - t0
        sinks = server.service.flow.engine.sinks
        for label, together in (("together", True), ("alone", False), ("together", True)):
            sinks.together = together
            row = {"collect": label, **measure(server, args.window)}
            out["windows"].append(row)
            print(json.dumps(row), flush=True)
    finally:
        server.close()
    return out


# ---------------------------------------------------------------------- report


def _f(v: Any, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def _run_line(data: dict[str, Any], phase: str) -> list[str]:
    run = data.get(f"{phase}_run")
    if not run:
        return []
    loads = (
        f"; load average {run['load_before']} before, {run.get('load_after', '?')} after"
        if "load_before" in run
        else "; load average in each row"
    )
    return ["", f"Run {run['started']}, `{run['command']}`, {run['revision']}{loads}."]


def render(data: dict[str, Any]) -> str:
    lines = ["## Live service at scale (bench/live_views.py)", ""]
    if "machine" in data:
        machine = data["machine"].split("; run ")[0]  # (each phase says when it ran)
        lines.append(f"Machine: {machine} (shared with other engineers' runs).")
    g = data.get("growth")
    if g:
        lines += [
            "",
            f"### Growth to {g['views']} views",
            *_run_line(data, "growth"),
            "",
            "| views | tick p50 s | tick p99 s | seal interval p50 s | events/s | "
            "python MB | JVM MB | workers MB | subscriber process MB | load |",
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for c in g["checkpoints"]:
            lines.append(
                f"| {c['views']} | {_f(c['p50'])} | {_f(c['p99'])} | "
                f"{_f(c['seal_interval_p50'])} | {_f(c['events_per_s'], 0)} | "
                f"{c['python_mb']:.0f} | {c['jvm_mb']:.0f} | {c['workers_mb']:.0f} | "
                f"{_f(c.get('subscriber_mb'), 0)} | {c['load']} |"
            )
        lines += [
            "",
            f"* Arrangements at the end: {g['arrangements']} (operators {g['operators']}, "
            f"in fused groups {g['fused_operators']}).",
        ]
        for key, title in (("lag", "whole run"), ("lag_at_max_views", "at the last view count")):
            if key in g:
                lag = g[key]
                lines.append(
                    f"* Subscriber lag ({title}): {lag['subscribers']} subscribers, "
                    f"{lag['batches']} batches; p99 per subscriber, max "
                    f"{_f(lag['lag_ticks_p99_max'])} ticks (median "
                    f"{_f(lag['lag_ticks_p99_median'])}), by kind "
                    f"{ {k: round(v, 2) for k, v in lag['lag_ticks_p99_max_by_kind'].items()} }; "
                    f"seconds p99 max {_f(lag['lag_seconds_p99_max'])}; "
                    f"errors {lag['error_count']} {lag['errors']}."
                )
        d = g["add_delay"]
        lines.append(
            f"* Adding a view (one at a time, {d['adds']} adds): seal interval after the add "
            f"p50 {_f(d['seal_interval_after_add_p50'])} s (max "
            f"{_f(d['seal_interval_after_add_max'])}), other ticks p50 "
            f"{_f(d['seal_interval_quiet_p50'])} s; extra delay p50 "
            f"{_f(d['extra_delay_p50'])} s, max {_f(d['extra_delay_max'])} s."
        )
        c = g["check"]
        lines.append(
            f"* Check: {c['views']} views AS OF {c['as_of']} ({c['events']} events, "
            f"{c['rows']} reference rows) and the subscriptions of "
            f"{len(c['subscriptions_checked'])} published views against spark.sql: "
            + ("all equal." if c["ok"] else f"MISMATCHED {c['mismatched']}")
        )
        hyd = sorted(
            (r["history_ticks"], r["live"] - r["asked"]) for r in g["created"] if "live" in r
        )
        if hyd:
            lines.append(
                f"* CREATE -> live in the growth run: first view {_f(hyd[0][1], 1)} s, "
                f"last {_f(hyd[-1][1], 1)} s (after {hyd[-1][0]} ticks), median "
                f"{_f(pct([h[1] for h in hyd], 50), 1)} s."
            )
    s = data.get("sharing")
    if s:
        lines += [
            "",
            f"### Shared vs unshared ({s['views']} views each)",
            *_run_line(data, "sharing"),
            "",
            "| state | tick p50 s | load |",
            "|---|---:|---:|",
        ]
        for key in ("base", "with_unshared", "base_again", "with_shared"):
            lines.append(f"| {key} | {_f(s[key]['p50'])} | {s[key]['load']} |")
        lines.append(
            f"\nMarginal tick cost per view: unshared {_f(s['marginal_unshared_s'], 3)} s, "
            f"shared {_f(s['marginal_shared_s'], 3)} s (ratio {_f(s['ratio'])})."
        )
    h = data.get("hydration")
    if h:
        lines += [
            "",
            "### Hydration against history",
            *_run_line(data, "hydration"),
            "",
            "| history ticks | events | CREATE s | CREATE -> live s | ticks until live | "
            "tick p50 meanwhile | load |",
            "|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for r in h:
            lines.append(
                f"| {r['history_ticks']} | {r['history_events']} | {_f(r['create_s'])} | "
                f"{_f(r['create_to_live_s'])} | {r['ticks_until_live']} | "
                f"{_f(r['tick_p50_meanwhile'])} | {r['load']} |"
            )
    f = data.get("fuse")
    if f:
        lines += [
            "",
            f"### Fused vs unfused ({f['views']} views)",
            *_run_line(data, "fuse"),
            "",
            "| | tick p50 s | tick p99 s | create all s | load |",
            "|---|---:|---:|---:|---:|",
        ]
        for key in ("fused", "unfused"):
            lines.append(
                f"| {key} | {_f(f[key]['p50'])} | {_f(f[key]['p99'])} | "
                f"{_f(f[f'{key}_create_s'], 1)} | {f[key]['load']} |"
            )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--role", default="server", choices=("server", "subscribers"))
    p.add_argument("--config", help=argparse.SUPPRESS)
    p.add_argument("--phases", default="hydration,growth,sharing,fuse")
    p.add_argument("--views", type=int, default=200)
    p.add_argument("--batch", type=int, default=8, help="views per add after the first 25")
    p.add_argument("--published", type=int, default=10, help="views published AS VIEW")
    p.add_argument("--subscribers", type=int, default=1000, help="pub-sub subscribers")
    p.add_argument("--pg-subscribers", type=int, default=50, help="pgwire subscribers")
    p.add_argument("--window", type=int, default=10, help="ticks per measurement")
    p.add_argument("--share-views", type=int, default=20)
    p.add_argument("--history", type=int, nargs="+", default=[1, 5, 20])
    p.add_argument("--ab-views", type=int, default=25)
    p.add_argument("--check-views", type=int, default=0, help="check every k-th view (0: all)")
    p.add_argument("--quick", action="store_true", help="20 views, 100 + 10 subscribers")
    p.add_argument("--report", action="store_true", help="only render the markdown")
    p.add_argument("--work-dir", default=None)
    p.add_argument("--results", default=None, help="name of the results files (default live_views)")
    args = p.parse_args(argv)
    if args.role == "subscribers":
        subscribers_main(args.config)
        return
    if args.quick:
        args.views, args.subscribers, args.pg_subscribers, args.published = 20, 100, 10, 5
        args.window, args.share_views, args.history, args.ab_views = 5, 5, [1, 5], 10
    name = args.results or ("live_views_quick" if args.quick else "live_views")
    # (bench/collect.py assembles BENCHMARKS.md from bench/results/*.md: only the full
    # run's results go there, smoke and other runs one level down)
    folder = RESULTS if name == "live_views" else RESULTS / "live_views_runs"
    folder.mkdir(parents=True, exist_ok=True)
    json_path, md_path = folder / f"{name}.json", folder / f"{name}.md"
    data: dict[str, Any] = json.loads(json_path.read_text()) if json_path.exists() else {}
    if not args.report:
        from bench.machine import describe, revision
        from sealtime.spark.session import get_or_create_session

        work = Path(args.work_dir or tempfile.mkdtemp(prefix="live_views-"))
        work.mkdir(parents=True, exist_ok=True)
        spark = get_or_create_session(app_name="live_views")
        data.update(
            machine=describe(),
            revision=revision(),
            command="python bench/live_views.py "
            + " ".join(map(shlex.quote, argv or sys.argv[1:])),
        )
        phases = {
            "growth": phase_growth,
            "sharing": phase_sharing,
            "hydration": phase_hydration,
            "fuse": phase_fuse,
            "steady": phase_steady,
        }
        for phase in args.phases.split(","):
            t0 = time.time()
            data[f"{phase}_run"] = {
                "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                "revision": data["revision"],
                "command": data["command"],
                "load_before": load(),
            }
            data[phase] = phases[phase](spark, work, args)
            data[f"{phase}_run"]["load_after"] = load()
            print(f"phase {phase}: {time.time() - t0:.0f} s", flush=True)
            json_path.write_text(json.dumps(data, indent=1, default=str))
    md_path.write_text(render(data))
    print(md_path.read_text())


if __name__ == "__main__":
    main()
