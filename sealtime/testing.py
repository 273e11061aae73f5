"""Small dataflows for examples and tests: in-memory inputs in, updates out.

`TestFlow` is a `Dataflow` on a temporary data dir and the active (or a small local)
SparkSession, with `Rows` inputs and a way to read any collection's updates as plain
tuples ``(*row, time, diff)`` in time order. The docstring examples of `Collection` use
it; so can a user's own unit tests of a pipeline.

>>> import sealtime as st
>>> from sealtime.testing import TestFlow
>>> t = TestFlow()
>>> bids = t.rows({"k": "string", "v": "long"}, [(1, {"k": "a", "v": 2}), (2, {"k": "a", "v": 3})])
>>> t.updates(bids.aggregate(by="k", total=st.sum("v")))
[('a', 2, 1, 1), ('a', 2, 2, -1), ('a', 5, 2, 1)]
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .columns import DIFF, TIME
from .dataflow.collection import Collection
from .dataflow.dataflow import Dataflow
from .sources.rows import Rows

__all__ = ["TestFlow", "testing_session", "write_jsonl_files"]


def write_jsonl_files(
    directory: str | os.PathLike[str],
    files: int,
    per_file: int,
    row: Callable[[int, int], dict[str, Any]],
) -> list[str]:
    """Write `files` JSON-lines files ``f00.jsonl, f01.jsonl, ...`` into `directory`
    (created if missing), file *i* holding ``row(i, j)`` for ``j < per_file``: input for
    a `sealtime.sources.Files` source in tests. Returns the paths, in order.

    >>> import tempfile
    >>> d = tempfile.mkdtemp()
    >>> paths = write_jsonl_files(d, 2, 1, lambda i, j: {"k": i, "ts": 1000 * i})
    >>> [open(p).read() for p in paths]
    ['{"k": 0, "ts": 0}\\n', '{"k": 1, "ts": 1000}\\n']
    """
    os.makedirs(directory, exist_ok=True)
    paths = []
    for i in range(files):
        path = os.path.join(directory, f"f{i:02d}.jsonl")
        with open(path, "w") as f:
            f.writelines(json.dumps(row(i, j)) + "\n" for j in range(per_file))
        paths.append(path)
    return paths


def testing_session() -> Any:
    """The active SparkSession, or a small local one (2 threads, 2 shuffle partitions, UI
    off) — what a unit test wants: seconds to start, no ports opened for a UI."""
    from .spark.session import get_or_create_session

    return get_or_create_session(
        master="local[2]",
        app_name="sealtime-testing",
        conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
    )


class TestFlow:
    """A dataflow with in-memory inputs whose outputs are read back as tuples.

    * `rows(schema, items, ...)` adds a `Rows` source (items are ``(time, row)`` or
      ``(time, row, diff)``); `time=`/`lateness=` make it an event-time source over a
      column instead.
    * `updates(col)` runs the dataflow until every input is exhausted (once; later calls
      only read) and returns the collection's updates ``(*row, time, diff)``, sorted by
      time, then row.
    * `flow` is the underlying `Dataflow`, for anything else.

    The data dir is removed when the object is garbage collected.
    """

    __test__ = False  # not a pytest test class, despite its name

    def __init__(self, name: str = "test", **options: Any) -> None:
        self._dir = tempfile.mkdtemp(prefix="sealtime-testing-")
        weakref.finalize(self, shutil.rmtree, self._dir, True)
        options.setdefault("spark", testing_session())
        self.flow = Dataflow(name, data_dir=self._dir, **options)
        self._ran = False
        self._inputs = 0

    def rows(
        self,
        schema: Any,
        items: Iterable[Sequence[Any]],
        *,
        name: str | None = None,
        **source_options: Any,
    ) -> Collection:
        """A `Rows` input; `source_options` go to `Dataflow.source` (``time=``, ...)."""
        self._inputs += 1
        return self.flow.source(name or f"in{self._inputs}", Rows(schema, items), **source_options)

    def run(self) -> None:
        """Run until every input is exhausted (a no-op after the first call)."""
        if not self._ran:
            self.flow.run()
            self._ran = True

    def updates(self, col: Collection) -> list[tuple[Any, ...]]:
        """`col`'s updates as ``(*row, time, diff)`` tuples in time order."""
        self.run()
        table = col.updates()
        names = [*col.columns, TIME, DIFF]
        columns = [table.column(n).to_pylist() for n in names]
        return list(zip(*columns, strict=True))
