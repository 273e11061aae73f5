"""SMILE's Figure 1 in SQL: two buy streams merged, summed per item, joined with the
sellers, ``avail = qty - total``, only items still available.

The view's state at every sealed time equals Spark running the same view texts over
the inputs accumulated to that time; the sale that brings item 2 to 0 retracts its row.
"""

from __future__ import annotations

from collections import Counter

from sealtime.sources.rows import Rows
from tests.dataflow.oracle import accumulated

VIEWS = {
    "buys": "SELECT item_id, qty FROM buyers_west UNION ALL SELECT item_id, qty FROM buyers_east",
    "bought": "SELECT item_id, SUM(qty) AS total FROM buys GROUP BY item_id",
    "available": """
        SELECT s.item_id, s.price, s.qty - COALESCE(b.total, 0) AS avail
        FROM sellers s LEFT JOIN bought b ON s.item_id = b.item_id
        WHERE s.qty - COALESCE(b.total, 0) > 0
    """,
}

SELLERS = [
    (1, {"item_id": 1, "price": 10.0, "qty": 5}),
    (1, {"item_id": 2, "price": 20.0, "qty": 3}),
    (3, {"item_id": 3, "price": 7.5, "qty": 1}),
    (5, {"item_id": 1, "price": 10.0, "qty": 5}, -1),  # item 1 is re-listed cheaper
    (5, {"item_id": 1, "price": 9.0, "qty": 6}),
]
WEST = [
    (2, {"item_id": 1, "qty": 2}),
    (2, {"item_id": 2, "qty": 1}),
    (4, {"item_id": 2, "qty": 2}),  # item 2 reaches 0: its row is retracted
    (6, {"item_id": 3, "qty": 1}),  # item 3 sold out too
]
EAST = [
    (3, {"item_id": 2, "qty": 0}),
    (4, {"item_id": 1, "qty": 1}),
    (6, {"item_id": 4, "qty": 9}),  # an unknown item: no seller, no row
]


def test_figure1_in_sql(spark, make_flow):
    flow = make_flow()
    sources = {
        "sellers": Rows(
            {"item_id": "long", "price": "double", "qty": "long"}, SELLERS, times_per_tick=2
        ),
        "buyers_west": Rows({"item_id": "long", "qty": "long"}, WEST, times_per_tick=2),
        "buyers_east": Rows({"item_id": "long", "qty": "long"}, EAST, times_per_tick=2),
    }
    for name, src in sources.items():
        flow.source(name, src)
    views = {name: flow.create_view(name, text) for name, text in VIEWS.items()}
    flow.run()
    available = views["available"]
    updates = available.updates()
    times = sorted({t for s in sources.values() for t in s.times})
    for t in times:
        # Spark, same texts, inputs accumulated to t
        for name in sources:
            rows = [item for item in src_items(name) if item[0] <= t]
            acc: Counter = Counter()
            for item in rows:
                acc[tuple(sorted(item[1].items()))] += item[2] if len(item) > 2 else 1
            data = [dict(k) for k, n in acc.items() for _ in range(n)]
            schema = sources[name].schema
            spark.createDataFrame(data or [], schema=_spark_schema(schema)).createOrReplaceTempView(
                name
            )
        for name, text in VIEWS.items():
            spark.sql(text).createOrReplaceTempView(name)
        want = Counter(tuple(r) for r in spark.sql("SELECT * FROM available").collect())
        got = accumulated(updates, available.columns, t)
        assert got == want, (t, got, want)
    for name in [*sources, *VIEWS]:
        spark.catalog.dropTempView(name)
    # The states a view subscriber sees: item 2 leaves at time 4, item 3 at time 6.
    state = {t: sorted(accumulated(updates, available.columns, t)) for t in times}
    assert state[2] == [(1, 10.0, 3), (2, 20.0, 2)]
    assert state[3] == [(1, 10.0, 3), (2, 20.0, 2), (3, 7.5, 1)]
    assert state[4] == [(1, 10.0, 2), (3, 7.5, 1)]
    assert state[6] == [(1, 9.0, 3)]
    retracted = [r for r in updates.to_pylist() if r["_diff"] < 0]
    assert {"item_id": 2, "price": 20.0, "avail": 2, "_time": 4, "_diff": -1} in retracted
    # the merged buys keep the union's input order as priority, hidden from the view
    assert views["buys"].columns == ["item_id", "qty"]


def src_items(name):
    return {"sellers": SELLERS, "buyers_west": WEST, "buyers_east": EAST}[name]


def _spark_schema(arrow_schema):
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema)
