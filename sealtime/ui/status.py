"""`sealtime status`: what a job's metadata store says, for a running or stopped job.

Reads the store read-only — an SQLite file opened with ``mode=ro`` (WAL: readers never
block the running job's writer and see its last committed transaction), or a
PostgreSQL URL in read-only transactions — and reports, per dataflow in the store:

* the last binding (tick, binding time, per source position, frontier and rows);
* per source its position and acknowledged position. The acknowledged position is
  recomputed the way the engine computes it
  (`sealtime.engine.bindings.resumption_positions`) from the durable uppers of the
  dataflow's shards in the store (``<flow>.*`` Persist shards); sinks that keep their
  commit log outside the store (Parquet) are not seen;
* per operator its frontier: the plan graph recorded in the store (kinds, names,
  inputs, path summaries) with the last binding's frontiers through the progress
  tracker — exactly what the engine computed at that tick;
* the data dir's owner (`sealtime.storage.ownership`): host, pid, since when, epoch,
  and whether it holds its lease (``released`` once it stopped; an expired lease is a
  stopped or unreachable process, replaced by the next start);
* checkpoints, shards (``upper``/``since``) and the catalog.

>>> import tempfile
>>> with tempfile.TemporaryDirectory() as d:
...     collect_status(d)["dataflows"]
Traceback (most recent call last):
...
FileNotFoundError: sealtime status: no metadata store in ...
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Sequence
from typing import Any

from ..engine.frontiers import FrontierTracker, output_frontier
from ..locations import existing_sqlite_path
from ..plan import GRAPH_NAMESPACE, GraphNode
from ..storage.ownership import Owner, ProcessIdentity, database_clock, read_owners

__all__ = ["collect_status", "format_status", "status_cmd"]


class _ReadOnly:
    """Query helper over an SQLite file (``mode=ro``) or a PostgreSQL store."""

    def __init__(self, where: str) -> None:
        self.pg = None
        self.conn = None
        if where.lower().startswith(("postgresql://", "postgres://")):
            from ..storage import MetadataStore

            self.pg = MetadataStore.open(where)
            self.url = self.pg.url
            return
        path = existing_sqlite_path(
            where,
            "sealtime status",
            "pass the job's --data-dir, or --metadata postgresql://... for a shared store",
        )
        self.url = path
        self.conn = sqlite3.connect(f"file:{os.path.abspath(path)}?mode=ro", uri=True, timeout=10)
        # One read transaction: every table seen at the same commit of the running job.
        self.conn.execute("BEGIN")

    def tables(self) -> set[str]:
        if self.conn is not None:
            rows = self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")
            return {r[0] for r in rows}
        rows = self.query(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()"
        )
        return {r[0] for r in rows}

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if self.conn is not None:
            return list(self.conn.execute(sql, params))
        assert self.pg is not None
        with self.pg.transaction(readonly=True) as tx:
            return tx.query(sql, params)

    def clock(self) -> float:
        """The lease clock (`database_clock`): PostgreSQL's for a shared store, this
        machine's for SQLite."""
        if self.pg is not None:
            with self.pg.transaction(readonly=True) as tx:
                return database_clock(tx)
        row = self.query("SELECT (julianday('now') - 2440587.5) * 86400.0")
        return float(row[0][0])

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.pg is not None:
            self.pg.close()


def _graph(stored: list[dict[str, Any]]) -> list[GraphNode]:
    """The plan graph the engine recorded (under `sealtime.plan.GRAPH_NAMESPACE`)."""
    return [GraphNode.from_json(d) for d in stored]


def _operator_frontiers(
    graph: list[GraphNode], sources: dict[str, Any], into_time: int
) -> dict[int, int | None]:
    """Every operator's output frontier after the last binding, as the engine computed
    it: the roots' frontiers (a source's from its binding; a side output's, the binding
    time + 1, or empty once its source is exhausted) through the progress tracker."""
    by_id = {g.id: g for g in graph}
    roots: dict[int, int | None] = {}
    for g in graph:
        if not g.root:
            continue
        source = sources.get(g.name) if not g.inputs else sources.get(by_id[g.inputs[0]].name)
        if source is None:
            continue
        if not g.inputs:
            roots[g.id] = source.get("frontier")
        else:
            roots[g.id] = None if source.get("exhausted") else into_time + 1
    frontiers = FrontierTracker(graph).advance(roots)
    return {g.id: output_frontier(g.summary, frontiers.get(g.id)) for g in graph}


def collect_status(data_dir: str, metadata: str | None = None) -> dict[str, Any]:
    """The status of every dataflow in the store of `data_dir` (or `metadata`, a URL),
    as a JSON-able dict. Read-only; safe while the job runs."""
    from ..engine.bindings import BindingPart, resumption_positions

    db = _ReadOnly(metadata or data_dir)
    try:
        tables = db.tables()
        flows: list[str] = []
        if "sealtime_bindings" in tables:
            flows = [
                r[0] for r in db.query("SELECT DISTINCT flow FROM sealtime_bindings ORDER BY flow")
            ]
        graphs: dict[str, Any] = {}
        kv: dict[tuple[str, str], Any] = {}
        if "sealtime_kv" in tables:
            for ns, key, value in db.query("SELECT namespace, key, value FROM sealtime_kv"):
                kv[(ns, key)] = json.loads(value)
                if ns == GRAPH_NAMESPACE:
                    graphs[key] = kv[(ns, key)]
        owners: dict[str, Owner] = {}
        if "sealtime_owners" in tables:
            # (a flow's newest epoch: in a shared store it may have owned other data dirs)
            for o in read_owners(db.query):
                if o.flow not in owners or o.epoch > owners[o.flow].epoch:
                    owners[o.flow] = o
        now = db.clock()
        flows = sorted(set(flows) | set(graphs) | set(owners))
        shards = []
        if "sealtime_shards" in tables:
            for name, lower, upper, since in db.query(
                "SELECT name, lower, upper, since FROM sealtime_shards ORDER BY name"
            ):
                shards.append({"name": name, "lower": lower, "upper": upper, "since": since})
        out_flows = []
        for flow in flows:
            rows = (
                db.query(
                    "SELECT tick, into_time, sources FROM sealtime_bindings WHERE flow = ? "
                    "ORDER BY tick",
                    (flow,),
                )
                if "sealtime_bindings" in tables
                else []
            )
            parts = [json.loads(s) for _, _, s in rows]
            last = None
            if rows:
                tick, into, _ = rows[-1]
                last = {
                    "tick": int(tick),
                    "into_time": int(into),
                    "sources": {
                        name: {
                            "position": p.get("position"),
                            "frontier": p.get("frontier"),
                            "rows": sum(f.get("rows", 0) for f in p.get("files", [])),
                        }
                        for name, p in parts[-1].items()
                    },
                }
            uppers = [s["upper"] for s in shards if s["name"].startswith(f"{flow}.")]
            present = [u for u in uppers if u is not None]
            typed = [
                {n: BindingPart.from_json(p, int(into)) for n, p in part.items()}
                for (_, into, _), part in zip(rows, parts)
            ]
            acked = resumption_positions(typed, min(present) if present else None)
            sources = {}
            for name, p in (parts[-1] if parts else {}).items():
                state = p.get("state", {})
                sources[name] = {
                    "position": p.get("position"),
                    "acknowledged": acked.get(name),
                    "frontier": p.get("frontier"),
                    "rows": state.get("rows_in"),
                    "late": state.get("late_count"),
                    "errors": state.get("error_count"),
                    "health": state.get("health"),
                    "exhausted": state.get("exhausted"),
                }
            graph = _graph(graphs.get(flow, []))
            frontiers = (
                _operator_frontiers(graph, sources, int(rows[-1][1])) if graph and rows else {}
            )
            operators = [
                {
                    "id": g.id,
                    "kind": g.kind,
                    "name": g.name,
                    "inputs": list(g.inputs),
                    "frontier": frontiers.get(g.id),
                }
                for g in graph
            ]
            checkpoints = []
            if "sealtime_checkpoints" in tables:
                for tick, manifest in db.query(
                    "SELECT tick, manifest FROM sealtime_checkpoints WHERE flow = ? ORDER BY tick",
                    (flow,),
                ):
                    m = json.loads(manifest)
                    checkpoints.append(
                        {
                            "tick": int(tick),
                            "directory": m.get("directory"),
                            "truncate": m.get("truncate", {}),
                        }
                    )
            out_flows.append(
                {
                    "name": flow,
                    "ticks": len(rows),
                    "last_binding": last,
                    "sources": sources,
                    "operators": operators,
                    "checkpoints": checkpoints,
                    "owner": _owner(owners.get(flow), now),
                }
            )
        catalog = []
        if "sealtime_catalog" in tables:
            cols = (
                [r[1] for r in db.query("PRAGMA table_info(sealtime_catalog)")] if db.conn else []
            )
            for row in db.query("SELECT * FROM sealtime_catalog"):
                entry = dict(zip(cols, row)) if cols else {"row": list(row)}
                entry.pop("arrow_schema", None)
                entry.pop("schema", None)
                catalog.append(entry)
        return {"store": db.url, "dataflows": out_flows, "shards": shards, "catalog": catalog}
    finally:
        db.close()


def _owner(owner: Owner | None, now: float) -> dict[str, Any] | None:
    """The owner record as `collect_status` reports it (None: never owned). ``holds``:
    it would refuse a new start (`Owner.holds`: not released, its process alive where
    this machine can tell, its lease not expired at the store's clock `now`)."""
    if owner is None or owner.epoch == 0:
        return None
    return {
        "host": owner.process.host,
        "pid": owner.process.pid,
        "since": owner.started_at,
        "epoch": owner.epoch,
        "data_dir": owner.data_dir,
        "released": owner.released,
        "holds": owner.holds(now, ProcessIdentity.current()),
        "describe": owner.describe(now),
    }


def _owner_line(owner: dict[str, Any] | None) -> str:
    """The owner's line of `format_status`.

    >>> _owner_line({"holds": False, "released": True, "describe": "pid 7 on host 'h' since x"})
    "  owner: none (last: pid 7 on host 'h' since x; released)"
    """
    if owner is None:
        return "  owner: none (never run)"
    if owner["holds"]:
        return f"  owner: {owner['describe']}"
    why = "released" if owner["released"] else "its process is gone or its lease expired"
    return f"  owner: none (last: {owner['describe']}; {why})"


def _t(ms: Any) -> str:
    import datetime as dt

    if ms is None:
        return "∞ (finished)"
    if not isinstance(ms, int) or ms <= -(2**62):
        return str(ms) if not isinstance(ms, int) else "-∞"
    try:
        stamp = dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime(
            "%Y-%m-%d %H:%M:%S.%f"
        )[:-3]
    except (OverflowError, OSError, ValueError):
        return str(ms)
    return f"{ms} ({stamp})"


def format_status(status: dict[str, Any]) -> str:
    """`collect_status`'s result as text for a terminal.

    >>> print(format_status({"store": "m.sqlite", "dataflows": [], "shards": [], "catalog": []}))
    store: m.sqlite
    no dataflow has run in this store yet
    shards: none
    catalog: empty
    """
    lines = [f"store: {status['store']}"]
    if not status["dataflows"]:
        lines.append("no dataflow has run in this store yet")
    for f in status["dataflows"]:
        lines.append(f"dataflow {f['name']}: {f['ticks']} ticks")
        lines.append(_owner_line(f.get("owner")))
        b = f["last_binding"]
        if b is not None:
            lines.append(f"  last binding: tick {b['tick']} at {_t(b['into_time'])}")
        lines.append("  sources:")
        for name, s in f["sources"].items():
            lines.append(
                f"    {name}: position {json.dumps(s['position'])}, acknowledged "
                f"{json.dumps(s['acknowledged'])}, frontier {_t(s['frontier'])}, rows {s['rows']}, "
                f"late {s['late']}, errors {s['errors']}, health {s['health']}"
            )
        lines.append("  operators:")
        for o in f["operators"]:
            lines.append(f"    #{o['id']} {o['kind']} {o['name']}: frontier {_t(o['frontier'])}")
        if f["checkpoints"]:
            lines.append(
                "  checkpoints: " + ", ".join(f"tick {c['tick']}" for c in f["checkpoints"])
            )
        else:
            lines.append("  checkpoints: none")
    if status["shards"]:
        lines.append("shards:")
        for s in status["shards"]:
            lines.append(f"  {s['name']}: upper {_t(s['upper'])}, since {_t(s['since'])}")
    else:
        lines.append("shards: none")
    if status["catalog"]:
        lines.append("catalog:")
        for e in status["catalog"]:
            lines.append("  " + ", ".join(f"{k}={v}" for k, v in e.items()))
    else:
        lines.append("catalog: empty")
    return "\n".join(lines)


def status_cmd(
    data_dir: str, *, metadata: str | None = None, as_json: bool = False, out: Any = None
) -> int:
    """The ``sealtime status`` command: print the status (text or ``--json``) to `out`.
    Returns the exit code (1 when there is no store)."""
    import sys

    out = out or sys.stdout
    try:
        status = collect_status(data_dir, metadata)
    except FileNotFoundError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    text = json.dumps(status, indent=2, default=str) if as_json else format_status(status)
    print(text, file=out, flush=True)
    return 0
