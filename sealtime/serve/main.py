"""``sealtime serve``: the live service and its PostgreSQL wire front end, in one process.

Loopback by default; any other ``--host`` needs ``--password-file`` (the front end refuses
to start without one). The service runs until SIGTERM or Ctrl-C; ``kill -9`` loses
nothing: a restart on the same data dir brings every object back.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

__all__ = ["add_arguments", "serve"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``sealtime serve``."""
    p.add_argument("--data-dir", required=True, help="the service's data dir")
    p.add_argument("--port", type=int, default=6875, help="PostgreSQL wire port (default 6875)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default loopback)")
    p.add_argument("--http-port", type=int, default=None, help="serve the web view on this port")
    p.add_argument(
        "--password-file",
        default=None,
        help="'user:password' (or SCRAM verifier) lines; required off loopback",
    )
    p.add_argument("--name", default="sealtime", help="the service's name in its data dir")
    p.add_argument("--tick", default="1s", help="the ticker's interval (default 1s)")
    p.add_argument("--metadata", default=None, help="postgresql:// URL of a shared store")
    p.add_argument("--master", default=None, help="a Spark master URL (default local[*])")


def serve(args: argparse.Namespace, out: Any = None) -> int:
    """Start the service and its front ends; block until a signal stops them."""
    from .pgwire.limits import check_exposure
    from .pgwire.server import PgServer
    from .service import Service, ServiceSettings
    from .session import ServiceBackend

    out = out or sys.stdout
    check_exposure(args.host, args.password_file)  # (before anything starts)
    service = Service(
        ServiceSettings(
            data_dir=args.data_dir,
            name=args.name,
            tick=args.tick,
            master=args.master,
            metadata=args.metadata,
        )
    ).start()
    server = None
    try:
        server = PgServer(
            ServiceBackend(service),
            host=args.host,
            port=args.port,
            password_file=args.password_file,
        ).start()
        if args.http_port is not None:
            ui = service.flow.serve_ui(args.host, args.http_port)
            print(f"web view: {ui.url}", file=out, flush=True)
        print(
            f'sealtime serve: {service.settings.name} on {args.data_dir}; psql "{server.dsn()}"',
            file=out,
            flush=True,
        )
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(0.5):
            if service.failure is not None:
                # (`sealtime.summaries.run_command`, the command's entry, prints its one
                # line — "stopped" and status 4 when fenced — and logs the trace)
                raise service.failure
        return 0
    finally:
        if server is not None:
            server.close()
        service.close()
