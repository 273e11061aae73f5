-- q12 processing-time windows: bids per bidder per 10 s tumbling window. Flink uses
-- PROCTIME(), which makes the result depend on when rows arrive; here the windows are
-- on event time (a function of the input, checkable), as NEXMARK.md allows.
CREATE VIEW q12 AS
SELECT bidder, COUNT(*) AS bid_count, window_start AS starttime, window_end AS endtime
FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;
