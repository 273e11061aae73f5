"""Storage: the metadata store (SQLite by default, PostgreSQL by URL) and shards.

A `MetadataStore` holds all control-plane state transactionally; a `Shard` is a durable
time-varying collection (Materialize persist): Parquet batch files plus `upper`/`since`
in the store. See docs/storage.md for the design.
"""

from .metadata import (
    DEFAULT_SQLITE_FILENAME,
    Dialect,
    MetadataStore,
    MetadataStoreError,
    Migration,
    Transaction,
    redact_url,
)
from .shard import (
    DEFAULT_GRACE_SECONDS,
    DIFF,
    TIME,
    AppendResult,
    BatchInfo,
    CompactResult,
    InvalidBatchError,
    Listen,
    ListenEvent,
    NotYetAvailableError,
    ReadBelowSinceError,
    Shard,
    ShardError,
    ShardExistsError,
    ShardNotFoundError,
    ShardState,
    SinceError,
    UpperMismatchError,
)

__all__ = [
    "DEFAULT_GRACE_SECONDS",
    "DEFAULT_SQLITE_FILENAME",
    "DIFF",
    "TIME",
    "AppendResult",
    "BatchInfo",
    "CompactResult",
    "Dialect",
    "InvalidBatchError",
    "Listen",
    "ListenEvent",
    "MetadataStore",
    "MetadataStoreError",
    "Migration",
    "NotYetAvailableError",
    "ReadBelowSinceError",
    "Shard",
    "ShardError",
    "ShardExistsError",
    "ShardNotFoundError",
    "ShardState",
    "SinceError",
    "Transaction",
    "UpperMismatchError",
    "redact_url",
]
