"""`sealtime.durations.parse_duration`: the one grammar of every duration setting."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealtime.durations import parse_duration
from sealtime.errors import ConfigError

UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
LONG = {"milliseconds": "ms", "seconds": "s", "minutes": "m", "hours": "h", "days": "d"}


@pytest.mark.parametrize(
    ("value", "ms"),
    [
        (0, 0),
        (250, 250),
        ("0", 0),
        ("1500", 1500),
        ("0s", 0),
        ("500ms", 500),
        ("2s", 2000),
        ("1.5s", 1500),
        (".5s", 500),
        ("1.5m", 90_000),
        ("2min", 120_000),
        ("1h", 3_600_000),
        ("1d", 86_400_000),
        ("1m30s", 90_000),
        ("1h15m", 4_500_000),
        ("1m 30s", 90_000),
        (" 10 seconds ", 10_000),
        ("4 SECONDS", 4000),
        (timedelta(seconds=3), 3000),
        (timedelta(microseconds=2000), 2),
        (np.int64(7), 7),
    ],
)
def test_accepted(value, ms):
    assert parse_duration(value) == ms


@pytest.mark.parametrize(
    "value",
    ["", " ", "s", "2x", "5 parsecs", "1.5ms", "0.0001s", "-1s", "--1s", "1s-", "1s!", "s1"]
    + [-5, 1.5, True, None, timedelta(microseconds=10), timedelta(seconds=-1)],
)
def test_refused_with_a_config_error_naming_the_setting(value):
    with pytest.raises(ConfigError, match=r"^source 's' lateness=") as info:
        parse_duration(value, "source 's' lateness")
    assert isinstance(info.value, ValueError)  # callers that catch ValueError keep working


def test_negative_says_so():
    with pytest.raises(ConfigError, match=r"lateness=-5 is negative"):
        parse_duration(-5, "lateness")
    with pytest.raises(ConfigError, match=r"lateness='-1m30s' is negative"):
        parse_duration("-1m30s", "lateness")


# A compound duration written in any mix of short and long unit names, spacing and case
# is the sum of its parts, computed here from the parts' integers.
parts = st.lists(
    st.tuples(st.integers(0, 10_000), st.sampled_from(sorted(UNITS) + sorted(LONG))),
    min_size=1,
    max_size=5,
)


@given(parts, st.sampled_from(["", " "]), st.booleans())
def test_compound_is_the_sum_of_its_parts(items, sep, upper):
    text = sep.join(f"{n}{sep}{unit.upper() if upper else unit}" for n, unit in items)
    expected = sum(n * UNITS[LONG.get(unit, unit)] for n, unit in items)
    assert parse_duration(text) == expected


@given(st.integers(0, 10**12))
def test_int_string_and_timedelta_forms_agree(ms):
    assert parse_duration(ms) == parse_duration(str(ms)) == ms
    assert parse_duration(timedelta(milliseconds=ms)) == ms


@given(st.integers(0, 10**9), st.integers(0, 999))
def test_decimal_seconds_are_exact(whole, millis):
    assert parse_duration(f"{whole}.{millis:03d}s") == whole * 1000 + millis
    with pytest.raises(ConfigError, match="not a whole number of milliseconds"):
        parse_duration(f"{whole}.{millis:03d}1s")
