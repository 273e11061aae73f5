"""Failpoints: named places where a test can make the process die with SIGKILL.

Crash tests need to kill the coordinator at exact moments — between writing the log and
committing its binding, between writing a sink's files and committing them — not only
at random times. Each such place calls `failpoint(name)`; the environment variable
``SEALTIME_FAILPOINTS="name=n,other=m"`` makes the *n*-th hit of `name` kill the process
(SIGKILL: no cleanup, no flush, exactly like a machine dying). With the variable unset
a failpoint costs one dict lookup.

The places (see `sealtime.engine.coordinator` and the sinks):

* ``ingest.logged`` — log files written, binding not yet committed;
* ``binding.committed`` — binding durable, nothing propagated;
* ``tick.computed`` — operators ran, sinks not yet committed;
* ``sink.written`` — a sink's files written, not yet committed;
* ``sink.committed`` — a sink committed, upstream not yet acknowledged;
* ``checkpoint.written`` — checkpoint files written, manifest not yet recorded;
* ``tick.read_ahead`` — the next tick's binding durable (minted early, while this
  tick's Arrow sinks collect), this tick's sinks not yet committed.

>>> failpoint("ingest.logged")  # unset: nothing happens
>>> parse("sink.written=2, ingest.logged")
{'sink.written': 2, 'ingest.logged': 1}
"""

from __future__ import annotations

import os
import signal

from .errors import ConfigError

__all__ = ["POINTS", "failpoint", "parse"]

POINTS = (
    "ingest.logged",
    "binding.committed",
    "tick.computed",
    "sink.written",
    "sink.committed",
    "checkpoint.written",
    "tick.read_ahead",
)

_armed: dict[str, int] | None = None
_hits: dict[str, int] = {}


def parse(spec: str) -> dict[str, int]:
    """``"name=n,..."`` → ``{name: n}``; unknown names are an error naming the choices."""
    out: dict[str, int] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        name, _, count = item.partition("=")
        name = name.strip()
        if name not in POINTS:
            raise ConfigError(
                f"SEALTIME_FAILPOINTS: unknown failpoint {name!r}; use one of {', '.join(POINTS)}"
            )
        out[name] = int(count or 1)
    return out


def failpoint(name: str) -> None:
    """Kill this process with SIGKILL if `name` is armed and this is its n-th hit."""
    global _armed
    if _armed is None:
        _armed = parse(os.environ.get("SEALTIME_FAILPOINTS", ""))
    if name not in _armed:
        return
    _hits[name] = _hits.get(name, 0) + 1
    if _hits[name] == _armed[name]:
        os.kill(os.getpid(), signal.SIGKILL)
