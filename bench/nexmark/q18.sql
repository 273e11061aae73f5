-- q18 find last bid: per (bidder, auction) the latest bid. Equal times are common (ms
-- resolution, 10 events a ms, hot keys); Flink keeps the later event. SQL sees no event
-- order, so ties go to the highest price, then the other columns (a deterministic pick).
CREATE VIEW q18 AS
SELECT auction, bidder, price, channel, url, date_time, extra
FROM (
  SELECT *,
         ROW_NUMBER() OVER (
           PARTITION BY bidder, auction ORDER BY date_time DESC, price DESC
         ) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;
