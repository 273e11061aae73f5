"""`Generator`: a deterministic, vectorised source of synthetic bid events (Nexmark-like).

Every column of event ``n`` is a pure function of ``(seed, n)``: the randomness is
counter-based (a SplitMix64 hash of the seed, the event number and the field), not a
sequential random stream. So event ``n`` is the same in every run, after every restart
and whatever way the reads are split, and a batch of events is computed with a handful
of numpy operations over the whole range of event numbers (no Python object per row).

The bid fields follow Apache Beam's Nexmark generator (see ``NEXMARK.md``), applied to
every event number as if event ``n`` were Nexmark event ``n``:

* ``auction``: with probability ``1 - 1/hot_auction_ratio`` the first auction of the
  latest block of 100, otherwise uniform over the last ``auctions`` in-flight auctions
  plus 10 "lead" ids; auction ids start at 1000 and grow by 3 every 50 events.
* ``bidder``: with probability ``1 - 1/hot_bidder_ratio`` the hot person of the latest
  block of 100, otherwise uniform over the last ``bidders`` active persons plus 10 lead
  ids; person ids start at 1000 and grow by 1 every 50 events.
* ``price`` = ``round(10 ** (U * 6) * 100)`` (100 ... 10^8), ``channel`` one of
  `CHANNELS` (uniform).

Event time: event ``n``'s *base time* is ``start_ms + n * 1000 // rate``. A normal event
is ``base - U[0, out_of_order)`` (integer ms); an event *injected late* is exactly
``base - late_by``.

Late-injection contract (downstream tests rely on it): an event ``n`` is injected late
iff ``n >= late_warmup``, ``n`` is odd and ``u(seed, n) < 2 * late_fraction`` (so about
a ``late_fraction`` of the events; never two in a row, and the event before an injected
one is always a normal one). With a bounded lateness ``L`` (ms) such that

    out_of_order <= L < late_by - out_of_order - ceil(1000 / rate)

the records that are late under "record i is late iff t_i < max(t_j for j < i) - L" are
**exactly** the injected ones (`Generator.lateness_range` gives these bounds,
`Generator.is_injected_late` and `Generator.injected_late` the selection).

>>> g = Generator(limit=5)
>>> r = g.open()
>>> b = r.read()
>>> b.data.num_rows, b.position, b.exhausted
(5, 5, True)
>>> b.data.column_names
['event_id', 'auction', 'bidder', 'price', 'channel', 'date_time']
>>> str(b.data.column("date_time")[0])
'2015-07-15 00:00:00+00:00'
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import numpy as np
import pyarrow as pa

from sealtime.durations import parse_duration
from sealtime.errors import ConfigError
from sealtime.sources.base import ReadBatch, Source, SourceReader

__all__ = [
    "CHANNELS",
    "DEFAULT_START",
    "CounterReader",
    "CounterSource",
    "EventStream",
    "FIRST_AUCTION_ID",
    "FIRST_PERSON_ID",
    "Generator",
    "GeneratorReader",
    "check_int",
    "parse_time_ms",
]

#: Beam's Nexmark base time.
DEFAULT_START = "2015-07-15T00:00:00Z"
#: The values of the ``channel`` column.
CHANNELS: tuple[str, ...] = ("Apple", "Google", "Facebook", "Baidu", "Web")
#: Nexmark's first auction id and first person id.
FIRST_AUCTION_ID = 1000
FIRST_PERSON_ID = 1000

# Nexmark's event mix: per 50 events 1 person, 3 auctions, 46 bids. The ids of a bid are
# computed from the event number as in Beam, so they match a full Nexmark stream.
_PERSON_PROPORTION = 1
_AUCTION_PROPORTION = 3
_TOTAL_PROPORTION = 50
_HOT_BLOCK = 100  # Beam's HOT_AUCTION_RATIO / HOT_BIDDER_RATIO block size
_ID_LEAD = 10  # Beam's AUCTION_ID_LEAD / PERSON_ID_LEAD

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB
TWO_POW_M53 = 2.0**-53
# One independent hash stream per random field.
_FIELDS = {
    "auction_hot": 1,
    "auction": 2,
    "bidder_hot": 3,
    "bidder": 4,
    "price": 5,
    "channel": 6,
    "jitter": 7,
    "late": 8,
}
# Rows per chunk of the generator's own bookkeeping loops (injected_late).
_CHUNK = 1 << 20


# --------------------------------------------------------------------------- parsing


def parse_time_ms(value: Any, *, name: str = "start") -> int:
    """Return a point in time as int milliseconds since the Unix epoch (UTC).

    Accepts an int (ms), a `datetime` (naive = UTC), an ISO 8601 string (``Z`` or an
    offset; none = UTC) or ``"now"``.

    >>> parse_time_ms("2015-07-15T00:00:00Z")
    1436918400000
    >>> parse_time_ms(datetime(2015, 7, 15, tzinfo=timezone.utc)), parse_time_ms(5)
    (1436918400000, 5)
    """
    if isinstance(value, bool):
        raise ConfigError(f"{name}={value!r}: expected an ISO time, a datetime or int ms")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "now":
            return int(time.time() * 1000)
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            raise ConfigError(
                f"{name}={value!r}: not an ISO 8601 time; e.g. '2015-07-15T00:00:00Z', or int ms"
            ) from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        delta = value - datetime(1970, 1, 1, tzinfo=timezone.utc)
        return delta // timedelta(milliseconds=1)
    raise ConfigError(f"{name}={value!r}: expected an ISO time string, a datetime or int ms")


# --------------------------------------------------------------------------- hashing


def mix_int(z: int) -> int:
    """SplitMix64's finaliser on a Python int (used for the per-field keys)."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * _M1) & MASK64
    z = ((z ^ (z >> 27)) * _M2) & MASK64
    return z ^ (z >> 31)


def mix(z: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser, in place on a uint64 array (wrap-around arithmetic)."""
    z ^= z >> np.uint64(30)
    z *= np.uint64(_M1)
    z ^= z >> np.uint64(27)
    z *= np.uint64(_M2)
    z ^= z >> np.uint64(31)
    return z


def _wall_clock_ms() -> int:
    return int(time.time() * 1000)


# --------------------------------------------------------------------------- source


def check_int(name: str, value: Any, minimum: int, fix: str, owner: str = "Generator") -> int:
    """`value` as an int ≥ `minimum`, else a `ConfigError` naming ``owner(name=value)``.

    >>> check_int("rate", 5, 1, "e.g. 10")
    5
    >>> check_int("rate", 0, 1, "e.g. 10", owner="Nexmark")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Nexmark(rate=0): must be >= 1; e.g. 10
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ConfigError(f"{owner}({name}={value!r}): must be an integer; {fix}")
    if value < minimum:
        raise ConfigError(f"{owner}({name}={value!r}): must be >= {minimum}; {fix}")
    return int(value)


@dataclass(frozen=True)
class EventStream:
    """The settings every generated event stream has (`Generator`, `Nexmark`), checked:
    `seed` (0 ≤ seed < 2**64), `limit` (events; None = unbounded), `rate` (events per
    second of event time), `start_ms` (event time of event 0), `max_per_read`.

    >>> EventStream.check("Nexmark", seed=1, limit=None, rate=10, start=0, max_per_read=5)
    EventStream(seed=1, limit=None, rate=10, start_ms=0, max_per_read=5)
    """

    seed: int
    limit: int | None
    rate: int
    start_ms: int
    max_per_read: int

    @classmethod
    def check(
        cls, owner: str, *, seed: Any, limit: Any, rate: Any, start: Any, max_per_read: Any
    ) -> EventStream:
        """Check the settings given to `owner` (named in the errors)."""
        checked = check_int("seed", seed, 0, "pass a seed between 0 and 2**64 - 1", owner)
        if checked > MASK64:
            raise ConfigError(f"{owner}(seed={seed!r}): must be < 2**64; pass a smaller seed")
        return cls(
            seed=checked,
            limit=None
            if limit is None
            else check_int(
                "limit", limit, 0, "pass a number of events, or None for unbounded", owner
            ),
            rate=check_int(
                "rate", rate, 1, "pass events per second of event time, e.g. rate=10_000", owner
            ),
            start_ms=parse_time_ms(start, name="start"),
            max_per_read=check_int(
                "max_per_read", max_per_read, 1, "pass the most rows one read may return", owner
            ),
        )


class CounterSource(Source):
    """A source whose event ``n`` is a pure function of ``(seed, n)`` (`Generator`,
    `Nexmark`): the checked `EventStream` settings, the counter-based randomness and the
    checks of event ranges against `limit`. Subclasses set ``_keys`` (one hash key per
    random field: each source keeps its own streams) and implement `generate`."""

    seed: int
    limit: int | None
    rate: int
    start_ms: int
    max_per_read: int
    _keys: dict[str, int]

    def _set_stream(self, stream: EventStream) -> None:
        self.seed, self.limit, self.rate = stream.seed, stream.limit, stream.rate
        self.start_ms, self.max_per_read = stream.start_ms, stream.max_per_read

    @property
    def finite(self) -> bool:
        """True iff `limit` is set."""
        return self.limit is not None

    def _hash(self, ns: np.ndarray, field: str) -> np.ndarray:
        """uint64 hash of (seed, n, field) for each n (SplitMix64 output n of the field key)."""
        z = ns.astype(np.uint64)  # a copy, mixed in place
        z *= np.uint64(GOLDEN)
        z += np.uint64(self._keys[field])
        return mix(z)

    def _uniform(self, ns: np.ndarray, field: str) -> np.ndarray:
        """Float64 uniform in [0, 1) per event (53 random bits)."""
        return (self._hash(ns, field) >> np.uint64(11)).astype(np.float64) * TWO_POW_M53

    def _check_range(self, first: Any, count: Any) -> tuple[int, int]:
        """`first` and `count` of a `generate` call, checked against `limit`."""
        first = check_int("first", first, 0, "pass an event number >= 0")
        count = check_int("count", count, 0, "pass a number of events >= 0")
        if self.limit is not None and first + count > self.limit:
            raise ConfigError(
                f"{type(self).__name__}.generate({first}, {count}): beyond limit={self.limit}; "
                "pass first + count <= limit"
            )
        return first, count

    def base_time(self, event_ids: np.ndarray) -> np.ndarray:
        """Base event time (int64 ms) of each event number: ``start + n * 1000 // rate``.

        >>> Generator(rate=3, start=0).base_time(np.arange(4)).tolist()
        [0, 333, 666, 1000]
        """
        ns = np.asarray(event_ids, dtype=np.int64)
        return self.start_ms + (ns * 1000) // self.rate

    def event_lower_bound(self, position: int) -> int:
        """A lower bound (ms) on the event time of every event numbered ≥ `position`:
        the base time, for a source whose events come in time order."""
        return int(self.base_time(np.asarray([position]))[0])

    def _check_position(self, position: Any) -> int:
        """The event number a reader opened at `position` (None = 0) starts at."""
        pos = 0 if position is None else position
        pos = check_int("position", pos, 0, "pass a position returned by a ReadBatch")
        if self.limit is not None and pos > self.limit:
            raise ConfigError(
                f"{type(self).__name__}.open(position={pos}): beyond limit={self.limit}; "
                "pass a position returned by this source"
            )
        return pos


class Generator(CounterSource):
    """Deterministic synthetic bid events; see the module docstring for the rules.

    Parameters (keyword only):

    * `seed`: 0 ≤ seed < 2**64; the same seed gives the same events.
    * `limit`: total number of events; None = unbounded (`finite` is False).
    * `rate`: events per second of event time (base time of event n =
      ``start_ms + n * 1000 // rate``).
    * `start`: event time of event 0 (ISO string, datetime, int ms or ``"now"``).
    * `max_per_read`: most rows one `read` returns.
    * `out_of_order`: jitter J; a normal event's time is ``base - U[0, J)``.
    * `late_fraction` (0 ≤ f ≤ 0.5), `late_by`, `late_warmup`: late injection (module
      docstring); `late_by` must exceed `out_of_order` when `late_fraction` > 0.
    * `auctions`, `bidders`: in-flight auctions / active bidders a non-hot bid picks
      from (Beam's defaults are 100 / 1000); `hot_auction_ratio`, `hot_bidder_ratio`:
      a bid takes the hot key with probability ``1 - 1/ratio`` (1 = never).
    * `extra_bytes`: when > 0, an ``extra`` string column of that many bytes per row.
    * `pace`, `clock`: when `pace` is True a read returns only events whose base time is
      ≤ ``clock()`` (ms since the epoch; default the wall clock, so pacing only holds
      events back when `start` is near now, e.g. ``start="now"``).

    >>> g = Generator(seed=1, limit=1000, out_of_order="2s", late_fraction=0.01, late_by="10s")
    >>> g.finite, g.out_of_order_ms, g.late_by_ms
    (True, 2000, 10000)
    >>> r = g.open()
    >>> a, b = r.read(600), r.read(600)
    >>> a.position, b.position, b.exhausted
    (600, 1000, True)
    >>> pa.concat_tables([a.data, b.data]).equals(g.generate(0, 1000))
    True
    >>> g.lateness_range()
    (2000, 7998)
    >>> int(g.is_injected_late(np.arange(1000)).sum()) == g.injected_late(1000)
    True
    >>> Generator(rate=0)
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Generator(rate=0): must be >= 1; pass events per second of event time, e.g. rate=10_000
    """

    def __init__(
        self,
        *,
        seed: int = 0,
        limit: int | None = None,
        rate: int = 10_000,
        start: Any = DEFAULT_START,
        max_per_read: int = 1_000_000,
        out_of_order: Any = "0s",
        late_fraction: float = 0.0,
        late_by: Any = "30s",
        late_warmup: int = 100,
        auctions: int = 1000,
        bidders: int = 10_000,
        hot_auction_ratio: int = 2,
        hot_bidder_ratio: int = 4,
        extra_bytes: int = 0,
        pace: bool = False,
        clock: Callable[[], int] | None = None,
    ) -> None:
        common = EventStream.check(
            "Generator",
            seed=seed,
            limit=limit,
            rate=rate,
            start=start,
            max_per_read=max_per_read,
        )
        self._set_stream(common)
        self.out_of_order_ms = parse_duration(out_of_order, "Generator(out_of_order)")
        if (
            isinstance(late_fraction, bool)
            or not isinstance(late_fraction, (int, float, np.floating, np.integer))
            or not 0.0 <= float(late_fraction) <= 0.5
        ):
            raise ConfigError(
                f"Generator(late_fraction={late_fraction!r}): must be a number in [0, 0.5]; "
                "e.g. late_fraction=0.01 injects about 1 % of the events late"
            )
        self.late_fraction = float(late_fraction)
        self.late_by_ms = parse_duration(late_by, "Generator(late_by)")
        self.late_warmup = check_int(
            "late_warmup", late_warmup, 1, "pass the number of events before the first late one"
        )
        if self.late_fraction > 0 and self.late_by_ms <= self.out_of_order_ms:
            raise ConfigError(
                f"Generator(late_by={late_by!r}): must be larger than out_of_order="
                f"{out_of_order!r} when late_fraction > 0, or injected events are not late; "
                f"e.g. late_by='{2 * self.out_of_order_ms + 1000 + -(-1000 // self.rate)}ms'"
            )
        self.auctions = check_int("auctions", auctions, 1, "pass the number of in-flight auctions")
        self.bidders = check_int("bidders", bidders, 1, "pass the number of active bidders")
        self.hot_auction_ratio = check_int(
            "hot_auction_ratio", hot_auction_ratio, 1, "1 = no hot auction, 2 = Nexmark's default"
        )
        self.hot_bidder_ratio = check_int(
            "hot_bidder_ratio", hot_bidder_ratio, 1, "1 = no hot bidder, 4 = Nexmark's default"
        )
        self.extra_bytes = check_int("extra_bytes", extra_bytes, 0, "pass 0 for no padding")
        if not isinstance(pace, bool):
            raise ConfigError(f"Generator(pace={pace!r}): must be True or False")
        self.pace = pace
        if clock is not None and not callable(clock):
            raise ConfigError(
                f"Generator(clock={clock!r}): must be a callable returning ms since the epoch"
            )
        self.clock = clock
        self._keys = {
            f: mix_int(self.seed * GOLDEN + code * 0xD1B54A32D192ED03 + 1)
            for f, code in _FIELDS.items()
        }
        fields = [
            pa.field("event_id", pa.int64(), nullable=False),
            pa.field("auction", pa.int64(), nullable=False),
            pa.field("bidder", pa.int64(), nullable=False),
            pa.field("price", pa.int64(), nullable=False),
            pa.field("channel", pa.string(), nullable=False),
            pa.field("date_time", pa.timestamp("ms", tz="UTC"), nullable=False),
        ]
        if self.extra_bytes:
            fields.append(pa.field("extra", pa.string(), nullable=False))
        self.schema = pa.schema(fields)

    # ------------------------------------------------------------------ description

    def __repr__(self) -> str:
        return (
            f"Generator(seed={self.seed}, limit={self.limit}, rate={self.rate}, "
            f"start={self.start_ms}, out_of_order={self.out_of_order_ms}ms, "
            f"late_fraction={self.late_fraction}, late_by={self.late_by_ms}ms, "
            f"pace={self.pace})"
        )

    @property
    def max_gap_ms(self) -> int:
        """Largest base-time step between consecutive events: ``ceil(1000 / rate)``."""
        return -(-1000 // self.rate)

    def lateness_range(self) -> tuple[int, int]:
        """Inclusive range of lateness L (ms) for which exactly the injected events are late.

        ``(out_of_order, late_by - out_of_order - ceil(1000 / rate) - 1)``; a `ConfigError`
        when that range is empty.

        >>> Generator(rate=1000, out_of_order="1s", late_fraction=0.1, late_by="5s").lateness_range()
        (1000, 3998)
        """
        lo = self.out_of_order_ms
        hi = self.late_by_ms - self.out_of_order_ms - self.max_gap_ms - 1
        if hi < lo:
            raise ConfigError(
                f"Generator: no lateness separates injected events with late_by="
                f"{self.late_by_ms}ms, out_of_order={self.out_of_order_ms}ms, rate={self.rate}; "
                f"pass late_by >= {2 * lo + self.max_gap_ms + 1}ms"
            )
        return lo, hi

    # ------------------------------------------------------------------ vectorised rules

    def is_injected_late(self, event_ids: np.ndarray) -> np.ndarray:
        """Boolean mask: which of these event numbers are injected late (the selection rule).

        >>> g = Generator(late_fraction=0.5, late_by="1s", late_warmup=4)
        >>> g.is_injected_late(np.arange(10)).tolist()
        [False, False, False, False, False, True, False, True, False, True]
        """
        ns = np.asarray(event_ids, dtype=np.int64)
        if self.late_fraction == 0.0:
            return np.zeros(ns.shape, dtype=bool)
        chosen = self._uniform(ns, "late") < 2.0 * self.late_fraction
        return chosen & (ns >= self.late_warmup) & (ns % 2 == 1)

    def injected_late(self, n_events: int) -> int:
        """Number of injected late events among events ``0 .. n_events - 1``.

        >>> Generator().injected_late(10**6)
        0
        >>> 9_000 < Generator(late_fraction=0.01).injected_late(10**6) < 11_000
        True
        """
        n = check_int("n_events", n_events, 0, "pass a number of events")
        if self.late_fraction == 0.0:
            return 0
        total = 0
        for lo in range(0, n, _CHUNK):
            total += int(self.is_injected_late(np.arange(lo, min(n, lo + _CHUNK))).sum())
        return total

    def event_lower_bound(self, position: int) -> int:
        """A lower bound (ms) on the event time of every event numbered ≥ `position`."""
        slack = max(self.out_of_order_ms - 1, 0)
        if self.late_fraction > 0:
            slack = max(slack, self.late_by_ms)
        return super().event_lower_bound(position) - slack

    def available(self, now_ms: int) -> int:
        """Number of events whose base time is ≤ `now_ms` (ignores `limit`).

        >>> g = Generator(rate=3, start=0)
        >>> [g.available(t) for t in (-1, 0, 332, 333, 999, 1000)]
        [0, 1, 1, 2, 3, 4]
        """
        span = int(now_ms) - self.start_ms
        if span < 0:
            return 0
        return -(-((span + 1) * self.rate) // 1000)

    def generate(self, first: int, count: int) -> pa.Table:
        """Events ``first .. first + count - 1`` as an Arrow table (vectorised).

        >>> t = Generator(seed=3).generate(10, 3)
        >>> t.column("event_id").to_pylist()
        [10, 11, 12]
        >>> t.equals(Generator(seed=3).generate(0, 13).slice(10))
        True
        """
        first, count = self._check_range(first, count)
        ns = np.arange(first, first + count, dtype=np.int64)

        # auction (Beam's lastBase0AuctionId / nextBase0AuctionId)
        epoch, offset = np.divmod(ns, _TOTAL_PROPORTION)
        auction_offset = np.where(
            offset < _PERSON_PROPORTION,
            -1,  # a person slot: the last auction is the previous epoch's last one
            np.minimum(offset - _PERSON_PROPORTION, _AUCTION_PROPORTION - 1),
        )
        last_auction = np.maximum(epoch * _AUCTION_PROPORTION + auction_offset, 0)
        hot_auction = (last_auction // _HOT_BLOCK) * _HOT_BLOCK
        min_auction = np.maximum(last_auction - self.auctions, 0)
        span = (last_auction - min_auction + 1 + _ID_LEAD).astype(np.float64)
        cold_auction = min_auction + (self._uniform(ns, "auction") * span).astype(np.int64)
        is_hot = self._uniform(ns, "auction_hot") >= 1.0 / self.hot_auction_ratio
        auction = np.where(is_hot, hot_auction, cold_auction) + FIRST_AUCTION_ID

        # bidder (Beam's lastBase0PersonId / nextBase0PersonId)
        last_person = epoch  # one person per epoch, at offset 0
        hot_bidder = (last_person // _HOT_BLOCK) * _HOT_BLOCK + 1
        num_people = last_person + 1
        active = np.minimum(num_people, self.bidders)
        pick = (self._uniform(ns, "bidder") * (active + _ID_LEAD).astype(np.float64)).astype(
            np.int64
        )
        cold_bidder = num_people - active + pick
        is_hot = self._uniform(ns, "bidder_hot") >= 1.0 / self.hot_bidder_ratio
        bidder = np.where(is_hot, hot_bidder, cold_bidder) + FIRST_PERSON_ID

        # price: Math.round(10 ** (U * 6) * 100)
        price = np.floor(np.power(10.0, self._uniform(ns, "price") * 6.0) * 100.0 + 0.5)
        price = price.astype(np.int64)

        channel_idx = (self._uniform(ns, "channel") * len(CHANNELS)).astype(np.int32)
        channel = pa.array(CHANNELS, pa.string()).take(pa.array(channel_idx))

        # event time: base - U[0, out_of_order) for normal events, base - late_by if injected
        base = self.base_time(ns)
        t = base
        if self.out_of_order_ms > 1:
            t = base - (self._uniform(ns, "jitter") * self.out_of_order_ms).astype(np.int64)
        if self.late_fraction > 0:
            t = np.where(self.is_injected_late(ns), base - self.late_by_ms, t)

        columns = [
            pa.array(ns),
            pa.array(auction),
            pa.array(bidder),
            pa.array(price),
            channel,
            pa.array(t, type=pa.timestamp("ms", tz="UTC")),
        ]
        if self.extra_bytes:
            columns.append(_padding(count, self.extra_bytes))
        return pa.Table.from_arrays(columns, schema=self.schema)

    # ------------------------------------------------------------------ reading

    def open(self, position: Any = None) -> GeneratorReader:
        """A reader starting at event number `position` (None = 0)."""
        return GeneratorReader(self, self._check_position(position))


def _padding(rows: int, width: int) -> pa.ChunkedArray:
    """`rows` strings of `width` bytes, built from buffers (chunks stay under 2 GiB)."""
    pattern = np.frombuffer(
        (b"abcdefghijklmnopqrstuvwxyz0123456789" * (width // 36 + 1))[:width], dtype=np.uint8
    )
    per_chunk = max(1, (2**31 - 1) // width)
    chunks = []
    for lo in range(0, rows, per_chunk):
        n = min(per_chunk, rows - lo)
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int32)
        data = np.tile(pattern, n)
        chunks.append(pa.StringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(data)))
    return pa.chunked_array(chunks, type=pa.string())


class CounterReader(SourceReader):
    """An open `CounterSource`; `position` is the next event number. The one `read` of
    the generated streams: a subclass may bound what is ready (`ready`)."""

    def __init__(self, source: CounterSource, position: int) -> None:
        self.source = source
        self.position = position

    def ready(self) -> int | None:
        """How many events from `position` on may be read now (None: all up to `limit`)."""
        return None

    def read(self, max_rows: int | None = None) -> ReadBatch:
        """The next events: at most `max_rows`, `max_per_read` and what is `ready`;
        ``exhausted`` once `limit` is reached."""
        src = self.source
        n = src.max_per_read
        if max_rows is not None:
            n = min(n, check_int("max_rows", max_rows, 0, "pass a row count >= 0"))
        if src.limit is not None:
            n = min(n, src.limit - self.position)
        ready = self.ready()
        if ready is not None:
            n = min(n, max(0, ready))
        data = src.generate(self.position, n)
        self.position += n
        exhausted = src.limit is not None and self.position >= src.limit
        return ReadBatch(
            data=data,
            position=self.position,
            exhausted=exhausted,
            event_frontier=None if exhausted else src.event_lower_bound(self.position),
        )


class GeneratorReader(CounterReader):
    """An open `Generator`: with `pace`, only the events whose base time is ≤
    ``clock()`` are ready."""

    source: Generator

    def __init__(self, source: Generator, position: int) -> None:
        super().__init__(source, position)
        self._clock = source.clock or _wall_clock_ms

    def ready(self) -> int | None:
        if not self.source.pace:
            return None
        return self.source.available(int(self._clock())) - self.position
