"""Durations in settings: ``"10s"``, ``"1m30s"``, ``"250ms"``, ``"1.5s"``, ``"10 seconds"``,
a `datetime.timedelta`, or an int of milliseconds — one grammar for every setting.

Logical time in the data plane is int64 milliseconds, so a duration is turned into
milliseconds once, when the setting is read. A string is one or more
``<number><unit>`` parts (spaces allowed, units case-insensitive): ``ms``, ``s``,
``m``/``min``, ``h``, ``d`` and their long names (``seconds``, ``minutes``...), as Spark
writes them. A bare number (``1500``, ``"1500"``) is milliseconds. The total must be a
whole, non-negative number of milliseconds: nothing is rounded away silently.
"""

from __future__ import annotations

import re
from datetime import timedelta
from decimal import Decimal
from numbers import Integral
from typing import Any

from .errors import ConfigError

__all__ = ["parse_duration"]

_MS_PER_UNIT = {
    **dict.fromkeys(("ms", "msec", "millisecond", "milliseconds"), 1),
    **dict.fromkeys(("s", "sec", "second", "seconds"), 1000),
    **dict.fromkeys(("m", "min", "minute", "minutes"), 60_000),
    **dict.fromkeys(("h", "hour", "hours"), 3_600_000),
    **dict.fromkeys(("d", "day", "days"), 86_400_000),
}
_PART = re.compile(r"\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-zA-Z]+)")
_FIX = "write e.g. '4s', '250ms', '1m30s' or an int of milliseconds"


def parse_duration(value: Any, setting: str = "duration") -> int:
    """`value` in whole milliseconds; `setting` names the parameter in error messages.

    >>> parse_duration("10s"), parse_duration("250ms"), parse_duration(1500), parse_duration("1.5m")
    (10000, 250, 1500, 90000)
    >>> parse_duration("1m30s"), parse_duration("1h15m"), parse_duration("10 seconds")
    (90000, 4500000, 10000)
    >>> parse_duration(timedelta(seconds=2)), parse_duration("1500")
    (2000, 1500)
    >>> parse_duration("ten", "lateness")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: lateness='ten' is not a duration: write e.g. '4s', '250ms', '1m30s' or an int of milliseconds
    >>> parse_duration("-4s", "lateness")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: lateness='-4s' is negative: durations must be >= 0
    >>> parse_duration("5 parsecs", "tick")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: tick='5 parsecs' is not a duration: unknown unit 'parsecs' (use ms, s, m, h or d); write e.g. '4s', '250ms', '1m30s' or an int of milliseconds
    """
    if isinstance(value, bool):
        raise ConfigError(f"{setting}={value!r} is not a duration: {_FIX}")
    if isinstance(value, Integral):
        ms = int(value)
    elif isinstance(value, timedelta):
        ms = _whole_ms(Decimal(value // timedelta(microseconds=1)) / 1000, value, setting)
    elif isinstance(value, str):
        ms = _parse_text(value, setting)
    else:
        raise ConfigError(f"{setting}={value!r} is not a duration: {_FIX}")
    if ms < 0:
        raise ConfigError(f"{setting}={value!r} is negative: durations must be >= 0")
    return ms


def _parse_text(value: str, setting: str) -> int:
    text = value.strip()
    sign = 1
    if text.startswith("-"):
        sign, text = -1, text[1:]
    if text.isdigit():
        return sign * int(text)  # a bare number: milliseconds, like the int form
    pos, total = 0, Decimal(0)
    while pos < len(text):
        part = _PART.match(text, pos)
        if part is None:
            break
        unit = part.group(2).lower()
        if unit not in _MS_PER_UNIT:
            raise ConfigError(
                f"{setting}={value!r} is not a duration: unknown unit {part.group(2)!r} "
                f"(use ms, s, m, h or d); {_FIX}"
            )
        total += Decimal(part.group(1)) * _MS_PER_UNIT[unit]  # exact: no float rounding
        pos = part.end()
    if pos == 0 or pos < len(text):
        raise ConfigError(f"{setting}={value!r} is not a duration: {_FIX}")
    return sign * _whole_ms(total, value, setting)


def _whole_ms(ms: Decimal, value: Any, setting: str) -> int:
    if ms != ms.to_integral_value():
        raise ConfigError(f"{setting}={value!r} is not a whole number of milliseconds: {_FIX}")
    return int(ms)
