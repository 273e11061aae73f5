-- The source for `sealtime run`: the harness's Parquet files (bench/nexmark.py writes
-- them; `--data-dir` keeps them). Prepend to _tables.sql and a query file, e.g.
--   cat bench/nexmark/_source.sql bench/nexmark/_tables.sql bench/nexmark/q5.sql \
--       > /tmp/q5.sql && sed -i "s#@EVENTS@#/path/to/events#" /tmp/q5.sql
--   sealtime run /tmp/q5.sql --data-dir /tmp/q5-data
-- bench/nexmark.py builds the same source in Python (Files, max_rows_per_tick) and
-- applies _tables.sql and the query file to it with sealtime.sql.pipeline.
CREATE SOURCE nexmark FROM FILES '@EVENTS@' (
  FORMAT parquet,
  PATTERN 'nexmark-*.parquet',
  FINITE,
  SETTLE 0,
  SCHEMA '_subsource string, id long, name string, email_address string,
          credit_card string, city string, state string, date_time timestamp,
          extra string, item_name string, description string, initial_bid long,
          reserve long, expires timestamp, seller long, category long, auction long,
          bidder long, price long, channel string, url string',
  EVENT TIME date_time,
  LATENESS '4s',
  MAX ROWS PER TICK 500000
);
