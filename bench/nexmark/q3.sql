-- q3 local item suggestion: auctions of category 10 by sellers in OR, ID or CA. A
-- regular (unwindowed) join: both sides are kept as state.
CREATE VIEW q3 AS
SELECT P.name, P.city, P.state, A.id
FROM auction AS A
JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND P.state IN ('OR', 'ID', 'CA');
