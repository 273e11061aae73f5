"""Capabilities: counted permissions to produce output at a time (timely's `Capability`).

An operator may send data at time `t` on an output only while it holds a capability for
a time ≤ `t` there. Holding one keeps a pointstamp at the output port, and so holds back
the frontier of everything downstream. Every capability is connected to the progress
tracker through a shared `ChangeBatch` (timely's `Rc<RefCell<ChangeBatch>>`): creating
or cloning it adds `(time, +1)`, dropping it adds `(time, -1)`, downgrading does both;
the tracker drains the batch on its next `propagate_all()`.

Python has no deterministic destructor, so capabilities are released explicitly, with
`drop()` or by using them as a context manager. A capability garbage-collected while
still held emits a `ResourceWarning` (it is *not* released: the frontier stays stuck,
exactly as timely's would with a leaked capability).
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any, Generic, TypeVar

from sealtime.errors import StateError
from sealtime.progress.location import Source
from sealtime.time import ChangeBatch, less_equal

__all__ = ["Capability", "CapabilityError", "DowngradeError"]

T = TypeVar("T")


class CapabilityError(StateError):
    """A capability was misused: used or dropped after it was dropped (a `StateError`,
    so also a ``RuntimeError``).

    >>> cap = Capability(3, ChangeBatch()); cap.drop(); cap.drop()
    Traceback (most recent call last):
    ...
    sealtime.progress.capability.CapabilityError: Capability(3) was dropped twice; drop() releases a capability exactly once
    """


class DowngradeError(CapabilityError, ValueError):
    """`downgrade`/`delayed` asked for a time that is not ≥ the capability's time.

    >>> Capability(5, ChangeBatch()).downgrade(3)
    Traceback (most recent call last):
    ...
    sealtime.progress.capability.DowngradeError: cannot downgrade Capability(5) to 3: a capability only moves forward in time, and 3 is not ≥ 5
    """


class Capability(Generic[T]):
    """A counted token for producing output at `time()` (or later) at one output port.

    `batch` is the change batch shared with the tracker for that output port (see
    `Tracker.source_batch` and `Tracker.capability`); `location` is only used in
    messages.

    >>> batch = ChangeBatch()
    >>> cap = Capability(5, batch)
    >>> batch.into_inner()
    [(5, 1)]
    >>> cap.downgrade(7)
    >>> cap.time(), batch.into_inner()
    (7, [(7, 1)])
    >>> with cap.delayed(9) as later:
    ...     later.time()
    9
    >>> cap.drop(); batch.is_empty()
    True
    """

    __slots__ = ("_time", "_batch", "_location", "_dropped")

    # Unhashable: equality follows the time, which `downgrade` mutates.
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, time: T, batch: ChangeBatch[T], location: Source | None = None) -> None:
        if not isinstance(batch, ChangeBatch):
            raise TypeError(f"Capability needs the ChangeBatch it reports to, got {batch!r}")
        batch.update(time, 1)
        self._time = time
        self._batch = batch
        self._location = location
        self._dropped = False

    def time(self) -> T:
        """The time this capability allows output at.

        >>> Capability(4, ChangeBatch()).time()
        4
        """
        self._check_live("read the time of")
        return self._time

    @property
    def location(self) -> Source | None:
        """The output port this capability is for, if known.

        >>> Capability(0, ChangeBatch(), Source(2, 0)).location
        Source(node=2, port=0)
        """
        return self._location

    @property
    def dropped(self) -> bool:
        """True once `drop()` has released this capability.

        >>> cap = Capability(0, ChangeBatch()); cap.drop(); cap.dropped
        True
        """
        return self._dropped

    def delayed(self, new_time: T) -> Capability[T]:
        """A new capability for `new_time`, which must be ≥ `time()`; this one is kept.

        >>> batch = ChangeBatch(); cap = Capability(1, batch); later = cap.delayed(4)
        >>> batch.into_inner()
        [(1, 1), (4, 1)]
        >>> cap.delayed(0)
        Traceback (most recent call last):
        ...
        sealtime.progress.capability.DowngradeError: cannot delay Capability(1) to 0: a capability only moves forward in time, and 0 is not ≥ 1
        """
        self._check_live("delay")
        self._check_forward("delay", new_time)
        return Capability(new_time, self._batch, self._location)

    def downgrade(self, new_time: T) -> None:
        """Move this capability to `new_time`, which must be ≥ `time()`.

        Reports `(new_time, +1)` and `(old time, -1)`: the frontier downstream may
        advance to `new_time` (once no other pointstamp holds it back).

        >>> from sealtime.time import Product
        >>> cap = Capability(Product(1, 2), ChangeBatch())
        >>> cap.downgrade(Product(2, 2)); cap.time()
        Product(2, 2)
        >>> cap.downgrade(Product(3, 0))
        Traceback (most recent call last):
        ...
        sealtime.progress.capability.DowngradeError: cannot downgrade Capability(Product(2, 2)) to Product(3, 0): a capability only moves forward in time, and Product(3, 0) is not ≥ Product(2, 2) (the two times are incomparable)
        """
        self._check_live("downgrade")
        self._check_forward("downgrade", new_time)
        if new_time != self._time:
            self._batch.update(new_time, 1)
            self._batch.update(self._time, -1)
            self._time = new_time

    def drop(self) -> None:
        """Release the capability: reports `(time, -1)`. A second `drop()` raises.

        >>> batch = ChangeBatch(); Capability(3, batch).drop(); batch.is_empty()
        True
        """
        if self._dropped:
            raise CapabilityError(
                f"{self._describe()} was dropped twice; drop() releases a capability exactly once"
            )
        self._dropped = True
        self._batch.update(self._time, -1)

    def clone(self) -> Capability[T]:
        """Another capability for the same time and port (counted separately).

        >>> batch = ChangeBatch(); cap = Capability(3, batch); twin = cap.clone()
        >>> batch.into_inner(), twin == cap
        ([(3, 2)], True)
        """
        self._check_live("clone")
        return Capability(self._time, self._batch, self._location)

    __copy__ = clone

    def less_equal(self, other: Capability[T]) -> bool:
        """True if both are for the same port and `self.time() ≤ other.time()`.

        >>> batch = ChangeBatch()
        >>> Capability(1, batch).less_equal(Capability(2, batch))
        True
        >>> Capability(1, batch).less_equal(Capability(2, ChangeBatch()))
        False
        """
        return self._batch is other._batch and less_equal(self._time, other._time)

    def less_than(self, other: Capability[T]) -> bool:
        """`less_equal` and the times differ.

        >>> batch = ChangeBatch(); Capability(1, batch).less_than(Capability(1, batch))
        False
        """
        return self.less_equal(other) and self._time != other._time

    def __enter__(self) -> Capability[T]:
        self._check_live("enter a with-block with")
        return self

    def __exit__(self, *exc: object) -> None:
        # A capability dropped (or handed on and dropped) inside the block is fine.
        if not self._dropped:
            self.drop()

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Capability):
            return NotImplemented
        return self._batch is other._batch and self._time == other._time

    def __repr__(self) -> str:
        return self._describe() + (" (dropped)" if self._dropped else "")

    def _describe(self) -> str:
        where = f" at {self._location}" if self._location is not None else ""
        return f"Capability({self._time!r}{where})"

    def __del__(self) -> None:
        # Not a release: silently releasing on garbage collection would make frontiers
        # depend on GC timing. Just make the leak visible.
        if not getattr(self, "_dropped", True):
            # Suppressed: during interpreter shutdown `warnings` may be half torn down.
            with contextlib.suppress(Exception):
                warnings.warn(
                    f"{self._describe()} was garbage-collected without drop(); the frontier "
                    "it holds back will never advance past it",
                    ResourceWarning,
                    stacklevel=2,
                )

    def _check_live(self, action: str) -> None:
        if self._dropped:
            raise CapabilityError(
                f"cannot {action} {self._describe()}: it was already dropped. Keep a clone() or "
                "delayed() capability if you still need to produce output."
            )

    def _check_forward(self, action: str, new_time: Any) -> None:
        if not less_equal(self._time, new_time):
            why = ""
            if not less_equal(new_time, self._time):
                why = " (the two times are incomparable)"
            raise DowngradeError(
                f"cannot {action} {self!r} to {new_time!r}: a capability only moves forward "
                f"in time, and {new_time!r} is not ≥ {self._time!r}{why}"
            )
