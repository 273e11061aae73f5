"""Sinks: where sealed time ranges of a collection go.

`Sink` is the contract every sink implements (`sealtime.sinks.base`); `ExactlyOnceSink`
is the template of the sinks whose commits survive crashes exactly once.
"""

from .base import CommitContext, ExactlyOnceSink, Sink, SinkBinding
from .console import Callback, Console
from .parquet import Parquet
from .persist import Persist

__all__ = [
    "Callback",
    "CommitContext",
    "Console",
    "ExactlyOnceSink",
    "Parquet",
    "Persist",
    "Sink",
    "SinkBinding",
]
