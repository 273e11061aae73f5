"""Sinks: where sealed time ranges of a collection go."""

from .console import Callback, Console
from .parquet import Parquet

__all__ = ["Callback", "Console", "Parquet"]
