"""One owner per data dir: a lease in the metadata store, fenced by an epoch.

Two processes writing one data dir corrupt it for good (duplicate bindings, arrangement
versions deleted under a reader, input logged twice). So a data dir — more exactly a
(data dir, dataflow name) pair, since a PostgreSQL store may hold many of both — has one
**owner** at a time, recorded in the metadata store (``sealtime_owners``):

* `acquire_lease` takes ownership in ONE transaction: it reads the owner record under a
  row lock, refuses a live owner with `DataDirOwnedError` (naming its host, pid and start
  time, and what to do), and otherwise bumps the **epoch** and writes this process as the
  owner. An owner is *stale* — replaced at once — when it released the data dir, when it
  is this very process (an abandoned `Dataflow` object: a restart in process), when it ran
  on this machine and its process is gone (pid not running, or reused: the process start
  time differs, or the machine rebooted), or when its lease expired (nobody renewed it:
  a stopped or unreachable process). ``takeover=True`` replaces even a live owner.
* The returned `Lease` becomes the store's **fence** (`MetadataStore.fence`): every
  write transaction of that store first reads the owner record with a shared row lock and
  fails with `FencedError` if the epoch is not this lease's. So a paused owner that wakes
  up after a takeover can never commit again — no binding, checkpoint, truncation mark or
  sink commit — like a writer fenced by Materialize persist's epoch.
* A daemon thread renews the lease every third of its length, independent of tick length.
  A stopped process (SIGSTOP, a debugger, a VM pause) renews nothing, so its lease expires.
* Lease times come from the database's clock (PostgreSQL ``clock_timestamp()``, SQLite's
  ``julianday('now')``), so hosts with skewed clocks agree on expiry. Tests inject `clock`.
* `epoch_at` tells writers of files the epoch this process holds for a location's data
  dir: log files, arrangement runs and spills go to names carrying it, so a fenced owner
  never overwrites or deletes a file the new owner reads.

>>> import tempfile
>>> from sealtime.storage import MetadataStore
>>> with tempfile.TemporaryDirectory() as d:
...     store = MetadataStore.open(d)
...     lease = acquire_lease(store, d, "flow", heartbeat=False)
...     other = ProcessIdentity("elsewhere", 4242)
...     try:
...         acquire_lease(store, d, "flow", process=other, heartbeat=False)
...     except DataDirOwnedError as e:
...         print(f"owned by pid {os.getpid()}" in str(e))
...     lease.epoch, epoch_at(d + "/log/s") == lease.epoch
...     lease.release()
...     acquire_lease(store, d, "flow", process=other, heartbeat=False).epoch
...     store.close()
True
(1, True)
2
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import logging
import os
import re
import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..durations import parse_duration
from ..errors import ConfigError, DataDirOwnedError, FencedError, MetadataStoreError
from .metadata import MetadataStore, Transaction

__all__ = [
    "DEFAULT_LEASE_SECONDS",
    "LEASE_ENV",
    "DataDirOwnedError",
    "FencedError",
    "Lease",
    "Owner",
    "ProcessIdentity",
    "acquire_lease",
    "check_unowned",
    "database_clock",
    "epoch_at",
    "epoch_name",
    "epoch_of_name",
    "lease_seconds",
    "lease_settings",
    "read_owner",
    "read_owners",
]

log = logging.getLogger(__name__)

#: Lease length when nothing else is set: a crashed owner on another machine blocks a
#: restart at most this long (on the same machine a dead pid is replaced at once).
DEFAULT_LEASE_SECONDS = 30.0
#: Environment variable giving the lease length of this process (e.g. ``"10s"``).
LEASE_ENV = "SEALTIME_LEASE"

_MIGRATIONS = [
    """CREATE TABLE IF NOT EXISTS sealtime_owners (
        data_dir TEXT NOT NULL,
        flow TEXT NOT NULL,
        epoch BIGINT NOT NULL,
        host TEXT NOT NULL,
        pid BIGINT NOT NULL,
        boot_id TEXT NOT NULL,
        process_start TEXT NOT NULL,
        started_at DOUBLE PRECISION NOT NULL,
        renewed_at DOUBLE PRECISION NOT NULL,
        expires_at DOUBLE PRECISION NOT NULL,
        released INTEGER NOT NULL,
        PRIMARY KEY (data_dir, flow)
    )""",
]

_COLUMNS = (
    "data_dir, flow, epoch, host, pid, boot_id, process_start, started_at, renewed_at, "
    "expires_at, released"
)

Clock = Callable[[Transaction], float]


def database_clock(tx: Transaction) -> float:
    """The database's clock, in seconds since the Unix epoch (the lease clock: one clock
    for every host sharing a PostgreSQL store; SQLite's is this machine's)."""
    if tx.dialect.name == "postgresql":
        row = tx.query_one("SELECT EXTRACT(EPOCH FROM clock_timestamp())")
    else:
        row = tx.query_one("SELECT (julianday('now') - 2440587.5) * 86400.0")
    assert row is not None
    return float(row[0])


# ------------------------------------------------------------------ processes
def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def _process_start(pid: int) -> str:
    """The start time of process `pid` in clock ticks since boot (Linux), "" if unknown:
    with the boot id it tells a pid from a later process that reused it."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else ""


@dataclass(frozen=True)
class ProcessIdentity:
    """Who owns a data dir: host name, pid, and (on Linux) the boot id and the process's
    start time, which make a pid unambiguous on its machine.

    >>> me = ProcessIdentity.current()
    >>> me.pid == os.getpid(), me.running()
    (True, True)
    """

    host: str
    pid: int
    boot_id: str = ""
    start: str = ""

    @classmethod
    def current(cls) -> ProcessIdentity:
        """This process."""
        pid = os.getpid()
        boot = _read("/proc/sys/kernel/random/boot_id")
        return cls(socket.gethostname(), pid, boot, _process_start(pid))

    def same_machine(self, other: ProcessIdentity) -> bool:
        """Same host and, where both are known, the same boot (a reboot ends every
        process of the previous one)."""
        if self.host != other.host:
            return False
        return not (self.boot_id and other.boot_id and self.boot_id != other.boot_id)

    def running(self) -> bool:
        """Is this process (on this machine) still running? A pid reused by another
        process is not (its start time differs)."""
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # another user's process: it exists
        if self.start:
            start = _process_start(self.pid)
            if start and start != self.start:
                return False
        return True


def _utc(seconds: float) -> str:
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


@dataclass(frozen=True)
class Owner:
    """The owner record of a (data dir, dataflow name): who, since when (database clock,
    seconds), the lease's last renewal and expiry, and the epoch."""

    data_dir: str
    flow: str
    epoch: int
    process: ProcessIdentity
    started_at: float
    renewed_at: float
    expires_at: float
    released: bool

    @classmethod
    def _from_row(cls, row: tuple[Any, ...]) -> Owner:
        d, f, epoch, host, pid, boot, start, started, renewed, expires, released = row
        return cls(
            d,
            f,
            int(epoch),
            ProcessIdentity(host, int(pid), boot, start),
            float(started),
            float(renewed),
            float(expires),
            bool(released),
        )

    def describe(self, now: float) -> str:
        """``pid P on host 'h' since <UTC time> (epoch E; lease renewed s ago, ...)``."""
        left = self.expires_at - now
        expiry = f"expires in {left:.1f} s" if left > 0 else f"expired {-left:.1f} s ago"
        return (
            f"pid {self.process.pid} on host {self.process.host!r} since "
            f"{_utc(self.started_at)} (epoch {self.epoch}; lease renewed "
            f"{max(0.0, now - self.renewed_at):.1f} s ago, {expiry})"
        )

    def holds(self, now: float, me: ProcessIdentity) -> bool:
        """Does this owner still hold the data dir against a newcomer `me`? Not when it
        released it, is `me` itself (an abandoned object of this process), ran on this
        machine and is gone, or let its lease expire."""
        if self.released or self.epoch == 0:
            return False
        mine = self.process.same_machine(me)
        if self.process.host == me.host and not mine:
            return False  # the machine rebooted since
        if mine and (self.process.pid == me.pid or not self.process.running()):
            return False
        return self.expires_at > now


# ------------------------------------------------------------------ settings
_overrides: list[dict[str, Any]] = []


@contextlib.contextmanager
def lease_settings(*, lease: Any = None, takeover: bool = False) -> Iterator[None]:
    """Defaults for the leases this process acquires while the block runs (the
    ``sealtime`` command's ``--lease`` and ``--takeover``).

    >>> with lease_settings(lease="2s"):
    ...     lease_seconds()
    2.0
    """
    setting = {}
    if lease is not None:
        setting["lease"] = lease_seconds(lease)
    if takeover:
        setting["takeover"] = True
    _overrides.append(setting)
    try:
        yield
    finally:
        _overrides.remove(setting)


def lease_seconds(value: Any = None) -> float:
    """The lease length in seconds: `value` (seconds as a float, or a duration in the
    settings grammar: ``"10s"``, ``"500ms"``, an int of milliseconds), else
    `lease_settings`, else ``$SEALTIME_LEASE``, else 30 s.

    >>> lease_seconds("500ms"), lease_seconds(2.5)
    (0.5, 2.5)
    """
    setting = "lease"
    if value is None:
        for o in reversed(_overrides):
            if "lease" in o:
                return float(o["lease"])
        value = os.environ.get(LEASE_ENV)
        setting = LEASE_ENV
        if not value:
            return DEFAULT_LEASE_SECONDS
    if isinstance(value, float):
        seconds = value
    else:
        seconds = parse_duration(value, setting) / 1000
    if seconds <= 0:
        raise ConfigError(f"{setting}={value!r}: a lease must be > 0, e.g. '30s'")
    return seconds


def _takeover() -> bool:
    return any(o.get("takeover") for o in _overrides)


# ------------------------------------------------------------------ names
_EPOCH_NAME = re.compile(r"(?:^|-)e(\d+)$")


def epoch_name(epoch: int) -> str:
    """The name part that marks what an epoch wrote (a directory, a name's suffix).

    >>> epoch_name(7), epoch_of_name("e7"), epoch_of_name("g00000003-e7"), epoch_of_name("p0001")
    ('e7', 7, 7, None)
    """
    return f"e{epoch}"


def epoch_of_name(name: str) -> int | None:
    """The epoch a name was written under (`epoch_name`), None for names without one
    (written before data dirs had owners)."""
    m = _EPOCH_NAME.search(name)
    return int(m.group(1)) if m else None


# ------------------------------------------------------------------ the lease
_held: dict[str, Lease] = {}  # data dir -> the newest lease this process acquired there
_held_lock = threading.Lock()


def epoch_at(location: str) -> int | None:
    """The epoch this process holds for the data dir that contains `location` (a path
    or URI inside it), None when it holds none (files outside a leased data dir keep
    names without an epoch). Writers of files read it once, when they are built.

    >>> epoch_at("/nowhere/held") is None
    True
    """
    with _held_lock:
        found = [
            (len(d), lease.epoch)
            for d, lease in _held.items()
            if location == d or location.startswith(d.rstrip("/") + "/")
        ]
    return max(found)[1] if found else None


def read_owner(store: MetadataStore, data_dir: str, flow: str) -> Owner | None:
    """The owner record of (`data_dir`, `flow`), None if nobody ever owned it."""
    store.migrate("ownership", _MIGRATIONS)
    row = store.query(
        f"SELECT {_COLUMNS} FROM sealtime_owners WHERE data_dir = ? AND flow = ?",
        (data_dir, flow),
    )
    return Owner._from_row(row[0]) if row else None


def read_owners(query: Callable[[str], Sequence[tuple[Any, ...]]]) -> list[Owner]:
    """Every owner record of a store, by `query` (SQL text -> rows), without writing —
    for readers of a store opened read-only (`sealtime status`; the table
    ``sealtime_owners`` exists once a first owner took a data dir).

    >>> import sqlite3, tempfile
    >>> from sealtime.storage import MetadataStore
    >>> with tempfile.TemporaryDirectory() as d:
    ...     store = MetadataStore.open(d)
    ...     lease = acquire_lease(store, d, "flow", heartbeat=False)
    ...     conn = sqlite3.connect(f"file:{d}/metadata.sqlite?mode=ro", uri=True)
    ...     [(o.flow, o.epoch, o.process.pid == os.getpid()) for o in read_owners(
    ...         lambda sql: conn.execute(sql).fetchall())]
    ...     conn.close(); lease.release(); store.close()
    [('flow', 1, True)]
    """
    rows = query(f"SELECT {_COLUMNS} FROM sealtime_owners ORDER BY flow, data_dir")
    return [Owner._from_row(r) for r in rows]


class Lease:
    """This process's ownership of a (data dir, dataflow name): its `epoch`, the fence
    of its store (`check`), renewal (`renew`, also by a heartbeat thread) and `release`.
    Built by `acquire_lease`."""

    def __init__(
        self,
        store: MetadataStore,
        owner: Owner,
        seconds: float,
        clock: Clock,
    ) -> None:
        self.store = store
        self.owner = owner
        self.seconds = seconds
        self._clock = clock
        #: the owner that fenced this lease (None: not fenced, as far as it knows)
        self.fenced_by: Owner | None = None
        self.released = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # The owner's fields passed through: alike in form to other read-only views on purpose.
    @property
    def epoch(self) -> int:
        """This owner's epoch (every takeover bumps it)."""
        return self.owner.epoch

    @property
    def data_dir(self) -> str:
        return self.owner.data_dir

    @property
    def flow(self) -> str:
        return self.owner.flow

    @property
    def fenced(self) -> bool:
        """Has a newer owner taken over (as far as this process has seen)?"""
        return self.fenced_by is not None

    def __repr__(self) -> str:
        return f"Lease({self.flow!r}, {self.data_dir!r}, epoch={self.epoch})"

    # ------------------------------------------------------------------ fencing
    def check(self, tx: Transaction) -> None:
        """The fence: raise `FencedError` unless the owner record still holds this
        epoch. Runs first in every write transaction of the store; the shared row lock
        (PostgreSQL) keeps a takeover from committing before this transaction does."""
        row = tx.query_one(
            f"SELECT {_COLUMNS} FROM sealtime_owners WHERE data_dir = ? AND flow = ?"
            + tx.dialect.for_share,
            (self.data_dir, self.flow),
        )
        current = Owner._from_row(row) if row is not None else None
        if current is None or current.epoch != self.epoch:
            raise self._fenced_error(current)

    def verify(self) -> None:
        """Raise `FencedError` if a newer owner took over (a read; it changes nothing).
        Work in flight of a fenced owner may fail first on a file the new owner deleted
        (what the metadata says is dead): this tells such a failure for what it is."""
        with self.store.transaction(readonly=True) as tx:
            row = tx.query_one(
                f"SELECT {_COLUMNS} FROM sealtime_owners WHERE data_dir = ? AND flow = ?",
                (self.data_dir, self.flow),
            )
        current = Owner._from_row(row) if row is not None else None
        if current is None or current.epoch != self.epoch:
            raise self._fenced_error(current)

    def _fenced_error(self, current: Owner | None) -> FencedError:
        if current is not None:
            self.fenced_by = current
        self._stop.set()
        if current is None:
            who = "its owner record is gone (the metadata store was reset?)"
        else:
            who = (
                f"pid {current.process.pid} on host {current.process.host!r} took it over "
                f"at {_utc(current.started_at)} (epoch {current.epoch})"
            )
            if current.released:
                who += " and has released it since"
        return FencedError(
            f"Dataflow {self.flow!r} on data dir {self.data_dir!r}: this process (pid "
            f"{self.owner.process.pid}, epoch {self.epoch}) was fenced: {who}, because "
            "its lease was not renewed in time (was this process stopped or cut off?) or a "
            "takeover was forced. It commits nothing more — no binding, checkpoint or sink "
            "commit; stop it: the new owner continues the dataflow from the durable state"
        )

    # ------------------------------------------------------------------ renewal
    def renew(self) -> Owner:
        """Extend the lease by its length from now (database clock); `FencedError` if a
        newer owner took over."""
        with self.store.transaction(fenced=False) as tx:
            row = tx.query_one(
                f"SELECT {_COLUMNS} FROM sealtime_owners WHERE data_dir = ? AND flow = ?"
                + tx.dialect.for_update,
                (self.data_dir, self.flow),
            )
            current = Owner._from_row(row) if row is not None else None
            if current is None or current.epoch != self.epoch or current.released:
                if current is not None and current.epoch == self.epoch:
                    return current  # released by this lease: nothing to renew
                raise self._fenced_error(current)
            now = self._clock(tx)
            tx.execute(
                "UPDATE sealtime_owners SET renewed_at = ?, expires_at = ? "
                "WHERE data_dir = ? AND flow = ? AND epoch = ?",
                (now, now + self.seconds, self.data_dir, self.flow, self.epoch),
            )
        self.owner = replace(current, renewed_at=now, expires_at=now + self.seconds)
        return self.owner

    def start_heartbeat(self) -> None:
        """Renew the lease every third of its length in a daemon thread, until released
        or fenced (its own connection: ticks, Spark jobs and sinks never delay it)."""
        if self._thread is not None:
            return
        self._thread = threading.Thread(
            target=self._beat, name=f"sealtime-lease-{self.flow}", daemon=True
        )
        self._thread.start()

    def _beat(self) -> None:
        interval = max(0.05, self.seconds / 3)
        while not self._stop.wait(interval):
            try:
                self.renew()
            except FencedError as exc:
                log.error("%s", exc)
                return
            except MetadataStoreError:
                if self.store.closed:
                    return
                log.warning("lease of %r: renewal failed; retrying", self.flow, exc_info=True)
            except Exception:  # a lost connection: the next beat tries again
                log.warning("lease of %r: renewal failed; retrying", self.flow, exc_info=True)

    # ------------------------------------------------------------------ release
    def release(self) -> None:
        """Give the data dir up (a clean shutdown): the next owner starts at once. The
        fence stays, so this store writes nothing after a newer owner took over."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        with _held_lock:
            if _held.get(self.data_dir) is self:
                del _held[self.data_dir]
        if self.released or self.fenced or self.store.closed:
            self.released = True
            return
        self.released = True
        with self.store.transaction(fenced=False) as tx:
            now = self._clock(tx)
            tx.execute(
                "UPDATE sealtime_owners SET released = 1, expires_at = ? "
                "WHERE data_dir = ? AND flow = ? AND epoch = ?",
                (now, self.data_dir, self.flow, self.epoch),
            )


def acquire_lease(
    store: MetadataStore,
    data_dir: str,
    flow: str,
    *,
    lease: Any = None,
    takeover: bool | None = None,
    clock: Clock | None = None,
    process: ProcessIdentity | None = None,
    heartbeat: bool = True,
) -> Lease:
    """Become the owner of (`data_dir`, `flow`) in `store` with a new epoch, or raise
    `DataDirOwnedError` naming the live owner (see the module docstring).

    `lease`: its length (`lease_seconds`). `takeover`: replace a live owner too (it is
    fenced); None: as `lease_settings` says. `clock`: the lease clock (default the
    database's). `process`: who acquires (default this process). The lease becomes the
    store's fence and, with `heartbeat`, is renewed by a daemon thread.

    In a shared store a dataflow name keys bindings, checkpoints and sink shards, so a
    live owner of the same name under another data dir refuses too; stale ones are
    fenced by the new epoch.
    """
    seconds = lease_seconds(lease)
    clock = clock or database_clock
    me = process or ProcessIdentity.current()
    force = _takeover() if takeover is None else takeover
    store.migrate("ownership", _MIGRATIONS)
    with store.transaction(fenced=False) as tx:
        now = clock(tx)
        tx.execute(
            f"INSERT INTO sealtime_owners ({_COLUMNS}) VALUES (?, ?, 0, '', 0, '', '', ?, ?, ?, 1) "
            "ON CONFLICT (data_dir, flow) DO NOTHING",
            (data_dir, flow, now, now, now),
        )
        rows = tx.query(
            f"SELECT {_COLUMNS} FROM sealtime_owners WHERE flow = ? ORDER BY data_dir"
            + tx.dialect.for_update,
            (flow,),
        )
        owners = [Owner._from_row(r) for r in rows]
        live = [o for o in owners if o.holds(now, me)]
        if live and not force:
            raise _refusal(live[0], data_dir, flow, now, seconds)
        epoch = max(o.epoch for o in owners) + 1
        # Other data dirs' owners of this name (a shared store) are fenced by the bump.
        tx.execute(
            "UPDATE sealtime_owners SET epoch = ?, released = 1 WHERE flow = ? AND data_dir <> ?",
            (epoch, flow, data_dir),
        )
        tx.execute(
            "UPDATE sealtime_owners SET epoch = ?, host = ?, pid = ?, boot_id = ?, "
            "process_start = ?, started_at = ?, renewed_at = ?, expires_at = ?, released = 0 "
            "WHERE data_dir = ? AND flow = ?",
            (epoch, me.host, me.pid, me.boot_id, me.start, now, now, now + seconds, data_dir, flow),
        )
    owner = Owner(data_dir, flow, epoch, me, now, now, now + seconds, False)
    result = Lease(store, owner, seconds, clock)
    store.fence = result.check
    with _held_lock:
        previous = _held.get(data_dir)
        _held[data_dir] = result
    if previous is not None and previous.flow == flow:
        # This process's earlier lease (an abandoned Dataflow) is fenced by the new epoch:
        # its heartbeat would only fail later, perhaps against a store that is gone.
        previous._stop.set()
    if heartbeat:
        result.start_heartbeat()
    return result


# (acquire_lease's parameters by name, alike in form: the same settings, read only)
def check_unowned(
    store: MetadataStore,
    data_dir: str,
    flow: str,
    *,
    lease: Any = None,
    takeover: bool | None = None,
    clock: Clock | None = None,
) -> None:
    """Raise `acquire_lease`'s `DataDirOwnedError` now if a live owner holds (`data_dir`,
    `flow`), writing nothing: a refused process learns it before it starts Spark.
    `acquire_lease` decides; this only answers early."""
    if (takeover is None and _takeover()) or takeover:
        return
    seconds = lease_seconds(lease)
    clock = clock or database_clock
    me = ProcessIdentity.current()
    store.migrate("ownership", _MIGRATIONS)
    with store.transaction(fenced=False) as tx:
        now = clock(tx)
        rows = tx.query(f"SELECT {_COLUMNS} FROM sealtime_owners WHERE flow = ?", (flow,))
        live = [o for o in map(Owner._from_row, rows) if o.holds(now, me)]
    if live:
        raise _refusal(live[0], data_dir, flow, now, seconds)


def _refusal(
    owner: Owner, data_dir: str, flow: str, now: float, seconds: float
) -> DataDirOwnedError:
    where = "" if owner.data_dir == data_dir else f" (under data dir {owner.data_dir!r})"
    left = max(0.0, owner.expires_at - now)
    return DataDirOwnedError(
        f"Dataflow {flow!r} on data dir {data_dir!r}: owned by {owner.describe(now)}{where}. "
        "A data dir has one writer at a time: two would corrupt it. Stop that process first "
        f"(kill {owner.process.pid} on {owner.process.host}); if it is gone, a start on host "
        f"{owner.process.host!r} takes over at once, anywhere else once its lease expires "
        f"(in {left:.1f} s; leases last {seconds:g} s, $SEALTIME_LEASE) — or take over now "
        "with `sealtime run/replay --takeover` (the old owner is fenced: it commits nothing "
        "more)"
    )
