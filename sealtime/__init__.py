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
    "Dataflow",
    "Session",
    "Sliding",
    "Tumbling",
    "avg",
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
    "Dataflow": ("sealtime.dataflow.dataflow", "Dataflow"),
    "Collection": ("sealtime.dataflow.collection", "Collection"),
    "Tumbling": ("sealtime.dataflow.windows", "Tumbling"),
    "Sliding": ("sealtime.dataflow.windows", "Sliding"),
    "Session": ("sealtime.dataflow.windows", "Session"),
    "sum": ("sealtime.dataflow.aggregates", "sum"),
    "count": ("sealtime.dataflow.aggregates", "count"),
    "min": ("sealtime.dataflow.aggregates", "min"),
    "max": ("sealtime.dataflow.aggregates", "max"),
    "avg": ("sealtime.dataflow.aggregates", "avg"),
    "count_distinct": ("sealtime.dataflow.aggregates", "count_distinct"),
    "subscribe": ("sealtime.pubsub", "subscribe"),
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
