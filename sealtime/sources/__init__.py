"""Sources: the Source API and the built-in sources."""

from .base import ReadBatch, Source, SourceReader
from .rows import Rows

__all__ = ["ReadBatch", "Rows", "Source", "SourceReader"]

try:  # the generator lands separately
    from .generator import Generator  # noqa: F401

    __all__.append("Generator")
except ImportError:  # pragma: no cover
    pass
