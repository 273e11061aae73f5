-- q17 auction statistics per (auction, day): bids per price rank, min, max, average
-- and sum of the price (Flink's AVG of a BIGINT truncates; Spark's is a DOUBLE).
CREATE VIEW q17 AS
SELECT
  auction,
  DATE_FORMAT(date_time, 'yyyy-MM-dd') AS `day`,
  COUNT(*) AS total_bids,
  COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
  COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
  COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
  MIN(price) AS min_price,
  MAX(price) AS max_price,
  AVG(price) AS avg_price,
  SUM(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(date_time, 'yyyy-MM-dd');
