"""Whole pipelines in SQL: ``sealtime run pipeline.sql --data-dir D``.

A pipeline file is a list of statements (`sealtime.sql.statements`), each turned into
the Python API call that does the same:

=====================================================  ===========================================
statement                                              dataflow API
=====================================================  ===========================================
``CREATE SOURCE s FROM FILES 'dir' (FORMAT csv, ...)``  ``flow.source("s", Files(dir, ...), time=, lateness=, idle_timeout=)``
``CREATE SOURCE s FROM NATS 'url' (SUBJECT ..., ...)``  ``flow.source("s", NatsJetStream(subject, stream, url, ...))``
``CREATE SOURCE s FROM REDIS 'url' (KEY ..., ...)``     ``flow.source("s", RedisStream(key, url, ...))``
``CREATE VIEW v AS SELECT ...``                         ``flow.create_view("v", "SELECT ...")``
``CREATE SINK k FROM v INTO PARQUET 'path'``            ``v.sink(st.sinks.Parquet(path))``
``CREATE SINK k FROM v INTO PERSIST 'shard'``           ``v.sink(st.sinks.Persist(shard))``
``PUBLISH v [AS VIEW] [WITH (TOPIC 't', ...)]``         ``v.publish(t, mode="view"|"stream", ...)``
=====================================================  ===========================================

Without ``EVENT TIME`` a source has ingestion time. A relative ``FILES`` directory is
relative to the SQL file's directory (the shell: the working directory); a relative sink
path is relative to the data dir. The file resumes its data dir as a Python job does:
run again on the same ``D`` it continues after what it read; a changed file is refused
(the engine's plan fingerprint covers views, columns and sinks; this module also keeps
each source's connector, address and options in the metadata store, which the
fingerprint does not cover).

>>> import os, tempfile
>>> d = tempfile.mkdtemp(); os.makedirs(os.path.join(d, "in"))
>>> with open(os.path.join(d, "in", "a.csv"), "w") as f:
...     _ = f.write("k,v\\nx,1\\nx,2\\n")
>>> p = build_pipeline('''
...     CREATE SOURCE s FROM FILES 'in' (FORMAT csv, SCHEMA 'k string, v long', FINITE);
...     CREATE VIEW totals AS SELECT k, SUM(v) AS total FROM s GROUP BY k;
... ''', os.path.join(d, "data"), base_dir=d)
>>> _ = p.flow.run()
>>> [tuple(r) for r in p.view("totals").to_spark().collect()]
[('x', 3)]
>>> p.close()
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any, TextIO

from ..durations import parse_duration
from ..errors import NotFoundError
from ..plan import Source
from .errors import SqlError
from .statements import (
    CreateSink,
    CreateSource,
    CreateView,
    Explain,
    Parsed_,
    Publish,
    Select,
    Statement,
    Subscribe,
    parse_text,
)

__all__ = ["Pipeline", "build_pipeline", "changed_operator", "run_file"]

_SOURCE_CONFIG = "sql-sources"  # metadata-store namespace: source definitions per dataflow


def _wrap(stmt: Statement, fn: Callable[[], Any]) -> Any:
    """Run `fn`; an error of the API it calls is re-raised as a `SqlError` naming the
    statement and where it is (the API's message carries the fix)."""
    try:
        return fn()
    except SqlError as e:
        if e.construct.startswith(stmt.title):
            raise
        raise SqlError(
            f"{stmt.title}: {e.construct}", e.reason, line=e.line, col=e.col, hint=e.hint
        ) from e
    except (ValueError, TypeError, RuntimeError, KeyError, FileNotFoundError) as e:
        msg = e.args[0] if isinstance(e, KeyError) and e.args else str(e)
        raise stmt.error(str(msg)) from e


class Pipeline:
    """A dataflow built from statements, one at a time (`execute`).

    `base_dir` resolves relative ``FILES`` directories. `views()` / `view(name)` give the
    collections by name (sources too).
    """

    def __init__(self, flow: Any, base_dir: str | None = None) -> None:
        self.flow = flow
        self.base_dir = os.path.abspath(base_dir or os.getcwd())
        #: source name -> its definition (connector, address, options), for resume checks
        self.source_config: dict[str, Any] = {}
        #: view names in the order they were created
        self.view_names: list[str] = []
        self._checked = False

    # ------------------------------------------------------------------ statements
    def execute(self, item: Parsed_) -> str:
        """Apply one graph-building statement; returns its tag (``"CREATE VIEW"``)."""
        stmt = item.statement
        if self.flow.started and not self.flow.live:
            raise stmt.error(
                "the dataflow is running (it started at the first SUBSCRIBE or SELECT); "
                "its graph is fixed: restart the shell with all definitions first"
            )
        if isinstance(item, CreateSource):
            _wrap(stmt, lambda: self._create_source(item))
        elif isinstance(item, CreateView):
            from . import create_view

            _wrap(stmt, lambda: create_view(self.flow, item.name, item.query))
            self.view_names.append(item.name)
        elif isinstance(item, CreateSink):
            _wrap(stmt, lambda: self._create_sink(item))
        elif isinstance(item, Publish):
            _wrap(stmt, lambda: self._publish(item))
        else:
            raise stmt.error(
                f"{stmt.kind} is a shell statement; run it in `sealtime sql --data-dir D`",
            )
        return stmt.kind

    def _create_source(self, cs: CreateSource) -> None:

        stmt = cs.statement
        opts = dict(cs.options)

        def take(key: str, default: Any = None) -> Any:
            return opts.pop(key, default)

        def fail(key: str, reason: str) -> SqlError:
            return stmt.error(reason, cs.option_tokens.get(key), construct=f"{stmt.title} {key}")

        schema = take("SCHEMA")
        if schema is None and cs.connector != "NEXMARK":
            raise stmt.error("the SCHEMA option is missing; add SCHEMA 'name type, name type'")
        if schema is not None and not isinstance(schema, str):
            raise fail("SCHEMA", "write the schema as a string: SCHEMA 'a long, b string'")
        fmt = take("FORMAT")
        time = take("EVENT TIME")
        lateness = take("LATENESS")
        idle = take("IDLE TIMEOUT")
        max_rows = take("MAX ROWS PER TICK")
        max_future = take("MAX FUTURE")
        retain: Any = ...
        for key in ("RETAIN HISTORY FOR", "RETAIN HISTORY"):
            if key in opts:
                value = take(key)
                retain = None if str(value).upper() == "FOREVER" else value
        if max_rows is not None and (not isinstance(max_rows, int) or max_rows < 1):
            raise fail("MAX ROWS PER TICK", "must be an integer >= 1, e.g. MAX ROWS PER TICK 1000")
        if cs.connector == "FILES":
            from ..sources.files import Files

            if fmt is None:
                raise stmt.error("the FORMAT option is missing; add FORMAT csv, json or parquet")
            path = os.path.join(self.base_dir, os.path.expanduser(cs.address))
            settle = take("SETTLE", 1.0)
            if isinstance(settle, str):
                settle = parse_duration(settle, f"{stmt.title} SETTLE") / 1000
            kwargs = {
                k.lower(): take(k)
                for k in ("PATTERN", "FINITE", "HEADER", "DELIMITER")
                if k in opts
            }
            source: Any = Files(path, format=str(fmt), schema=schema, settle=settle, **kwargs)
            address = os.path.abspath(path)
        elif cs.connector == "NEXMARK":
            from ..sources.nexmark import Nexmark

            if schema is not None:
                raise fail("SCHEMA", "a Nexmark source has its own schema: leave SCHEMA out")
            kwargs = {k.lower(): take(k) for k in ("RATE", "SEED", "LIMIT") if k in opts}
            source = Nexmark(**kwargs)
            address = "nexmark"
        elif cs.connector == "NATS":
            from ..sources.nats import NatsJetStream

            for key in ("SUBJECT", "STREAM"):
                if key not in opts:
                    raise stmt.error(
                        f"the {key} option is missing; NATS sources need SUBJECT and STREAM"
                    )
            source = NatsJetStream(
                str(take("SUBJECT")),
                str(take("STREAM")),
                url=cs.address,
                durable=take("DURABLE"),
                schema=schema,
                format=str(fmt or "json"),
            )
            address = cs.address
        else:
            from ..sources.redis_streams import RedisStream

            if "KEY" not in opts:
                raise stmt.error("the KEY option is missing; REDIS sources read stream KEY 'name'")
            kwargs = {k.lower(): take(k) for k in ("GROUP", "CONSUMER", "FIELD") if k in opts}
            if "ID COLUMN" in opts:
                kwargs["id_column"] = take("ID COLUMN")
            source = RedisStream(
                str(take("KEY")), url=cs.address, schema=schema, format=str(fmt or "json"), **kwargs
            )
            address = cs.address
        assert not opts, opts  # every allowed option is consumed above
        self.flow.source(
            cs.name,
            source,
            time=None if time is None else str(time),
            lateness=lateness,
            idle_timeout=idle,
            max_rows_per_tick=max_rows,
            **({"max_future": max_future} if max_future is not None else {}),
            **({"retain_history": retain} if retain is not ... else {}),
        )
        self.source_config[cs.name] = {
            "connector": cs.connector,
            "address": address,
            "options": {k: v for k, v in sorted(cs.options.items())},
        }

    def _collection(self, stmt: Statement, name: str) -> Any:
        from . import catalog

        db, _, table_name = name.rpartition(".")
        table = catalog.lookup(self.flow, table_name, db or None)
        if table is None:
            known = ", ".join(catalog.table_names(self.flow)) or "none yet"
            raise stmt.error(f"no source or view named {name!r} (known: {known})")
        return table.collection

    def _create_sink(self, cs: CreateSink) -> None:
        import sealtime as st

        coll = self._collection(cs.statement, cs.view)
        if cs.kind == "PARQUET":
            path = os.path.join(self.flow.data_dir, os.path.expanduser(cs.target))
            coll.sink(st.sinks.Parquet(path))
        else:
            coll.sink(st.sinks.Persist(cs.target))

    def _publish(self, p: Publish) -> None:
        coll = self._collection(p.statement, p.view)
        options = {k.lower(): v for k, v in p.options.items()}
        coll.publish(p.topic, mode=p.mode, **options)

    # ------------------------------------------------------------------ running
    def view(self, name: str) -> Any:
        """The collection of source or view `name` (`NotFoundError`, a ``KeyError``, when
        there is none)."""
        from . import catalog

        db, _, table_name = name.rpartition(".")
        table = catalog.lookup(self.flow, table_name, db or None)
        if table is None:
            raise NotFoundError(f"no source or view named {name!r}")
        return table.collection

    def check_resume(self) -> None:
        """Before the first run: refuse a data dir whose sources were defined differently
        (a changed FILES directory, format or option would mix two inputs in one log)."""
        if self._checked:
            return
        store = self.flow.metadata_store
        stored = store.kv_get(_SOURCE_CONFIG, self.flow.name)
        if stored is not None:
            for name, config in self.source_config.items():
                before = stored.get(name)
                if before is not None and before != config:
                    changed = [
                        k for k in ("connector", "address") if before.get(k) != config.get(k)
                    ] or sorted(
                        k
                        for k in set(before["options"]) | set(config["options"])
                        if before["options"].get(k) != config["options"].get(k)
                    )
                    raise SqlError(
                        f"CREATE SOURCE {name}",
                        f"{', '.join(changed)} differ(s) from the run that wrote "
                        f"{self.flow.data_dir} ({before} then, {config} now); restore the "
                        "statement, or use a new --data-dir",
                    )
        merged = dict(stored or {})
        merged.update(self.source_config)
        store.kv_put(_SOURCE_CONFIG, self.flow.name, merged)
        self._checked = True

    def close(self) -> None:
        """Close the dataflow (readers, sinks, publications, metadata store)."""
        self.flow.close()


def build_pipeline(
    text: str,
    data_dir: str,
    *,
    name: str = "sql",
    base_dir: str | None = None,
    spark: Any = None,
    record: bool = True,
    **flow_options: Any,
) -> Pipeline:
    """Parse `text` (every statement, before anything is built), make the dataflow
    `name` in `data_dir` and apply the statements. Shell-only statements (SUBSCRIBE,
    SELECT, EXPLAIN) are refused with their position."""
    from ..dataflow.dataflow import Dataflow

    items = parse_text(text)
    for item in items:
        if isinstance(item, Subscribe | Select | Explain):
            raise item.statement.error(
                f"{item.statement.kind} is a shell statement; a pipeline file defines "
                "sources, views, sinks and publications (run queries in `sealtime sql`)"
            )
    flow = Dataflow(name, data_dir=data_dir, spark=spark, record=record, **flow_options)
    pipeline = Pipeline(flow, base_dir)
    try:
        for item in items:
            pipeline.execute(item)
    except BaseException:
        flow.close()
        raise
    return pipeline


def _flow_name(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    return re.sub(r"[^A-Za-z0-9_-]", "_", stem) or "sql"


def changed_operator(flow: Any, error: Exception) -> str:
    """Which operator (named after its view) the engine found changed, in the user's
    words: the engine's message compares internal plan fingerprints (Spark plans)."""
    import re

    found = re.search(r"operator (\d+): was", str(error))
    nodes = list(flow.nodes)
    if found and int(found.group(1)) < len(nodes):
        return f" (the first changed operator is {nodes[int(found.group(1))].name!r})"
    counted = re.search(r"(\d+) operators before, (\d+) now", str(error))
    if counted:
        return f" ({counted.group(1)} operators before, {counted.group(2)} now)"
    return ""


# Its options are jobs.run_job's on purpose: `sealtime run` takes either kind of job.
def run_file(
    path: str,
    data_dir: str,
    *,
    ticks: int | None = None,
    forever: bool = False,
    out: TextIO | None = None,
    spark: Any = None,
    ui: str | None = None,
) -> int:
    """``sealtime run file.sql --data-dir D [--ui [HOST:]PORT]``: build the file's
    pipeline (dataflow named after the file) and run it until its sources finish (or
    `ticks`, or `forever`), with a progress line on `out` and (`ui`) the live web view,
    whose boxes carry the views' names; run again on the same `data_dir`, it resumes."""
    if not os.path.exists(path):
        raise SqlError("sealtime run", f"no such file {path!r}")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    pipeline = build_pipeline(
        text,
        data_dir,
        name=_flow_name(path),
        base_dir=os.path.dirname(os.path.abspath(path)),
        spark=spark,
        record=False,
    )
    from ..engine.bindings import PlanChangedError

    flow = pipeline.flow
    try:
        if ticks is None and not forever:
            unbounded = [
                n.name for n in flow.nodes if isinstance(n, Source) and not n.source.finite
            ]
            if unbounded:
                raise SqlError(
                    f"CREATE SOURCE {unbounded[0]}",
                    "the source never ends, so the run would not either; add FINITE to a "
                    "FILES source's options, or pass --ticks N or --forever",
                )
        pipeline.check_resume()
        if ui:
            from ..net import parse_address

            server = flow.serve_ui(*parse_address(ui))
            if out is not None:
                print(f"web view: {server.url}", file=out, flush=True)
        try:
            engine = flow.engine
        except PlanChangedError as e:
            raise SqlError(
                os.path.basename(path),
                f"the statements differ from those that wrote {flow.data_dir}"
                f"{changed_operator(flow, e)}. Restore the file to resume, or run the "
                "changed file with a new --data-dir",
            ) from e
        if out is not None and engine.recovered_from:
            print(f"resuming {flow.name!r}: {engine.recovered_from}", file=out, flush=True)
        if out is None:
            reports = flow.run(ticks=ticks, forever=forever)
        else:
            from ..ui.progress import TickProgress

            with TickProgress("run", total_ticks=ticks, file=out) as bar:
                reports = flow.run(ticks=ticks, forever=forever, on_tick=bar)
        if out is not None:
            frontier = reports[-1].frontier if reports else "-"
            print(f"{flow.name}: {len(reports)} ticks, frontier {frontier}", file=out, flush=True)
    finally:
        pipeline.close()
    return 0
