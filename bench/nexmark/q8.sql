-- q8 monitor new users: people who registered and listed an auction in the same 10 s
-- tumbling window (each side grouped per window first: one row per person per window).
CREATE VIEW q8 AS
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) AS P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(date_time), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) AS A
  ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;
