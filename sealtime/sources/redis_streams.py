"""`RedisStream`: entries of a Redis stream, read through a consumer group, with XACK.

* **Position**: the ID of the last entry read, ``"<ms>-<seq>"`` (a string; ``"0-0"`` =
  none). ``open(position)`` resumes right after it.
* **Restart and pending entries**: entries the group delivered before a restart but
  that were never acknowledged sit in the group's pending list (PEL); ``XREADGROUP >``
  would never return them again. So `open` looks at the group's last-delivered ID *L*:
  the entries in ``(position, L]`` are re-read with ``XRANGE`` (they were delivered but
  not durably processed), then ``XREADGROUP >`` continues after *L*. When *L* is behind
  the position (a recreated group), the group is moved to the position with
  ``XGROUP SETID``. A missing group is created at the position (``MKSTREAM``).
* **Acknowledgement**: ``acknowledge(p)`` XACKs the group's pending entries with ID ≤
  `p` (found with ``XPENDING <group> - p``), never one after `p`.
* **Formats**: ``"jsonl"`` — one JSON object in the entry field `field` (default
  ``"data"``), decoded for a whole batch in one `pyarrow.json` call; ``"fields"`` — the
  entry's fields are the columns (values are strings cast to the declared types). Bad
  entries go to `errors`. `id_column` adds the entry ID as a string column.
* **Health**: ``"running"``; ``"stalled"`` while Redis is unreachable (each read retries);
  ``"failed: …"`` when the key holds another type (then `read` raises).

One group and consumer per source: the group is this source's cursor in the stream.

>>> src = RedisStream("events", schema={"k": "string"}, group="g1")
>>> src.group, src.consumer, src.finite
('g1', 'sealtime', False)
>>> r = src.open("1700000000000-0")  # doctest: +SKIP
>>> batch = r.read(1000)  # doctest: +SKIP
>>> r.acknowledge(batch.position)  # doctest: +SKIP
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import numpy as np
import pyarrow as pa

from ..errors import ConfigError
from .base import BrokerFailed, BrokerHealth, BrokerReader, ReadBatch, Source
from .decode import (
    cast_strings,
    decode_json_messages,
    empty_table,
    errors_table,
    invalid_utf8,
)
from .rows import to_arrow_schema

__all__ = ["RedisStream", "RedisStreamReader", "parse_id"]

_ID_RE = re.compile(r"^(\d+)-(\d+)$")
_ACK_CHUNK = 10_000


def parse_id(entry_id: Any) -> tuple[int, int]:
    """``"ms-seq"`` (str or bytes) as a comparable ``(ms, seq)`` pair.

    >>> parse_id("1700000000000-3") < parse_id(b"1700000000000-10")
    True
    >>> parse_id("12")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: Redis stream ID '12': expected '<ms>-<seq>', e.g. '1700000000000-0'
    """
    text = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
    m = _ID_RE.match(text)
    if m is None:
        raise ConfigError(
            f"Redis stream ID {text!r}: expected '<ms>-<seq>', e.g. '1700000000000-0'"
        )
    return int(m.group(1)), int(m.group(2))


def _id_text(entry_id: Any) -> str:
    return entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)


class RedisStream(Source):
    """Entries of the Redis stream `key`, through the consumer group `group`.

    * `url`: ``redis://host:port/db``.
    * `group`, `consumer`: the consumer group (created if missing) and consumer name.
    * `schema`: declared columns; `format`: ``"jsonl"`` or ``"fields"``; `field`: the
      entry field holding the JSON object (``"jsonl"``).
    * `id_column`: when set, a string column of that name holds each entry's ID.
    * `count`: entries per XREADGROUP/XRANGE call; `max_per_read`: most per `read`.
    * `block_ms`: when set, an idle read blocks up to that long in XREADGROUP.
    * `socket_timeout`: seconds; `retry_interval`, `max_retry_interval`: seconds
      between reconnect attempts while stalled (doubling from the first to the second;
      `sealtime.sources.base.BrokerHealth`).

    >>> RedisStream("k", schema={"a": "long"}, format="xml")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: RedisStream(format='xml'): use 'jsonl' (a JSON object in one field) or 'fields'
    """

    def __init__(
        self,
        key: str,
        url: str = "redis://127.0.0.1:6379",
        group: str = "sealtime",
        consumer: str = "sealtime",
        schema: Any = None,
        format: str = "jsonl",
        *,
        field: str = "data",
        id_column: str | None = None,
        count: int = 1000,
        max_per_read: int = 100_000,
        block_ms: int | None = None,
        socket_timeout: float = 5.0,
        retry_interval: float = 1.0,
        max_retry_interval: float = 30.0,
    ) -> None:
        fmt = format.lower()
        if fmt == "json":
            fmt = "jsonl"
        if fmt not in ("jsonl", "fields"):
            raise ConfigError(
                f"RedisStream(format={format!r}): use 'jsonl' (a JSON object in one field) "
                "or 'fields'"
            )
        if schema is None:
            raise ConfigError(
                "RedisStream: pass schema=..., e.g. schema={'k': 'string', 'v': 'long'}"
            )
        self.key = key
        self.url = url
        self.group = group
        self.consumer = consumer
        self.format = fmt
        self.field = field
        self.decoded_schema = to_arrow_schema(schema)
        self.id_column = id_column
        if id_column is not None:
            if id_column in self.decoded_schema.names:
                raise ConfigError(
                    f"RedisStream(id_column={id_column!r}): the schema already has that column"
                )
            self.schema = self.decoded_schema.append(pa.field(id_column, pa.string()))
        else:
            self.schema = self.decoded_schema
        if count < 1 or max_per_read < 1:
            raise ConfigError("RedisStream: count and max_per_read must be >= 1")
        self.count = int(count)
        self.max_per_read = int(max_per_read)
        self.block_ms = block_ms
        self.socket_timeout = float(socket_timeout)
        self.retry_interval = float(retry_interval)
        self.max_retry_interval = float(max_retry_interval)

    def __repr__(self) -> str:
        return f"RedisStream({self.key!r}, url={self.url!r}, group={self.group!r})"

    @property
    def finite(self) -> bool:
        """Always False: a stream never ends."""
        return False

    def open(self, position: Any = None) -> RedisStreamReader:
        """A reader resuming right after entry ID `position` (None = the start)."""
        if position is None:
            position = "0-0"
        try:
            parse_id(position)
        except ValueError:
            raise ConfigError(
                f"RedisStream.open(position={position!r}): pass an entry ID returned by this "
                "source ('<ms>-<seq>'), or None for the start"
            ) from None
        return RedisStreamReader(self, _id_text(position))


class RedisStreamReader(BrokerReader):
    """An open `RedisStream`; `position` is the ID of the last entry read."""

    def __init__(self, source: RedisStream, position: str) -> None:
        import redis

        self.source = source
        self.last = position
        self.acked = position
        self._replay_until: str | None = None
        self.link = BrokerHealth(repr(source), source.retry_interval, source.max_retry_interval)
        self.client = redis.Redis.from_url(
            source.url,
            socket_timeout=source.socket_timeout,
            socket_connect_timeout=source.socket_timeout,
        )
        self.link.setup(self._setup_checked, force=True, transient=_transient())

    # ------------------------------------------------------------------ API

    @property
    def position(self) -> str:
        """The ID of the last entry read."""
        return self.last

    def read(self, max_rows: int | None = None) -> ReadBatch:
        """The next entries (at most `max_rows`): replayed ones first, then new ones."""
        import redis

        src = self.source
        if not self.link.connect(self._setup_checked, transient=_transient()):
            return self._batch([])
        want = src.max_per_read if max_rows is None else min(max_rows, src.max_per_read)
        entries: list[tuple[bytes, dict[bytes, bytes]]] = []
        try:
            while len(entries) < want:
                n = min(src.count, want - len(entries))
                replaying = self._replay_until is not None
                got = self._next(n, block=not entries)
                entries.extend(got)
                if got:
                    self.last = _id_text(got[-1][0])
                if len(got) < n and not replaying:
                    break
            self.link.running()
        except redis.ResponseError as exc:
            self._on_response_error(exc)
        except _transient() as exc:
            self.link.stall(exc, reconnect=True)
        return self._batch(entries)

    def acknowledge(self, position: Any) -> None:
        """XACK the group's pending entries with ID ≤ `position` (monotone, idempotent)."""
        import redis

        src = self.source
        target = parse_id(position)
        if target <= parse_id(self.acked):
            return
        pos = _id_text(position)
        try:
            while True:
                pending = self.client.xpending_range(
                    src.key, src.group, min="-", max=pos, count=_ACK_CHUNK
                )
                ids = [p["message_id"] for p in pending]
                if ids:
                    self.client.xack(src.key, src.group, *ids)
                if len(ids) < _ACK_CHUNK:
                    break
        except _transient() as exc:
            self.link.stall(exc, reconnect=True)
            return  # retried by the next acknowledge
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
        self.acked = pos

    def close(self) -> None:
        self.client.close()

    # ------------------------------------------------------------------ internals

    def _next(self, n: int, block: bool) -> list[tuple[bytes, dict[bytes, bytes]]]:
        src = self.source
        if self._replay_until is not None:
            got = self.client.xrange(src.key, min="(" + self.last, max=self._replay_until, count=n)
            if len(got) < n or (got and _id_text(got[-1][0]) == self._replay_until):
                self._replay_until = None
            return got
        kwargs: dict[str, Any] = {"count": n}
        if block and src.block_ms:
            kwargs["block"] = int(src.block_ms)
        res = self.client.xreadgroup(src.group, src.consumer, {src.key: ">"}, **kwargs)
        if not res:
            return []
        _, got = res[0]
        return [(i, f) for i, f in got if f is not None]

    def _setup_checked(self) -> None:
        """One setup attempt (`BrokerHealth.setup` paces and classifies them): a
        response error other than a missing group is permanent."""
        import redis

        try:
            self._setup()
        except redis.ResponseError as exc:
            if "NOGROUP" in str(exc):
                raise ConnectionError(str(exc)) from exc
            raise BrokerFailed(self._failure(exc)) from None

    def _setup(self) -> None:
        src = self.source
        groups = []
        if self.client.exists(src.key):
            groups = self.client.xinfo_groups(src.key)
        info = next((g for g in groups if _id_text(g["name"]) == src.group), None)
        if info is None:
            self.client.xgroup_create(src.key, src.group, id=self.last, mkstream=True)
            self._replay_until = None
            return
        delivered = _id_text(info["last-delivered-id"])
        if parse_id(delivered) > parse_id(self.last):
            self._replay_until = delivered  # delivered before, never durably processed
        else:
            self._replay_until = None
            if parse_id(delivered) < parse_id(self.last):
                self.client.xgroup_setid(src.key, src.group, id=self.last)

    def _on_response_error(self, exc: Exception) -> None:
        text = str(exc)
        if "NOGROUP" in text:  # the group was deleted: recreate it where we are
            self.link.stall(text, reconnect=True)
            self.link.retry_now()
        else:
            self.link.fail(self._failure(exc))

    def _failure(self, exc: Exception) -> str:
        return f"{exc}; check that key {self.source.key!r} is a stream"

    def _batch(self, entries: list[tuple[bytes, dict[bytes, bytes]]]) -> ReadBatch:
        src = self.source
        if not entries:
            return ReadBatch(empty_table(src.schema), position=self.last)
        ids = [_id_text(i) for i, _ in entries]
        where = f"{src.key}:"
        if src.format == "jsonl":
            key = src.field.encode()
            payloads = [f.get(key) for _, f in entries]
            missing = [p is None for p in payloads]
            present = [p for p in payloads if p is not None]
            data, errors, ok = decode_json_messages(present, src.decoded_schema, where=where)
            kept_ids = np.asarray(ids, dtype=object)[~np.asarray(missing)][ok]
            if any(missing):
                raws = [_entry_text(f) for (_, f), m in zip(entries, missing) if m]
                errs = errors_table(raws, [f"{where} entry has no field {src.field!r}"] * len(raws))
                errors = errs if errors is None else pa.concat_tables([errs, errors])
        else:
            data, errors, ok = self._fields(entries, where)
            kept_ids = np.asarray(ids, dtype=object)[ok]
        if src.id_column is not None:
            data = data.append_column(src.id_column, pa.array(list(kept_ids), pa.string()))
        return ReadBatch(data, position=self.last, errors=errors)

    def _fields(
        self, entries: list[tuple[bytes, dict[bytes, bytes]]], where: str
    ) -> tuple[pa.Table, pa.Table | None, np.ndarray]:
        """The ``fields`` format: each entry's fields are the columns, cast from text
        (`cast_strings`). An entry with a declared field that is not UTF-8 is an error
        row (its bytes are never replaced by U+FFFD in a value). Returns ``(data,
        errors, ok)`` with `ok` the mask of the entries kept."""
        schema = self.source.decoded_schema
        utf8: dict[int, str] = {}
        columns = {}
        for f in schema:
            values = pa.array([e.get(f.name.encode()) for _, e in entries], pa.binary())
            for i in invalid_utf8(values).tolist():
                b64 = base64.b64encode(values[i].as_py()).decode("ascii")
                why = f"{where} field {f.name!r} is not valid UTF-8 (its bytes in base64: {b64})"
                utf8.setdefault(i, why)
            columns[f.name] = values
        keep = np.ones(len(entries), dtype=bool)
        keep[list(utf8)] = False
        rows = np.flatnonzero(keep)
        kept = pa.array(keep) if utf8 else None
        table = pa.table(
            {
                name: (col if kept is None else col.filter(kept)).cast(pa.string())
                for name, col in columns.items()
            }
        )

        def raw(idx: np.ndarray) -> list[str]:
            return [_entry_text(entries[rows[i]][1]) for i in idx.tolist()]

        data, errors, ok = cast_strings(table, schema, raw, where=where)
        mask = keep.copy()
        mask[rows] = ok
        if utf8:
            bad = sorted(utf8)
            first = errors_table([_entry_text(entries[i][1]) for i in bad], [utf8[i] for i in bad])
            errors = first if errors is None else pa.concat_tables([first, errors])
        return data, errors, mask


def _transient() -> tuple[type[BaseException], ...]:
    """The connection errors after which a reader retries (redis is imported lazily)."""
    import redis

    return (redis.ConnectionError, redis.TimeoutError, ConnectionError)


def _entry_text(fields: dict[bytes, bytes]) -> str:
    return json.dumps(
        {k.decode("utf-8", "replace"): v.decode("utf-8", "replace") for k, v in fields.items()}
    )
