"""`NatsJetStream`: JSON messages from a NATS JetStream stream, with acknowledgements.

The reader drives one **durable pull consumer** (`durable`, ``AckAll``, filtered on
`subject`) from a private asyncio event loop running on its own thread; `read`,
`acknowledge` and `close` are synchronous calls into that loop with timeouts.

* **Position**: the stream sequence number of the last message read (an int; 0 = none).
  ``open(position)`` resumes at ``position + 1``. If the durable consumer already
  stands exactly there (a clean restart) it is reused; otherwise it is recreated with
  ``opt_start_seq = position + 1``. A guard consumer holds the messages after
  `position` while the durable is swapped, so interest-retention streams keep them.
* **Acknowledgement**: ``acknowledge(p)`` acks, with one ``AckAll`` on the newest
  delivered message whose sequence is ≤ `p`, everything up to it — never beyond `p`.
  ``open(p)`` treats `p` itself as acknowledged (it is the resumption frontier).
* **Gaps**: consumer sequence numbers must follow each other; a gap (a delivery lost in
  a reconnect) recreates the consumer at the acknowledged position + 1 and the reader
  skips what it has already read, so nothing is lost and nothing is read twice.
* **Decoding**: each message is one JSON object; the payloads of a fetched batch are
  decoded in one `pyarrow.json` call; bad messages go to `errors` (`decode`).
* **Health**: ``"running"``; ``"stalled"`` while the server is unreachable (the reader
  reconnects by itself); ``"failed: …"`` when the stream is missing or unusable (then
  `read` raises).

Work-queue streams are not supported (they need one ack per message and allow only one
consumer per subject); use limits (the default) or interest retention.

>>> src = NatsJetStream("orders.*", stream="ORDERS", schema={"id": "long"})
>>> src.durable, src.finite
('sealtime_orders__', False)
>>> reader = src.open(41)  # doctest: +SKIP
>>> batch = reader.read(1000)  # doctest: +SKIP
>>> reader.acknowledge(batch.position)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import threading
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

from .base import ReadBatch, Source, SourceReader
from .decode import decode_json_messages, empty_table
from .rows import to_arrow_schema

__all__ = ["NatsJetStream", "NatsJetStreamReader"]

T = TypeVar("T")


class _LoopThread:
    """An asyncio event loop on a daemon thread; `run` calls a coroutine synchronously."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        fut = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return fut.result(timeout)
        except TimeoutError:
            fut.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        if not self.thread.is_alive():
            self.loop.close()


class NatsJetStream(Source):
    """JSON messages on `subject` in the JetStream stream `stream`.

    * `url`: the NATS server (``nats://host:port``; several comma-separated).
    * `durable`: the durable consumer this source owns (default derived from
      `subject`); one reader per durable.
    * `schema`: declared columns; `format`: ``"jsonl"`` (one JSON object per message).
    * `fetch_batch`: messages per pull request; `fetch_timeout`: seconds one pull waits
      when nothing is available (bounds how long an idle `read` blocks).
    * `max_per_read`: most messages one `read` returns.
    * `connect_timeout`, `retry_interval`: seconds; reconnect attempts while stalled.
    * `ack_wait`: the consumer's ack wait (seconds); read-but-unacknowledged messages
      are redelivered after it and skipped by the reader, so keep it above the time
      between a read and its acknowledgement.

    >>> NatsJetStream("a", stream="S", schema={"x": "long"}, format="csv")
    Traceback (most recent call last):
    ...
    ValueError: NatsJetStream(format='csv'): only 'jsonl' (one JSON object per message) is supported
    """

    def __init__(
        self,
        subject: str,
        stream: str,
        url: str = "nats://127.0.0.1:4222",
        durable: str | None = None,
        schema: Any = None,
        format: str = "jsonl",
        *,
        fetch_batch: int = 1000,
        fetch_timeout: float = 0.1,
        max_per_read: int = 100_000,
        connect_timeout: float = 2.0,
        retry_interval: float = 1.0,
        ack_wait: float = 600.0,
    ) -> None:
        if format.lower() not in ("jsonl", "json"):
            raise ValueError(
                f"NatsJetStream(format={format!r}): only 'jsonl' (one JSON object per message) "
                "is supported"
            )
        if schema is None:
            raise ValueError(
                "NatsJetStream: pass schema=..., e.g. schema={'id': 'long', 'name': 'string'}"
            )
        self.subject = subject
        self.stream = stream
        self.url = url
        self.durable = durable or "sealtime_" + re.sub(r"[^A-Za-z0-9_-]", "_", subject)
        if re.search(r"[.*> \t]", self.durable):
            raise ValueError(
                f"NatsJetStream(durable={self.durable!r}): a consumer name cannot contain "
                "'.', '*', '>' or whitespace"
            )
        self.schema = to_arrow_schema(schema)
        self.format = "jsonl"
        if fetch_batch < 1 or max_per_read < 1:
            raise ValueError("NatsJetStream: fetch_batch and max_per_read must be >= 1")
        if fetch_timeout <= 0:
            raise ValueError("NatsJetStream: fetch_timeout must be > 0 seconds")
        self.fetch_batch = int(fetch_batch)
        self.fetch_timeout = float(fetch_timeout)
        self.max_per_read = int(max_per_read)
        self.connect_timeout = float(connect_timeout)
        self.retry_interval = float(retry_interval)
        self.ack_wait = float(ack_wait)

    def __repr__(self) -> str:
        return f"NatsJetStream({self.subject!r}, stream={self.stream!r}, url={self.url!r})"

    @property
    def finite(self) -> bool:
        """Always False: a stream never ends."""
        return False

    def open(self, position: Any = None) -> NatsJetStreamReader:
        """A reader resuming at stream sequence ``position + 1`` (None = the start)."""
        if position is None:
            position = 0
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ValueError(
                f"NatsJetStream.open(position={position!r}): pass a stream sequence number "
                "returned by this source (an int >= 0), or None for the start"
            )
        return NatsJetStreamReader(self, position)

    def resume(self, position: Any, acknowledged: Any = None) -> NatsJetStreamReader:
        """A reader that continues after `position` while the consumer's ack floor stays
        at `acknowledged`: the consumer is (re)created right after `acknowledged`, and the
        messages up to `position` that it delivers again are skipped (they are in the
        dataflow's log already) but can still be acknowledged."""
        if position is None:
            return self.open(None)
        acknowledged = 0 if acknowledged is None else acknowledged  # None: nothing yet
        if acknowledged >= position:
            return self.open(position)
        reader = self.open(acknowledged)
        reader.last = position
        return reader


class NatsJetStreamReader(SourceReader):
    """An open `NatsJetStream`; `position` is the last stream sequence read."""

    def __init__(self, source: NatsJetStream, position: int) -> None:
        self.source = source
        self.last = position  # last stream sequence read
        self.acked = position  # acknowledged (open treats the position as acknowledged)
        self._handles: list[tuple[int, Any]] = []  # (stream seq, msg) usable for AckAll
        self._expected_cseq: int | None = None
        self._status = "stalled"
        self._reason = ""
        self._nc: Any = None
        self._js: Any = None
        self._sub: Any = None  # our inbox for pulled messages
        self._inbox = ""
        self._buf: list[Any] = []  # delivered messages not yet handed to read
        self._pull_left = 0  # messages the pull request in flight may still deliver
        self._pull_done: asyncio.Event | None = None
        self._consumer_gone = ""
        self._ready = False
        self._need_reset = False
        self._last_attempt = float("-inf")
        self._closed = False
        self._io = _LoopThread(f"sealtime-nats-{source.stream}")
        self._try_setup(force=True)

    # ------------------------------------------------------------------ API

    @property
    def position(self) -> int:
        """The last stream sequence number read."""
        return self.last

    def health(self) -> str:
        """``"running"``, ``"stalled"`` (unreachable, reconnecting) or ``"failed: …"``."""
        if self._status == "failed":
            return f"failed: {self._reason}"
        return self._status

    def read(self, max_rows: int | None = None) -> ReadBatch:
        """The next messages (at most `max_rows`), decoded; position = last sequence read."""
        src = self.source
        if self._status == "failed":
            raise RuntimeError(f"{src!r}: {self._reason}")
        want = src.max_per_read if max_rows is None else min(max_rows, src.max_per_read)
        if not self._ready or self._need_reset:
            self._try_setup(force=self._ready)
            if not self._ready:
                if self._status == "failed":
                    raise RuntimeError(f"{src!r}: {self._reason}")
                return self._batch([])
        if want <= 0:
            return self._batch([])
        timeout = src.fetch_timeout * (2 + want // src.fetch_batch) + 10
        try:
            msgs = self._io.run(self._fetch(want), timeout)
        except Exception as exc:
            self._stall(exc)
            if self._nc is not None and self._nc.is_connected:
                self._ready = False  # e.g. the consumer was deleted: set up again
            return self._batch([])
        payloads = self._accept(msgs)
        if self._nc is not None and self._nc.is_connected:
            self._status = "running"
        return self._batch(payloads)

    def acknowledge(self, position: Any) -> None:
        """Ack upstream everything up to stream sequence `position` (AckAll), not beyond.

        Idempotent and monotone: positions at or below the last acknowledged one are
        ignored. If the ack cannot be sent (server unreachable) it is retried by the next
        call."""
        if isinstance(position, bool) or not isinstance(position, int):
            raise ValueError(
                f"NatsJetStreamReader.acknowledge({position!r}): pass a position returned by read"
            )
        if position <= self.acked:
            return
        usable = [h for h in self._handles if h[0] <= position]
        if usable:
            seq, msg = max(usable, key=lambda h: h[0])
            try:
                self._io.run(msg.ack_sync(timeout=self.source.connect_timeout), 10)
            except Exception as exc:
                self._stall(exc)
                return
        self._handles = [h for h in self._handles if h[0] > position]
        self.acked = position

    def consumer_info(self) -> Any:
        """The server's info on the durable consumer (ack floor, pending) — for tests."""
        return self._io.run(self._js.consumer_info(self.source.stream, self.source.durable), 10)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._nc is not None:
                self._io.run(self._nc.close(), 10)
        except Exception:
            pass
        self._io.stop()

    # ------------------------------------------------------------------ internals

    def _batch(self, payloads: list[bytes]) -> ReadBatch:
        src = self.source
        if not payloads:
            return ReadBatch(empty_table(src.schema), position=self.last)
        data, errors, _ = decode_json_messages(payloads, src.schema, where=f"{src.stream}:")
        return ReadBatch(data, position=self.last, errors=errors)

    def _stall(self, exc: BaseException) -> None:
        if self._status != "failed":
            self._status = "stalled"
            self._reason = f"{type(exc).__name__}: {exc}"

    def _fail(self, reason: str) -> None:
        self._status = "failed"
        self._reason = reason

    def _accept(self, chunks: list[list[Any]]) -> list[bytes]:
        """Keep, in order, the messages after the last one read; detect delivery gaps.

        The newest message of each fetched chunk is kept as an ack handle (AckAll on it
        acks everything before it), so acknowledgements lag a position by at most one
        chunk and the reader holds one message per chunk, not one per message."""
        payloads: list[bytes] = []
        for msgs in chunks:
            best: tuple[int, Any] | None = None
            gap = False
            for msg in msgs:
                sseq, cseq = _sequences(msg.reply)
                if self._expected_cseq is not None and cseq != self._expected_cseq:
                    self._need_reset = True  # a delivery went missing: re-read from the ack
                    gap = True
                    break
                self._expected_cseq = cseq + 1
                if best is None or sseq > best[0]:
                    best = (sseq, msg)
                if sseq <= self.last:
                    continue  # a redelivery, or a message before the position after a reset
                payloads.append(msg.data)
                self.last = sseq
            if best is not None and (not self._handles or best[0] > self._handles[-1][0]):
                self._handles.append(best)
            if gap:
                break
        return payloads

    def _try_setup(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last_attempt < self.source.retry_interval:
            return
        self._last_attempt = now
        try:
            self._io.run(self._setup(), self.source.connect_timeout * 3 + 10)
            self._ready = True
            self._need_reset = False
            self._status = "running"
        except _Failed as exc:
            self._fail(str(exc))
        except Exception as exc:
            self._ready = False
            self._stall(exc)

    async def _connect(self) -> None:
        import nats

        if self._nc is not None and not self._nc.is_closed:
            return
        src = self.source

        async def disconnected() -> None:
            if self._status == "running":
                self._status = "stalled"
                self._reason = "disconnected; reconnecting"

        async def reconnected() -> None:
            if self._status == "stalled":
                self._status = "running"

        async def error(exc: Exception) -> None:
            self._reason = f"{type(exc).__name__}: {exc}"

        servers = [s.strip() for s in src.url.split(",") if s.strip()]
        self._nc = await asyncio.wait_for(
            nats.connect(
                servers=servers,
                connect_timeout=src.connect_timeout,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=min(src.retry_interval, 2.0),
                disconnected_cb=disconnected,
                reconnected_cb=reconnected,
                error_cb=error,
            ),
            timeout=src.connect_timeout * 2,
        )
        self._js = self._nc.jetstream(timeout=max(src.connect_timeout, 1.0))

    async def _setup(self) -> None:
        from nats.js.api import RetentionPolicy
        from nats.js.errors import NotFoundError

        src = self.source
        await self._connect()
        try:
            info = await self._js.stream_info(src.stream)
        except NotFoundError:
            raise _Failed(
                f"stream {src.stream!r} not found on {src.url}; create it first, e.g. "
                f"`nats stream add {src.stream} --subjects '{src.subject}'`"
            ) from None
        if info.config.retention == RetentionPolicy.WORK_QUEUE:
            raise _Failed(
                f"stream {src.stream!r} uses work-queue retention, which needs one ack per "
                "message and one consumer per subject; use limits or interest retention"
            )
        consumer = None
        try:
            consumer = await self._js.consumer_info(src.stream, src.durable)
        except NotFoundError:
            consumer = None
        # Reuse the durable only on the first setup after open (a clean restart), never
        # after a gap: then it may have delivered messages this reader never saw.
        if self._expected_cseq is None and consumer is not None and self._reusable(consumer):
            self._expected_cseq = consumer.delivered.consumer_seq + 1
        else:
            # open(): start right after the position (treated as acknowledged); a gap
            # later: right after the acknowledged position, skipping what was read.
            await self._reset(self.acked + 1)
            self._expected_cseq = 1
        # Pulled messages arrive on a fresh inbox (stale deliveries of an earlier
        # subscription or consumer cannot mix in); a callback buffers them.
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        self._buf = []
        self._consumer_gone = ""
        self._pull_done = asyncio.Event()
        self._inbox = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._inbox, cb=self._on_message)

    def _reusable(self, consumer: Any) -> bool:
        from nats.js.api import AckPolicy

        cfg = consumer.config
        return (
            consumer.delivered.stream_seq == self.last
            and cfg.filter_subject == self.source.subject
            and cfg.ack_policy == AckPolicy.ALL
            and cfg.deliver_subject is None
        )

    async def _reset(self, start: int) -> None:
        """Recreate the durable at stream sequence `start`, guarding messages ≥ start."""
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
        from nats.js.errors import BadRequestError, NotFoundError

        src = self.source
        start = max(start, 1)
        common = {
            "deliver_policy": DeliverPolicy.BY_START_SEQUENCE,
            "opt_start_seq": start,
            "filter_subject": src.subject,
        }
        guard = await self._js.add_consumer(
            src.stream,
            ConsumerConfig(ack_policy=AckPolicy.NONE, inactive_threshold=60.0, **common),
        )
        try:
            with contextlib.suppress(NotFoundError):
                await self._js.delete_consumer(src.stream, src.durable)
            try:
                await self._js.add_consumer(
                    src.stream,
                    ConsumerConfig(
                        durable_name=src.durable,
                        ack_policy=AckPolicy.ALL,
                        ack_wait=src.ack_wait,
                        max_ack_pending=-1,
                        **common,
                    ),
                )
            except BadRequestError as exc:
                raise _Failed(f"cannot create consumer {src.durable!r}: {exc}") from None
        finally:
            # If this fails, the guard expires by itself (inactive_threshold).
            with contextlib.suppress(Exception):
                await self._js.delete_consumer(src.stream, guard.name)
        self._handles = []

    async def _on_message(self, msg: Any) -> None:
        """Inbox callback: buffer a delivery, or end the pull request on a status."""
        status = msg.headers.get("Status") if msg.headers else None
        if status is None:
            self._buf.append(msg)
            self._pull_left -= 1
            if self._pull_left <= 0 and self._pull_done is not None:
                self._pull_done.set()
            return
        if status == "100":  # idle heartbeat / flow control
            return
        if status == "409" and "deleted" in (msg.headers.get("Description") or "").lower():
            self._consumer_gone = msg.headers.get("Description") or "consumer deleted"
        if self._pull_done is not None:  # 404 no messages, 408 expired, 409 ...
            self._pull_done.set()

    async def _pull(self, n: int, wait: bool) -> None:
        """One pull request for up to `n` messages; returns when it is finished.

        Without `wait` the server answers at once (``no_wait``: what is there, then
        404); with `wait` it holds the request up to `fetch_timeout` (then 408)."""
        src = self.source
        assert self._pull_done is not None
        request: dict[str, Any] = {"batch": n}
        if wait:
            request["expires"] = int(src.fetch_timeout * 1e9)
        else:
            request["no_wait"] = True
        self._pull_left = n
        self._pull_done.clear()
        await self._nc.publish(
            f"$JS.API.CONSUMER.MSG.NEXT.{src.stream}.{src.durable}",
            json.dumps(request).encode(),
            reply=self._inbox,
        )
        # On a timeout, late deliveries still land in the buffer (and keep their order).
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._pull_done.wait(), src.fetch_timeout + src.connect_timeout)

    async def _fetch(self, want: int) -> list[list[Any]]:
        """Pull until `want` messages are buffered or the consumer has no more."""
        src = self.source
        waited = False
        while len(self._buf) < want and self._nc.is_connected:
            n = min(src.fetch_batch, want - len(self._buf))
            before = len(self._buf)
            await self._pull(n, wait=False)
            if self._consumer_gone:
                raise RuntimeError(f"consumer {src.durable!r}: {self._consumer_gone}")
            got = len(self._buf) - before
            if got >= n:
                continue
            if got > 0 or waited:
                break  # the consumer is drained
            waited = True  # nothing at all: wait once, up to fetch_timeout
            await self._pull(n, wait=True)
            if len(self._buf) == before:
                break
        msgs, self._buf = self._buf[:want], self._buf[want:]
        return [msgs[i : i + src.fetch_batch] for i in range(0, len(msgs), src.fetch_batch)]


def _sequences(reply: str) -> tuple[int, int]:
    """(stream sequence, consumer sequence) from a JetStream ack subject.

    ``$JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<cseq>.<ts>.<pending>`` (9 tokens)
    or, with a domain and account hash, ``$JS.ACK.<domain>.<hash>.<stream>…`` (11+).
    Cheaper than ``Msg.metadata``, which also builds dataclasses and datetimes.

    >>> _sequences("$JS.ACK.S.d.1.42.7.1700000000000000000.0")
    (42, 7)
    >>> _sequences("$JS.ACK._.HASH.S.d.1.42.7.1700000000000000000.0.tok")
    (42, 7)
    """
    tokens = reply.split(".")
    if len(tokens) == 9:
        base = 2
    elif len(tokens) >= 11:
        base = 4
    else:
        raise ValueError(f"not a JetStream ack subject: {reply!r}")
    return int(tokens[base + 3]), int(tokens[base + 4])


class _Failed(Exception):
    """A permanent problem (missing stream, unusable configuration)."""
