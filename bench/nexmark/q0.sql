-- q0 pass-through: every bid, five of its columns (Flink's q0).
CREATE VIEW q0 AS
SELECT auction, bidder, price, date_time, extra FROM bid;
