"""Sources: the Source API and the built-in sources.

Broker clients load on first use of their source (``sealtime.sources.NatsJetStream``),
so a process that never reads NATS or Redis does not import their clients.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import ReadBatch, Source, SourceReader
from .decode import SchemaMismatchError
from .files import Files
from .generator import Generator
from .nexmark import Nexmark
from .rows import Rows
from .subscription import Subscription
from .timer import Timer

__all__ = [
    "Files",
    "Generator",
    "NatsJetStream",
    "Nexmark",
    "ReadBatch",
    "RedisStream",
    "Rows",
    "SchemaMismatchError",
    "Source",
    "SourceReader",
    "Subscription",
    "Timer",
]

_LAZY = {"NatsJetStream": "sealtime.sources.nats", "RedisStream": "sealtime.sources.redis_streams"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'sealtime.sources' has no attribute {name!r}")
