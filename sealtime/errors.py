"""The errors sealtime raises on purpose, by the kind of mistake they report.

Every one derives from `SealtimeError`, so ``except st.errors.SealtimeError`` catches
all of them, and also from the built-in exception it replaces (``ValueError``,
``RuntimeError``), so code written against those keeps working. Each message names
what is wrong and how to fix it.

| class | the mistake |
|---|---|
| `ConfigError` | a setting of a dataflow, source or sink (names the setting and a valid value) |
| `PlanError` | the graph built with the API or SQL (two dataflows mixed, a sink owned twice) |
| `SchemaError` | columns and types (a missing column, ``sum`` over strings, a file whose types differ) |
| `PlanChangedError` | a data dir resumed or replayed by a dataflow whose plan differs from the one that wrote it |
| `StorageError` / `ReadBelowSinceError` | durable state (a read of times compacted away) |

>>> try:
...     raise ConfigError("Dataflow(tick='x'): not a duration; use e.g. tick='1s'")
... except ValueError as e:  # still a ValueError
...     isinstance(e, SealtimeError)
True
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "PlanChangedError",
    "PlanError",
    "ReadBelowSinceError",
    "SchemaError",
    "SealtimeError",
    "StorageError",
]


class SealtimeError(Exception):
    """Base class of the errors sealtime raises on purpose."""


class ConfigError(SealtimeError, ValueError):
    """A setting is invalid: the message names the setting and a valid value."""


class PlanError(SealtimeError, ValueError):
    """The dataflow graph is invalid (built with the Python API or from SQL)."""


class SchemaError(PlanError, TypeError):
    """Columns or types do not fit: a missing column, an aggregate over the wrong type,
    input whose types differ from the declared schema. (Also a ``TypeError``: a wrong
    type is what some of these used to raise.)"""


class PlanChangedError(SealtimeError, RuntimeError):
    """The data dir was written by a dataflow whose plan differs from this one (the
    message names the first difference); resuming would mix two computations."""


class StorageError(SealtimeError):
    """Base class of errors of durable state (shards, logs, the metadata store)."""


class ReadBelowSinceError(StorageError):
    """A read asked for times a shard has compacted away (``as_of < since``).

    >>> str(ReadBelowSinceError("s", 5, 3)).startswith("shard 's': cannot snapshot at 3: since=5")
    True
    """

    def __init__(self, shard: str, since: int | None, as_of: int, *, listen: bool = False) -> None:
        self.shard = shard
        self.since = since
        self.as_of = as_of
        if since is None:
            detail = "its since is the empty frontier (no reads are possible any more)"
        else:
            detail = f"since={since}"
        if listen:
            super().__init__(
                f"shard {shard!r}: cannot listen from {as_of}: {detail}; a listen must be able "
                "to tell times >= from_ apart from earlier ones, which compaction merges into "
                "since, so it needs since < from_ — listen from since + 1 after a snapshot at "
                "since, and hold since below the listener's frontier while it runs"
            )
        else:
            super().__init__(
                f"shard {shard!r}: cannot snapshot at {as_of}: {detail}; updates before since "
                "may have been compacted — read at a time >= since, or hold since back "
                "(downgrade_since) while a reader needs older times"
            )
