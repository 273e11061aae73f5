-- SMILE's Figure 1 (Nikolaou et al.), written in SQL.
--
-- Sellers list items; buyers in two regions buy them. The derived view `available`
-- holds, per item still on sale, `avail = qty - total bought`; an item whose last
-- unit is sold leaves the view (its row is retracted).
--
--   sealtime run examples/smile_figure1.sql --data-dir /tmp/fig1
--
-- Relative FILES directories are relative to this file; sink paths to the data dir.
-- `ts` is each record's event time in milliseconds.

CREATE SOURCE sellers FROM FILES 'data/smile_figure1/sellers'
  (FORMAT csv, SCHEMA 'item_id long, price double, qty long, ts long',
   EVENT TIME ts, LATENESS '1s', FINITE, MAX ROWS PER TICK 2);

CREATE SOURCE buyers_west FROM FILES 'data/smile_figure1/buyers_west'
  (FORMAT csv, SCHEMA 'item_id long, qty long, ts long',
   EVENT TIME ts, LATENESS '1s', FINITE, MAX ROWS PER TICK 1);

CREATE SOURCE buyers_east FROM FILES 'data/smile_figure1/buyers_east'
  (FORMAT csv, SCHEMA 'item_id long, qty long, ts long',
   EVENT TIME ts, LATENESS '1s', FINITE, MAX ROWS PER TICK 1);

-- The two buy streams merged (UNION ALL: the order of the inputs is the merge priority).
CREATE VIEW buys AS
  SELECT item_id, qty FROM buyers_west
  UNION ALL
  SELECT item_id, qty FROM buyers_east;

-- Buys summed per item.
CREATE VIEW bought AS
  SELECT item_id, SUM(qty) AS total FROM buys GROUP BY item_id;

-- Joined with the sellers: what is left of each item; only items still available.
CREATE VIEW available AS
  SELECT s.item_id, s.price, s.qty - COALESCE(b.total, 0) AS avail
  FROM sellers s LEFT JOIN bought b ON s.item_id = b.item_id
  WHERE s.qty - COALESCE(b.total, 0) > 0;

-- Every update of the view, as Parquet files under <data dir>/out/available.
CREATE SINK available_files FROM available INTO PARQUET 'out/available';

-- Subscribers get a snapshot and then (time, row, diff) updates:
--   sealtime subscribe available --catalog <data dir> --mode view
PUBLISH available AS VIEW;
