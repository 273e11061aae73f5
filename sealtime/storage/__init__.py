"""Storage: the metadata store (SQLite by default, PostgreSQL by URL) and shards.

A `MetadataStore` holds all control-plane state transactionally; a `Shard` is a durable
time-varying collection (Materialize persist): Parquet batch files plus `upper`/`since`
in the store. See docs/storage.md for the design.
"""

# The package's names are its two modules' public names (each module's `__all__` is the
# one list; written out again here, they drifted).
from . import metadata as _metadata
from . import shard as _shard
from .metadata import *  # noqa: F403
from .shard import *  # noqa: F403

__all__ = [*_metadata.__all__, *_shard.__all__]
