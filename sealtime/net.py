"""Network addresses, defined once: the one address grammar, the loopback host and the
test for one.

Every setting that takes an address (a publisher, a catalog, ``--ui``) reads it with
`parse_address`, and everything that listens or connects (the pub-sub publisher, the
web view, the PostgreSQL wire front end, the Spark driver) asks `is_loopback`, so a
host counts as local in one way everywhere. Bottom floor: imports only `sealtime.errors`.

>>> LOOPBACK, is_loopback(LOOPBACK)
('127.0.0.1', True)
"""

from __future__ import annotations

import ipaddress

from .errors import ConfigError

__all__ = ["LOOPBACK", "Address", "is_loopback", "parse_address"]

#: an address as a setting takes it: ``"[HOST:]PORT"`` or ``(host, port)``
Address = str | tuple[str, int]

#: the address this machine alone reaches: the default host of every listener
LOOPBACK = "127.0.0.1"


def is_loopback(host: str) -> bool:
    """Is `host` an address of this machine only (127.0.0.0/8, ``::1``, ``localhost``)?
    A bracketed IPv6 literal (as in a URL) counts as its address; a name other than
    ``localhost`` is not resolved, so it counts as remote; so does ``0.0.0.0`` (every
    interface) and ``""`` (the same, to a socket's ``bind``).

    >>> [is_loopback(h) for h in ("127.0.0.1", "127.0.0.2", "::1", "[::1]", "LocalHost")]
    [True, True, True, True, True]
    >>> [is_loopback(h) for h in ("0.0.0.0", "", "::", "10.0.0.1", "example.com")]
    [False, False, False, False, False]
    """
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: not resolved, so not known to be local
        return False


def parse_address(address: Address, setting: str = "address") -> tuple[str, int]:
    """``"PORT"``, ``"HOST:PORT"``, ``"[IPv6]:PORT"`` or ``(host, port)`` as ``(host,
    port)``: the one address grammar of sealtime (publishers, catalogs, the web view).
    Without a host it is loopback; `setting` names the parameter in errors.

    >>> parse_address("127.0.0.1:7000"), parse_address(("localhost", 1)), parse_address("[::1]:9")
    (('127.0.0.1', 7000), ('localhost', 1), ('::1', 9))
    >>> parse_address("8080"), parse_address("0.0.0.0:9000")
    (('127.0.0.1', 8080), ('0.0.0.0', 9000))
    >>> parse_address("web:x", "--ui")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: --ui='web:x' is not an address: give PORT, HOST:PORT or [IPv6]:PORT, e.g. 127.0.0.1:8080
    """
    if isinstance(address, tuple) and len(address) == 2:
        host, port = str(address[0]), str(address[1])
    else:
        host, _, port = str(address).strip().rpartition(":")
        host = host.strip("[]") or LOOPBACK
    if not (port.isascii() and port.isdigit()):
        raise ConfigError(
            f"{setting}={address!r} is not an address: give PORT, HOST:PORT or [IPv6]:PORT, "
            "e.g. 127.0.0.1:8080"
        )
    if int(port) > 65535:
        raise ConfigError(f"{setting}={address!r}: the port must be in 0..65535")
    return host, int(port)
