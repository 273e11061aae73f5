"""The remap: minting one binding per tick, and acknowledging upstream behind it.

Materialize's reclocking in sealtime's terms. Each tick the remap reads every source's
batch, stamps it and logs it (`SourceRuntime.ingest`), makes the log files durable and
records the tick's binding — ``into_time`` and each source's position and frontier —
in one metadata transaction, before any row of the tick propagates. In a replay the
recorded bindings are minted again, their log files linked into this data dir; the
tick after the last one hands over to live input.

Upstream is acknowledged up to the **resumption frontier**: the positions whose rows
all lie at times below the durable upper of every exactly-once sink.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..failpoints import failpoint
from ..storage.fs import DataFS
from .bindings import Binding, BindingLog, BindingPart
from .ingest import SourceRuntime
from .replay import ReplayState, hand_over, link_part, open_live, restamped

__all__ = ["Remap"]

#: the least durable upper of the exactly-once sinks (None: everything is durable)
DurableUpper = Callable[[], "int | None"]


class Remap:
    """The binding minter of one dataflow (see the module docstring)."""

    # Parameters stored as attributes: alike only in form to other constructors.
    def __init__(
        self,
        log: BindingLog,
        sources: Mapping[int, SourceRuntime],
        fs: DataFS,
        clock_ms: Callable[[], int],
        replay: ReplayState,
        *,
        last_into: int,
        acknowledged: Mapping[str, Any],
    ) -> None:
        self.log = log
        self.sources = sources
        self.fs = fs
        self.clock_ms = clock_ms
        self.replay = replay
        #: the latest binding time minted
        self.last_into = last_into
        #: per source, the position acknowledged upstream
        self.acknowledged: dict[str, Any] = dict(acknowledged)

    def mint(self, tick: int, durable_upper: DurableUpper) -> Binding:
        """Read, stamp and log every source, make the log files durable, then record
        binding `tick` in one transaction — before any row of that tick propagates."""
        parts: dict[str, BindingPart] = {}
        recorded = self.replay.recorded(tick)
        if recorded is not None:
            into = recorded.into_time
            if tick == self.replay.restamp_hand_over:
                # The original handed over to live input here: restamp that too.
                hand_over(self.sources.values(), self.last_into, into)
            for src in self.sources.values():
                if restamped(src.source):
                    parts[src.name] = part = src.ingest(tick, into)
                else:
                    # The recorded files, linked into this data dir's log (it owns them).
                    parts[src.name] = part = link_part(recorded.sources[src.name], src.log_dir)
                    src.apply_binding(part)
                self._sync(part)
        else:
            into = max(self.clock_ms(), self.last_into + 1)
            if tick == self.replay.hand_over_at:
                self._go_live(into, durable_upper())
            for src in self.sources.values():
                parts[src.name] = part = src.ingest(tick, into)
                self._sync(part)
        self.last_into = into
        failpoint("ingest.logged")
        binding = self.log.append(tick, into, parts)
        failpoint("binding.committed")
        return binding

    def acknowledge(self, tick: int, durable_upper: DurableUpper) -> None:
        """After tick `tick`: acknowledge upstream up to the resumption frontier (a replay
        acknowledges nothing: it reads no source)."""
        if tick <= self.replay.replay_ticks:
            return
        positions = self.log.resumption(durable_upper())
        for src in self.sources.values():
            position = positions.get(src.name)
            if position is not None and position != self.acknowledged.get(src.name):
                src.acknowledge(position)
                self.acknowledged[src.name] = position

    def _go_live(self, into: int, upper: int | None) -> None:
        """The first live tick after a replay: open the readers at the positions of the
        last replayed binding and tell the clocked ones (timers, ``time_reset``)."""
        acked = self.log.resumption(upper)
        for src in self.sources.values():
            open_live(src, acked.get(src.name))
            if src.name in acked:
                self.acknowledged[src.name] = acked[src.name]
        hand_over(self.sources.values(), self.last_into, into)
        self.replay.went_live(self.last_into, into)

    def _sync(self, part: BindingPart) -> None:
        """Make a tick's new log files (and the directories naming them) durable."""
        rels = [self.fs.rel(path) for f in part.entries() for path in f.paths()]
        self.fs.sync([r for r in rels if r is not None])
