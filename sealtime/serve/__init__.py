"""The live service (``sealtime serve``).

* `sealtime.serve.backend`: the typed interface between the wire front end and the
  service (`Backend`, `Session`, results, `PgType`);
* `sealtime.serve.pgwire`: the PostgreSQL wire front end (`PgServer`, `ServerLimits`);
* `sealtime.serve.fake`: `FakeBackend`, the interface over in-memory Arrow tables;
* `sealtime.serve.client`: `connect`, a DB-API connection with ``subscribe(view)``.
"""

from .client import connect

__all__ = ["connect"]
