-- q21 add channel id: the four big channels by name, the others from the url's
-- channel_id parameter; bids with neither are dropped. (Spark's regexp_extract gives ''
-- where Flink's REGEXP_EXTRACT gives NULL.)
CREATE VIEW q21 AS
SELECT auction, bidder, price, channel,
       CASE
         WHEN LOWER(channel) = 'apple' THEN '0'
         WHEN LOWER(channel) = 'google' THEN '1'
         WHEN LOWER(channel) = 'facebook' THEN '2'
         WHEN LOWER(channel) = 'baidu' THEN '3'
         ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
       END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) <> ''
   OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');
