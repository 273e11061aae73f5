-- q14 calculation: bids with 1,000,000 < price in euros < 50,000,000, with the part of
-- the day of the bid (UTC) and the number of letters 'c' in extra (Flink: the scalar
-- UDF count_char; here a Python UDF registered on the session as `count_char`).
CREATE VIEW q14 AS
SELECT auction, bidder, 0.908 * price AS price,
       CASE
         WHEN HOUR(date_time) >= 8 AND HOUR(date_time) <= 18 THEN 'dayTime'
         WHEN HOUR(date_time) <= 6 OR HOUR(date_time) >= 20 THEN 'nightTime'
         ELSE 'otherTime'
       END AS bidTimeType,
       date_time, extra, count_char(extra, 'c') AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;
