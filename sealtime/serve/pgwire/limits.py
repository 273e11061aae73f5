"""`ServerLimits`: every bound of the wire front end in one typed place, and the check
that a server reachable from other hosts has passwords.

A slow or hostile client must not exhaust the service: connections, statement size,
result size and each subscription's buffer are bounded, and so are the time a
connection may take to authenticate and to stay idle. A bound that is hit is an error
naming the setting (SQLSTATE 54000, or 53300 for connections).

>>> ServerLimits().max_connections
64
>>> ServerLimits(max_connections=0)
Traceback (most recent call last):
...
sealtime.errors.ConfigError: ServerLimits(max_connections=0): must be a positive number
>>> is_loopback("127.0.0.1"), is_loopback("::1"), is_loopback("localhost"), is_loopback("0.0.0.0")
(True, True, True, False)
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ...errors import ConfigError
from ...net import is_loopback  # (re-exported: the one test of a local host)

__all__ = ["ServerLimits", "check_exposure", "is_loopback"]

MiB = 1 << 20


@dataclass(frozen=True)
class ServerLimits:
    """Bounds of the wire front end (sizes in bytes, times in seconds).

    * `max_connections`: sessions at once; one more is refused with 53300.
    * `max_statement_bytes`: the largest message a client may send (a query, a Parse or
      a Bind with its parameters); larger ones end the connection with 54000.
    * `max_result_bytes`: the encoded size of one statement's rows; a SELECT beyond it
      fails with 54000 after the rows sent so far (the result is streamed, never held).
    * `subscription_buffer_bytes`: rows of one subscription waiting for its client
      (COPY: unsent; a cursor: not yet fetched). Beyond it the subscription is cut
      ("fell behind at time t") and the service is told by closing its events.
    * `max_cursors`: open cursors per connection.
    * `handshake_timeout`: from TCP accept to authenticated.
    * `idle_timeout`: a session that sends nothing for this long (outside a running
      statement) is closed; None: never.
    * `batch_rows`: rows encoded and written at a time (bounds the memory of a write).
    """

    max_connections: int = 64
    max_statement_bytes: int = 1 * MiB
    max_result_bytes: int = 1024 * MiB
    subscription_buffer_bytes: int = 64 * MiB
    max_cursors: int = 16
    handshake_timeout: float = 10.0
    idle_timeout: float | None = 3600.0
    batch_rows: int = 16384

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name == "idle_timeout":
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"ServerLimits({f.name}={value!r}): must be a positive number")


def check_exposure(host: str, password_file: str | None) -> None:
    """Refuse to listen beyond loopback without passwords.

    >>> check_exposure("127.0.0.1", None)
    >>> check_exposure("0.0.0.0", None)
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: --host 0.0.0.0 is reachable from other machines, and without --password-file anyone there could connect; give --password-file F (lines user:password or user:SCRAM-SHA-256$...), or keep the default --host 127.0.0.1
    """
    if not is_loopback(host) and password_file is None:
        raise ConfigError(
            f"--host {host} is reachable from other machines, and without --password-file "
            "anyone there could connect; give --password-file F (lines user:password or "
            "user:SCRAM-SHA-256$...), or keep the default --host 127.0.0.1"
        )
