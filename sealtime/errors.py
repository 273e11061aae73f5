"""The errors sealtime raises on purpose, by the kind of mistake they report.

Every one derives from `SealtimeError`, so ``except st.errors.SealtimeError`` catches
all of them, and also from the built-in exception it replaces (``ValueError``,
``RuntimeError``), so code written against those keeps working. Each message names
what is wrong and how to fix it.

| class | the mistake | also a |
|---|---|---|
| `ConfigError` | a setting of a dataflow, source or sink (names the setting and a valid value) | `ValueError` |
| `PlanError` | the graph built with the API or SQL (two dataflows mixed, a sink owned twice) | `ValueError` |
| `SchemaError` | columns and types (a missing column, ``sum`` over strings, a file whose types differ) | `ValueError`, `TypeError` |
| `PlanChangedError` | a data dir resumed or replayed by a dataflow whose plan differs from the one that wrote it | `RuntimeError` |
| `StorageError` / `ReadBelowSinceError` | durable state (a read of times compacted away) | |
| `MetadataStoreError` | the metadata store (a bad URL, an unreachable server, a write lock held too long) | `RuntimeError` |
| `DataDirOwnedError` / `FencedError` | a second writer of a data dir (refused: it names the owner) / an owner that lost its data dir to a newer one (fenced) | |
| `WriterConflictError` | an exactly-once output moved under its writer (someone else writes there) | `RuntimeError` |
| `StoredFormatError` | durable state written by a newer sealtime | `ValueError` |
| `LogRetentionError` | a replay that needs ingest log its retention removed; names the source, the setting (``retain_history``) and the fix | `ValueError` |
| `NotFoundError` | a name that is not there (a topic not in the catalog, an unknown view); lists those that are | `KeyError` |
| `StateError` | a call the object's state does not allow (a closed publisher, a view defined after ``run()``); names what must come first | `RuntimeError` |
| `InternalError` | not a user's mistake: an invariant of sealtime broke (a bug; please report it) | `RuntimeError` |

Errors of one package derive from these where they are defined (each, too, names what
is wrong and the fix; the list is checked by ``tests/test_errors.py``):

| class | the mistake | derives from |
|---|---|---|
| `sealtime.progress.GraphError` / `CycleError` | a progress graph (a loop on which time need not advance) | `PlanError` |
| `sealtime.progress.CapabilityError` / `DowngradeError` | a capability used after its drop / moved backwards | `StateError` (`DowngradeError` also a `ValueError`) |
| `sealtime.pubsub.ProtocolError` | a peer sent something that is not the pub-sub protocol | `SealtimeError` |
| `sealtime.pubsub.SubscribeError` | a subscription could not connect (refused, timed out, another protocol version) | `SealtimeError`, `ConnectionError` |
| `sealtime.sources.base.BrokerFailed` | a broker source failed for good (a missing stream, a cut subscription) | `SealtimeError`, `RuntimeError` |
| `sealtime.sources.decode.SchemaMismatchError` | a file whose columns or types differ from the declared schema | `SchemaError` |
| `sealtime.sql.SqlError` | a statement (with its line and column) | `PlanError` |
| `sealtime.sql.shell.ShellStopped` | a statement that needs ticks after the shell's dataflow stopped (a failed tick); restart the shell | `StateError` |
| `sealtime.storage.ShardError`: `ShardNotFoundError`, `ShardExistsError`, `InvalidBatchError`, `SinceError`, `NotYetAvailableError`, `UpperMismatchError` | a shard's contract (an unknown or taken name, a batch outside its range, a since moved back, a read at a time not yet sealed, an append whose expected upper moved) | `StorageError` (`KeyError`, `ValueError` where the name says so) |
| `sealtime.storage.fs.FileSystemError` | a file of the data dir could not be read or written | `StorageError`, `OSError` |
| `sealtime.serve.backend.ObjectExistsError` / `DependentObjectsError` | ``CREATE`` of a taken name / ``DROP`` without ``CASCADE`` of what others read | `PlanError` |
| `sealtime.serve.backend.LimitExceededError` | a bound of `ServerLimits` reached | `ConfigError` |
| `sealtime.serve.backend.QueryCanceledError` | a statement the client canceled | `StateError` |
| `sealtime.serve.backend.QueryError` | a statement that failed while running (carries Spark's SQLSTATE) | `SealtimeError` |
| `sealtime.serve.pgwire.params.ParameterError` | a bound parameter whose value does not read as its type | `SealtimeError`, `ValueError` |
| `sealtime.serve.pgwire.protocol.ProtocolViolation` | a client broke the PostgreSQL wire protocol | `SealtimeError` |

The private errors of the wire server (``_Duplicate``, ``_CursorError``, ...) are
`SealtimeError`s that carry a SQLSTATE; ``_Closed``/``_Fatal`` (wire server) and ``_Stop``
(command line) are control flow that never reaches a caller.

Kept standard, on purpose:

* a ``TypeError`` for an argument of the wrong Python type given to a low-level API
  (`sealtime.time`, `sealtime.progress`, `sealtime.kernels`, the pub-sub codec), as the
  standard library does;
* a ``FileNotFoundError`` for a path that names no file or store (as ``open`` does);
* `sealtime.time`'s one ``ValueError`` (`Antichain.as_option` of a wider antichain):
  `sealtime.time` is the floor below this module and imports nothing from sealtime;
* a ``ValueError`` raised and caught within one function as control flow, never
  leaving it (`sealtime.serve.pgwire.auth.parse_verifier`, which reports a
  `ConfigError`);
* the exceptions of Python's own protocols: ``AttributeError`` (a package's lazy names,
  immutable values), ``NotImplementedError`` (abstract methods), and the socket's own
  ``EOFError``/``ConnectionError``/``TimeoutError`` (a peer gone, a broker condition
  `BrokerHealth` retries, a subscription idle past its ``idle_timeout``).

>>> try:
...     raise ConfigError("Dataflow(tick='x'): not a duration; use e.g. tick='1s'")
... except ValueError as e:  # still a ValueError
...     isinstance(e, SealtimeError)
True
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DataDirOwnedError",
    "FencedError",
    "InternalError",
    "LogRetentionError",
    "MetadataStoreError",
    "NotFoundError",
    "PlanChangedError",
    "PlanError",
    "ReadBelowSinceError",
    "SchemaError",
    "SealtimeError",
    "StateError",
    "StorageError",
    "StoredFormatError",
    "WriterConflictError",
]


class SealtimeError(Exception):
    """Base class of the errors sealtime raises on purpose."""


class ConfigError(SealtimeError, ValueError):
    """A setting is invalid: the message names the setting and a valid value."""


class PlanError(SealtimeError, ValueError):
    """The dataflow graph is invalid (built with the Python API or from SQL)."""


class SchemaError(PlanError, TypeError):
    """Columns or types do not fit: a missing column, an aggregate over the wrong type,
    input whose types differ from the declared schema. (Also a ``TypeError``, since a
    wrong type is one.)"""


class PlanChangedError(SealtimeError, RuntimeError):
    """The data dir was written by a dataflow whose plan differs from this one (the
    message names the first difference); resuming would mix two computations."""


class NotFoundError(SealtimeError, KeyError):
    """A name that is not there: a topic not in the catalog, a source or view not
    defined. The message lists the names that are (shown as written, unlike a plain
    ``KeyError``, which quotes its message).

    >>> str(NotFoundError("topic 'x' is not in the catalog (known: ['y'])"))
    "topic 'x' is not in the catalog (known: ['y'])"
    """

    def __str__(self) -> str:
        return str(self.args[0]) if len(self.args) == 1 else super().__str__()


class StateError(SealtimeError, RuntimeError):
    """A call the object's state does not allow (a closed publisher, a view defined
    after the first ``run()``): the message names what must come first."""


class InternalError(SealtimeError, RuntimeError):
    """Not a user's mistake: an invariant of sealtime broke. The message says which;
    it is a bug, please report it."""


class StorageError(SealtimeError):
    """Base class of errors of durable state (shards, logs, the metadata store)."""


class MetadataStoreError(StorageError, RuntimeError):
    """The metadata store could not be opened or used; the message names the setting and
    the fix. (Also a ``RuntimeError``, which it was before it joined `StorageError`.)"""


class DataDirOwnedError(StorageError):
    """Another live process owns the data dir (one writer at a time,
    `sealtime.storage.ownership`): the message names it (host, pid, since when) and what
    to do — stop it, wait for its lease to expire, or take over."""


class FencedError(StorageError):
    """A newer owner took over the data dir (a higher epoch): this process was fenced, and
    every write it attempts in the metadata store fails with this error."""


class WriterConflictError(StorageError, RuntimeError):
    """An exactly-once output moved under its writer (a sink's upper is not where the
    dataflow left it): another writer, outside this dataflow's ownership, writes there."""


class StoredFormatError(StorageError, ValueError):
    """Durable state (a binding, a checkpoint) holds keys this version does not know: it
    was written by a newer sealtime."""


class LogRetentionError(StorageError, ValueError):
    """A replay needs ingest log that its retention removed (behind a checkpoint, older
    than ``retain_history``): the message names the source, how far its log reaches
    back, the setting and the fix — a longer retention, or a replay from a checkpoint
    inside it. (Also a ``ValueError``, as the refusal it replaces.)"""


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
