-- q1 currency conversion: prices in euros. Flink's `0.908 * price` is DECIMAL(23, 3);
-- in Spark SQL 0.908 is DECIMAL(3, 3) and the product DECIMAL(24, 3): exact, no float.
CREATE VIEW q1 AS
SELECT auction, bidder, 0.908 * price AS price, date_time, extra FROM bid;
