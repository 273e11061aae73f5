-- The three Nexmark streams as views over the one source `nexmark` (as in the Flink and
-- RisingWave suites, where person, auction and bid are views over one event stream).
-- `nexmark` is a flat table: `_subsource` ('person' | 'auction' | 'bid') and the union
-- of the three schemas; its event-time column is date_time (LATENESS 4s, the Flink
-- DDL's WATERMARK date_time - INTERVAL '4' SECOND), which these views pass unchanged.
CREATE VIEW person AS
  SELECT id, name, email_address, credit_card, city, state, date_time, extra
  FROM nexmark WHERE _subsource = 'person';

CREATE VIEW auction AS
  SELECT id, item_name, description, initial_bid, reserve, date_time, expires, seller,
         category, extra
  FROM nexmark WHERE _subsource = 'auction';

CREATE VIEW bid AS
  SELECT auction, bidder, price, channel, url, date_time, extra
  FROM nexmark WHERE _subsource = 'bid';
