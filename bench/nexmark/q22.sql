-- q22 URL directories: the 3rd, 4th and 5th '/'-separated pieces of the url (counted
-- from 0, Flink's SPLIT_INDEX(url, '/', 3..5)); NULL where the url has fewer pieces.
CREATE VIEW q22 AS
SELECT auction, bidder, price, channel,
       TRY_ELEMENT_AT(SPLIT(url, '/'), 4) AS dir1,
       TRY_ELEMENT_AT(SPLIT(url, '/'), 5) AS dir2,
       TRY_ELEMENT_AT(SPLIT(url, '/'), 6) AS dir3
FROM bid;
