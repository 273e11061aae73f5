"""`Console` and `Callback` sinks: data leaves Spark as Arrow, once per sealed range."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, TextIO

import pyarrow as pa

from ..time.order import MIN_TIME
from .base import CommitContext, Sink

__all__ = ["Callback", "Console"]


def _fmt_frontier(t: int | None) -> str:
    return "∞ (finished)" if t is None else str(t)


class Callback(Sink):
    """Call ``fn(updates: pyarrow.Table, lower, upper)`` for every sealed range
    ``[lower, upper)``; `lower` is None for the first range (no time sealed before it)
    and `upper` is None once every time is sealed.

    >>> seen = []
    >>> Callback(lambda t, lo, hi: seen.append((lo, hi))).fn(None, 0, 1); seen
    [(0, 1)]
    """

    def __init__(
        self,
        fn: Callable[[pa.Table | None, int | None, int | None], None],
        skip_empty: bool = True,
    ) -> None:
        self.fn = fn
        self.skip_empty = skip_empty

    takes_arrow = True

    def commit(self, delta: Any, lo: int, hi: int | None, context: CommitContext) -> bool:
        """Hand the range to `fn`; True: `delta`'s plan was computed."""
        from ..spark.frames import to_arrow

        self.commit_arrow(None if delta is None else to_arrow(delta), lo, hi, context)
        return delta is not None

    def commit_arrow(
        self, table: pa.Table | None, lo: int, hi: int | None, context: CommitContext
    ) -> None:
        """Hand the range's rows to `fn` (not when empty, with `skip_empty`)."""
        if not (self.skip_empty and (table is None or table.num_rows == 0)):
            self.fn(table, None if lo <= MIN_TIME else lo, hi)


class Console(Callback):
    """Print each sealed range's updates (at most `max_rows` of them).

    >>> Console(max_rows=5).max_rows
    5
    """

    def __init__(
        self, max_rows: int = 20, stream: TextIO | None = None, title: str | None = None
    ) -> None:
        self.max_rows = max_rows
        self.stream = stream
        self.title = title
        super().__init__(self._print)

    def _print(self, table: pa.Table, lo: int, hi: int | None) -> None:
        out = self.stream or sys.stdout
        name = f"{self.title} " if self.title else ""
        out.write(f"── {name}sealed [{lo}, {_fmt_frontier(hi)}): {table.num_rows} update(s)\n")
        sort_cols = [
            c for c in table.column_names if not pa.types.is_nested(table.schema.field(c).type)
        ]
        shown = table.sort_by([(c, "ascending") for c in sort_cols]).slice(0, self.max_rows)
        out.write(shown.to_pandas().to_string(index=False) + "\n")
        if table.num_rows > self.max_rows:
            out.write(f"   … {table.num_rows - self.max_rows} more\n")
        out.flush()
