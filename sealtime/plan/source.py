"""`Source` and `SourceOutput`: where rows enter the plan.

A `Source` node is one source of the dataflow with its time settings; its output is
the rows admitted into the ingest log at their times (ingestion or event time). Each
source also has three side outputs (`SideOutput`): ``late`` (records whose event time
was sealed when they arrived), ``errors`` (records that were refused: undecodable, no
event time, beyond ``max_future``) and ``health`` (status changes). Side outputs are
stamped at the binding time of the tick that read them, so they follow the ingestion
frontier, not the event-time frontier: a refused or late record reaches its output in
the tick it arrives, whatever the event-time frontier does (docs/time.md).

>>> SideOutput.LATE.value, SourceOutput.kind
('late', 'source_output')
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, ClassVar, Protocol

from .node import NOT_FINGERPRINTED, PlanNode

__all__ = ["Connector", "SideOutput", "Source", "SourceOutput"]


class Connector(Protocol):
    """What the plan needs of a source's reader (`sealtime.sources.Source` is one)."""

    #: every row it gives is an insertion
    insert_only: bool
    #: it ends (a file set, a list of rows), so the dataflow can run until done
    finite: bool
    #: its outputs by name, for a source with several (Nexmark's person/auction/bid)
    subsources: Mapping[str, Any] | None


class SideOutput(enum.Enum):
    """The side outputs every source has, by name (``src.late``, ``src.errors``...)."""

    LATE = "late"
    ERRORS = "errors"
    HEALTH = "health"


@dataclass(frozen=True, eq=False, kw_only=True)
class Source(PlanNode):
    """A source: its reader (a `sealtime.sources.Source`) and time settings (ms).

    * `time_column`: the event-time column (None: ingestion time, or the source's own
      ``_time`` column);
    * `lateness`, `idle_timeout`, `max_future`: the event-time rules (docs/time.md);
    * `max_rows`: at most this many rows are read per tick (None: what the reader
      gives);
    * `retain_history`: how far behind its frontier (ms of its log's times) the ingest
      log is kept once recovery no longer needs it (None: all of it). It changes what a
      view added later can read, never an output: it is not in the fingerprint.

    The reader's data is the log's concern, not the plan's: the fingerprint names its
    type only.
    """

    source: Connector
    time_column: str | None = None
    lateness: int | None = None
    max_rows: int | None = None
    idle_timeout: int | None = None
    max_future: int | None = None
    retain_history: int | None = field(default=0, metadata=NOT_FINGERPRINTED)

    kind: ClassVar[str] = "source"

    @cached_property
    def monotonic(self) -> bool:
        return bool(self.source.insert_only)

    @cached_property
    def structure(self) -> str:
        # A source's name names its data (its log): two sources of one name are one.
        return f"source:{self.name}"


@dataclass(frozen=True, eq=False, kw_only=True)
class SourceOutput(PlanNode):
    """One side output of the source that is its only input (`SideOutput`).

    It reads the source's log itself, not the source's output, and its frontier is the
    ingestion frontier of the source's bindings (it has its own root in the progress
    graph: `own_frontier`).
    """

    output: SideOutput = field(default=SideOutput.ERRORS)

    kind: ClassVar[str] = "source_output"
    own_frontier: ClassVar[bool] = True

    @property
    def source(self) -> Source:
        """The source whose side output this is."""
        (src,) = self.inputs
        assert isinstance(src, Source)
        return src
