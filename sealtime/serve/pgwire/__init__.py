"""The PostgreSQL wire front end of ``sealtime serve`` (docs/pgwire.md).

`PgServer` speaks protocol 3.0 (simple and extended queries, COPY out, cursors,
cancel requests, SCRAM-SHA-256 and md5) over a `sealtime.serve.backend.Backend`;
`ServerLimits` bounds what a client may cost.
"""

from .limits import ServerLimits, check_exposure, is_loopback
from .server import PgServer, serve_pgwire
from .sqlstate import sqlstate_of

__all__ = [
    "PgServer",
    "ServerLimits",
    "check_exposure",
    "is_loopback",
    "serve_pgwire",
    "sqlstate_of",
]
