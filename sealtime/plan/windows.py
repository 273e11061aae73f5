"""Window specifications: `Tumbling`, `Sliding`, `Session`.

A window is a function of a row's logical time `_time`, so it is a deterministic function
of the input. `Collection.window(spec)` adds `window_start`/`window_end` (ms, end
exclusive); an `aggregate` or `top_k` over a windowed collection emits each window
**once**, at time `window_end - 1`, in the tick in which the input frontier passes
`window_end` (the window is sealed). Because the output time is inside the window, a
downstream window over that output is sealed by the same frontier in the same tick:
chained windows add no latency per stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..durations import parse_duration
from ..errors import ConfigError

__all__ = ["Session", "Sliding", "Tumbling", "WindowSpec"]


class WindowSpec:
    """Base class of window specifications."""

    #: does the window depend on other rows (sessions) or only on the row's own time?
    per_row: bool = True


@dataclass(frozen=True, init=False)
class Tumbling(WindowSpec):
    """Fixed, non-overlapping windows ``[k*size + offset, (k+1)*size + offset)``.

    >>> Tumbling("10s")
    Tumbling(size=10000, offset=0)
    """

    size: int
    offset: int

    def __init__(self, size: str | int, offset: str | int = 0) -> None:
        size_ms = parse_duration(size, "Tumbling(size)")
        if size_ms <= 0:
            raise ConfigError("Tumbling(size) must be > 0, e.g. Tumbling('10s')")
        object.__setattr__(self, "size", size_ms)
        object.__setattr__(self, "offset", parse_duration(offset, "Tumbling(offset)") % size_ms)


@dataclass(frozen=True, init=False)
class Sliding(WindowSpec):
    """Overlapping windows of length `size` starting every `slide`; a row is in
    ``ceil(size / slide)`` windows.

    >>> Sliding("10s", "2s")
    Sliding(size=10000, slide=2000)
    """

    size: int
    slide: int

    def __init__(self, size: str | int, slide: str | int) -> None:
        size_ms = parse_duration(size, "Sliding(size)")
        slide_ms = parse_duration(slide, "Sliding(slide)")
        if size_ms <= 0 or slide_ms <= 0:
            raise ConfigError("Sliding(size, slide) must both be > 0, e.g. Sliding('10s', '2s')")
        if slide_ms > size_ms:
            raise ConfigError(
                f"Sliding(slide={slide_ms}ms) is larger than size={size_ms}ms, which would "
                "skip rows: use slide <= size (or Tumbling for slide == size)"
            )
        object.__setattr__(self, "size", size_ms)
        object.__setattr__(self, "slide", slide_ms)


@dataclass(frozen=True, init=False)
class Session(WindowSpec):
    """Per-key sessions: rows of one key closer than `gap` in time share a session
    ``[first, last + gap)``. The key is the `by` of the aggregate that follows. A session
    is sealed when the frontier reaches ``last + gap``.

    >>> Session("30s")
    Session(gap=30000)
    """

    gap: int
    per_row = False

    def __init__(self, gap: str | int) -> None:
        gap_ms = parse_duration(gap, "Session(gap)")
        if gap_ms <= 0:
            raise ConfigError("Session(gap) must be > 0, e.g. Session('30s')")
        object.__setattr__(self, "gap", gap_ms)
