-- q23 bid with person and auction (Flink, Dec 2025): each bid of a person who listed
-- auctions, once per such auction (joined on seller = bidder, not on the auction id).
CREATE VIEW q23 AS
SELECT B.bidder, B.price, B.channel, B.url, B.extra AS bid_extra,
       P.id AS person_id, P.name, P.email_address, P.credit_card, P.city, P.state,
       P.date_time AS person_date_time, P.extra AS person_extra,
       A.item_name, A.description, A.initial_bid, A.reserve,
       A.date_time AS auction_date_time, A.expires, A.seller, A.category,
       A.extra AS auction_extra
FROM bid AS B
JOIN person AS P ON P.id = B.bidder
JOIN auction AS A ON A.seller = B.bidder;
