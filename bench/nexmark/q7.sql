-- q7 highest bid: the highest price of each 10 s tumbling window, and the bids of that
-- window with that price (all of them on ties). Flink joins on
-- `B.date_time BETWEEN window_end - INTERVAL '10' SECOND AND window_end`, whose closed
-- upper bound also admits a bid of the next window stamped exactly at window_end; here
-- a bid belongs to its own window [window_start, window_end).
CREATE VIEW q7 AS
SELECT B.auction, B.price, B.bidder, B.date_time, B.extra
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND)) AS B
JOIN (
  SELECT MAX(price) AS maxprice, window_start, window_end
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) AS B1
  ON B.window_start = B1.window_start AND B.window_end = B1.window_end
 AND B.price = B1.maxprice;
