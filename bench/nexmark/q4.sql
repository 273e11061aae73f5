-- q4 average price for a category: per auction the highest bid made while it was open
-- (auction.date_time <= bid.date_time <= expires, inclusive), then the average of those
-- per category. An updating result: a new highest bid retracts its auction's old one.
-- (Flink writes the join as `FROM auction A, bid B WHERE A.id = B.auction AND ...`;
-- Flink's AVG of a BIGINT truncates, Spark's AVG is a DOUBLE.)
CREATE VIEW q4 AS
SELECT Q.category, AVG(Q.final) AS average
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction AS A
  JOIN bid AS B
    ON A.id = B.auction AND B.date_time BETWEEN A.date_time AND A.expires
  GROUP BY A.id, A.category
) AS Q
GROUP BY Q.category;
