"""Every unsupported construct is refused with its name, line, column and the Python API
that does the same (where one exists); a refused query leaves the dataflow unchanged."""

from __future__ import annotations

import pytest

from sealtime.sources.rows import Rows
from sealtime.sql import SqlError

# (query, construct, line, column, words the message must hold, hint fragment or None);
# the query text puts the offending construct on line 2 where it can.
CASES = [
    ("SELECT k FROM a\nORDER BY k", "ORDER BY", 2, 1, ["unordered"], "top_k"),
    ("SELECT k FROM a\nLIMIT 3", "LIMIT", 2, 1, ["ROW_NUMBER"], "top_k"),
    (
        "SELECT a.k FROM a\nJOIN b ON a.v < b.w",
        "non-equi join",
        2,
        8,
        ["equi-joins"],
        "Collection.join",
    ),
    (
        "SELECT a.k FROM a\nRIGHT JOIN b ON a.k = b.k",
        "RIGHT JOIN",
        2,
        1,
        ["INNER and LEFT"],
        "how='left'",
    ),
    ("SELECT a.k FROM a\nFULL OUTER JOIN b ON a.k = b.k", "FULL JOIN", 2, 1, ["OUTER"], None),
    ("SELECT a.k FROM a\nCROSS JOIN b", "CROSS JOIN", 2, 1, ["equi-joins"], "Collection.join"),
    ("SELECT a.k FROM a,\n b", "comma join", 1, 18, ["equi-joins"], "Collection.join"),
    ("SELECT * FROM a\nNATURAL JOIN b", "NATURAL JOIN", 2, 1, ["USING"], "Collection.join"),
    (
        "SELECT a.k FROM a\nLEFT JOIN b ON a.k = b.k AND a.v > 1",
        "LEFT JOIN condition",
        2,
        30,
        ["keeps every left row"],
        "how='left'",
    ),
    (
        "SELECT k FROM a\nUNION SELECT k FROM b",
        "UNION",
        2,
        1,
        ["UNION ALL"],
        "distinct()",
    ),
    ("SELECT k FROM a\nINTERSECT SELECT k FROM b", "INTERSECT", 2, 1, ["not supported"], "join"),
    ("SELECT k FROM a\nEXCEPT SELECT k FROM b", "EXCEPT", 2, 1, ["not supported"], "negate"),
    (
        "SELECT k FROM a\nWHERE v IN (SELECT w FROM b WHERE b.k = a.k)",
        "subquery in an expression",
        2,
        13,
        ["correlated", "JOIN"],
        "Collection.join",
    ),
    (
        "SELECT k FROM a\nWHERE EXISTS (SELECT 1 FROM b)",
        "subquery in an expression",
        2,
        15,
        ["JOIN"],
        "Collection.join",
    ),
    (
        "SELECT k,\n  SUM(v) OVER (PARTITION BY k) AS s FROM a",
        "window function SUM OVER",
        2,
        3,
        ["top-k"],
        "top_k",
    ),
    (
        "SELECT * FROM (SELECT k, RANK() OVER (ORDER BY v) AS r FROM a)\nWHERE r <= 2",
        "window function RANK() OVER",
        1,
        26,
        ["ROW_NUMBER"],
        "top_k",
    ),
    (
        "SELECT * FROM (SELECT k, ROW_NUMBER() OVER (ORDER BY v) AS rn FROM a)\nWHERE rn > 2",
        "row number condition",
        2,
        7,
        ["upper bound"],
        "top_k",
    ),
    (
        "SELECT k, ROW_NUMBER() OVER (ORDER BY v) AS rn FROM a",
        "window function ROW_NUMBER() OVER",
        1,
        11,
        ["top-k"],
        "top_k",
    ),
    ("SELECT k FROM nope", "unknown table", 1, 15, ["'nope'", "a, b"], None),
    ("SELECT k,\n  nope FROM a", "unknown column", 2, 3, ["'nope'", "k, a.v"], None),
    ("SELECT a.k FROM a JOIN b\nON k = b.k", "ambiguous column", 2, 4, ["qualify"], None),
    ("SELECT COUNT(*) FROM a", "aggregate without GROUP BY", 1, 8, ["GROUP BY"], "aggregate"),
    (
        "SELECT k, STDDEV(v) FROM a\nGROUP BY k",
        "aggregate STDDEV",
        1,
        11,
        ["SUM, COUNT"],
        "aggregate",
    ),
    ("SELECT k, v FROM a\nGROUP BY k", "column not grouped", 1, 11, ["GROUP BY"], "aggregate"),
    ("SELECT k FROM a\nWHERE SUM(v) > 1", "aggregate SUM", 2, 7, ["HAVING"], "aggregate"),
    (
        "SELECT k, SUM(DISTINCT v) FROM a\nGROUP BY k",
        "SUM(DISTINCT ...)",
        1,
        11,
        ["COUNT(DISTINCT"],
        "aggregate",
    ),
    (
        "SELECT k, COUNT(*) FROM a\nGROUP BY ROLLUP (k)",
        "GROUP BY ROLLUP",
        2,
        1,
        ["UNION ALL"],
        None,
    ),
    ("SELECT k,\n  rand() AS r FROM a", "non-deterministic function", 2, 3, ["RAND()"], None),
    ("SELECT 1 AS one", "SELECT without FROM", 1, 1, ["source"], None),
    ("SELECT * FROM\n(VALUES (1, 2))", "VALUES", 2, 2, ["constant"], None),
    (
        "WITH RECURSIVE r AS (SELECT k FROM a) SELECT * FROM r",
        "WITH RECURSIVE",
        1,
        1,
        ["recursive"],
        None,
    ),
    ("SELECT k, k FROM a", "duplicate column name", 1, 11, ["alias"], None),
    ("SELECT v AS _time FROM a", "reserved column name", 1, 8, ["system"], None),
    (
        "SELECT window_start, COUNT(*) AS n FROM\nTUMBLE(TABLE a, DESCRIPTOR(_time), INTERVAL '5' SECOND)\n"
        "GROUP BY window_start",
        "GROUP BY over a window",
        3,
        1,
        ["window_end"],
        "aggregate",
    ),
    (
        "SELECT * FROM\nTUMBLE(TABLE a, DESCRIPTOR(v), INTERVAL '5' SECOND)",
        "TUMBLE window DESCRIPTOR",
        2,
        28,
        ["logical time", "_time"],
        "st.Tumbling",
    ),
    (
        "SELECT * FROM\nTUMBLE(TABLE a, DESCRIPTOR(_time), INTERVAL '-5' SECOND)",
        "window size",
        2,
        36,
        ["milliseconds"],
        None,
    ),
    (
        "SELECT * FROM\nCUMULATE(TABLE a, DESCRIPTOR(_time), INTERVAL '1' SECOND, INTERVAL '5' SECOND)",
        "CUMULATE window",
        2,
        1,
        ["TUMBLE"],
        None,
    ),
    (
        "SELECT window_start, window_end, k, COUNT(*) AS n FROM\n"
        "SESSION(TABLE a PARTITION BY k, DESCRIPTOR(_time), INTERVAL '5' SECOND)\n"
        "GROUP BY window_start, window_end",
        "GROUP BY over SESSION",
        3,
        1,
        ["PARTITION BY"],
        "st.Session",
    ),
    ("SELECT k FROM a\nQUALIFY v > 1", "QUALIFY", 2, 1, ["subquery"], "top_k"),
    ("SELECT k FROM a WHERE", "syntax", 1, 17, ["Spark SQL"], None),
    ("SELECT a.k FROM a JOIN b\nON a.k = b.w", "join key types", 2, 4, ["CAST"], None),
    ("SELECT k, nosuchfn(v) FROM a", "expression", 1, 11, ["Spark rejects"], None),
]


@pytest.fixture(scope="module")
def flow(spark, tmp_path_factory):
    import sealtime as st

    flow = st.Dataflow("errors", data_dir=str(tmp_path_factory.mktemp("sql")), spark=spark)
    flow.source("a", Rows({"k": "string", "v": "long"}, [(1, {"k": "x", "v": 1})]))
    flow.source("b", Rows({"k": "string", "w": "long"}, [(1, {"k": "x", "w": 2})]))
    yield flow
    flow.close()


@pytest.mark.parametrize(("query", "construct", "line", "col", "words", "hint"), CASES)
def test_unsupported_construct_is_named_and_located(flow, query, construct, line, col, words, hint):
    before = len(flow._nodes)
    with pytest.raises(SqlError) as info:
        flow.sql(query)
    e = info.value
    assert isinstance(e, ValueError)
    assert (e.construct, e.line, e.col) == (construct, line, col), str(e)
    message = str(e)
    assert message.startswith(f"{construct} at line {line}, column {col}: ")
    for w in words:
        assert w in message, message
    if hint is None:
        assert e.hint is None or "Python API" in message
    else:
        assert e.hint is not None and hint in e.hint, message
        assert f"(Python API: {e.hint})" in message
    assert len(flow._nodes) == before  # nothing half-built is left behind


def test_view_names_are_checked(flow):
    with pytest.raises(ValueError, match="exists already"):
        flow.create_view("A", "SELECT k FROM a")
    with pytest.raises(ValueError, match="identifier"):
        flow.create_view("not a name", "SELECT k FROM a")
