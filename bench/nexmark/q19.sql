-- q19 auction top-10 price: per auction the 10 highest-priced bids and their rank (price
-- ties: the earlier bid, then the lower bidder id ranks first).
CREATE VIEW q19 AS
SELECT *
FROM (
  SELECT *,
         ROW_NUMBER() OVER (
           PARTITION BY auction ORDER BY price DESC, date_time ASC, bidder ASC
         ) AS rank_number
  FROM bid
)
WHERE rank_number <= 10;
