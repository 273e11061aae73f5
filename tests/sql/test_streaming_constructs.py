"""SQL a Materialize or Flink user reaches for that is not keyed by workload, checked
against ``spark.sql`` of the same text (ANSI on) at every time: global aggregates (one
row even over no input), ORDER BY ... LIMIT/OFFSET, uncorrelated scalar and IN/NOT IN
subqueries, CROSS JOIN, CUMULATE windows and interval joins. Plus what a SQL user sees
of bad input: rows an expression fails on (ANSI) are ``view.errors`` rows with Spark's
error class, a source's rejected and late records are ``source.errors`` /
``source.late``, and ISO timestamps with microseconds decode.

One dataflow holds every view (a run costs seconds per tick, whatever the view count);
the oracle runs each query once over the inputs at every time (`per_time`).
"""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import sealtime as st
from sealtime.sources.rows import Rows
from sealtime.sql import errors_of, explain
from tests.sql.oracle import check_per_time as check
from tests.sql.oracle import oracle_session, per_time, per_time_views
from tests.sql.test_constructs import _workload

# (times where the inputs change; the oracle costs a Spark branch per time)
TIMES = (0, 1, 3, 5, 7)

GLOBAL = [
    "SELECT COUNT(*) AS n, SUM(v) AS s, MAX(k) AS mk, AVG(v) AS m FROM a",
    # (no input row at most times: the one row of the aggregate over nothing)
    "SELECT SUM(v) AS s, COUNT(*) AS n, sort_array(collect_list(k)) AS ks FROM a WHERE v > 4",
    "SELECT ex, k, v FROM a ORDER BY v DESC, ex, k NULLS LAST LIMIT 3 OFFSET 1",
    "SELECT ex, v, (SELECT MAX(w) FROM b) AS mw FROM a WHERE v > (SELECT MIN(w) FROM b)",
    "SELECT * FROM a WHERE k IN (SELECT k FROM b WHERE w > 2) "
    "AND v NOT IN (SELECT w FROM b WHERE k = 'a')",
    "SELECT a.ex, a.v, b.w FROM a CROSS JOIN b WHERE a.v > b.w + 3",
]

CUMULATE = (
    "SELECT window_start, window_end, ex, COUNT(*) AS n, SUM(v) AS s FROM TABLE(CUMULATE("
    "TABLE c, DESCRIPTOR(_time), INTERVAL '2' MILLISECOND, INTERVAL '6' MILLISECOND)) "
    "GROUP BY window_start, window_end, ex"
)
# An independent oracle for CUMULATE (Spark has none): the windows [start, start + e)
# for e = step, 2 step, ... size that hold the row, each emitted once, when sealed.
CUMULATE_ORACLE = (
    "SELECT ws AS window_start, ws + e AS window_end, ex, COUNT(*) AS n, SUM(v) AS s "
    "FROM (SELECT *, _t - pmod(_t, 6) AS ws FROM c) LATERAL VIEW explode(sequence(2, 6, 2)) "
    "w AS e WHERE _t < ws + e AND ws + e - 1 <= {t} GROUP BY ws, ws + e, ex"
)
INTERVAL_JOIN = (
    "SELECT l.ex, l.x, r.y, l.ts AS lt, r.ts AS rt FROM l JOIN r "
    "ON l.ex = r.ex AND r.ts BETWEEN l.ts - 2 AND l.ts + 5"
)


def _event_files(tmp_path, name: str, value: str, seed: int):
    """In-order JSON lines (ex, ts, value) at ts 0..40: no record is late."""
    rng = random.Random(seed)
    records = [
        {"ex": rng.randint(0, 2), "ts": ts, value: rng.randint(0, 9)}
        for ts in sorted(rng.sample(range(41), 25))
    ]
    d = tmp_path / name
    d.mkdir()
    (d / "0.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return d, records


# The full tier's: the default tier checks the same constructs in random views
# (`tests.sql.test_oracle.test_unkeyed_views_equal_spark_sql_at_every_time`).
@pytest.mark.full
def test_unkeyed_constructs_equal_spark_sql_at_every_time(spark, make_flow, tmp_path):
    a, b = _workload(1, "v"), _workload(2, "w")
    c = Rows(
        {"ex": "long", "v": "long"},
        [(t, {"ex": t % 2, "v": t * 3 % 7}) for t in range(13) for _ in range(1 + t % 2)],
        times_per_tick=3,
    )
    flow = make_flow()
    flow.source("a", a)
    flow.source("b", b)
    flow.source("c", c)
    sides = {}
    for name, value, seed in (("l", "x", 3), ("r", "y", 4)):
        d, records = _event_files(tmp_path, name, value, seed)
        schema = {"ex": "long", "ts": "long", value: "long"}
        src = st.sources.Files(str(d), format="jsonl", schema=schema, finite=True, settle=0)
        flow.source(name, src, time="ts", lateness="0s", max_rows_per_tick=8)
        sides[name] = records
    views = [flow.sql(q) for q in GLOBAL]
    cumulate = flow.sql(CUMULATE)
    joined = flow.sql(INTERVAL_JOIN)
    # (the bounds on both sides' event times make it an interval join: bounded state)
    assert "interval_join" in explain(flow, INTERVAL_JOIN)
    flow.run()

    sides = {
        name: pa.Table.from_pylist([{**r, "_time": r["ts"], "_diff": 1} for r in records])
        for name, records in sides.items()
    }
    with oracle_session(spark):
        with per_time_views(spark, {"a": a.table, "b": b.table}, TIMES):
            for q, view in zip(GLOBAL, views):
                check(q, view, per_time(spark, q, ("a", "b"), TIMES))
        times = range(1, 14, 2)
        with per_time_views(spark, {"c": c.table}, times, timed=True):
            check(CUMULATE, cumulate, per_time(spark, CUMULATE_ORACLE, ("c",), times))
        times = range(0, 46, 5)
        with per_time_views(spark, sides, times):
            joins = per_time(spark, INTERVAL_JOIN, tuple(sides), times)
        check(INTERVAL_JOIN, joined, joins)


def test_ansi_failures_are_error_rows_and_bad_records_are_tables(spark, make_flow, tmp_path):
    """Spark 4 raises on ``10 / 0``, ``CAST('b' AS INT)`` and ``v + 'x'``: in a view such
    a row is an errors row with Spark's error class (never a silent NULL), readable as
    ``view.errors``; the others are Spark's values. A source's rejected lines and late
    records are ``source.errors`` / ``source.late`` for SELECT, views and sinks."""
    d = tmp_path / "ev"
    d.mkdir()
    lines = [
        {"id": 1, "ts": 1000, "at": "2024-01-01T12:00:00.121000+00:00"},
        {"id": 2, "ts": 5000, "at": "2024-01-01T12:00:01Z"},
        "not json",
        {"id": 3, "ts": 1500, "at": "2024-01-01 12:00:02.5"},  # late: 1500 < 5000 - 1000
        {"id": 4, "ts": 6000, "at": "2024-01-01T12:00:03.999999+01:00"},
    ]
    (d / "0.jsonl").write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines)
    )
    flow = make_flow()
    src = st.sources.Files(
        str(d),
        format="jsonl",
        schema={"id": "long", "ts": "long", "at": "timestamp"},
        finite=True,
        settle=0,
    )
    flow.source("ev", src, time="ts", lateness="1s")
    rows = [(t, {"k": ["a", "0", None, "7"][t % 4], "v": t % 3}) for t in range(8)]
    flow.source("s", Rows({"k": "string", "v": "long"}, rows))
    q = flow.create_view(
        "q", "SELECT k, v, 10 / v AS r, CAST(k AS INT) + v AS n, v + 'x' AS z FROM s WHERE v > 0"
    )
    ok = flow.create_view("ok", "SELECT k, 10 / v AS r FROM s WHERE v <> 0 AND k IS NULL")
    zero = flow.create_view("zero", "SELECT k, v / (v - v) AS r FROM s WHERE k IS NULL")
    failures = flow.sql("SELECT error, reason, raw FROM q.errors")
    bad = flow.sql("SELECT raw, reason FROM ev.errors")
    late = flow.create_view("late_ids", "SELECT id FROM ev.late")
    decoded = flow.sql("SELECT id, CAST(at AS STRING) AS at FROM ev")
    late_dir = tmp_path / "late"
    late.sink(st.sinks.Parquet(str(late_dir)))
    flow.run()

    # q: every row with v > 0 fails ('x' is no number), at the innermost failing call
    got = sorted(
        (r["error"], r["reason"].split(" in ", 1)[1]) for r in failures.to_spark().collect()
    )
    expected = []
    for _, row in rows:
        if row["v"] > 0:
            if row["k"] == "a":
                expected.append(("CAST_INVALID_INPUT", "CAST(k AS INT)"))
            else:
                expected.append(("CAST_INVALID_INPUT", "v + 'x'"))
    assert got == sorted(expected)
    assert q.to_spark().count() == 0
    assert errors_of(flow, "q").to_spark().count() == len(expected)
    raw = json.loads(failures.to_spark().collect()[0]["raw"])
    assert set(raw) == {"k", "v"}
    # ok: no row fails (the row with v = 0 is filtered out before the division)
    assert [r["r"] for r in ok.to_spark().collect()] == [5.0]
    # DIVIDE_BY_ZERO (Spark's class), once per failing row, none in the view
    assert zero.to_spark().count() == 0
    failed = sorted(r["reason"] for r in errors_of(flow, "zero").to_spark().collect())
    assert failed == ["DIVIDE_BY_ZERO in v / (v - v)"] * 2  # (k is NULL at times 2 and 6)
    # the source's bad line and late record, as tables
    assert [r["raw"] for r in bad.to_spark().collect()] == ["not json"]
    assert [r["id"] for r in late.to_spark().collect()] == [3]
    assert [r["id"] for r in pq.read_table(late_dir).to_pylist()] == [3]
    # ISO timestamps with microseconds (truncated to the column's milliseconds)
    assert sorted((r["id"], r["at"]) for r in decoded.to_spark().collect()) == [
        (1, "2024-01-01 12:00:00.121"),
        (2, "2024-01-01 12:00:01"),
        (4, "2024-01-01 11:00:03.999"),
    ]
