"""Views added to and dropped from a running dataflow (`Dataflow(live=True)`).

The hydration oracle (issue 34): views are created at random ticks while input flows,
some are dropped, more are added. At every sealed time each view equals ``spark.sql`` of
its text over its inputs at that time — whenever it was created, since it hydrates from
its inputs' history — and every view that existed from the start has exactly the update
stream, and the tick-by-tick sealed ranges, of a run without the changes.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import given
from hypothesis import strategies as hs

from sealtime.errors import StateError
from sealtime.sources.rows import Rows
from tests.conftest import examples, spark_settings
from tests.dataflow import workloads as W
from tests.dataflow.oracle import accumulate, inputs_frame, sealed_times

#: view templates over source ``s`` (and, ``{prev}``, over an earlier view)
TEMPLATES = [
    "SELECT ex, k, SUM(v) AS total, COUNT(*) AS n FROM s WHERE v >= {c} GROUP BY ex, k",
    "SELECT ex, MAX(v) AS hi, MIN(v) AS lo FROM s GROUP BY ex",
    "SELECT ex, k, v FROM s WHERE v % 2 = {m}",
    "SELECT ex, COUNT(DISTINCT k) AS dk FROM s WHERE v > {c} GROUP BY ex",
    "SELECT ex, SUM(total) AS grand FROM {prev} GROUP BY ex",
]


@hs.composite
def schedules(draw):
    """Initial views, then per tick: nothing, a new view, or a drop."""
    initial = draw(hs.lists(hs.integers(0, 3), min_size=1, max_size=2))
    steps = draw(
        hs.lists(
            hs.one_of(
                hs.just(("wait",)),
                hs.tuples(hs.just("create"), hs.integers(0, len(TEMPLATES) - 1)),
                hs.tuples(hs.just("drop"), hs.integers(0, 9)),
            ),
            min_size=2,
            max_size=6,
        )
    )
    params = draw(hs.lists(hs.integers(-1, 4), min_size=8, max_size=8))
    return initial, steps, params


def _sql(template: int, params: list[int], i: int, prev: str | None) -> str | None:
    text = TEMPLATES[template]
    if "{prev}" in text:
        if prev is None:
            return None
        return text.format(prev=prev)
    return text.format(c=params[i % len(params)], m=abs(params[i % len(params)]) % 2)


def _build(make_flow, source: Rows) -> tuple:
    flow = make_flow(live=True)
    flow.source("s", source)
    return flow


def _run(make_flow, source: Rows, initial: list[int], steps: list, params: list[int]):
    """The run with changes; returns the flow, the live views (name -> sql) and the
    initial views' sealed ranges per tick."""
    flow = _build(make_flow, source)
    views: dict[str, str] = {}
    sums: list[str] = []
    n = 0
    for template in initial:
        sql = _sql(template, params, n, None)
        assert sql is not None
        flow.create_view(f"v{n}", sql)
        views[f"v{n}"] = sql
        if template == 0:
            sums.append(f"v{n}")
        n += 1
    initial_views = dict(views)
    ranges = []
    for step in steps:
        if step[0] == "create":
            sql = _sql(step[1], params, n, sums[-1] if sums else None)
            if sql is not None:
                flow.create_view(f"v{n}", sql)
                views[f"v{n}"] = sql
                if step[1] == 0:
                    sums.append(f"v{n}")
                n += 1
        elif step[0] == "drop":
            droppable = [
                v
                for v in views
                if v not in initial_views and not any(f"FROM {v} " in s for s in views.values())
            ]
            if droppable:
                name = droppable[step[1] % len(droppable)]
                flow.drop(flow.sql_views[name].collection)
                del views[name]
                if name in sums:
                    sums.remove(name)
        report = flow.run(ticks=1)[0]
        ranges.append(_initial_ranges(flow, initial_views, report))
    for report in flow.run():
        ranges.append(_initial_ranges(flow, initial_views, report))
    return flow, views, initial_views, ranges


def _initial_ranges(flow, initial_views: dict[str, str], report) -> dict:
    return {v: report.sealed.get(flow.sql_views[v].collection.node.id) for v in initial_views}


def _oracle(spark, source: Rows, views: dict[str, str], name: str, t: int) -> list[tuple]:
    """``spark.sql`` of view `name` over the input accumulated to time `t`."""
    acc = accumulate(inputs_frame(spark, source).filter(f"_time <= {t}"))
    registered = ["s"]
    acc.createOrReplaceTempView("s")
    for other in views:  # (a view over an earlier view)
        if other != name and f"FROM {other} " in views[name]:
            spark.sql(views[other]).createOrReplaceTempView(other)
            registered.append(other)
    try:
        return sorted(tuple(r) for r in spark.sql(views[name]).collect())
    finally:
        for r in registered:
            spark.catalog.dropTempView(r)


def _contents(view, t: int) -> list[tuple]:
    return sorted(tuple(r) for r in view.to_spark(as_of=t).collect())


@spark_settings(examples(ci=4, dev=1, default=1))
@given(source=W.source(workloads=3, times_per_tick=hs.just(2)), schedule=schedules())
def test_views_added_and_dropped_equal_spark_sql_and_leave_others_alone(
    spark, make_flow, source, schedule
):
    initial, steps, params = schedule
    flow, views, initial_views, ranges = _run(make_flow, source, initial, steps, params)
    times = sealed_times(source)
    for name, _sql_text in views.items():
        view = flow.sql_views[name].collection
        for t in times:
            assert _contents(view, t) == _oracle(spark, source, views, name, t), (name, t)
    # The views that were there from the start: the same updates and the same sealed
    # ranges, tick by tick, as in a run where nothing was added or dropped.
    alone, _, _, alone_ranges = _run(make_flow, source, initial, [("wait",)] * len(steps), params)
    for name in initial_views:
        got = flow.sql_views[name].collection.updates()
        want = alone.sql_views[name].collection.updates()
        assert got.equals(want), name
    assert ranges == alone_ranges
    flow.close()
    alone.close()


def test_equal_views_are_computed_once(make_flow):
    source = Rows({"k": "string", "v": "long"}, [(t, {"k": "a", "v": t}) for t in range(1, 9)])
    flow = make_flow(live=True)
    flow.source("s", source)
    a = flow.create_view("a", "SELECT k, SUM(v) AS total FROM s GROUP BY k")
    flow.run(ticks=2)
    b = flow.create_view("b", "SELECT k, SUM(v) AS total FROM s GROUP BY k")
    assert b.node is a.node
    flow.run()
    assert b.to_spark().collect()[0]["total"] == sum(range(1, 9))
    flow.close()


def test_a_view_over_dropped_history_is_refused(make_flow):
    rows = [(t, {"k": "a", "v": t}) for t in range(1, 30)]
    flow = make_flow(live=True, checkpoint_every=1)
    flow.source("s", Rows({"k": "string", "v": "long"}, rows, times_per_tick=3), retain_history=0)
    flow.create_view("a", "SELECT k, COUNT(*) AS n FROM s GROUP BY k")
    flow.run(ticks=4)
    flow.create_view("b", "SELECT k, MAX(v) AS hi FROM s GROUP BY k")
    with pytest.raises(StateError, match=r"source 's'.*RETAIN HISTORY"):
        flow.apply_changes()
    flow.close()


def test_drop_releases_state_files(make_flow):
    rows = [(t, {"k": f"k{t % 5}", "v": t}) for t in range(1, 40)]
    flow = make_flow(live=True)
    flow.source("s", Rows({"k": "string", "v": "long"}, rows, times_per_tick=5))
    flow.create_view("a", "SELECT k, COUNT(*) AS n FROM s GROUP BY k")
    b = flow.create_view("b", "SELECT k, MAX(v) AS hi, COUNT(DISTINCT v) AS d FROM s GROUP BY k")
    flow.run(ticks=4)
    state = os.path.join(flow.data_dir, "state")

    def size(path: str) -> int:
        return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)

    dirs = {o.id: o.state_dir for o in flow.engine.snapshot().operators if o.state_dir}
    before = size(state)
    gone = flow.drop(b)
    dropped = [dirs[n.id] for n in gone if n.id in dirs]
    assert b.node.id in {n.id for n in gone} and dropped  # (its aggregate's state)
    assert not any(os.path.exists(d) for d in dropped)
    assert all(os.path.exists(d) for nid, d in dirs.items() if nid not in {n.id for n in gone})
    assert size(state) < before
    flow.run()
    counts = [r["n"] for r in flow.sql_views["a"].collection.to_spark().collect()]
    assert sum(counts) == len(rows)
    flow.close()


def test_a_sink_added_to_a_live_view_gets_its_history_first(make_flow):
    """A sink attached to a view that already runs (the service's PUBLISH or CREATE SINK
    of a live view) hydrates: it receives the view's history, then its updates — the
    same rows as a sink attached from the start (it was dropped before: no rows)."""
    from sealtime.sinks.base import Sink

    class Rowsink(Sink):
        takes_arrow = True

        def __init__(self) -> None:
            self.rows: dict[tuple, int] = {}

        def commit(self, delta, lo, hi, context):
            from sealtime.spark.frames import to_arrow

            self.commit_arrow(None if delta is None else to_arrow(delta), lo, hi, context)
            return delta is not None

        def commit_arrow(self, table, lo, hi, context):
            for r in [] if table is None else table.to_pylist():
                key = (r["k"], r["total"])
                self.rows[key] = self.rows.get(key, 0) + r["_diff"]

    source = Rows(
        {"k": "string", "v": "long"}, [(t, {"k": f"k{t % 2}", "v": t}) for t in range(1, 13)]
    )
    flow = make_flow(live=True, record=False)
    flow.source("s", source)
    view = flow.create_view("a", "SELECT k, SUM(v) AS total FROM s GROUP BY k")
    first = Rowsink()
    view.sink(first)
    flow.run(ticks=3)
    later = Rowsink()
    view.sink(later)
    flow.apply_changes()
    flow.run()
    want = {r: c for r, c in first.rows.items() if c}
    assert want and {r: c for r, c in later.rows.items() if c} == want
    flow.close()


def test_views_created_together_hydrate_as_one_group_in_slices(spark, make_flow):
    """Views created between the same two ticks hydrate over one set of copies, a slice
    of history a tick (the pace pinned at two bindings here); dropping one of them while
    it hydrates leaves the others, which go live once caught up and equal spark.sql."""
    from sealtime.engine.hydration import HydrationPace

    rows = [(t, {"k": f"k{t % 3}", "v": t}) for t in range(1, 29)]
    source = Rows({"k": "string", "v": "long"}, rows, times_per_tick=2)
    flow = make_flow(live=True)
    flow.source("s", source)
    flow.create_view("a", "SELECT k, COUNT(*) AS n FROM s GROUP BY k")
    flow.run(ticks=6)
    hydrations = flow.engine.hydrations
    hydrations.pace = HydrationPace(rows=4, least=4, most=4)
    views = {
        "b": "SELECT k, SUM(v) AS total FROM s GROUP BY k",
        "c": "SELECT k, MAX(v) AS hi FROM s GROUP BY k",
    }
    for name, text in views.items():
        flow.create_view(name, text)
        flow.apply_changes()  # (one extend each, as the service's statements)
    dropped = flow.create_view("x", "SELECT k, MIN(v) AS lo FROM s WHERE v > 3 GROUP BY k")
    flow.apply_changes()
    assert len(hydrations.groups) == 1
    flow.run(ticks=1)
    flow.drop(dropped)
    assert len(hydrations.groups) == 1 and flow.engine.hydrating()
    hydrating_ticks = 1
    while flow.engine.hydrating():
        flow.run(ticks=1)
        hydrating_ticks += 1
    assert hydrating_ticks >= 3  # (in slices: 6 bindings of history, 2 a tick)
    flow.run()
    views["a"] = "SELECT k, COUNT(*) AS n FROM s GROUP BY k"
    times = sealed_times(source)
    for t in (times[4], times[-1]):  # (before the views were created, and at the end)
        for name in views:
            want = _oracle(spark, source, views, name, t)
            assert _contents(flow.sql_views[name].collection, t) == want, (name, t)
    flow.close()


def test_views_fused_while_hydrating_stay_fused_once_live(spark, make_flow):
    """Views of one shape created together fuse over their hydration copies of the
    source; once caught up they join the live plan over the live source and fuse there
    (a fusion group kept from the hydrating plan would still read the dropped copies),
    through a checkpoint, and equal spark.sql."""
    import pyarrow as pa

    import sealtime as st

    rows = [(t, {"k": f"k{t % 3}", "v": t}) for t in range(1, 25)]
    source = Rows({"k": "string", "v": "long"}, rows, times_per_tick=2)
    # (fusion needs record=False: recorded traces are per node)
    flow = make_flow(live=True, checkpoint_every=2, record=False)
    flow.source("s", source)
    flow.run(ticks=4)
    views = {
        f"f{i}": f"SELECT k, SUM(v) AS total, COUNT(*) AS n FROM s WHERE v % 3 <> {i} GROUP BY k"
        for i in range(3)
    }
    got: dict[str, list[pa.Table]] = {name: [] for name in views}
    for name, text in views.items():
        view = flow.create_view(name, text)
        view.sink(st.sinks.Callback(lambda t, lo, hi, name=name: got[name].append(t)))
    flow.apply_changes()
    assert _fused(flow) == [3]  # (the hydrating copies, fused)
    while flow.engine.hydrating():
        flow.run(ticks=1)
    flow.run()
    assert _fused(flow) == [3]
    times = sealed_times(source)
    for name in views:
        updates = pa.concat_tables(got[name]).to_pylist()
        for t in (times[3], times[-1]):
            acc: dict[tuple, int] = {}
            for r in updates:
                if r["_time"] <= t:
                    key = (r["k"], r["total"], r["n"])
                    acc[key] = acc.get(key, 0) + r["_diff"]
            contents = sorted(k for k, d in acc.items() for _ in range(d))
            assert contents == _oracle(spark, source, views, name, t), (name, t)
    flow.close()


def _fused(flow) -> list[int]:
    """The sizes of the engine's fusion groups."""
    groups = {o.fused_with for o in flow.engine.snapshot().operators if o.fused_with}
    return sorted(len(g) for g in groups)
