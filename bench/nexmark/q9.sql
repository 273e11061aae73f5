-- q9 winning bids: per auction the highest bid made while it was open (ties: the
-- earliest, then the lowest bidder id, so the winner is one row whatever the order),
-- with all of the auction's columns. An updating top-1.
CREATE VIEW q9 AS
SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller,
       category, extra, auction, bidder, price, bid_date_time, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.date_time AS bid_date_time,
         B.extra AS bid_extra,
         ROW_NUMBER() OVER (
           PARTITION BY A.id ORDER BY B.price DESC, B.date_time ASC, B.bidder ASC
         ) AS rownum
  FROM auction AS A
  JOIN bid AS B
    ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
)
WHERE rownum <= 1;
