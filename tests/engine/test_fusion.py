"""Fused keyed operators (`sealtime.engine.fusion`): many aggregates over filters and
projections of one collection share one Spark job a tick, and nothing else changes.

The property: the same views run fused and alone (``Dataflow(fuse=False)``) give the
same update streams, update for update and range for range, whatever the input, its
arrival order and the shuffle partitions; each equals ``spark.sql`` of its text at
every sealed time (the oracle).
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as hs

import sealtime as st
from sealtime.sinks.base import Sink
from sealtime.sources.rows import Rows
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import accumulate, inputs_frame, sealed_times

#: views over source ``s`` that fuse with each other (same shape, other parameters)
VIEWS = [
    "SELECT ex, k, SUM(v) AS total, COUNT(*) AS n FROM s WHERE v >= {c} GROUP BY ex, k",
    "SELECT ex, k AS key, SUM(v) AS s2, COUNT(*) AS c2 FROM s WHERE v < {c} GROUP BY ex, k",
    "SELECT ex, k, SUM(v * 2) AS total, COUNT(*) AS n FROM s GROUP BY ex, k",
    "SELECT ex, k, SUM(v) AS total, COUNT(*) AS n FROM s WHERE v % 2 = {m} GROUP BY ex, k",
    "SELECT ex, MAX(v) AS hi, MIN(v) AS lo FROM s GROUP BY ex",
    "SELECT ex, MAX(v + {c}) AS hi, MIN(v) AS lo FROM s WHERE k IS NOT NULL GROUP BY ex",
]


class ArrowCollect(Sink):
    """Every committed range's rows, as Arrow (the path fused groups collect through)."""

    takes_arrow = True

    def __init__(self) -> None:
        self.ranges: list[tuple[int, int | None, list[tuple]]] = []

    def commit(self, delta, lo, hi, context):
        from sealtime.spark.frames import to_arrow

        self.commit_arrow(None if delta is None else to_arrow(delta), lo, hi, context)
        return delta is not None

    def commit_arrow(self, table: pa.Table | None, lo, hi, context) -> None:
        rows = (
            []
            if table is None
            else sorted((tuple(r.values()) for r in table.to_pylist()), key=repr)
        )
        self.ranges.append((lo, hi, rows))


def _run(make_flow, source: Rows, params: tuple[int, int], *, fuse: bool, partitions: int):
    flow = make_flow(record=False, fuse=fuse, shuffle_partitions=partitions)
    flow.source("s", source)
    sinks = {}
    for i, text in enumerate(VIEWS):
        name = f"v{i}"
        view = flow.create_view(name, text.format(c=params[0], m=params[1]))
        sinks[name] = ArrowCollect()
        view.sink(sinks[name])
    flow.run()
    return flow, sinks


def _oracle(spark, source: Rows, text: str, t: int) -> list[tuple]:
    acc = accumulate(inputs_frame(spark, source).filter(f"_time <= {t}"))
    acc.createOrReplaceTempView("s")
    try:
        return sorted((tuple(r) for r in spark.sql(text).collect()), key=repr)
    finally:
        spark.catalog.dropTempView("s")


def _contents(sink: ArrowCollect, t: int) -> list[tuple]:
    """The view's rows at time `t`: its updates at times <= t, summed."""
    counts: dict[tuple, int] = {}
    for _, _, rows in sink.ranges:
        for *row, time, diff in rows:
            if time <= t:
                counts[tuple(row)] = counts.get(tuple(row), 0) + diff
    assert all(c >= 0 for c in counts.values())
    return sorted((r for r, c in counts.items() for _ in range(c)), key=repr)


@spark_settings(examples(ci=4, dev=1, default=1))
@given(
    source=W.source(workloads=3, times_per_tick=hs.integers(1, 3)),
    params=hs.tuples(hs.integers(-2, 6), hs.integers(0, 1)),
    partitions=hs.sampled_from([1, 3]),
)
def test_fused_views_equal_views_run_alone_and_spark_sql(
    spark, make_flow, source, params, partitions
):
    fused, got = _run(make_flow, source, params, fuse=True, partitions=partitions)
    groups = {o.fused_with for o in fused.engine.snapshot().operators if o.fused_with}
    assert groups and max(len(g) for g in groups) >= 4  # (the sums fuse; so do min/max)
    alone, want = _run(make_flow, source, params, fuse=False, partitions=2)
    assert not any(o.fused_with for o in alone.engine.snapshot().operators)
    for name in want:
        assert got[name].ranges == want[name].ranges, name
    for i, text in enumerate(VIEWS):
        sql = text.format(c=params[0], m=params[1])
        for t in sealed_times(source):
            assert _contents(got[f"v{i}"], t) == _oracle(spark, source, sql, t), (sql, t)
    fused.close()
    alone.close()


def test_a_fused_member_read_downstream_and_restarted_keeps_its_updates(spark, tmp_path):
    """A member whose output another view reads (the group's frame is cached for both),
    and a restart from a checkpoint in the middle: the same updates as alone."""
    rows = [(t, {"k": f"k{t % 3}", "v": t % 7}) for t in range(1, 25)]

    def build(fuse: bool, data_dir: str):
        flow = st.Dataflow(
            "f", data_dir=data_dir, spark=spark, record=False, fuse=fuse, checkpoint_every=2
        )
        flow.source("s", Rows({"k": "string", "v": "long"}, rows, times_per_tick=4))
        a = flow.create_view("a", "SELECT k, SUM(v) AS total FROM s WHERE v > 1 GROUP BY k")
        flow.create_view("b", "SELECT k, SUM(v) AS total FROM s WHERE v > 3 GROUP BY k")
        c = flow.create_view("c", "SELECT SUM(total) AS grand FROM a")
        sinks = {"a": ArrowCollect(), "c": ArrowCollect()}
        a.sink(sinks["a"])
        c.sink(sinks["c"])
        return flow, sinks

    flow, first = build(True, str(tmp_path / "fused"))
    flow.run(ticks=3)
    aggregate = flow.sql_views["a"].collection.node.inputs[0]  # (under the view's select)
    assert flow.engine.snapshot().operator(aggregate.id).fused_with
    flow.close()
    flow, second = build(True, str(tmp_path / "fused"))  # (resumes from the checkpoint)
    flow.run()
    flow.close()
    alone, want = build(False, str(tmp_path / "alone"))
    alone.run()
    alone.close()
    for name in want:
        # (the restart offers again what followed the checkpoint, in ranges of its own:
        # keep the first run's ranges up to where the second starts, compare updates)
        resumed = second[name].ranges[0][0]
        got = [r for r in first[name].ranges if r[1] is not None and r[1] <= resumed]
        assert _updates(got + second[name].ranges) == _updates(want[name].ranges), name


def _updates(ranges) -> dict[tuple, int]:
    """The updates of committed ranges, consolidated: (row, time) -> diff."""
    out: dict[tuple, int] = {}
    for _, _, rows in ranges:
        for *row, time, diff in rows:
            out[(*row, time)] = out.get((*row, time), 0) + diff
    return {k: d for k, d in out.items() if d}


@pytest.mark.parametrize("fuse", [True, False])
def test_views_of_another_shape_run_alone(make_flow, fuse):
    flow = make_flow(record=False, fuse=fuse)
    flow.source("s", Rows({"k": "string", "v": "long"}, [(1, {"k": "a", "v": 1})]))
    flow.create_view("a", "SELECT k, SUM(v) AS total FROM s GROUP BY k")
    flow.create_view("b", "SELECT k, COUNT(DISTINCT v) AS d FROM s GROUP BY k")
    flow.run()
    assert not any(o.fused_with for o in flow.engine.snapshot().operators)
    flow.close()


#: views filtering one shared aggregate (``agg``), two column lists among them
OVER_SHARED = [
    "SELECT k, total FROM agg WHERE total > {c}",
    "SELECT k, total FROM agg WHERE total <= {c}",
    "SELECT k AS key, total AS t FROM agg WHERE n >= 2",
    "SELECT k, n FROM agg WHERE n % 2 = {m}",
    "SELECT k, n, total FROM agg",
]


def _run_over_shared(make_flow, source: Rows, params: tuple[int, int], *, fuse: bool):
    flow = make_flow(record=False, fuse=fuse, shuffle_partitions=2)
    flow.source("s", source)
    flow.create_view("agg", "SELECT k, SUM(v) AS total, COUNT(*) AS n FROM s GROUP BY k")
    sinks = {}
    for i, text in enumerate(OVER_SHARED):
        view = flow.create_view(f"w{i}", text.format(c=params[0], m=params[1]))
        sinks[f"w{i}"] = ArrowCollect()
        view.sink(sinks[f"w{i}"])
    flow.run()
    return flow, sinks


@spark_settings(examples(ci=3, dev=1, default=1))
@given(
    source=W.source(workloads=3, times_per_tick=hs.integers(1, 3)),
    params=hs.tuples(hs.integers(-2, 8), hs.integers(0, 1)),
)
def test_views_over_a_shared_aggregate_are_collected_together(spark, make_flow, source, params):
    """Views filtering one shared aggregate (cached for them) are collected by one Spark
    job a tick, the same ranges as each collected alone, equal to ``spark.sql``."""
    import sealtime.engine.commits as commits

    jobs = []
    collect = commits.frames.to_arrow

    def counting(df):
        jobs.append(df)
        return collect(df)

    commits.frames.to_arrow = counting
    try:
        together, got = _run_over_shared(make_flow, source, params, fuse=True)
        ticks = together.engine.snapshot().tick
    finally:
        commits.frames.to_arrow = collect
    alone, want = _run_over_shared(make_flow, source, params, fuse=False)
    for name in want:
        assert got[name].ranges == want[name].ranges, name
    # one job for the first view (it computes the aggregate), one per column types
    assert len(jobs) <= 4 * ticks < len(OVER_SHARED) * ticks
    for t in sealed_times(source):
        acc = accumulate(inputs_frame(spark, source).filter(f"_time <= {t}"))
        acc.createOrReplaceTempView("s")
        spark.sql(
            "SELECT k, SUM(v) AS total, COUNT(*) AS n FROM s GROUP BY k"
        ).createOrReplaceTempView("agg")
        try:
            for i, text in enumerate(OVER_SHARED):
                sql = text.format(c=params[0], m=params[1])
                want_rows = sorted((tuple(r) for r in spark.sql(sql).collect()), key=repr)
                assert _contents(got[f"w{i}"], t) == want_rows, (sql, t)
        finally:
            spark.catalog.dropTempView("agg")
            spark.catalog.dropTempView("s")
    together.close()
    alone.close()
