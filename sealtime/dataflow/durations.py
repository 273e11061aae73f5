"""Durations in configuration: ``"10s"``, ``"250ms"``, ``"2m"``, ``"1h"`` or an int of ms.

Logical time in the data plane is int64 milliseconds, so every duration a user writes is
turned into milliseconds once, when the dataflow is described.
"""

from __future__ import annotations

import re

from ..errors import ConfigError

__all__ = ["parse_duration"]

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_PATTERN = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)\s*$")


def parse_duration(value: str | int, setting: str = "duration") -> int:
    """Return `value` in milliseconds; `setting` names the parameter in error messages.

    >>> parse_duration("10s"), parse_duration("250ms"), parse_duration(1500), parse_duration("1.5m")
    (10000, 250, 1500, 90000)
    >>> parse_duration("ten", "lateness")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: lateness='ten' is not a duration: write e.g. '4s', '250ms', '1m' or an int of milliseconds
    """
    if isinstance(value, bool):
        raise ConfigError(f"{setting}={value!r} is not a duration: use e.g. '4s' or an int of ms")
    if isinstance(value, int):
        if value < 0:
            raise ConfigError(f"{setting}={value!r} is negative: durations must be >= 0")
        return value
    if isinstance(value, str):
        match = _PATTERN.match(value)
        if match:
            return int(round(float(match.group(1)) * _UNITS[match.group(2)]))
    raise ConfigError(
        f"{setting}={value!r} is not a duration: write e.g. '4s', '250ms', '1m' "
        "or an int of milliseconds"
    )
