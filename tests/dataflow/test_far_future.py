"""One far-future event time must not make later records vanish (issue 32, item 2).

A producer with a broken clock sends ``{"ts": 253402300799000}`` (9999-12-31) among good
records. With ``max_future`` the record goes to ``errors`` with a reason naming the
setting, the frontier ignores it, and every good record before and after it reaches the
data output (or ``late``, if it is late on its own). Without the bound the record is
admitted and moves the frontier to year 9999, so the good records after it are late:
they must then reach ``late`` (stamped at the binding time, released with it), not
vanish. Either way no record ends up in no output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import sealtime as st

T = 1_436_918_400_000  # 2015-07-15T00:00:00Z, ms
YEAR_9999 = 253402300799000
FAR = 99  # the key of the far-future record


def write_records(d: Path) -> tuple[list[int], int]:
    """Good records in three 10 s windows, the year-9999 record after the fourth, one
    record late on its own (behind the largest time by more than the lateness), and good
    records after. Returns (keys of good records, key of the late one)."""
    times = [T + 1_000 * i for i in range(4)]  # window [T, T+10s)
    times += [T + 12_000, T + 15_000]  # window [T+10s, T+20s)
    records = [{"k": k, "ts": t} for k, t in enumerate(times)]
    records.insert(4, {"k": FAR, "ts": YEAR_9999})
    records += [{"k": 6, "ts": T + 2_000}]  # late by 13 s: lateness is 1 s
    records += [{"k": 7 + i, "ts": T + 21_000 + 1_000 * i} for i in range(5)]
    d.mkdir()
    with open(d / "a.jsonl", "w") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    good = [r["k"] for r in records if r["k"] != FAR]
    return good, 6


def run(make_flow, d: Path, max_rows: int, max_future: str | None, ticks: int | None = None):
    """Run a dataflow over the records: to the end of the files, or (`ticks`) for that
    many ticks of a source that never ends (its frontier stays where the data puts it)."""
    flow = make_flow()
    src = st.sources.Files(
        str(d),
        format="jsonl",
        schema={"k": "long", "ts": "long"},
        finite=ticks is None,
        settle=0,
    )
    events = flow.source(
        "ev", src, time="ts", lateness="1s", max_rows_per_tick=max_rows, max_future=max_future
    )
    windows = events.window(st.Tumbling("10s")).aggregate(n=st.count())
    late, errors = events.late, events.errors
    if ticks is None:
        flow.run()
    else:
        flow.run(ticks=ticks)
    return {
        "data": sorted(r["k"] for r in events.updates().to_pylist()),
        "late": late.updates().to_pylist(),
        "errors": errors.updates().to_pylist(),
        "windows": sorted((r["window_start"], r["n"]) for r in windows.updates().to_pylist()),
    }


@pytest.mark.parametrize("max_rows", [3, 100])
def test_far_future_record_is_an_error_and_every_good_record_is_kept(make_flow, tmp_path, max_rows):
    good, late_key = write_records(tmp_path / "in")
    out = run(make_flow, tmp_path / "in", max_rows, max_future="1h")
    (err,) = out["errors"]
    assert json.loads(err["raw"]) == {"k": FAR, "ts": YEAR_9999}
    assert "max_future=3600000" in err["reason"] and "9999-12-31" in err["reason"]
    assert "raise max_future" in err["reason"]
    # Every good record in the data output or in `late`, once; only the one late on its
    # own is late (the far-future record moved nothing).
    assert [r["k"] for r in out["late"]] == [late_key]
    assert "below the admission bound" in out["late"][0]["reason"]
    assert sorted(out["data"] + [late_key]) == sorted(good)
    # Windows close as the good records say: none at year 9999.
    counts = {start: n for start, n in out["windows"]}
    assert sum(counts.values()) == len(good) - 1
    assert all(_ms(start) < T + 60_000 for start in counts)


def test_without_the_bound_records_after_it_are_late_and_released_at_once(make_flow, tmp_path):
    """The source never ends, so the frontier stays at year 9999 - lateness: the late
    records must be released all the same, in the tick they arrive."""
    good, _ = write_records(tmp_path / "in")
    out = run(make_flow, tmp_path / "in", max_rows=3, max_future=None, ticks=8)
    assert out["errors"] == []
    late = sorted(r["k"] for r in out["late"])
    # Before it: data; after it: every good record late, with its reason (the
    # far-future record itself waits, in the log, for its time to be sealed).
    assert out["data"] == [0, 1, 2, 3]
    assert late == sorted(k for k in good if k >= 4)
    assert all("below the admission bound" in r["reason"] for r in out["late"])


def _ms(value) -> int:
    """A window start (a timestamp or ms) as ms."""
    return value if isinstance(value, int) else round(value.timestamp() * 1000)
