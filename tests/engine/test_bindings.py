"""`BindingPart`: the typed form of a source's part of a binding. The stored JSON stays
the format earlier versions wrote (existing data dirs resume), and older parts that lack
later keys still read."""

from __future__ import annotations

import json

import pytest

from sealtime.engine.bindings import (
    Binding,
    BindingLog,
    BindingPart,
    SourceState,
    restore_point,
    resumption_positions,
)
from sealtime.engine.ingest_log import LogFile
from sealtime.storage import MetadataStore
from sealtime.time.order import MIN_TIME

#: a part exactly as the version before `BindingPart` stored it (a linked entry with a
#: late sidecar, and a health entry)
STORED = json.loads(
    """{"error_files": [], "files": [{"end": 500, "file_rows": 700, "first": 0,
    "fixed_time": null, "late": 10, "late_path": "/d/log/a/late-00000001-0000.parquet",
    "max_time": 1436918400461, "min_time": 1436918396072, "offset": 0,
    "path": "/d/log/a/src-ev-0.parquet", "rows": 500, "time_column": "date_time"}],
    "frontier": 1436918396461, "health_files": [{"end": 0, "file_rows": 0, "first": 0,
    "fixed_time": null, "late": 0, "late_path": "", "max_time": -4611686018427387904,
    "min_time": -4611686018427387904, "offset": 0, "path": "/d/log/a/health-00000001.parquet",
    "rows": 1, "time_column": ""}], "into_time": 1795460261891,
    "position": {"file": "ev-0.parquet", "offset": 500}, "rows": 500,
    "state": {"error_count": 0, "exhausted": false, "frontier": 1436918396461,
    "health": "running", "idle_at": null, "idle_floor": null, "last_active": 1795460261891,
    "late_count": 10, "max_logged": 1436918400461, "max_seen": 1436918400461,
    "offset": 500, "position": {"file": "ev-0.parquet", "offset": 500}, "reported": null,
    "rows_in": 500}}"""
)


def test_stored_format_round_trips_unchanged():
    part = BindingPart.from_json(STORED)
    assert part.position == {"file": "ev-0.parquet", "offset": 500}
    assert part.state.late_count == 10 and part.state.max_logged == 1436918400461
    assert part.files[0].late_path.endswith("late-00000001-0000.parquet")
    assert part.rows == 500
    assert part.to_json() == STORED
    assert json.loads(json.dumps(part.to_json(), sort_keys=True)) == STORED


def test_older_parts_without_later_keys_read_with_defaults():
    old = {
        "position": 4,
        "frontier": 11,
        "into_time": 10,
        "files": [{"path": "/l/part-1", "min_time": 10, "max_time": 10, "rows": 2}],
        "error_files": [],
        "state": {"position": 4, "frontier": 11, "max_logged": 10, "offset": 2},
    }
    part = BindingPart.from_json(old)
    assert part.health_files == () and part.rows == 2
    assert part.state.idle_floor is None and part.state.health is None
    assert part.files[0] == LogFile("/l/part-1", 10, 10, 2)
    # into_time from the binding when the part lacks it
    no_into = {k: v for k, v in old.items() if k != "into_time"}
    assert BindingPart.from_json(no_into, into_time=10).into_time == 10


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown keys \\['surprise'\\]"):
        SourceState.from_json({"surprise": 1})
    with pytest.raises(ValueError, match="newer sealtime"):
        BindingPart.from_json({**STORED, "surprise": 1})


def test_log_stores_and_loads_parts(tmp_path):
    store = MetadataStore.open(str(tmp_path))
    log = BindingLog(store, "f")
    part = BindingPart.from_json(STORED)
    log.append(1, STORED["into_time"], {"a": part})
    raw = store.query("SELECT sources FROM sealtime_bindings WHERE flow = 'f'")[0][0]
    assert json.loads(raw) == {"a": STORED}  # the stored text is the old format
    (b,) = BindingLog(store, "f").load()
    assert b == Binding(1, STORED["into_time"], {"a": part})
    assert log.resumption(None) == {"a": part.position}
    store.close()


def _binding(tick: int, t: int, logged: int) -> Binding:
    f = LogFile(f"/l/part-{tick}", t, t, 1)
    state = SourceState(position=tick, frontier=t + 1, max_logged=logged)
    return Binding(tick, t, {"s": BindingPart(tick, t + 1, t, state, files=(f,))})


def test_restore_point_and_resumption():
    bindings = [_binding(1, 10, 10), _binding(2, 20, 20), _binding(3, 30, 30)]
    p = restore_point(bindings, {})["s"]
    assert p.position == 3 and [f.path for f in p.files] == [f"/l/part-{i}" for i in (1, 2, 3)]
    p = restore_point(bindings, {"s": 20})["s"]
    assert [f.path for f in p.files] == ["/l/part-2", "/l/part-3"]
    parts = [b.sources for b in bindings]
    assert resumption_positions(parts, 25) == {"s": 2}
    assert resumption_positions(parts, 5) == {}
    assert resumption_positions([], None) == {}
    assert SourceState().frontier == MIN_TIME
