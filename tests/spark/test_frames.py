"""`sealtime.spark.frames.to_arrow` equals ``DataFrame.toArrow()``: same schema, same rows,
for every column kind, with rows and without, whatever the session's time zone."""

from __future__ import annotations

import pytest

from sealtime.spark.frames import to_arrow

QUERY = (
    "SELECT timestamp'2024-01-01 12:00:00' AS t, array(timestamp'2024-01-01 00:00:00') AS a,"
    " named_struct('x', timestamp'2024-01-01 00:00:00', 'y', 1) AS s,"
    " map('k', timestamp'2024-01-01 00:00:00') AS m, 'x' AS str, 1.5D AS d,"
    " CAST(NULL AS BIGINT) AS n, date'2024-02-03' AS dt, CAST(2.5 AS DECIMAL(10, 2)) AS dec"
)


@pytest.mark.parametrize("zone", ["UTC", "America/New_York"])
@pytest.mark.parametrize("where", ["", " WHERE false"])
def test_to_arrow_equals_to_arrow(spark, zone, where):
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        df = spark.sql(QUERY + where)
        want, got = df.toArrow(), to_arrow(df)
        assert got.schema == want.schema
        assert got.equals(want)
        assert got.num_rows == (0 if where else 1)
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)
