"""``sealtime sql --data-dir D``: an interactive SQL shell over one dataflow.

How the shell runs the dataflow:

* ``CREATE SOURCE``/``CREATE VIEW``/``CREATE SINK``/``PUBLISH`` build the graph, one
  statement at a time (as in a pipeline file, `sealtime.sql.pipeline`; relative FILES
  directories are relative to the working directory).
* The first ``SUBSCRIBE`` or ``SELECT`` starts the dataflow: the graph is fixed from then
  on (as in the Python API). The shell then runs ticks only while a statement needs them
  - ``SUBSCRIBE view [WITH (PROGRESS)]`` runs ticks and prints the view's updates until
    the sources finish (the frontier is empty) or Ctrl-C (which stops between ticks);
  - ``SELECT ... AS OF t`` runs ticks until `t` is sealed (or the sources finish), then
    prints the query's result over the tables' contents at `t`. Without ``AS OF`` it
    reads the contents at the latest sealed time (the session's first ``SELECT`` runs
    one tick first: before it nothing is sealed, even on a resumed data dir).
* When a tick fails (a source whose CSV header does not match its schema, a directory
  that is missing), the error is printed and the dataflow stops for the session: every
  later statement that needs a tick is refused with the cause, so no input the failed
  tick read is ever recorded as consumed (a later tick would have). Fix the cause and
  restart the shell on the same data dir: it resumes after the last complete tick.
* ``EXPLAIN SELECT ...`` prints the operators the query becomes (any time).
* The data dir resumes like a Python job: the same statements on the same ``D``
  continue the dataflow (a changed definition is refused by the plan fingerprint).

``SUBSCRIBE`` prints tab-separated lines in the format of Materialize's ``COPY
(SUBSCRIBE ...) TO STDOUT``: a header, then ``mz_timestamp``, (with ``PROGRESS``)
``mz_progressed``, ``mz_diff`` and the view's columns; ``\\N`` is NULL and ``t``/``f``
are booleans. First the snapshot (the contents at the latest sealed time, every row at
that time), then per sealed range the updates ``(time, diff, row)``, then (``PROGRESS``)
a line ``<frontier> t \\N \\N ...``: every time before the frontier is complete.
``SELECT`` prints a header and tab-separated rows; statement tags (``CREATE VIEW``) go to
stdout as psql does, errors to stderr. Prompts are printed only when stdin is a terminal,
so ``sealtime sql --data-dir D < script.sql | ...`` pipes cleanly.

>>> import io, tempfile
>>> out = io.StringIO()
>>> Shell(tempfile.mkdtemp(), stdin=io.StringIO("\\\\q\\n"), stdout=out).run()
0
"""

from __future__ import annotations

import os
import signal
import sys
import threading
import time as _time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO

import pyarrow as pa

from ..columns import DIFF, TIME
from ..errors import StateError
from ..plan import Source
from .errors import SqlError
from .pipeline import Pipeline
from .statements import Explain, Select, Subscribe, is_complete, parse_statement, split

__all__ = ["Shell", "ShellStopped", "format_value", "run_shell"]

_HELP = """Statements end with ';'. CREATE SOURCE / CREATE VIEW / CREATE SINK / PUBLISH build the
dataflow; SUBSCRIBE view [WITH (PROGRESS)] runs it and prints updates (Ctrl-C stops);
SELECT ... [AS OF t] prints contents at a sealed time; EXPLAIN SELECT ... shows operators.
\\q quits. See docs/sql.md."""


def format_value(v: Any) -> str:
    """A value in PostgreSQL's COPY text format: ``\\N`` for NULL, ``t``/``f`` booleans.

    >>> [format_value(v) for v in (None, True, 2, 1.5, "a\\tb")]
    ['\\\\N', 't', '2', '1.5', 'a\\\\tb']
    """
    if v is None:
        return "\\N"
    if isinstance(v, bool):
        return "t" if v else "f"
    text = str(v)
    return text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


class ShellStopped(StateError):
    """The shell's dataflow stopped (a tick or its start failed): the statements that
    need ticks are refused until the shell is restarted (see `Shell`)."""


class _Tap:
    """Forwards a view's sealed ranges to the active SUBSCRIBE (or drops them when no
    one listens): a `Callback` sink's function."""

    def __init__(self) -> None:
        self.listener: list[tuple[pa.Table | None, int, int | None]] | None = None

    def __call__(self, table: pa.Table | None, lo: int, hi: int | None) -> None:
        if self.listener is not None:
            self.listener.append((table, lo, hi))


class Shell:
    """The shell: reads statements from `stdin` and runs them on one dataflow.

    `name` is the dataflow's name in `data_dir` (resume with the same name); `spark` an
    existing SparkSession (default: the active one or a new local one); `interactive`
    (default ``stdin.isatty()``) turns prompts on.
    """

    def __init__(
        self,
        data_dir: str,
        *,
        name: str = "sql",
        spark: Any = None,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
        interactive: bool | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.name = name
        self.spark = spark
        self.stdin = stdin or sys.stdin
        self.out = stdout or sys.stdout
        self.err = stderr or sys.stderr
        if interactive is None:
            isatty = getattr(self.stdin, "isatty", None)
            interactive = bool(isatty and isatty())
        self.interactive = interactive
        self.pipeline: Pipeline | None = None
        self.taps: dict[str, _Tap] = {}
        self.errors = 0
        self._stop = False
        #: why the dataflow stopped (a tick or the start failed): no tick runs after it
        self.failed: str | None = None
        self.ticked = False

    # ------------------------------------------------------------------ input
    def run(self) -> int:
        """Read and run statements until end of input or ``\\q``; 0, or 1 when a
        statement failed and stdin is not a terminal (scripts can check it)."""
        if self.interactive:
            self._print("sealtime SQL shell (Spark SQL dialect). \\? for help, \\q to quit.")
        buffer = ""
        try:
            while True:
                if self.interactive:
                    self.out.write("sealtime=> " if not buffer.strip() else "sealtime-> ")
                    self.out.flush()
                line = self.stdin.readline()
                if not line:
                    break
                if not buffer.strip() and line.strip() in ("\\q", "quit", "exit"):
                    break
                if not buffer.strip() and line.strip() in ("\\?", "help"):
                    self._print(_HELP)
                    continue
                buffer += line
                if is_complete(buffer):
                    self.execute(buffer)
                    buffer = ""
            if buffer.strip():
                self.execute(buffer)  # a last statement without ';'
        except KeyboardInterrupt:
            self._print("")
        finally:
            self.close()
        return 1 if self.errors and not self.interactive else 0

    def execute(self, text: str) -> None:
        """Run every statement of `text`; an error is printed and the next runs."""
        try:
            statements = split(text)
        except SqlError as e:
            self._error(e)
            return
        for stmt in statements:
            try:
                self._execute(parse_statement(stmt))
            except (SqlError, ShellStopped) as e:
                self._error(e)
            except Exception as e:  # a bad statement must not end the session
                self._error(f"{stmt.title}: {type(e).__name__}: {e}")

    def _execute(self, item: Any) -> None:
        pipeline = self._pipeline()
        if isinstance(item, Subscribe):
            self.subscribe(item)
        elif isinstance(item, Select):
            self.select(item)
        elif isinstance(item, Explain):
            self.explain(item)
        else:
            self._print(pipeline.execute(item))

    # ------------------------------------------------------------------ dataflow
    def _pipeline(self) -> Pipeline:
        if self.pipeline is None:
            from ..dataflow.dataflow import Dataflow

            flow = Dataflow(self.name, data_dir=self.data_dir, spark=self.spark, record=True)
            self.pipeline = Pipeline(flow, os.getcwd())
        return self.pipeline

    def _start(self) -> Any:
        """Fix the graph (a tap on every view, in creation order) and start the engine."""
        import sealtime as st

        pipeline = self._pipeline()
        flow = pipeline.flow
        self._check_failed()
        if not flow.started:
            try:
                for name in pipeline.view_names:
                    if name.lower() not in self.taps:
                        tap = _Tap()
                        pipeline.view(name).sink(st.sinks.Callback(tap, skip_empty=False))
                        self.taps[name.lower()] = tap
                pipeline.check_resume()
                engine = flow.engine
            except SqlError:
                raise
            except Exception as e:
                from ..engine.bindings import PlanChangedError
                from .pipeline import changed_operator

                if isinstance(e, PlanChangedError):  # (in the user's words: no plan dump)
                    self.failed = (
                        f"the statements differ from those that wrote {self.data_dir}"
                        f"{changed_operator(flow, e)}; run the original statements, or use "
                        "a new --data-dir"
                    )
                    raise ShellStopped(self.failed) from e
                self._fail("starting the dataflow", e)
            if engine.recovered_from:
                self._print(f"-- resuming {flow.name!r}: {engine.recovered_from}")
        return flow.engine

    def _fail(self, what: str, error: Exception) -> NoReturn:
        """Stop the dataflow for this session: a failed tick may have read input it did
        not log, and a tick after it would record that input as consumed (issue 33)."""
        self.failed = f"{what} failed: {type(error).__name__}: {error}"
        raise ShellStopped(self.failed) from error

    def _check_failed(self) -> None:
        if self.failed is not None:
            raise ShellStopped(
                f"the dataflow stopped ({self.failed}); nothing after its last complete tick "
                "was read or marked consumed. Fix the cause (the source's files, schema or "
                "path), then restart the shell on the same --data-dir to resume from there"
            )

    @contextmanager
    def _interruptible(self) -> Iterator[None]:
        """Ctrl-C stops the running statement between ticks (a tick is never cut)."""
        self._stop = False
        if threading.current_thread() is not threading.main_thread():
            yield
            return

        def handler(signum: int, frame: Any) -> None:
            self._stop = True

        old = signal.signal(signal.SIGINT, handler)
        try:
            yield
        finally:
            signal.signal(signal.SIGINT, old)

    def _tick(self) -> Any:
        """One tick, paced by the dataflow's tick interval when a source is unbounded."""
        flow = self._pipeline().flow
        self._check_failed()
        started = _time.monotonic()
        try:
            report = flow.run(ticks=1)[0]
        except Exception as e:
            self._fail("a tick", e)
        self.ticked = True
        unbounded = any(isinstance(n, Source) and not n.source.finite for n in flow.nodes)
        if unbounded:
            _time.sleep(max(0.0, flow.tick_ms / 1000 - (_time.monotonic() - started)))
        return report

    # ------------------------------------------------------------------ statements
    def subscribe(self, item: Subscribe) -> None:
        """Print the view's snapshot, then its updates and progress until the sources
        finish or Ctrl-C."""
        pipeline = self._pipeline()
        stmt = item.statement
        if item.view.lower() not in {v.lower() for v in pipeline.view_names}:
            from . import catalog

            db, _, name = item.view.rpartition(".")
            if catalog.lookup(pipeline.flow, name, db or None) is not None:
                what = "a source" if not db else "a source's or view's side output"
                raise stmt.error(
                    f"{item.view} is {what}; subscribe to a view of it: "
                    f"CREATE VIEW {item.view.replace('.', '_')}_v AS SELECT * FROM {item.view}"
                )
            raise stmt.error(f"no view named {item.view!r}; create it with CREATE VIEW first")
        coll = pipeline.view(item.view)
        started = pipeline.flow.started
        engine = self._start()
        tap = self.taps[item.view.lower()]
        columns = coll.columns
        head = ["mz_timestamp"] + (["mz_progressed"] if item.progress else []) + ["mz_diff"]
        self._print("\t".join(head + columns))
        sealed = coll.frontier if started else None
        if item.snapshot and started:
            # the contents at the latest sealed time, each row at that time
            frontier = coll.frontier
            as_of = None if frontier is None else frontier - 1
            df = coll.to_spark(as_of=as_of).groupBy(*columns).count()
            rows = df.toArrow()
            if as_of is None:
                ts = coll.updates().column(TIME)
                as_of = max(ts.to_pylist()) if len(ts) else 0
            self._emit(rows.rename_columns([*columns, DIFF]), as_of, item.progress, columns)
            if item.progress and frontier is not None:
                self._progress(frontier, columns)
        if started and sealed is None:
            return  # every time is sealed: nothing more will come
        buffer: list[tuple[pa.Table | None, int, int | None]] = []
        tap.listener = buffer
        try:
            with self._interruptible():
                while not self._stop and not engine.finished():
                    self._tick()
                    for table, _lo, hi in buffer:
                        if table is not None and table.num_rows:
                            self._emit(table, None, item.progress, columns)
                        if item.progress and hi is not None:
                            self._progress(hi, columns)
                    buffer.clear()
                    self.out.flush()
        finally:
            tap.listener = None

    def _emit(self, table: pa.Table, at: int | None, progress: bool, columns: list[str]) -> None:
        """Update lines, by time, retractions first, then by row (deterministic order)."""
        if table.num_rows == 0:
            return
        rows = table.to_pylist()
        key = lambda r: (  # noqa: E731
            r[TIME] if at is None else at,
            r[DIFF],
            tuple((r[c] is None, str(r[c])) for c in columns),
        )
        for r in sorted(rows, key=key):
            t = r[TIME] if at is None else at
            fields = [format_value(t)] + (["f"] if progress else []) + [format_value(r[DIFF])]
            self._print("\t".join(fields + [format_value(r[c]) for c in columns]))

    def _progress(self, frontier: int, columns: list[str]) -> None:
        self._print("\t".join([str(frontier), "t", "\\N"] + ["\\N"] * len(columns)))

    def select(self, item: Select) -> None:
        """Run the query with Spark over its tables' contents at `AS OF t` (after running
        ticks until t is sealed) or at the latest sealed time."""
        from sqlglot import exp

        from . import catalog

        pipeline = self._pipeline()
        stmt = item.statement
        tree = item.query.tree.copy()
        ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
        tables = {}
        for node in tree.find_all(exp.Table):
            if node.name.lower() in ctes:
                continue
            if not node.name:
                raise stmt.error(
                    "a table function in an ad-hoc SELECT; define a view with it "
                    "(CREATE VIEW v AS SELECT ... FROM TUMBLE(...)) and select from the view",
                    construct=f"{stmt.kind}: table function",
                )
            table = catalog.lookup(pipeline.flow, node.name, node.db or None)
            if table is None:
                known = ", ".join(catalog.table_names(pipeline.flow)) or "none yet"
                raise stmt.error(f"no source or view named {node.name!r} (known: {known})")
            tables[id(node)] = (node, table)
        engine = self._start()
        if item.as_of is not None:
            with self._interruptible():
                while (
                    not self._stop
                    and not engine.finished()
                    and any(
                        (f := t.collection.frontier) is not None and f <= item.as_of
                        for _, t in tables.values()
                    )
                ):
                    self._tick()
            for _, t in tables.values():
                f = t.collection.frontier
                if f is not None and f <= item.as_of:
                    raise stmt.error(
                        f"time {item.as_of} of {t.name} is not sealed yet (its frontier is {f}); "
                        "wait, or ask for an earlier time",
                        construct="AS OF",
                    )
        elif not self.ticked and not engine.finished():
            # (nothing of this session is readable before its first tick: even a resumed
            # data dir's views are rebuilt by it; read at the first sealed time, as
            # Materialize's SELECT waits until its inputs are readable)
            self._tick()
        spark = pipeline.flow.spark
        with catalog.temp_views(spark) as read_from:
            for i, (node, table) in enumerate(tables.values()):
                frame = table.collection.to_spark(as_of=item.as_of)
                read_from(node, frame, f"__sealtime_shell_{i}")
            result = spark.sql(tree.sql(dialect="spark")).toArrow()
        self._print("\t".join(result.column_names))
        for row in result.to_pylist():
            self._print("\t".join(format_value(v) for v in row.values()))
        self._print(f"({result.num_rows} row{'s' if result.num_rows != 1 else ''})")

    def explain(self, item: Explain) -> None:
        """The operators the query becomes (the dataflow is unchanged)."""
        from . import explain

        # explain() adds the query's operators provisionally and removes them again,
        # which a started dataflow allows.
        self._print(explain(self._pipeline().flow, item.query))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ output
    def _print(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def _error(self, error: Exception | str) -> None:
        self.errors += 1
        print(f"ERROR: {error}", file=self.err, flush=True)

    def close(self) -> None:
        """Close the dataflow (a stopped one too: what it completed stays durable)."""
        if self.pipeline is not None:
            self.pipeline.close()
            self.pipeline = None


def run_shell(data_dir: str, *, name: str = "sql", spark: Any = None, **io: Any) -> int:
    """``sealtime sql --data-dir D``: run a `Shell` on stdin/stdout (or `io` streams)."""
    return Shell(data_dir, name=name, spark=spark, **io).run()
