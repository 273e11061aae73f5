"""Progress tracking: graph of ports, path summaries, reachability, capabilities.

Timely dataflow's progress machinery in pure Python (imports only `sealtime.time` and
`sealtime.errors`):

* `Source`/`Target` — output and input ports (`location`);
* `Identity`, `Add`, `ProductSummary` — path summaries (`summary`);
* `GraphBuilder` → `Graph` → `Tracker` — the reachability tracker computing the frontier
  at every port from capabilities and in-flight messages (`graph`, `reachability`);
* `Capability` — counted permission to send at a time (`capability`);
* `Probe` and `Notificator` — observing frontiers (`probe`, `notificator`).

A source feeding two operators in a chain; the source's capability holds back the
frontier at every input until it is downgraded:

>>> from sealtime.progress import GraphBuilder, Source, Target
>>> b = GraphBuilder()
>>> b.add_node(0, 0, 1, name="source")
>>> b.add_node(1, 1, 1, name="map")
>>> b.add_node(2, 1, 1, name="window")
>>> b.add_edge(Source(0, 0), Target(1, 0)); b.add_edge(Source(1, 0), Target(2, 0))
>>> tracker = b.build()
>>> cap = tracker.capability(Source(0, 0), 0)
>>> _ = tracker.propagate_all()
>>> tracker.frontier(Target(2, 0))
Antichain([0])
>>> cap.downgrade(10); _ = tracker.propagate_all()
>>> tracker.frontier(Target(1, 0)), tracker.frontier(Target(2, 0))
(Antichain([10]), Antichain([10]))
>>> cap.drop(); _ = tracker.propagate_all(); tracker.frontier(Target(2, 0))
Antichain([])
"""

from sealtime.progress.capability import Capability, CapabilityError, DowngradeError
from sealtime.progress.graph import CycleError, Graph, GraphBuilder, GraphError, SummaryLike
from sealtime.progress.location import Location, Source, Target
from sealtime.progress.notificator import Notificator
from sealtime.progress.probe import Probe
from sealtime.progress.reachability import Tracker
from sealtime.progress.summary import (
    INT64_MAX,
    INT64_MIN,
    Add,
    Chain,
    Identity,
    PathSummary,
    ProductSummary,
    RoundUp,
)

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "Add",
    "Capability",
    "Chain",
    "CapabilityError",
    "CycleError",
    "DowngradeError",
    "Graph",
    "GraphBuilder",
    "GraphError",
    "Identity",
    "Location",
    "Notificator",
    "PathSummary",
    "Probe",
    "ProductSummary",
    "RoundUp",
    "Source",
    "SummaryLike",
    "Target",
    "Tracker",
]
