"""``st.connect("postgresql://127.0.0.1:6875/sealtime")``: a DB-API connection to
``sealtime serve`` (psycopg 3 underneath), with ``subscribe(view)``.

The connection is a `psycopg.Connection` in autocommit mode (each statement stands
alone, as in Materialize), so every psycopg call works: ``execute``, cursors, ``copy``,
parameters. `Connection.subscribe` reads ``SUBSCRIBE`` through a cursor in a
transaction of its own (``DECLARE ... CURSOR FOR SUBSCRIBE``; ``FETCH ALL``, which
waits for the next updates) and yields typed events:

* `Change` ``(time, diff, row)``: ``row`` is a tuple of the view's values, typed by
  psycopg (int, float, Decimal, str, bool, datetime, date, bytes);
* `Progress` ``(time)`` (with ``progress=True``): every change before ``time`` was
  yielded.

The iterator ends when the view's sources end; ``close()`` (or leaving a ``with``
block, or dropping the iterator) closes the cursor, and the service stops the
subscription. A subscription holds the connection: open another to run statements.

>>> import pyarrow as pa
>>> from sealtime.serve.fake import FakeBackend
>>> from sealtime.serve.pgwire import PgServer
>>> backend = FakeBackend({"v": pa.table({"k": ["a"], "_time": [1000], "_diff": [1]})}, {"v": 2000})
>>> with PgServer(backend, port=0) as server:
...     with connect(f"postgresql://127.0.0.1:{server.port}/sealtime") as conn:
...         with conn.subscribe("v", progress=True) as sub:
...             first = [next(sub), next(sub)]
>>> first
[Change(time=1999, diff=1, row=('a',)), Progress(time=2000)]
"""

from __future__ import annotations

import contextlib
import itertools
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

import psycopg

from ..errors import ConfigError

__all__ = ["Change", "Connection", "Progress", "Subscription", "connect"]

_NAME = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)?$")
_COUNTER = itertools.count()


class Change(NamedTuple):
    """A change of the view: `row` (a tuple of its columns) at `time`, `diff` times
    (negative: a retraction)."""

    time: int
    diff: int
    row: tuple[Any, ...]


class Progress(NamedTuple):
    """The view is complete before `time`."""

    time: int


class Subscription:
    """The events of ``SUBSCRIBE view`` (see the module docstring); an iterator and a
    context manager."""

    def __init__(self, conn: Connection, sql: str, progress: bool) -> None:
        self.conn = conn
        self.progress = progress
        self.cursor_name = f"sealtime_subscribe_{next(_COUNTER)}"
        self._cur = conn.cursor()
        self._buffer: list[tuple[Any, ...]] = []
        self._done = False
        self._began = conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        if self._began:
            self._cur.execute("BEGIN")
        self._cur.execute(f"DECLARE {self.cursor_name} CURSOR FOR {sql}")
        self.columns: list[str] = []

    def __iter__(self) -> Iterator[Change | Progress]:
        return self

    def __next__(self) -> Change | Progress:
        while not self._buffer:
            if self._done:
                raise StopIteration
            self._cur.execute(f"FETCH ALL {self.cursor_name}")  # waits for >= 1 row
            self._buffer = list(reversed(self._cur.fetchall()))
            if not self.columns and self._cur.description:
                self.columns = [d.name for d in self._cur.description]
            if not self._buffer:
                self._done = True  # the subscription ended
        row = self._buffer.pop()
        if self.progress:
            time, progressed, diff, *values = row
            if progressed:
                return Progress(int(time))
        else:
            time, diff, *values = row
        return Change(int(time), int(diff), tuple(values))

    def close(self) -> None:
        """Close the cursor (the service stops the subscription) and its transaction."""
        if self._cur.closed:
            return
        try:
            if not self.conn.closed:
                self._cur.execute(f"CLOSE {self.cursor_name}")
                if self._began:
                    self._cur.execute("COMMIT")
        finally:
            self._cur.close()

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:  # an iterator dropped unfinished still frees its cursor
        with contextlib.suppress(Exception):
            self.close()


class Connection(psycopg.Connection):  # type: ignore[type-arg]
    """A psycopg connection to ``sealtime serve`` with `subscribe`."""

    def subscribe(
        self,
        view: str,
        *,
        progress: bool = False,
        snapshot: bool = True,
        as_of: int | None = None,
    ) -> Subscription:
        """``SUBSCRIBE view [WITH (PROGRESS, SNAPSHOT false)] [AS OF t]`` as an iterator
        of `Change` and (with `progress`) `Progress` events."""
        if not _NAME.match(view):
            raise ConfigError(
                f"subscribe(view={view!r}): give a view's name, e.g. 'orders_by_item'"
            )
        options = f" WITH (PROGRESS {str(progress).lower()}, SNAPSHOT {str(snapshot).lower()})"
        at = ""
        if as_of is not None:
            if isinstance(as_of, bool) or not isinstance(as_of, int) or as_of < 0:
                raise ConfigError(f"subscribe(as_of={as_of!r}): give a logical time (int ms >= 0)")
            at = f" AS OF {as_of}"
        return Subscription(self, f"SUBSCRIBE {view}{options}{at}", progress)


def connect(url: str = "postgresql://127.0.0.1:6875/sealtime", **kwargs: Any) -> Connection:
    """A DB-API connection to the service at `url` (a libpq URL or ``key=value``
    string; `kwargs` are psycopg's, e.g. ``password=``), in autocommit mode."""
    kwargs.setdefault("autocommit", True)
    return Connection.connect(url, **kwargs)  # type: ignore[return-value]
