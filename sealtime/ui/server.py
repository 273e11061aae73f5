"""The web server of the live view: a Starlette app run by uvicorn on a daemon thread.

Routes (all read-only):

* ``/`` and ``/static/*`` — the page (hand-written HTML/JS/SVG shipped in the package:
  no CDN, works offline);
* ``/api/snapshot`` — the latest `Snapshot` as JSON (the page polls it);
* ``/api/sources/{name}/late`` and ``.../errors`` — the latest late / error rows;
* ``/api/bindings`` and ``/api/checkpoints`` — the remap table and the checkpoints;
* ``/metrics`` — Prometheus text format (`sealtime.ui.metrics`).

Everything reads the `Monitor`'s snapshot or the metadata store (read-only
transactions), never the engine: the tick is never blocked by a request.
Loopback by default; another address only when the caller names it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from pathlib import Path
from typing import Any

from ..errors import ConfigError, InternalError
from ..net import is_loopback
from ..storage.fs import DataFS
from .logs import latest_errors, latest_late
from .metrics import registry_for, render
from .snapshot import Monitor

__all__ = ["UiServer", "build_app", "serve_ui"]

log = logging.getLogger(__name__)

STATIC = Path(__file__).with_name("static")


class _StateSizes:
    """Sizes of operators' state directories, measured at most every `ttl` seconds
    (a directory walk: done on the server's thread, never on the tick)."""

    def __init__(self, ttl: float = 2.0) -> None:
        self.ttl = ttl
        self._cache: dict[str, tuple[float, int | None]] = {}

    def __call__(self, path: str) -> int | None:
        now = time.monotonic()
        hit = self._cache.get(path)
        if hit is not None and now - hit[0] < self.ttl:
            return hit[1]
        size: int | None = None
        with contextlib.suppress(OSError, ConfigError):
            state = DataFS.from_uri(path, setting="state directory")
            if state.is_dir():
                size = sum(e.size for e in state.list(recursive=True) if not e.is_dir)
        self._cache[path] = (now, size)
        return size


def build_app(monitor: Monitor, store: Any = None) -> Any:
    """The Starlette application serving `monitor`'s snapshots (and, for bindings and
    checkpoints, `store`: the dataflow's metadata store, read in read-only transactions)."""
    from starlette.applications import Starlette
    from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    sizes = _StateSizes()
    registry = registry_for(monitor, sizes)

    def dumps(obj: Any) -> Response:
        return Response(json.dumps(obj, default=str), media_type="application/json")

    async def index(request: Any) -> Any:
        return FileResponse(STATIC / "index.html")

    def snapshot(request: Any) -> Any:  # sync: runs in the thread pool
        snap = monitor.snapshot
        data = snap.to_dict()
        data["version"] = monitor.version
        data["state_bytes"] = {
            str(n.id): sizes(n.state_dir) for n in snap.nodes if n.stateful and n.state_dir
        }
        return dumps(data)

    def source_rows(request: Any) -> Any:
        name, which = (str(request.path_params.get(k, "")) for k in ("name", "which"))
        limit = min(int(request.query_params.get("limit", "20")), 500)
        src = monitor.snapshot.source(name)
        if src is None:
            return JSONResponse({"error": f"no source named {name!r}"}, status_code=404)
        if which == "late":
            rows = latest_late(src.late_files, limit)
            total = src.late
        elif which == "errors":
            rows = latest_errors(src.error_files, limit)
            total = src.errors
        else:
            return JSONResponse({"error": "late or errors"}, status_code=404)
        return dumps({"source": name, "which": which, "total": total, "rows": rows})

    def bindings(request: Any) -> Any:
        snap = monitor.snapshot
        return dumps({"total": snap.bindings_total, "bindings": snap.to_dict()["bindings"]})

    def checkpoints(request: Any) -> Any:
        rows: list[Any] = []
        if store is not None:
            with contextlib.suppress(Exception), store.transaction(readonly=True) as tx:
                rows = tx.query(
                    "SELECT tick, manifest FROM sealtime_checkpoints WHERE flow = ? ORDER BY tick",
                    (monitor.snapshot.flow,),
                )
        out = []
        for tick, manifest in rows:
            m = json.loads(manifest)
            out.append(
                {
                    "tick": int(tick),
                    "directory": m.get("directory"),
                    "operators": len(m.get("operators", {})),
                    "pending": len(m.get("pending", {})),
                    "truncate": m.get("truncate", {}),
                }
            )
        return dumps({"checkpoints": out})

    def metrics(request: Any) -> Any:
        return PlainTextResponse(
            render(registry), media_type="text/plain; version=0.0.4; charset=utf-8"
        )

    routes = [
        Route("/", index),
        Route("/api/snapshot", snapshot),
        Route("/api/sources/{name}/{which}", source_rows),
        Route("/api/bindings", bindings),
        Route("/api/checkpoints", checkpoints),
        Route("/metrics", metrics),
        Mount("/static", app=StaticFiles(directory=str(STATIC)), name="static"),
    ]
    return Starlette(routes=routes)


class UiServer:
    """A running web view: ``url``, ``address``, ``monitor``; `close()` stops it."""

    def __init__(self, monitor: Monitor, host: str, port: int, store: Any = None) -> None:
        import uvicorn

        self.monitor = monitor
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            sock.close()
            raise ConfigError(
                f"serve_ui(host={host!r}, port={port}): cannot listen there: {exc}; choose "
                "another port, or 0 for a free one"
            ) from exc
        self.address: tuple[str, int] = sock.getsockname()[:2]
        config = uvicorn.Config(
            build_app(monitor, store),
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [sock]},
            name="sealtime-ui",
            daemon=True,
        )
        self._sock = sock
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started and self._thread.is_alive():
            if time.monotonic() > deadline:
                raise InternalError("serve_ui: the web server did not start within 10 s")
            time.sleep(0.01)
        if not is_loopback(host):
            log.warning("sealtime UI listens on %s: reachable from other machines", self.url)
        log.info("sealtime UI at %s", self.url)

    @property
    def url(self) -> str:
        host, port = self.address
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    def close(self) -> None:
        """Stop serving (idempotent)."""
        self._server.should_exit = True
        self._thread.join(timeout=5)
        with contextlib.suppress(OSError):
            self._sock.close()


def serve_ui(flow: Any, host: str = "127.0.0.1", port: int = 0, *, history: int = 120) -> UiServer:
    """Attach a `Monitor` to `flow` (a tick observer: the engine hands it each tick's
    report) and serve the page. `Dataflow.serve_ui` calls it once and keeps the server."""
    monitor = Monitor(flow, history=history)
    flow.tick_observers.append(monitor.publish)
    return UiServer(monitor, host, port, store=flow.metadata_store)
