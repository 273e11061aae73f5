"""`Notificator`: deliver requested times once the input frontiers have passed them.

Timely's `FrontierNotificator` (and the `Notificator` session over it). An operator asks
to be notified at a time by handing over a capability for it (`notify_at`); the request
becomes *available* once no element of any input frontier is ≤ that time — nothing at
that time can still arrive — and is then handed back, capability included, in time
order, with the number of requests merged into it.

Frontiers are anything with a `less_equal(time)` method: an `Antichain`, a
`MutableAntichain`, a `Probe`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from heapq import heappop, heappush
from itertools import count
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from sealtime.progress.capability import Capability, CapabilityError
from sealtime.time import sort_key

__all__ = ["Frontier", "Notificator"]

T = TypeVar("T")


@runtime_checkable
class Frontier(Protocol):
    """Anything that can say whether a time may still appear (`less_equal`).

    >>> from sealtime.time import Antichain
    >>> isinstance(Antichain([1]), Frontier)
    True
    """

    def less_equal(self, time: Any) -> bool:
        """True if some frontier element is ≤ `time`."""
        ...


def _frontiers(frontiers: Frontier | Iterable[Frontier]) -> list[Frontier]:
    # A single frontier is accepted as is; note an Antichain is also iterable (of times),
    # so check for `less_equal` first.
    if hasattr(frontiers, "less_equal"):
        return [frontiers]  # type: ignore[list-item]
    out = list(frontiers)  # type: ignore[arg-type]
    for f in out:
        if not hasattr(f, "less_equal"):
            raise TypeError(
                f"a frontier needs a less_equal(time) method (Antichain, MutableAntichain, "
                f"Probe), got {f!r}"
            )
    return out


class Notificator(Generic[T]):
    """Pending notification requests, delivered in time order as frontiers pass them.

    timely's `notificator_delivers_notifications_in_topo_order` test:

    >>> from sealtime.time import Antichain, ChangeBatch, Product
    >>> root = Capability(Product(0, 0), ChangeBatch())
    >>> times = [(3, 5), (5, 4), (1, 2), (1, 1), (1, 1), (5, 4), (6, 0), (6, 2), (5, 8)]
    >>> n = Notificator(root.delayed(Product(*t)) for t in times)
    >>> n.next_count([Antichain([Product(0, 0)])]) is None
    True
    >>> frontier = Antichain([Product(5, 7), Product(6, 1)])
    >>> [(cap.time(), k) for cap, k in n.ready(frontier)]
    [(Product(1, 1), 2), (Product(1, 2), 1), (Product(3, 5), 1), (Product(5, 4), 2), (Product(6, 0), 1)]
    >>> frontier = Antichain([Product(6, 10)])
    >>> n.next(frontier).time()
    Product(5, 8)
    >>> n.notify_at_frontiered(root.delayed(Product(5, 9)), frontier)
    >>> n.next(frontier).time(), n.next(frontier).time(), n.next(frontier)
    (Product(5, 9), Product(6, 2), None)
    """

    __slots__ = ("_pending", "_available", "_seq")

    def __init__(self, capabilities: Iterable[Capability[T]] = ()) -> None:
        self._pending: list[tuple[Capability[T], int]] = []
        # Heap of (sort key, sequence number, capability, count); the sequence number
        # keeps the heap from ever comparing capabilities.
        self._available: list[tuple[Any, int, Capability[T], int]] = []
        self._seq = count()
        for cap in capabilities:
            self.notify_at(cap)

    def notify_at(self, capability: Capability[T]) -> None:
        """Request a notification at `capability.time()`; the notificator now owns it.

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> n = Notificator(); n.notify_at(Capability(3, ChangeBatch()))
        >>> n.pending_times()
        [3]
        """
        self._check(capability)
        self._pending.append((capability, 1))

    def notify_at_frontiered(
        self, capability: Capability[T], frontiers: Frontier | Iterable[Frontier]
    ) -> None:
        """`notify_at`, but immediately available if `frontiers` have already passed it.

        Lets a request made while delivering notifications come out in the same round,
        in order.

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> n = Notificator(); n.notify_at_frontiered(Capability(3, ChangeBatch()), Antichain([5]))
        >>> n.next(Antichain([5])).time()
        3
        """
        self._check(capability)
        time = capability.time()
        if not any(f.less_equal(time) for f in _frontiers(frontiers)):
            heappush(self._available, (sort_key(time), next(self._seq), capability, 1))
        else:
            self._pending.append((capability, 1))

    def make_available(self, frontiers: Frontier | Iterable[Frontier]) -> None:
        """Move every pending request that no frontier element is ≤ to the available set.

        Requests for equal times are merged (their counts add up; the extra capabilities
        are dropped, as timely drops them).

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> batch = ChangeBatch(); n = Notificator()
        >>> n.notify_at(Capability(1, batch)); n.notify_at(Capability(1, batch))
        >>> n.make_available(Antichain([2])); batch.into_inner()
        [(1, 1)]
        """
        if not self._pending:
            return
        fs = _frontiers(frontiers)
        merged: dict[Any, list[Any]] = {}
        for cap, n in self._pending:
            entry = merged.get(cap._time)
            if entry is None:
                merged[cap._time] = [cap, n]
            else:
                entry[1] += n
                cap.drop()
        keep: list[tuple[Capability[T], int]] = []
        for time in sorted(merged, key=sort_key):
            cap, n = merged[time]
            if any(f.less_equal(time) for f in fs):
                keep.append((cap, n))
            else:
                heappush(self._available, (sort_key(time), next(self._seq), cap, n))
        self._pending = keep

    def next_count(
        self, frontiers: Frontier | Iterable[Frontier]
    ) -> tuple[Capability[T], int] | None:
        """The least available notification and how many requests it merges, or None.

        The caller owns the returned capability (drop it when done).

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> n = Notificator([Capability(2, ChangeBatch()), Capability(2, ChangeBatch())])
        >>> cap, k = n.next_count(Antichain([3])); (cap.time(), k)
        (2, 2)
        """
        available = self._available
        if not available:
            self.make_available(frontiers)
        if not available:
            return None
        key, _, cap, n = heappop(available)
        time = cap._time
        while available and available[0][0] == key and available[0][2]._time == time:
            _, _, other, k = heappop(available)
            n += k
            other.drop()
        return cap, n

    def next(self, frontiers: Frontier | Iterable[Frontier]) -> Capability[T] | None:
        """Like `next_count`, without the count.

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> Notificator([Capability(2, ChangeBatch())]).next(Antichain([2])) is None
        True
        """
        item = self.next_count(frontiers)
        return None if item is None else item[0]

    def ready(
        self, frontiers: Frontier | Iterable[Frontier]
    ) -> Iterator[tuple[Capability[T], int]]:
        """Yield every notification available under `frontiers`, in time order.

        Like timely's `Notificator` session: pending requests are first made available,
        then delivered least time first. The caller owns each yielded capability.

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> batch = ChangeBatch()
        >>> n = Notificator(Capability(t, batch) for t in (4, 1, 3))
        >>> [cap.time() for cap, _ in n.ready(Antichain([4]))]
        [1, 3]
        """
        fs = _frontiers(frontiers)
        self.make_available(fs)
        while True:
            item = self.next_count(fs)
            if item is None:
                return
            yield item

    def for_each(
        self,
        frontiers: Frontier | Iterable[Frontier],
        logic: Callable[[Capability[T], int], None],
    ) -> None:
        """Call `logic(capability, count)` for each ready notification, then drop it.

        `logic` may keep producing output with the capability while it runs, and may
        `delayed()` it to keep a later one; the notified capability itself is dropped
        afterwards (unless `logic` dropped it already).

        >>> from sealtime.time import Antichain, ChangeBatch
        >>> batch = ChangeBatch(); n = Notificator([Capability(1, batch)])
        >>> n.for_each(Antichain([2]), lambda cap, k: print(cap.time(), k))
        1 1
        >>> batch.is_empty()
        True
        """
        for cap, n in self.ready(frontiers):
            try:
                logic(cap, n)
            finally:
                if not cap.dropped:
                    cap.drop()

    def pending_times(self) -> list[T]:
        """Times with outstanding requests (pending or available), sorted.

        >>> from sealtime.time import ChangeBatch
        >>> Notificator([Capability(t, ChangeBatch()) for t in (3, 1, 3)]).pending_times()
        [1, 3]
        """
        times = {cap._time for cap, _ in self._pending}
        times.update(item[2]._time for item in self._available)
        return sorted(times, key=sort_key)

    def clear(self) -> None:
        """Drop every held capability and forget all requests (e.g. on shutdown).

        >>> from sealtime.time import ChangeBatch
        >>> batch = ChangeBatch(); n = Notificator([Capability(1, batch)]); n.clear()
        >>> batch.is_empty(), len(n)
        (True, 0)
        """
        for cap, _ in self._pending:
            cap.drop()
        for item in self._available:
            item[2].drop()
        self._pending = []
        self._available = []

    def __len__(self) -> int:
        return len(self._pending) + len(self._available)

    def __repr__(self) -> str:
        return f"Notificator(pending={self.pending_times()!r})"

    @staticmethod
    def _check(capability: Capability[T]) -> None:
        if not isinstance(capability, Capability):
            raise TypeError(f"notify_at needs a Capability, got {capability!r}")
        if capability.dropped:
            raise CapabilityError(
                f"cannot request a notification with {capability!r}: it was already dropped"
            )
