-- q6 average selling price by seller. Not runnable in Flink (OVER on an updating input)
-- and not in its run list; this is the folder's intent: per auction its highest bid
-- while open (top-1 by price, then the earliest bid), then per seller the average of
-- the winning prices of its current and 10 preceding auctions by the winning bid's time
-- (11 rows, as the Flink text's ROWS BETWEEN 10 PRECEDING AND CURRENT ROW).
CREATE VIEW q6 AS
WITH winners AS (
  SELECT id, seller, price, bid_date_time
  FROM (
    SELECT A.id, A.seller, B.price, B.date_time AS bid_date_time,
           ROW_NUMBER() OVER (
             PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC, B.bidder ASC
           ) AS rownum
    FROM auction AS A
    JOIN bid AS B
      ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  )
  WHERE rownum <= 1
)
SELECT seller, id AS auction, bid_date_time,
       AVG(price) OVER (
         PARTITION BY seller ORDER BY bid_date_time, id
         ROWS BETWEEN 10 PRECEDING AND CURRENT ROW
       ) AS avg_price
FROM winners;
