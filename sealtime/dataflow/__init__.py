"""The user API: `Dataflow` and `Collection` build a `sealtime.plan.Plan`."""

from ..plan import aggregates
from ..plan.aggregates import avg, count, count_distinct, max, min, sum
from ..plan.windows import Session, Sliding, Tumbling
from .collection import Collection
from .dataflow import Dataflow, SourceCollection

__all__ = [
    "Collection",
    "Dataflow",
    "Session",
    "Sliding",
    "SourceCollection",
    "Tumbling",
    "aggregates",
    "avg",
    "count",
    "count_distinct",
    "max",
    "min",
    "sum",
]
