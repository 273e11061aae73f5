"""The live service (``sealtime serve``).

* `sealtime.serve.backend`: the typed interface between the wire front end and the
  service (`Backend`, `Session`, results, `PgType`);
* `sealtime.serve.pgwire`: the PostgreSQL wire front end (`PgServer`, `ServerLimits`);
* `sealtime.serve.fake`: `FakeBackend`, the interface over in-memory Arrow tables;
* `sealtime.serve.client`: `connect`, a DB-API connection with ``subscribe(view)``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["connect"]


def __getattr__(name: str) -> Any:
    # (lazily: `sealtime`'s command line registers `serve`'s arguments for every
    # command, and the client's psycopg import costs 0.1-0.3 s a start)
    if name == "connect":
        from .client import connect

        return connect
    raise AttributeError(f"module 'sealtime.serve' has no attribute {name!r}")
