"""Shard semantics on SQLite and PostgreSQL: compare_and_append, snapshots, listen, since,
compaction, garbage collection, concurrency, and a property test against a brute-force model."""

from __future__ import annotations

import collections
import multiprocessing
import os
import threading
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sealtime.storage import (
    InvalidBatchError,
    MetadataStore,
    NotYetAvailableError,
    ReadBelowSinceError,
    Shard,
    ShardExistsError,
    ShardNotFoundError,
    SinceError,
    UpperMismatchError,
)
from tests.conftest import examples

SCHEMA = pa.schema([("w", pa.string())])


def updates(*rows: tuple[str, int, int]) -> pa.Table:
    """A batch from (w, _time, _diff) triples."""
    return pa.table(
        {
            "w": pa.array([r[0] for r in rows], pa.string()),
            "_time": pa.array([r[1] for r in rows], pa.int64()),
            "_diff": pa.array([r[2] for r in rows], pa.int64()),
        }
    )


def as_multiset(table: pa.Table) -> collections.Counter:
    """(w, _time) -> summed diff, zeros dropped: compares update sets order-independently."""
    acc: collections.Counter = collections.Counter()
    for r in table.to_pylist():
        acc[(r["w"], r["_time"])] += r["_diff"]
    return collections.Counter({k: v for k, v in acc.items() if v != 0})


def data_files(shard: Shard) -> set[str]:
    out = set()
    for dirpath, _, names in os.walk(shard.directory):
        for n in names:
            out.add(os.path.relpath(os.path.join(dirpath, n), shard.directory))
    return out


@pytest.fixture
def shard(store, tmp_path) -> Shard:
    return Shard.create(store, "s", SCHEMA, tmp_path / "data")


# ------------------------------------------------------------------ lifecycle


def test_create_open_exists(store, tmp_path):
    root = tmp_path / "data"
    assert not Shard.exists(store, "a/b c")
    s = Shard.create(store, "a/b c", SCHEMA, root, lower=5)
    assert Shard.exists(store, "a/b c")
    assert (s.lower, s.upper, s.since) == (5, 5, 5)
    assert os.path.isdir(s.directory) and s.directory.startswith(str(root))
    again = Shard.open(store, "a/b c", root)
    assert again.schema.equals(SCHEMA) and again.lower == 5
    assert Shard.create(store, "a/b c", SCHEMA, root, exist_ok=True).lower == 5
    with pytest.raises(ShardExistsError, match="already exists"):
        Shard.create(store, "a/b c", SCHEMA, root)
    with pytest.raises(ShardExistsError, match="differs"):
        Shard.create(store, "a/b c", pa.schema([("x", pa.int64())]), root, exist_ok=True)
    with pytest.raises(ShardNotFoundError, match="Shard.create"):
        Shard.open(store, "nope", root)


def test_schema_with_time_and_diff_columns_is_accepted(store, tmp_path):
    full = pa.schema([("w", pa.string()), ("_time", pa.int64()), ("_diff", pa.int64())])
    s = Shard.create(store, "full", full, tmp_path)
    assert s.schema.names == ["w"]
    assert s.full_schema.names == ["w", "_time", "_diff"]


# ---------------------------------------------------------- compare_and_append


def test_append_and_mismatch_returns_current_upper_without_trace(shard):
    assert shard.compare_and_append(updates(("a", 0, 1), ("b", 2, 1)), 0, 3).ok
    files_before = data_files(shard)
    batches_before = shard.batches()
    res = shard.compare_and_append(updates(("c", 1, 1)), 0, 2)
    assert not res.ok and res.upper == 3 and res.expected == 0
    res = shard.compare_and_append(updates(("c", 5, 1)), 5, 7)
    assert not res.ok and res.upper == 3
    with pytest.raises(UpperMismatchError, match="expected upper=5 but the shard's upper is 3"):
        res.expect_ok()
    assert shard.upper == 3
    assert shard.batches() == batches_before
    assert data_files(shard) == files_before, "a losing append must leave no file behind"
    assert as_multiset(shard.snapshot_arrow(2)) == {("a", 2): 1, ("b", 2): 1}


def test_append_validates_batches(shard):
    with pytest.raises(
        InvalidBatchError, match=r"_time values in \[0, 5\], outside the appended range \[0, 5\)"
    ):
        shard.compare_and_append(updates(("a", 0, 1), ("b", 5, 1)), 0, 5)
    with pytest.raises(InvalidBatchError, match="outside the appended range"):
        shard.compare_and_append(updates(("a", -1, 1)), 0, 5)
    with pytest.raises(InvalidBatchError, match="missing: \\['_diff'\\]"):
        shard.compare_and_append(pa.table({"w": ["a"], "_time": [0]}), 0, 1)
    with pytest.raises(InvalidBatchError, match="extra: \\['x'\\]"):
        shard.compare_and_append(pa.table({"w": ["a"], "x": [1], "_time": [0], "_diff": [1]}), 0, 1)
    with pytest.raises(InvalidBatchError, match="null"):
        shard.compare_and_append(
            pa.table({"w": ["a"], "_time": pa.array([None], pa.int64()), "_diff": [1]}), 0, 1
        )
    with pytest.raises(InvalidBatchError, match="cannot be cast"):
        shard.compare_and_append(pa.table({"w": [[1]], "_time": [0], "_diff": [1]}), 0, 1)
    with pytest.raises(InvalidBatchError, match="uppers only move forward"):
        shard.compare_and_append(updates(), 3, 2)
    with pytest.raises(InvalidBatchError, match="finished shard"):
        shard.compare_and_append(updates(), None, None)
    assert shard.upper == 0 and shard.batches() == []
    # Column order and castable types are conformed.
    t = pa.table({"_diff": [1], "_time": pa.array([0], pa.int32()), "w": ["a"]})
    assert shard.compare_and_append(t, 0, 1).ok


def test_empty_append_advances_upper_and_none_finishes(shard):
    assert shard.compare_and_append(updates(), 0, 10).ok
    assert shard.upper == 10 and shard.batches() == []
    assert shard.compare_and_append(updates(("a", 10, 1), ("b", 10**12, 1)), 10, None).ok
    assert shard.upper is None
    res = shard.compare_and_append(updates(("c", 11, 1)), 10, 20)
    assert not res.ok and res.upper is None
    assert as_multiset(shard.snapshot_arrow(10**15)) == {("a", 10**15): 1, ("b", 10**15): 1}


def test_ambiguous_retry_after_commit_is_safe(shard, monkeypatch):
    """A crash / lost connection after COMMIT: the caller never learns the result."""
    store = shard.store
    real = store.transaction
    state = {"fail_after_commit": True}

    from contextlib import contextmanager

    @contextmanager
    def flaky(*args, **kwargs):
        with real(*args, **kwargs) as tx:
            yield tx
        if state.pop("fail_after_commit", False) and not kwargs.get("readonly"):
            raise ConnectionError("connection lost after COMMIT")

    batch = updates(("a", 0, 1), ("b", 1, 1))
    monkeypatch.setattr(store, "transaction", flaky)
    with pytest.raises(ConnectionError):
        shard.compare_and_append(batch, 0, 2)
    monkeypatch.setattr(store, "transaction", real)
    # Plain compare_and_append reports the mismatch with upper == new_upper ...
    res = shard.compare_and_append(batch, 0, 2)
    assert not res.ok and res.upper == 2
    # ... which append_idempotent turns into success, without duplicating data.
    res = shard.append_idempotent(batch, 0, 2)
    assert res.ok and res.already_applied and res.upper == 2
    assert len(shard.batches()) == 1
    assert as_multiset(shard.snapshot_arrow(1)) == {("a", 1): 1, ("b", 1): 1}
    assert len(data_files(shard)) == 1, "the retries' own files were deleted"


def test_ambiguous_retry_before_commit_applies_once(shard, monkeypatch):
    store = shard.store
    real = store.transaction
    from contextlib import contextmanager

    @contextmanager
    def dies_before_commit(*args, **kwargs):
        with real(*args, **kwargs) as tx:
            yield tx
            if not kwargs.get("readonly"):
                raise ConnectionError("connection lost before COMMIT")

    batch = updates(("a", 0, 1))
    monkeypatch.setattr(store, "transaction", dies_before_commit)
    with pytest.raises(ConnectionError):
        shard.compare_and_append(batch, 0, 1)
    monkeypatch.setattr(store, "transaction", real)
    assert shard.upper == 0
    res = shard.append_idempotent(batch, 0, 1)
    assert res.ok and not res.already_applied
    assert as_multiset(shard.snapshot_arrow(0)) == {("a", 0): 1}
    # The first attempt's file is an orphan until garbage collection.
    assert len(data_files(shard)) == 2
    shard.collect_garbage(grace_seconds=0)
    assert len(data_files(shard)) == 1
    assert as_multiset(shard.snapshot_arrow(0)) == {("a", 0): 1}


def test_append_idempotent_still_reports_real_mismatches(shard):
    shard.compare_and_append(updates(("a", 0, 1)), 0, 5).expect_ok()
    res = shard.append_idempotent(updates(("x", 7, 1)), 6, 8)  # a gap: upper is 5 < 8
    assert not res.ok and res.upper == 5
    res = shard.append_idempotent(updates(("a", 0, 1)), 0, 3)  # upper 5 >= 3: covered
    assert res.ok and res.already_applied and res.upper == 5
    shard.compare_and_append(updates(), 5, None).expect_ok()
    assert shard.append_idempotent(updates(), 5, 100).already_applied


def test_append_inside_outer_transaction_is_atomic_with_it(shard):
    store = shard.store
    store.ensure_table("CREATE TABLE IF NOT EXISTS t_bind (t BIGINT PRIMARY KEY)")
    with pytest.raises(RuntimeError), store.transaction() as tx:
        assert shard.compare_and_append(updates(("a", 0, 1)), 0, 1).ok
        tx.execute("INSERT INTO t_bind (t) VALUES (?)", (1,))
        raise RuntimeError("abort the whole step")
    assert shard.upper == 0 and store.query("SELECT COUNT(*) FROM t_bind") == [(0,)]
    with store.transaction() as tx:
        assert shard.compare_and_append(updates(("a", 0, 1)), 0, 1).ok
        tx.execute("INSERT INTO t_bind (t) VALUES (?)", (1,))
    assert shard.upper == 1 and store.query("SELECT COUNT(*) FROM t_bind") == [(1,)]


# -------------------------------------------------------------------- snapshots


def test_snapshot_bounds_and_contents(shard):
    shard.compare_and_append(updates(("a", 0, 1), ("b", 1, 2), ("a", 3, -1)), 0, 4).expect_ok()
    shard.compare_and_append(updates(("c", 4, 1)), 4, 6).expect_ok()
    assert len(shard.snapshot(3)) == 1 and len(shard.snapshot(4)) == 2
    snap = shard.snapshot_arrow(2)
    assert snap.schema.names == ["w", "_time", "_diff"]
    assert as_multiset(snap) == {("a", 2): 1, ("b", 2): 2}
    assert as_multiset(shard.snapshot_arrow(5)) == {("b", 5): 2, ("c", 5): 1}
    with pytest.raises(NotYetAvailableError, match="upper=6"):
        shard.snapshot(6)
    shard.downgrade_since(3)
    with pytest.raises(ReadBelowSinceError) as exc:
        shard.snapshot_arrow(2)
    msg = str(exc.value)
    assert "shard 's'" in msg and "since=3" in msg and "at 2" in msg
    assert (exc.value.shard, exc.value.since, exc.value.as_of) == ("s", 3, 2)
    assert as_multiset(shard.snapshot_arrow(3)) == {("b", 3): 2}


def test_downgrade_since_is_monotonic(shard):
    shard.downgrade_since(4)
    shard.downgrade_since(4)
    with pytest.raises(SinceError, match="it is 4, cannot downgrade_since\\(3\\)"):
        shard.downgrade_since(3)
    shard.downgrade_since(None)
    assert shard.since is None
    with pytest.raises(SinceError):
        shard.downgrade_since(10)
    with pytest.raises(ReadBelowSinceError, match="empty frontier"):
        shard.snapshot(10)


# ------------------------------------------------------------ compaction and gc


def test_compaction_preserves_snapshots_and_retires_files(shard):
    for t in range(6):
        rows = [("a", t, 1), ("b", t, 1 if t % 2 == 0 else -1)]
        shard.compare_and_append(updates(*rows), t, t + 1).expect_ok()
    before = {t: as_multiset(shard.snapshot_arrow(t)) for t in range(3, 6)}
    old_files = data_files(shard)
    shard.downgrade_since(3)
    res = shard.compact(grace_seconds=3600)
    assert res is not None and res.batches_in == 4 and res.files_retired == 4
    assert res.rows_in == 8 and res.rows_out == 1  # a x4 at time 3 (b cancels out)
    batches = shard.batches()
    assert [(b.lower, b.upper, b.compacted_to) for b in batches] == [
        (0, 4, 3),
        (4, 5, None),
        (5, 6, None),
    ]
    assert {t: as_multiset(shard.snapshot_arrow(t)) for t in range(3, 6)} == before
    # Retired files stay for the grace period (a concurrent reader may hold them) ...
    assert old_files <= data_files(shard)
    assert shard.collect_garbage(grace_seconds=3600) == 0
    assert shard.compact(grace_seconds=3600) is None  # nothing new to merge
    # ... and go once it has passed.
    assert shard.collect_garbage(grace_seconds=0) == 4
    assert len(data_files(shard)) == 3
    assert {t: as_multiset(shard.snapshot_arrow(t)) for t in range(3, 6)} == before
    shard.downgrade_since(5)
    res = shard.compact(grace_seconds=0)
    assert res is not None and res.batches_in == 3
    assert len(data_files(shard)) == 1
    assert as_multiset(shard.snapshot_arrow(5)) == before[5]


def test_compaction_with_everything_cancelled_and_empty_since(shard):
    shard.compare_and_append(updates(("a", 0, 1)), 0, 1).expect_ok()
    shard.compare_and_append(updates(("a", 1, -1)), 1, 2).expect_ok()
    shard.downgrade_since(1)
    res = shard.compact(grace_seconds=0)
    assert res is not None and res.rows_out == 0
    assert shard.batches() == [] and data_files(shard) == set()
    assert shard.snapshot_arrow(1).num_rows == 0
    shard.compare_and_append(updates(("b", 2, 1)), 2, 3).expect_ok()
    shard.downgrade_since(None)
    assert shard.compact(grace_seconds=0) is not None
    assert shard.batches() == [] and data_files(shard) == set()


def test_collect_garbage_removes_orphans_only(shard):
    shard.compare_and_append(updates(("a", 0, 1)), 0, 1).expect_ok()
    kept = data_files(shard)
    # An orphan batch file (a crash between write and register) and a Spark-style
    # staging directory whose append lost.
    pq.write_table(updates(("zz", 0, 1)), os.path.join(shard.directory, "b-orphan.parquet"))
    staging = shard.new_staging_path()
    os.makedirs(staging)
    pq.write_table(updates(("zz", 1, 1)), os.path.join(staging, "part-0.parquet"))
    open(os.path.join(staging, "_SUCCESS"), "w").close()
    res = shard.compare_and_append([staging], 0, 2)
    assert not res.ok
    assert shard.collect_garbage() == 0, "young files are protected by the grace period"
    assert shard.collect_garbage(grace_seconds=0) == 3
    assert data_files(shard) == kept
    assert not os.path.exists(staging)
    assert as_multiset(shard.snapshot_arrow(0)) == {("a", 0): 1}


def test_append_written_files(shard, tmp_path):
    staging = shard.new_staging_path()
    os.makedirs(staging)
    pq.write_table(updates(("a", 0, 1), ("b", 3, 1)), os.path.join(staging, "part-0.parquet"))
    pq.write_table(updates(), os.path.join(staging, "part-1.parquet"))
    single = os.path.join(shard.directory, "b-single.parquet")
    pq.write_table(updates(("c", 4, 1)), single)
    assert shard.compare_and_append([staging, single], 0, 5).ok
    (batch,) = shard.batches()
    assert batch.row_count == 3 and len(batch.files) == 2  # the empty part is not registered
    assert as_multiset(shard.snapshot_arrow(4)) == {("a", 4): 1, ("b", 4): 1, ("c", 4): 1}

    outside = tmp_path / "elsewhere.parquet"
    pq.write_table(updates(("x", 5, 1)), outside)
    with pytest.raises(InvalidBatchError, match="outside the shard directory"):
        shard.compare_and_append([outside], 5, 6)
    bad = os.path.join(shard.new_staging_path() + ".parquet")
    pq.write_table(pa.table({"w": [1], "_time": [5], "_diff": [1]}), bad)
    with pytest.raises(InvalidBatchError, match="column 'w' is int64, expected string"):
        shard.compare_and_append([bad], 5, 6)
    late = os.path.join(shard.directory, "late.parquet")
    pq.write_table(updates(("x", 2, 1)), late)
    with pytest.raises(InvalidBatchError, match="file 'late.parquet' has _time values"):
        shard.compare_and_append([late], 5, 6)
    with pytest.raises(InvalidBatchError, match="does not exist"):
        shard.compare_and_append([os.path.join(shard.directory, "nope.parquet")], 5, 6)
    with pytest.raises(InvalidBatchError, match="list of paths"):
        shard.compare_and_append(single, 5, 6)


# ------------------------------------------------------------------------ listen


def collect(listen, *, until_upper: int | None, timeout: float = 20.0):
    events = []
    while True:
        ev = listen.next(timeout=timeout)
        assert ev is not None, f"listen stalled at {listen.frontier}"
        events.append(ev)
        if ev.upper == until_upper or ev.upper is None:
            return events


def test_listen_sees_every_batch_once_with_progress(shard):
    lis = shard.listen(0)
    assert lis.poll() is None
    shard.compare_and_append(updates(("a", 0, 1), ("b", 1, 1)), 0, 2).expect_ok()
    shard.compare_and_append(updates(), 2, 4).expect_ok()
    shard.compare_and_append(updates(("c", 5, 1)), 4, 6).expect_ok()
    events = collect(lis, until_upper=6)
    assert [(e.lower, e.upper, e.has_data) for e in events] == [
        (0, 2, True),
        (2, 4, False),
        (4, 6, True),
    ]
    assert lis.frontier == 6 and lis.poll() is None
    assert as_multiset(events[0].to_arrow()) == {("a", 0): 1, ("b", 1): 1}
    assert as_multiset(events[2].to_arrow()) == {("c", 5): 1}
    assert events[1].to_arrow().num_rows == 0
    shard.compare_and_append(updates(("d", 6, 1)), 6, None).expect_ok()
    events = list(lis)
    assert [(e.lower, e.upper) for e in events] == [(6, None)]
    assert lis.finished and lis.next(timeout=0) is None


def test_listen_after_snapshot_gives_exact_history(shard):
    shard.compare_and_append(updates(("a", 0, 1), ("b", 3, 1), ("c", 7, 1)), 0, 10).expect_ok()
    shard.compare_and_append(updates(("d", 12, 1)), 10, 13).expect_ok()
    shard.downgrade_since(4)
    assert as_multiset(shard.snapshot_arrow(4)) == {("a", 4): 1, ("b", 4): 1}
    events = collect(shard.listen(5), until_upper=13)
    assert [(e.lower, e.upper) for e in events] == [(5, 10), (10, 13)]
    assert as_multiset(events[0].to_arrow()) == {("c", 7): 1}, "updates before 5 are filtered"
    with pytest.raises(ReadBelowSinceError, match="cannot listen from 4"):
        shard.listen(4)


def test_listen_from_lower_of_fresh_shard_and_since_passing_listener(store, tmp_path):
    s = Shard.create(store, "fresh", SCHEMA, tmp_path, lower=100)
    lis = s.listen(100)  # since == lower: nothing compacted, readable from the start
    s.compare_and_append(updates(("a", 100, 1)), 100, 101).expect_ok()
    assert lis.next(timeout=5).upper == 101
    s.downgrade_since(101)  # since passes the listener's frontier (101): must not go silent
    with pytest.raises(ReadBelowSinceError, match="since=101"):
        lis.poll()


def test_listen_sees_every_batch_once_during_concurrent_compaction(shard):
    n = 30
    hold = [0]  # the listener's read hold: everything < hold[0] has been consumed
    compactions = []
    errors: list[BaseException] = []

    def writer():
        try:
            upper = 0
            for i in range(n):
                rows = [
                    (f"k{i % 4}", upper, 1),
                    (f"k{(i + 1) % 4}", upper + 1, -1),
                    (f"x{i}", upper + 2, 1),
                ]
                shard.compare_and_append(updates(*rows), upper, upper + 3).expect_ok()
                upper += 3
                target = hold[0] - 1
                if i % 3 == 2 and target > shard.since:
                    shard.downgrade_since(target)
                    res = shard.compact(grace_seconds=0)
                    if res is not None:
                        compactions.append(res)
            shard.compare_and_append(updates(), upper, None).expect_ok()
        except BaseException as exc:
            errors.append(exc)

    lis = shard.listen(0, poll_interval=0.005)
    t = threading.Thread(target=writer)
    t.start()
    seen = []
    try:
        while not lis.finished:
            ev = lis.next(timeout=30)
            assert ev is not None, f"listen stalled at {lis.frontier}"
            seen.extend(ev.to_arrow().to_pylist())
            if ev.upper is not None:
                hold[0] = ev.upper
    finally:
        t.join(60)
    assert not errors, errors
    assert compactions, "the test must actually compact while listening"
    expected = []
    for i in range(n):
        u = 3 * i
        expected += [(f"k{i % 4}", u, 1), (f"k{(i + 1) % 4}", u + 1, -1), (f"x{i}", u + 2, 1)]
    assert sorted((r["w"], r["_time"], r["_diff"]) for r in seen) == sorted(expected)


# ------------------------------------------------------------------- concurrency


def test_concurrent_appenders_threads_exactly_one_wins(store, open_store, tmp_path):
    root = tmp_path / "data"
    Shard.create(store, "race", SCHEMA, root)
    handles = [Shard.open(open_store(), "race", root) for _ in range(2)]
    rounds = 8
    barrier = threading.Barrier(2)
    outcomes: list[list] = [[] for _ in range(rounds)]
    errors: list[BaseException] = []

    def run(idx: int) -> None:
        try:
            for r in range(rounds):
                batch = updates((f"w{idx}", r * 10, 1), (f"w{idx}", r * 10 + 9, 1))
                barrier.wait(30)
                res = handles[idx].compare_and_append(batch, r * 10, r * 10 + 10)
                outcomes[r].append((idx, res.ok, res.upper))
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for r, out in enumerate(outcomes):
        assert sorted(ok for _, ok, _ in out) == [False, True], out
        assert all(upper == r * 10 + 10 for _, _, upper in out)
    shard = Shard.open(store, "race", root)
    assert shard.upper == rounds * 10 and len(shard.batches()) == rounds
    assert sum(shard.snapshot_arrow(rounds * 10 - 1)["_diff"].to_pylist()) == 2 * rounds
    assert len(data_files(shard)) == rounds, "losers' files are deleted"


def test_concurrent_appenders_processes_exactly_one_wins(store, store_spec, tmp_path):
    """A spawned process and this process race the same append: exactly one wins."""
    url, schema = store_spec
    root = str(tmp_path / "data")
    Shard.create(store, "prace", SCHEMA, root)
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(2)
    results = ctx.Queue()
    from tests.storage._workers import append_worker

    child = ctx.Process(
        target=append_worker, args=(url, schema, "prace", root, "child", barrier, results)
    )
    child.start()
    try:
        append_worker(url, schema, "prace", root, "parent", barrier, results)
        out = [results.get(timeout=120) for _ in range(2)]
    finally:
        child.join(60)
    assert child.exitcode == 0
    assert sorted(ok for _, ok, _ in out) == [False, True], out
    assert [upper for _, _, upper in out] == [10, 10]
    winner = next(tag for tag, ok, _ in out if ok)
    shard = Shard.open(store, "prace", root)
    assert as_multiset(shard.snapshot_arrow(9)) == {(winner, 9): 3}


# ------------------------------------------------------------- property test


ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("append"),
            st.integers(0, 4),
            st.lists(
                st.tuples(st.sampled_from("abc"), st.integers(0, 3), st.integers(-2, 2)), max_size=4
            ),
        ),
        st.tuples(st.just("bad_append"), st.sampled_from([-1, 1])),
        st.tuples(st.just("retry")),
        st.tuples(st.just("since"), st.integers(0, 4)),
        st.tuples(st.just("compact")),
    ),
    max_size=12,
)


@settings(
    max_examples=examples(ci=25, dev=10),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    deadline=None,
)
@given(program=ops, data=st.data())
def test_shard_matches_brute_force_model(store, tmp_path, program, data):
    shard = Shard.create(store, f"prop-{uuid.uuid4().hex}", SCHEMA, tmp_path)
    model: list[tuple[str, int, int]] = []  # every update ever appended, exact times
    upper, since = 0, 0
    last = None
    for op in program:
        if op[0] == "append":
            _, width, rows = op
            rows = [(w, upper + off, d) for w, off, d in rows if off < width]
            batch = updates(*rows)
            res = shard.compare_and_append(batch, upper, upper + width)
            assert res.ok and res.upper == upper + width
            last = (batch, upper, upper + width)
            model += rows
            upper += width
        elif op[0] == "bad_append":
            res = shard.compare_and_append(updates(), upper + op[1], upper + 5)
            assert not res.ok and res.upper == upper
        elif op[0] == "retry" and last is not None:
            res = shard.append_idempotent(*last)
            assert res.ok and (res.already_applied or last[1] == last[2] == upper)
        elif op[0] == "since":
            since = since + op[1]
            shard.downgrade_since(since)
        elif op[0] == "compact":
            shard.compact(grace_seconds=0)
        assert (shard.upper, shard.since) == (upper, since)
        if since < upper:
            as_of = data.draw(st.integers(since, upper - 1), label="as_of")
            expected = collections.Counter()
            for w, t, d in model:
                if t <= as_of:
                    expected[(w, as_of)] += d
            expected = collections.Counter({k: v for k, v in expected.items() if v})
            assert as_multiset(shard.snapshot_arrow(as_of)) == expected
        else:
            with pytest.raises((ReadBelowSinceError, NotYetAvailableError)):
                shard.snapshot(since)
    # Listening from just after since yields the exact (uncompacted) history.
    from_ = since + 1
    if from_ < upper:
        lis = shard.listen(from_)
        events = collect(lis, until_upper=upper, timeout=2)
        got = pa.concat_tables([e.to_arrow() for e in events] + [updates()])
        exact = [(w, t, d) for w, t, d in model if t >= from_]
        assert as_multiset(got) == as_multiset(updates(*exact))
    shard.collect_garbage(grace_seconds=0)


# ------------------------------------------------------------------------- spark


def test_snapshot_spark_and_spark_written_batches(spark, tmp_path):
    from pyspark.sql import functions as F

    # Spark does not care which metadata store is used: one (SQLite) variant keeps it quick,
    # and everything is checked with a single write job and a single collect.
    store = MetadataStore.open(tmp_path / "meta.db")
    shard = Shard.create(store, "s", SCHEMA, tmp_path / "data")
    shard.compare_and_append(
        updates(("a", 0, 1), ("b", 1, 1), ("a", 2, 1), ("b", 2, -1)), 0, 3
    ).expect_ok()
    df = spark.createDataFrame([("c", 3, 1), ("a", 4, -1), ("c", 4, 1)], schema=shard.spark_schema)
    staging = shard.new_staging_path()
    df.coalesce(1).write.parquet(staging)
    assert shard.compare_and_append([staging], 3, 5).ok
    snap = shard.snapshot_spark(spark, 4)
    assert snap.columns == ["w", "_time", "_diff"]
    events = collect(shard.listen(1), until_upper=5)
    empty = Shard.create(store, "empty", SCHEMA, tmp_path / "data")
    empty.compare_and_append(updates(), 0, 1).expect_ok()
    parts = [
        ("snapshot", snap),
        ("listen", events[0].to_spark(spark)),
        ("listen", events[1].to_spark(spark)),
        ("empty", empty.snapshot_spark(spark, 0)),
    ]
    combined = parts[0][1].withColumn("part", F.lit(parts[0][0]))
    for tag, part in parts[1:]:
        combined = combined.unionByName(part.withColumn("part", F.lit(tag)))
    got = collections.defaultdict(list)
    for r in combined.collect():
        got[r["part"]].append((r["w"], r["_time"], r["_diff"]))
    assert sorted(got["snapshot"]) == [("a", 4, 1), ("c", 4, 2)]
    assert as_multiset(updates(*got["snapshot"])) == as_multiset(shard.snapshot_arrow(4))
    assert sorted(got["listen"]) == sorted(
        [("b", 1, 1), ("a", 2, 1), ("b", 2, -1), ("c", 3, 1), ("a", 4, -1), ("c", 4, 1)]
    )
    assert got["empty"] == []
    store.close()


def test_store_reopen_sees_same_state(store_spec, tmp_path):
    url, schema = store_spec
    root = tmp_path / "data"
    with MetadataStore.open(url, schema=schema) as s1:
        shard = Shard.create(s1, "persist", SCHEMA, root)
        shard.compare_and_append(updates(("a", 0, 1)), 0, 1).expect_ok()
        shard.downgrade_since(0)
    with MetadataStore.open(url, schema=schema) as s2:
        shard = Shard.open(s2, "persist", root)
        assert (shard.upper, shard.since) == (1, 0)
        assert as_multiset(shard.snapshot_arrow(0)) == {("a", 0): 1}
