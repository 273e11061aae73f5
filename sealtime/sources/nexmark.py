"""`Nexmark`: the deterministic Nexmark event generator with three subsources.

Events follow Apache Beam's Nexmark generator (see ``NEXMARK.md``): event number ``n``
is a person when ``n % 50 == 0``, an auction when ``n % 50`` is 1, 2 or 3, a bid
otherwise (1 : 3 : 46). Ids, hot keys, prices, categories, states, cities, names and
``extra`` padding follow Beam's rules; the randomness is counter-based (a SplitMix64
hash of the seed, the event number and the field, as in `generator`), so event ``n``
is the same in every run, after every restart and however reads are split, and a batch
is computed with numpy/pyarrow operations over whole columns.

Random strings (names of items, descriptions, e-mail parts, ``extra``) are slices of a
seeded pool of letters (with Beam's 1-in-13 spaces for `nextString`), taken at a hashed
offset with a hashed length, so they cost one gather per batch.

Output: one table with a ``_subsource`` column (``"person"``, ``"auction"``, ``"bid"``)
and the union of the three schemas (null where a column does not apply); `subsources`
gives each output's schema and `split` (or `decode.split_subsources`) takes a batch
apart. Position: the next event number. Event time is monotone in ``n``:
``date_time = start + n * 1000 // rate`` ms, so `ReadBatch.event_frontier` is the
time of the next event.

>>> src = Nexmark(limit=100)
>>> b = src.open().read()
>>> b.position, b.exhausted
(100, True)
>>> b.data.column("_subsource").to_pylist()[:5]
['person', 'auction', 'auction', 'auction', 'bid']
>>> parts = src.split(b.data)
>>> [parts[k].num_rows for k in ("person", "auction", "bid")]
[2, 6, 92]
>>> parts["person"].column("id").to_pylist(), parts["auction"].column("id").to_pylist()
([1000, 1001], [1000, 1001, 1002, 1003, 1004, 1005])
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InternalError
from .decode import SUBSOURCE_COLUMN, split_subsources
from .generator import (
    DEFAULT_START,
    FIRST_AUCTION_ID,
    FIRST_PERSON_ID,
    GOLDEN,
    CounterReader,
    CounterSource,
    EventStream,
    check_int,
    mix_int,
)

__all__ = [
    "AUCTION_SCHEMA",
    "BID_SCHEMA",
    "CITIES",
    "FIRST_CATEGORY_ID",
    "FIRST_NAMES",
    "HOT_CHANNELS",
    "LAST_NAMES",
    "NEXMARK_SCHEMA",
    "Nexmark",
    "NexmarkReader",
    "PERSON_SCHEMA",
    "STATES",
]

_TS = pa.timestamp("ms", tz="UTC")

# Beam's Nexmark schemas, one per event kind: parallel by nature.
PERSON_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("name", pa.string()),
        ("email_address", pa.string()),
        ("credit_card", pa.string()),
        ("city", pa.string()),
        ("state", pa.string()),
        ("date_time", _TS),
        ("extra", pa.string()),
    ]
)
AUCTION_SCHEMA = pa.schema(
    [
        ("id", pa.int64()),
        ("item_name", pa.string()),
        ("description", pa.string()),
        ("initial_bid", pa.int64()),
        ("reserve", pa.int64()),
        ("date_time", _TS),
        ("expires", _TS),
        ("seller", pa.int64()),
        ("category", pa.int64()),
        ("extra", pa.string()),
    ]
)
BID_SCHEMA = pa.schema(
    [
        ("auction", pa.int64()),
        ("bidder", pa.int64()),
        ("price", pa.int64()),
        ("channel", pa.string()),
        ("url", pa.string()),
        ("date_time", _TS),
        ("extra", pa.string()),
    ]
)


def _union(*schemas: pa.Schema) -> pa.Schema:
    fields: dict[str, pa.Field] = {}
    for s in schemas:
        for f in s:
            if f.name in fields and not fields[f.name].type.equals(f.type):
                raise InternalError(f"column {f.name} has two types")  # pragma: no cover
            fields.setdefault(f.name, pa.field(f.name, f.type, nullable=True))
    return pa.schema([pa.field(SUBSOURCE_COLUMN, pa.string(), nullable=False), *fields.values()])


#: Schema of a `Nexmark` batch: ``_subsource`` + the union of the three schemas.
NEXMARK_SCHEMA = _union(PERSON_SCHEMA, AUCTION_SCHEMA, BID_SCHEMA)

FIRST_NAMES = ("Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah")
FIRST_NAMES += ("Deiter", "Walter")
LAST_NAMES = ("Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones")
LAST_NAMES += ("Noris",)
CITIES = ("Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond")
CITIES += ("Seattle", "Kent", "Cheyenne")
STATES = ("AZ", "CA", "ID", "OR", "WA", "WY")
HOT_CHANNELS = ("Google", "Facebook", "Baidu", "Apple")
_HOT_URLS = tuple(f"https://www.nexmark.com/{c.lower()}/item.htm?query=1" for c in HOT_CHANNELS)
FIRST_CATEGORY_ID = 10

_TOTAL = 50  # events per epoch: 1 person, 3 auctions, 46 bids
_PERSON = 1
_AUCTION = 3
_HOT_BLOCK = 100
_LEAD = 10
_CHANNELS_NUMBER = 10_000
_CHUNK = 1 << 16  # events per internal chunk (bounds the memory of string gathers)
_POOL = 1 << 20  # bytes of the random letter pools
_FIELDS = [
    "first_name",
    "last_name",
    "email_user",
    "email_user_len",
    "email_domain",
    "email_domain_len",
    "cc0",
    "cc1",
    "cc2",
    "cc3",
    "city",
    "state",
    "seller_hot",
    "seller",
    "category",
    "initial_bid",
    "reserve",
    "item_name",
    "item_name_len",
    "description",
    "description_len",
    "expires",
    "auction_hot",
    "auction",
    "bidder_hot",
    "bidder",
    "price",
    "channel_hot",
    "hot_channel",
    "channel_id",
    "url0",
    "url1",
    "url2",
    "url_len0",
    "url_len1",
    "url_len2",
    "extra",
    "extra_len",
    "pool_letters",
    "pool_spaces",
]


def _strs(values: tuple[str, ...]) -> pa.Array:
    return pa.array(values, pa.string())


class Nexmark(CounterSource):
    """Nexmark persons, auctions and bids; see the module docstring.

    Parameters (keyword only): `seed` (0 ≤ seed < 2**64), `limit` (events; None =
    unbounded), `rate` (events per second of event time), `start` (event time of event
    0), `max_per_read`, `in_flight_auctions` (100), `active_people` (1000),
    `hot_auction_ratio` (2), `hot_seller_ratio` (4), `hot_bidder_ratio` (4) — the hot
    key is taken with probability ``1 - 1/ratio`` —, `avg_person_bytes` (200),
    `avg_auction_bytes` (500), `avg_bid_bytes` (100): the sizes ``extra`` pads to ± 20 %.

    >>> Nexmark(limit=10).subsources["bid"].names
    ['auction', 'bidder', 'price', 'channel', 'url', 'date_time', 'extra']
    >>> Nexmark(rate=0)
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Nexmark(rate=0): must be >= 1; pass events per second of event time, e.g. rate=10_000
    """

    # The first keyword parameters repeat Generator's on purpose: each source keeps an
    # explicit signature (for users, help() and the docs); their checking is shared
    # (EventStream.check).
    def __init__(
        self,
        *,
        seed: int = 0,
        limit: int | None = None,
        rate: int = 10_000,
        start: Any = DEFAULT_START,
        max_per_read: int = 1_000_000,
        in_flight_auctions: int = 100,
        active_people: int = 1000,
        hot_auction_ratio: int = 2,
        hot_seller_ratio: int = 4,
        hot_bidder_ratio: int = 4,
        avg_person_bytes: int = 200,
        avg_auction_bytes: int = 500,
        avg_bid_bytes: int = 100,
    ) -> None:
        def check(name: str, value: Any, minimum: int, fix: str) -> int:
            return check_int(name, value, minimum, fix, "Nexmark")

        common = EventStream.check(
            "Nexmark", seed=seed, limit=limit, rate=rate, start=start, max_per_read=max_per_read
        )
        self._set_stream(common)
        self.in_flight_auctions = check("in_flight_auctions", in_flight_auctions, 1, "e.g. 100")
        self.active_people = check("active_people", active_people, 1, "e.g. 1000")
        self.hot_auction_ratio = check("hot_auction_ratio", hot_auction_ratio, 1, "1 = none")
        self.hot_seller_ratio = check("hot_seller_ratio", hot_seller_ratio, 1, "1 = none")
        self.hot_bidder_ratio = check("hot_bidder_ratio", hot_bidder_ratio, 1, "1 = none")
        self.avg_person_bytes = check("avg_person_bytes", avg_person_bytes, 0, "e.g. 200")
        self.avg_auction_bytes = check("avg_auction_bytes", avg_auction_bytes, 0, "e.g. 500")
        self.avg_bid_bytes = check("avg_bid_bytes", avg_bid_bytes, 0, "e.g. 100")
        self.schema = NEXMARK_SCHEMA
        #: The outputs and their schemas (rows carry ``_subsource`` = the key).
        self.subsources: dict[str, pa.Schema] = {
            "person": PERSON_SCHEMA,
            "auction": AUCTION_SCHEMA,
            "bid": BID_SCHEMA,
        }
        self._keys = {
            f: mix_int(self.seed * GOLDEN + (code + 101) * 0xD1B54A32D192ED03 + 7)
            for code, f in enumerate(_FIELDS)
        }
        self._pools: tuple[np.ndarray, np.ndarray] | None = None
        self._max_len = 1 + 2 * max(
            100, self.avg_person_bytes, self.avg_auction_bytes, self.avg_bid_bytes
        )

    def __repr__(self) -> str:
        return f"Nexmark(seed={self.seed}, limit={self.limit}, rate={self.rate})"

    def split(self, table: pa.Table) -> dict[str, pa.Table]:
        """One table per subsource (``person``, ``auction``, ``bid``), each in its schema."""
        return split_subsources(table, self.subsources)

    # ------------------------------------------------------------------ randomness

    def _below(self, ns: np.ndarray, field: str, k: Any) -> np.ndarray:
        """Uniform ints in ``[0, k)`` (k a scalar or an array)."""
        return (self._uniform(ns, field) * np.asarray(k, dtype=np.float64)).astype(np.int64)

    def _hot(self, ns: np.ndarray, field: str, ratio: int) -> np.ndarray:
        """True with probability ``1 - 1/ratio`` (Beam: ``nextInt(ratio) > 0``)."""
        return self._below(ns, field, ratio) > 0

    def _price(self, ns: np.ndarray, field: str) -> np.ndarray:
        """Beam's ``Math.round(10 ** (U * 6) * 100)``: 100 … 10^8."""
        p = np.floor(np.power(10.0, self._uniform(ns, field) * 6.0) * 100.0 + 0.5)
        return p.astype(np.int64)

    def _pool(self, spaces: bool) -> np.ndarray:
        if self._pools is None:
            idx = np.arange(_POOL + self._max_len, dtype=np.int64)
            letters = (self._hash(idx, "pool_letters") % np.uint64(26)).astype(np.uint8) + 97
            spaced = letters.copy()
            spaced[(self._hash(idx, "pool_spaces") % np.uint64(13)) == 0] = 32
            self._pools = (letters, spaced)
        return self._pools[1 if spaces else 0]

    def _strings(
        self, ns: np.ndarray, field: str, lengths: np.ndarray, spaces: bool
    ) -> pa.StringArray:
        """Per event a string of the given length: a pool slice at a hashed offset."""
        pool = self._pool(spaces)
        lengths = lengths.astype(np.int64)
        offsets = np.zeros(len(ns) + 1, dtype=np.int64)
        np.cumsum(lengths, out=offsets[1:])
        starts = (self._hash(ns, field) % np.uint64(_POOL)).astype(np.int64)
        idx = np.arange(offsets[-1], dtype=np.int64)
        idx += np.repeat(starts - offsets[:-1], lengths)
        data = pool[idx]
        return pa.StringArray.from_buffers(
            len(ns), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(data)
        )

    def _next_string(self, ns: np.ndarray, field: str, max_length: int) -> pa.StringArray:
        """Beam's ``nextString(maxLength)``: 3 … maxLength-1 letters, 1 in 13 a space."""
        lengths = 3 + self._below(ns, field + "_len", max_length - 3)
        return self._strings(ns, field, lengths, spaces=True)

    def _extra_lengths(self, ns: np.ndarray, current: np.ndarray, avg: int) -> np.ndarray:
        """Beam's ``nextExtra``: pad an event of `current` bytes to ``avg`` ± 20 %."""
        current = np.asarray(current, dtype=np.int64)
        desired = avg - current
        delta = np.floor(desired * 0.2 + 0.5).astype(np.int64)
        spread = self._below(ns, "extra_len", np.maximum(2 * delta, 1))
        size = desired - delta + np.where(delta > 0, spread, 0)
        return np.where(current > avg, 0, np.maximum(size, 0))

    # ------------------------------------------------------------------ rules

    def _next_person(self, ns: np.ndarray, field: str, last_person: np.ndarray) -> np.ndarray:
        """Beam's ``nextBase0PersonId``: uniform over the active people + 10 lead ids."""
        num_people = last_person + 1
        active = np.minimum(num_people, self.active_people)
        return num_people - active + self._below(ns, field, active + _LEAD)

    def _persons(self, ns: np.ndarray, t: np.ndarray) -> dict[str, Any]:
        epoch = ns // _TOTAL
        name = pc.binary_join_element_wise(
            _strs(FIRST_NAMES).take(pa.array(self._below(ns, "first_name", len(FIRST_NAMES)))),
            _strs(LAST_NAMES).take(pa.array(self._below(ns, "last_name", len(LAST_NAMES)))),
            " ",
        )
        email = pc.binary_join_element_wise(
            self._next_string(ns, "email_user", 7), self._next_string(ns, "email_domain", 5), "@"
        )
        email = pc.binary_join_element_wise(email, ".com", "")
        groups = [
            pc.utf8_lpad(pc.cast(pa.array(self._below(ns, f"cc{i}", 10_000)), pa.string()), 4, "0")
            for i in range(4)
        ]
        card = pc.binary_join_element_wise(*groups, " ")
        city = _strs(CITIES).take(pa.array(self._below(ns, "city", len(CITIES))))
        state = _strs(STATES).take(pa.array(self._below(ns, "state", len(STATES))))
        size = 8 + sum(
            pc.binary_length(c).to_numpy(zero_copy_only=False).astype(np.int64)
            for c in (name, email, card, city, state)
        )
        return {
            "id": epoch + FIRST_PERSON_ID,
            "name": name,
            "email_address": email,
            "credit_card": card,
            "city": city,
            "state": state,
            "_extra": self._extra_lengths(ns, size, self.avg_person_bytes),
        }

    def _auctions(self, ns: np.ndarray, t: np.ndarray) -> dict[str, Any]:
        epoch, offset = np.divmod(ns, _TOTAL)
        last_person = epoch
        hot = self._hot(ns, "seller_hot", self.hot_seller_ratio)
        seller = np.where(
            hot,
            (last_person // _HOT_BLOCK) * _HOT_BLOCK,
            self._next_person(ns, "seller", last_person),
        )
        initial = self._price(ns, "initial_bid")
        item = self._next_string(ns, "item_name", 20)
        desc = self._next_string(ns, "description", 100)
        events_for_auctions = (self.in_flight_auctions * _TOTAL) // _AUCTION
        horizon = self.base_time(ns + events_for_auctions) - t
        expires = t + 1 + self._below(ns, "expires", np.maximum(2 * horizon, 1))
        size = (
            48
            + pc.binary_length(item).to_numpy(zero_copy_only=False).astype(np.int64)
            + pc.binary_length(desc).to_numpy(zero_copy_only=False).astype(np.int64)
        )
        return {
            "id": epoch * _AUCTION + (offset - _PERSON) + FIRST_AUCTION_ID,
            "item_name": item,
            "description": desc,
            "initial_bid": initial,
            "reserve": initial + self._price(ns, "reserve"),
            "expires": expires,
            "seller": seller + FIRST_PERSON_ID,
            "category": FIRST_CATEGORY_ID + self._below(ns, "category", 5),
            "_extra": self._extra_lengths(ns, size, self.avg_auction_bytes),
        }

    def _bids(self, ns: np.ndarray, t: np.ndarray) -> dict[str, Any]:
        epoch = ns // _TOTAL
        last_auction = epoch * _AUCTION + (_AUCTION - 1)
        last_person = epoch
        min_auction = np.maximum(last_auction - self.in_flight_auctions, 0)
        cold_auction = min_auction + self._below(
            ns, "auction", last_auction - min_auction + 1 + _LEAD
        )
        auction = np.where(
            self._hot(ns, "auction_hot", self.hot_auction_ratio),
            (last_auction // _HOT_BLOCK) * _HOT_BLOCK,
            cold_auction,
        )
        bidder = np.where(
            self._hot(ns, "bidder_hot", self.hot_bidder_ratio),
            (last_person // _HOT_BLOCK) * _HOT_BLOCK + 1,
            self._next_person(ns, "bidder", last_person),
        )
        hot_channel = self._hot(ns, "channel_hot", 2)
        which = pa.array(self._below(ns, "hot_channel", len(HOT_CHANNELS)))
        channel_id = pc.cast(pa.array(self._below(ns, "channel_id", _CHANNELS_NUMBER)), pa.string())
        parts = [
            self._strings(ns, f"url{i}", 3 + self._below(ns, f"url_len{i}", 2), spaces=False)
            for i in range(3)
        ]
        # https://www.nexmark.com/<a>/<b>/<c>/item.htm?query=1&channel_id=<k>
        prefix = pc.binary_join_element_wise(
            "https://www.nexmark.com", *parts, "item.htm?query=1&channel_id=", "/"
        )
        cold_url = pc.binary_join_element_wise(prefix, channel_id, "")
        mask = pa.array(hot_channel)
        channel = pc.if_else(
            mask,
            _strs(HOT_CHANNELS).take(which),
            pc.binary_join_element_wise("channel-", channel_id, ""),
        )
        url = pc.if_else(mask, _strs(_HOT_URLS).take(which), cold_url)
        return {
            "auction": auction + FIRST_AUCTION_ID,
            "bidder": bidder + FIRST_PERSON_ID,
            "price": self._price(ns, "price"),
            "channel": channel,
            "url": url,
            "_extra": self._extra_lengths(ns, np.full(len(ns), 32), self.avg_bid_bytes),
        }

    # ------------------------------------------------------------------ batches

    def generate(self, first: int, count: int) -> pa.Table:
        """Events ``first .. first + count - 1`` as one `NEXMARK_SCHEMA` table.

        >>> src = Nexmark(seed=3)
        >>> src.generate(0, 120).slice(70).equals(src.generate(70, 50))
        True
        """
        first, count = self._check_range(first, count)
        if count == 0:
            return pa.Table.from_batches([], schema=self.schema)
        tables = [
            self._chunk(lo, min(_CHUNK, first + count - lo))
            for lo in range(first, first + count, _CHUNK)
        ]
        return pa.concat_tables(tables) if len(tables) > 1 else tables[0]

    def _chunk(self, first: int, count: int) -> pa.Table:
        ns = np.arange(first, first + count, dtype=np.int64)
        offset = ns % _TOTAL
        event_type = np.where(offset < _PERSON, 0, np.where(offset < _PERSON + _AUCTION, 1, 2))
        t = self.base_time(ns)
        rows = [np.flatnonzero(event_type == k) for k in range(3)]
        parts = [
            self._persons(ns[rows[0]], t[rows[0]]),
            self._auctions(ns[rows[1]], t[rows[1]]),
            self._bids(ns[rows[2]], t[rows[2]]),
        ]
        # rank of each row inside its event type (for scattering its columns into the union)
        rank = np.empty(count, dtype=np.int64)
        for r in rows:
            rank[r] = np.arange(len(r))
        extra_len = np.empty(count, dtype=np.int64)
        for r, p in zip(rows, parts):
            extra_len[r] = p.pop("_extra")
        columns: dict[str, Any] = {
            SUBSOURCE_COLUMN: _strs(("person", "auction", "bid")).take(pa.array(event_type)),
            "date_time": pa.array(t, _TS),
            "extra": self._strings(ns, "extra", extra_len, spaces=False),
        }
        for k, part in enumerate(parts):
            is_k = event_type == k
            take = pa.array(rank, mask=~is_k)
            for name, values in part.items():
                if name in columns:
                    continue
                if name == "id":  # shared by persons and auctions
                    continue
                arr = values if isinstance(values, (pa.Array, pa.ChunkedArray)) else None
                if arr is None:
                    typ = _TS if name == "expires" else pa.int64()
                    arr = pa.array(values, typ)
                columns[name] = arr.take(take)
        ids = np.zeros(count, dtype=np.int64)
        ids[rows[0]] = parts[0]["id"]
        ids[rows[1]] = parts[1]["id"]
        columns["id"] = pa.array(ids, mask=event_type == 2)
        return pa.Table.from_arrays([columns[f.name] for f in self.schema], schema=self.schema)

    # ------------------------------------------------------------------ reading

    def open(self, position: Any = None) -> NexmarkReader:
        """A reader starting at event number `position` (None = 0)."""
        return NexmarkReader(self, self._check_position(position))


class NexmarkReader(CounterReader):
    """An open `Nexmark`; `position` is the next event number."""

    def __init__(self, source: Nexmark, position: int) -> None:
        super().__init__(source, position)
        self.acked = position

    def acknowledge(self, position: Any) -> None:
        """Nothing upstream to tell; records the highest position (monotone)."""
        if isinstance(position, int) and position > self.acked:
            self.acked = position

    def health(self) -> str:
        """Always ``"running"``."""
        return "running"
