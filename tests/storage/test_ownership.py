"""One owner per data dir (issue 32): the lease, the epoch and the fence — on SQLite and
PostgreSQL. Engine-level tests (two `sealtime run` processes, SIGSTOP) are in
tests/engine/test_ownership.py."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pytest

from sealtime.errors import ConfigError, DataDirOwnedError, FencedError, StorageError
from sealtime.storage import Shard
from sealtime.storage.ownership import (
    DEFAULT_LEASE_SECONDS,
    LEASE_ENV,
    ProcessIdentity,
    acquire_lease,
    check_unowned,
    database_clock,
    epoch_at,
    lease_seconds,
    lease_settings,
    read_owner,
)

D = "/data/flows/a"


class FakeClock:
    """The lease clock, moved by hand (the database's clock otherwise)."""

    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self, tx) -> float:
        return self.now


def elsewhere(pid: int = 4242) -> ProcessIdentity:
    return ProcessIdentity("other-host.example", pid, "boot-x", "123")


def dead_pid() -> int:
    """The pid of a process of this machine that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_acquire_bumps_the_epoch_and_names_the_owner(store):
    clock = FakeClock()
    first = acquire_lease(store, D, "f", clock=clock, heartbeat=False)
    owner = read_owner(store, D, "f")
    assert (first.epoch, owner.epoch, owner.process.pid) == (1, 1, os.getpid())
    assert owner.process.host == socket.gethostname() and not owner.released
    assert owner.expires_at == clock.now + DEFAULT_LEASE_SECONDS
    first.release()
    assert read_owner(store, D, "f").released
    second = acquire_lease(store, D, "f", clock=clock, process=elsewhere(), heartbeat=False)
    assert second.epoch == 2
    assert epoch_at(D + "/log/s") == 2 and epoch_at("/data/flows/ab") is None


def test_check_unowned_refuses_early_and_writes_nothing(open_store):
    """The early answer a `Dataflow` gives before it starts Spark: the refusal of
    `acquire_lease`, without a write; none for a takeover or an expired lease."""
    clock = FakeClock()
    a, b = open_store(), open_store()
    check_unowned(b, D, "f", clock=clock)  # nobody owns it
    acquire_lease(a, D, "f", lease=10.0, clock=clock, process=elsewhere(), heartbeat=False)
    before = read_owner(a, D, "f")
    with pytest.raises(DataDirOwnedError, match="pid 4242 on host 'other-host.example'"):
        check_unowned(b, D, "f", lease=10.0, clock=clock)
    check_unowned(b, D, "f", takeover=True, clock=clock)
    assert read_owner(a, D, "f") == before
    clock.now += 11
    check_unowned(b, D, "f", clock=clock)  # the lease expired


def test_a_live_owner_refuses_a_second_writer_naming_it(open_store):
    clock = FakeClock()
    a, b = open_store(), open_store()
    acquire_lease(a, D, "f", lease=10.0, clock=clock, process=elsewhere(), heartbeat=False)
    clock.now += 4
    with pytest.raises(DataDirOwnedError) as info:
        acquire_lease(b, D, "f", lease=10.0, clock=clock, heartbeat=False)
    text = str(info.value)
    for part in (
        "Dataflow 'f' on data dir '/data/flows/a'",
        "pid 4242 on host 'other-host.example'",
        "since 2027-01-15 08:00:00 UTC",  # the fake clock's start, in UTC
        "epoch 1",
        "expires in 6.0 s",
        "Stop that process first",
        "--takeover",
    ):
        assert part in text, (part, text)
    assert isinstance(info.value, StorageError)
    assert read_owner(b, D, "f").epoch == 1  # the refusal changed nothing


def test_an_expired_lease_is_taken_over_and_the_old_owner_fenced(open_store, tmp_path):
    clock = FakeClock()
    old_store, new_store = open_store(), open_store()
    old = acquire_lease(old_store, D, "f", lease=10.0, clock=clock, heartbeat=False)
    shard = Shard.create(old_store, "f.out", pa.schema([("x", pa.int64())]), str(tmp_path))
    row = pa.table({"x": [1], "_time": [0], "_diff": [1]})
    assert shard.compare_and_append(row, 0, 1).ok  # the owner commits
    old_store.kv_put("marks", "f", {"s": 5})
    clock.now += 10.5  # never renewed (a stopped process): the lease expired
    me_elsewhere = elsewhere()
    new = acquire_lease(
        new_store, D, "f", lease=10.0, clock=clock, process=me_elsewhere, heartbeat=False
    )
    assert new.epoch == 2
    # Every write of the old owner's store fails now, and changes nothing.
    with pytest.raises(FencedError, match=r"was fenced: pid 4242 on host 'other-host.example'"):
        shard.compare_and_append(pa.table({"x": [2], "_time": [1], "_diff": [1]}), 1, 2)
    with pytest.raises(FencedError):
        old_store.kv_put("marks", "f", {"s": 9})
    with pytest.raises(FencedError):
        old.renew()
    assert old.fenced and old.fenced_by.epoch == 2
    # Reads still work; the state is the one before the takeover.
    assert shard.upper == 1 and old_store.kv_get("marks", "f") == {"s": 5}
    reopened = Shard.open(new_store, "f.out", str(tmp_path))
    assert reopened.compare_and_append(pa.table({"x": [3], "_time": [1], "_diff": [1]}), 1, 2).ok
    old.release()  # a fenced lease releases nothing
    assert read_owner(new_store, D, "f").epoch == 2 and not read_owner(new_store, D, "f").released


def test_a_dead_owner_on_this_machine_is_replaced_at_once(store):
    clock = FakeClock()
    me = ProcessIdentity.current()
    gone = ProcessIdentity(me.host, dead_pid(), me.boot_id, "1")
    acquire_lease(store, D, "f", lease=60.0, clock=clock, process=gone, heartbeat=False)
    lease = acquire_lease(store, D, "f", lease=60.0, clock=clock, heartbeat=False)
    assert lease.epoch == 2


def test_a_reused_pid_or_a_reboot_is_not_the_owner(store):
    clock = FakeClock()
    me = ProcessIdentity.current()
    parent = ProcessIdentity(me.host, os.getppid(), me.boot_id, "")
    assert parent.running()
    # The parent's pid is running, but with another start time than the record's: reused.
    reused = ProcessIdentity(me.host, os.getppid(), me.boot_id, "1")
    if me.start:  # (Linux: start times are known)
        acquire_lease(store, D, "f", clock=clock, process=reused, heartbeat=False)
        assert acquire_lease(store, D, "f", clock=clock, heartbeat=False).epoch == 2
    rebooted = ProcessIdentity(me.host, os.getppid(), "an-earlier-boot", "")
    acquire_lease(store, D, "g", clock=clock, process=rebooted, heartbeat=False)
    if me.boot_id:
        assert acquire_lease(store, D, "g", clock=clock, heartbeat=False).epoch == 2
    # A live process of this machine with a valid lease holds it.
    acquire_lease(store, D, "h", clock=clock, process=parent, heartbeat=False)
    with pytest.raises(DataDirOwnedError, match=f"pid {os.getppid()} on host"):
        acquire_lease(store, D, "h", clock=clock, heartbeat=False)


def test_this_process_takes_over_its_own_abandoned_lease(open_store):
    """Building the same dataflow again in one process is a restart: the newer object
    owns the data dir, the abandoned one is fenced."""
    a, b = open_store(), open_store()
    old = acquire_lease(a, D, "f", heartbeat=False)
    new = acquire_lease(b, D, "f", heartbeat=False)
    assert new.epoch == old.epoch + 1 and epoch_at(D) == new.epoch
    with pytest.raises(FencedError):
        a.kv_put("x", "y", 1)
    b.kv_put("x", "y", 2)


def test_an_abandoned_lease_of_this_process_stops_its_heartbeat(open_store):
    """The newer object's epoch fences the abandoned one at once, so the abandoned
    heartbeat stops instead of renewing into a store that may be gone by then."""

    def beating() -> int:
        return sum(t.name == "sealtime-lease-f" and t.is_alive() for t in threading.enumerate())

    a, b = open_store(), open_store()
    acquire_lease(a, D, "f", lease="30s")
    assert beating() == 1
    new = acquire_lease(b, D, "f", lease="30s")
    deadline = time.monotonic() + 5
    while beating() > 1:
        assert time.monotonic() < deadline, "the abandoned lease's heartbeat still runs"
        time.sleep(0.02)
    assert beating() == 1
    new.release()
    assert beating() == 0


def test_takeover_replaces_a_live_owner(open_store):
    clock = FakeClock()
    a, b = open_store(), open_store()
    acquire_lease(a, D, "f", clock=clock, process=elsewhere(), heartbeat=False)
    with lease_settings(takeover=True):
        lease = acquire_lease(b, D, "f", clock=clock, heartbeat=False)
    assert lease.epoch == 2
    with pytest.raises(FencedError):
        a.kv_put("x", "y", 1)


def test_one_flow_name_has_one_owner_across_data_dirs(open_store):
    """A shared store keys bindings by the dataflow's name: a live owner of the name
    under another data dir refuses too; a stale one is fenced by the new epoch."""
    clock = FakeClock()
    a, b = open_store(), open_store()
    first = acquire_lease(
        a, "/one", "f", lease=5.0, clock=clock, process=elsewhere(), heartbeat=False
    )
    with pytest.raises(DataDirOwnedError, match=r"under data dir '/one'"):
        acquire_lease(b, "/two", "f", lease=5.0, clock=clock, heartbeat=False)
    acquire_lease(b, "/two", "other-flow", clock=clock, heartbeat=False)  # another name: fine
    clock.now += 6
    second = acquire_lease(b, "/two", "f", lease=5.0, clock=clock, heartbeat=False)
    assert second.epoch == first.epoch + 1
    with pytest.raises(FencedError):
        a.kv_put("x", "y", 1)


def test_a_write_in_flight_commits_before_the_takeover(open_store):
    """The fence reads the owner record under a shared lock: a takeover waits for the
    owner's open write transaction, and then sees what it wrote (no write lands after
    the new owner read the state)."""
    a, b = open_store(), open_store()
    acquire_lease(a, D, "f", heartbeat=False)
    inside, finish = threading.Event(), threading.Event()

    def owner_writes() -> None:
        with a.transaction() as tx:
            tx.upsert("sealtime_kv", {"namespace": "n", "key": "k"}, {"value": '"old"'})
            inside.set()
            finish.wait(10)

    writer = threading.Thread(target=owner_writes)
    writer.start()
    assert inside.wait(10)
    taken: list[int] = []
    with lease_settings(takeover=True):
        taker = threading.Thread(
            target=lambda: taken.append(
                acquire_lease(b, D, "f", process=elsewhere(), heartbeat=False).epoch
            )
        )
        taker.start()
        taker.join(0.5)
        assert taker.is_alive() and not taken  # blocked by the owner's transaction
        finish.set()
        writer.join(10)
        taker.join(30)
    assert taken == [2] and b.kv_get("n", "k") == "old"
    with pytest.raises(FencedError):
        a.kv_put("n", "k", "late")
    assert b.kv_get("n", "k") == "old"


def test_the_heartbeat_renews_until_released(store):
    lease = acquire_lease(store, D, "f", lease=0.3)
    first = read_owner(store, D, "f").renewed_at
    deadline = time.monotonic() + 10
    while read_owner(store, D, "f").renewed_at == first:
        assert time.monotonic() < deadline, "the lease was never renewed"
        time.sleep(0.02)
    lease.release()
    owner = read_owner(store, D, "f")
    assert owner.released and owner.expires_at <= database_clock_now(store)


def database_clock_now(store) -> float:
    with store.transaction(readonly=True) as tx:
        return database_clock(tx)


def test_the_lease_clock_is_the_database_clock(store):
    assert abs(database_clock_now(store) - time.time()) < 5


def test_lease_length_settings(monkeypatch):
    monkeypatch.delenv(LEASE_ENV, raising=False)
    assert lease_seconds() == DEFAULT_LEASE_SECONDS
    monkeypatch.setenv(LEASE_ENV, "12s")
    assert lease_seconds() == 12.0
    with lease_settings(lease="1500ms"):
        assert lease_seconds() == 1.5
    assert lease_seconds("2m") == 120.0 and lease_seconds(0.25) == 0.25
    monkeypatch.setenv(LEASE_ENV, "soon")
    with pytest.raises(ConfigError, match="SEALTIME_LEASE='soon' is not a duration"):
        lease_seconds()
    with pytest.raises(ConfigError, match="a lease must be > 0"):
        lease_seconds("0s")
