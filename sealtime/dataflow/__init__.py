"""The user API: `Dataflow`, `Collection`, windows and aggregates."""

from . import aggregates
from .aggregates import avg, count, count_distinct, max, min, sum
from .collection import Collection
from .dataflow import Dataflow, SourceCollection
from .windows import Session, Sliding, Tumbling

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
