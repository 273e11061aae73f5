"""Sinks: where sealed time ranges of a collection go."""

from .console import Callback, Console
from .parquet import Parquet
from .persist import Persist

__all__ = ["Callback", "Console", "Parquet", "Persist"]
