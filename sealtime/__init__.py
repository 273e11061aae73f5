"""sealtime: a stream processor with consistent time, on Apache Spark.

``import sealtime as st`` is light: the Spark-backed parts load on first use, so a
subscriber process (``st.subscribe``) never needs pyspark or Java.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

__all__ = [
    "Collection",
    "DataPathTuning",
    "Dataflow",
    "Session",
    "Sliding",
    "Tumbling",
    "avg",
    "connect",
    "count",
    "count_distinct",
    "errors",
    "max",
    "min",
    "sinks",
    "sources",
    "subscribe",
    "sum",
    "testing",
    "time",
]

_LAZY = {
    "Dataflow": ("sealtime.flow", "Dataflow"),
    "Collection": ("sealtime.dataflow.collection", "Collection"),
    "DataPathTuning": ("sealtime.plan.plan", "DataPathTuning"),
    "Tumbling": ("sealtime.plan.windows", "Tumbling"),
    "Sliding": ("sealtime.plan.windows", "Sliding"),
    "Session": ("sealtime.plan.windows", "Session"),
    "sum": ("sealtime.plan.aggregates", "sum"),
    "count": ("sealtime.plan.aggregates", "count"),
    "min": ("sealtime.plan.aggregates", "min"),
    "max": ("sealtime.plan.aggregates", "max"),
    "avg": ("sealtime.plan.aggregates", "avg"),
    "count_distinct": ("sealtime.plan.aggregates", "count_distinct"),
    "subscribe": ("sealtime.pubsub", "subscribe"),
    "connect": ("sealtime.serve.client", "connect"),
}


def __getattr__(name: str) -> Any:
    if name in ("sources", "sinks", "errors", "testing", "time"):
        return importlib.import_module(f"sealtime.{name}")
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'sealtime' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
