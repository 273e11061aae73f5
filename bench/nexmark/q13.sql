-- q13 bounded side-input join: bids joined to a static table of 10,000 rows (key, value)
-- on auction mod 10000 = key. Flink reads the table from a file and joins FOR
-- SYSTEM_TIME AS OF the bid's processing time; the table is read before any bid (its
-- rows are at event time 0), so this is a plain equi-join with the same result.
CREATE SOURCE side_input FROM FILES 'side_input' (
  FORMAT parquet, SCHEMA 'key long, value string, t long', EVENT TIME t, FINITE, SETTLE 0
);
CREATE VIEW q13 AS
SELECT B.auction, B.bidder, B.price, B.date_time, S.value
FROM bid AS B
JOIN side_input AS S ON MOD(B.auction, 10000) = S.key;
