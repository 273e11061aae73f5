"""Every unsupported construct or mistake is refused with its name, line, column and the
Python API that does the same (where one exists), in the user's words (the function
names they wrote, Spark's error classes); a refused query leaves the dataflow unchanged."""

from __future__ import annotations

import pytest

from sealtime.sources.rows import Rows
from sealtime.sql import SqlError

# (query, construct, line, column, words the message must hold, hint fragment or None);
# the query text puts the offending construct on line 2 where it can.
CASES = [
    ("SELECT * FROM a\nNATURAL JOIN b", "NATURAL JOIN", 2, 1, ["USING"], "Collection.join"),
    (
        "SELECT k FROM a\nWHERE v NOT IN (SELECT w FROM b WHERE b.k = a.k)",
        "NOT IN (correlated subquery)",
        2,
        7,
        ["NOT EXISTS"],
        "Collection.join",
    ),
    (
        "SELECT k,\n  (SELECT w FROM b) AS x FROM a",
        "scalar subquery",
        2,
        11,
        ["at most one row"],
        "Collection.join",
    ),
    (
        "SELECT k,\n  LAG(v) IGNORE NULLS OVER (ORDER BY v) AS p FROM a",
        "LAG IGNORE/RESPECT NULLS",
        2,
        3,
        ["not supported"],
        "Collection.over",
    ),
    (
        "SELECT k,\n  SUM(v) OVER (ORDER BY v RANGE BETWEEN 2 PRECEDING AND CURRENT ROW) AS s FROM a",
        "window frame",
        2,
        41,
        ["ROWS BETWEEN"],
        "Collection.over",
    ),
    (
        "SELECT k, SUM(v) OVER w FROM a\nWINDOW w AS (ORDER BY v)",
        "WINDOW clause",
        2,
        1,
        ["named windows"],
        None,
    ),
    (
        "SELECT k FROM a\nWHERE mz_now() > 1 OR v > 2",
        "mz_now()",
        2,
        7,
        ["temporal filter", "ANDed"],
        "temporal_filter",
    ),
    ("SELECT k FROM nope", "unknown table", 1, 15, ["'nope'", "a, a.errors, a.late, b"], None),
    ("SELECT k,\n  nope FROM a", "unknown column", 2, 3, ["'nope'", "k, a.v"], None),
    ("SELECT a.k FROM a JOIN b\nON k = b.k", "ambiguous column", 2, 4, ["qualify"], None),
    ("SELECT k, v FROM a\nGROUP BY k", "column not grouped", 1, 11, ["GROUP BY"], "aggregate"),
    ("SELECT k FROM a\nWHERE SUM(v) > 1", "aggregate SUM", 2, 7, ["HAVING"], "aggregate"),
    (
        "SELECT k, COUNT(DISTINCT k, v) FROM a GROUP BY k",
        "COUNT(DISTINCT a, b)",
        1,
        11,
        ["one expression"],
        "count_distinct",
    ),
    # the user's names, not sqlglot's (APPROX_QUANTILE, GROUPINGSETS)
    (
        "SELECT k, percentile_approx(v, 0.5) FROM a GROUP BY k",
        "aggregate PERCENTILE_APPROX",
        1,
        11,
        ["collect_list"],
        "aggregate",
    ),
    (
        "SELECT k, COUNT(*) FROM a\nGROUP BY GROUPING SETS ((k), ())",
        "GROUP BY GROUPING SETS",
        2,
        1,
        ["UNION ALL"],
        None,
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
    # (in SQL's words, not sqlglot's class names)
    ("SELECT k FROM a WHERE", "syntax", 1, 17, ["WHERE is incomplete", "Spark SQL"], None),
    # Spark 4 refuses a trailing comma (sqlglot would drop it)
    ("SELECT k,\nFROM a", "syntax", 1, 9, ["TRAILING_COMMA_IN_SELECT"], None),
    ("SELECT a.k FROM a JOIN b\nON a.k = b.w", "join key types", 2, 4, ["CAST"], None),
    # an unknown function is named (not "column not grouped", not a Java trace)
    ("SELECT k, nosuchfn(v) FROM a", "unknown function", 1, 11, ["NOSUCHFN()"], None),
    (
        "SELECT k, AVERAGE(v) FROM a GROUP BY k",
        "unknown function",
        1,
        11,
        ["AVERAGE()", "did you mean AVG?"],
        None,
    ),
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
    before = len(flow.nodes)
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
    assert len(flow.nodes) == before  # nothing half-built is left behind


def test_view_names_are_checked(flow):
    with pytest.raises(ValueError, match="exists already"):
        flow.create_view("A", "SELECT k FROM a")
    with pytest.raises(ValueError, match="identifier"):
        flow.create_view("not a name", "SELECT k FROM a")
