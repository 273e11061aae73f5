-- q10 log to file system: every bid with its day and minute (UTC; the session's time
-- zone is UTC). Flink writes it as CSV partitioned by (dt, hm); the rows are the query.
CREATE VIEW q10 AS
SELECT auction, bidder, price, date_time, extra,
       DATE_FORMAT(date_time, 'yyyy-MM-dd') AS dt,
       DATE_FORMAT(date_time, 'HH:mm') AS hm
FROM bid;
