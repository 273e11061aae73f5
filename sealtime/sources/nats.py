"""`NatsJetStream`: JSON messages from a NATS JetStream stream, with acknowledgements.

The reader drives one **durable pull consumer** (`durable`, ``AckAll``, filtered on
`subject`) from a private asyncio event loop running on its own thread; `read`,
`acknowledge` and `close` are synchronous calls into that loop with timeouts.

* **Position**: the stream sequence number of the last message read (an int; 0 = none).
  ``resume(position, acknowledged)`` reads on at ``position + 1`` while the consumer's
  ack floor follows `acknowledged` (the dataflow's resumption frontier);
  ``open(p)`` is ``resume(p, p)``.
* **The durable is never deleted to resume.** Its ack floor is the upstream record of
  what the dataflow holds durably, so it must never move back. On (re)start the reader
  asks the server where the durable stands: ack floor *A* and last delivered message
  *D*. Messages after *D* come from the durable as usual. The messages in ``(A, D]`` were
  delivered before the restart and are still pending there (the durable redelivers them
  only after `ack_wait`), so the reader **catches up** on them with an ephemeral
  ``AckNone`` pull consumer starting at ``min(A, position) + 1``
  (``DeliverPolicy.BY_START_SEQUENCE``): the ones after `position` are read as data
  (delivered but never logged), the ones up to `position` only give ack handles.
* **Acknowledgement, message by message**: ``acknowledge(p)`` sends one ``AckAll`` on the
  message with the largest stream sequence ≤ `p` (normally `p` itself) — the server then
  counts everything ≤ it as acknowledged and sets its floor to exactly that message,
  never beyond `p`. An ack is the ``+ACK`` request to the message's ack subject
  ``$JS.ACK.<stream>.<durable>.<n>.<stream seq>.<delivery seq>.…``; for a message the
  durable delivered before a restart, the delivery sequence is derived from the
  consumer's state (pending first deliveries are numbered consecutively after the ack
  floor's), which for ``AckAll`` is all the server needs (it moves its floor to the
  pair when both are above the current floor). ``resume`` acknowledges `acknowledged`
  itself as soon as the catch-up has passed it.
* **Gaps**: consumer sequence numbers must follow each other; a gap (a delivery lost in
  a reconnect) makes the reader ask the server again and catch up as on a restart, so
  nothing is lost and nothing is read twice.
* **Decoding**: each message is one JSON object; the payloads of a fetched batch are
  decoded in one `pyarrow.json` call; bad messages go to `errors` (`decode`).
* **Health**: ``"running"``; ``"stalled"`` while the server is unreachable (the reader
  reconnects by itself); ``"failed: …"`` when the stream is missing or unusable (then
  `read` raises).

A durable whose configuration no longer matches the source (another subject, ack
policy or a push consumer) is recreated right after the acknowledged position. Work-
queue streams are not supported (they need one ack per message and allow only one
consumer per subject); use limits (the default) or interest retention.

>>> src = NatsJetStream("orders.*", stream="ORDERS", schema={"id": "long"})
>>> src.durable, src.finite
('sealtime_orders__', False)
>>> reader = src.resume(41, 30)  # doctest: +SKIP
>>> batch = reader.read(1000)  # doctest: +SKIP
>>> reader.acknowledge(batch.position)  # doctest: +SKIP
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import json
import re
import threading
from array import array
from collections.abc import Coroutine
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import ConfigError, SealtimeError
from .base import BrokerFailed, BrokerHealth, BrokerReader, ReadBatch, Source
from .decode import decode_json_messages, empty_table
from .rows import to_arrow_schema

__all__ = ["NatsJetStream", "NatsJetStreamReader"]

T = TypeVar("T")

#: Most already-logged messages (ack handles only) one catch-up read passes over: a few
#: seconds of pulling, so a read stays short however far the frontier lags.
_CATCHUP_SKIPS = 100_000


class _ConsumerGone(SealtimeError, RuntimeError):
    """The server deleted the consumer under a fetch: `read` catches it, stalls and sets
    the consumer up again (not a failure of the source)."""


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
    * `connect_timeout`: seconds; `retry_interval`, `max_retry_interval`: seconds
      between setup attempts while stalled (doubling from the first to the second;
      `sealtime.sources.base.BrokerHealth`).
    * `ack_wait`: the consumer's ack wait (seconds); read-but-unacknowledged messages
      are redelivered after it and skipped by the reader, so keep it above the time
      between a read and its acknowledgement.

    >>> NatsJetStream("a", stream="S", schema={"x": "long"}, format="csv")
    Traceback (most recent call last):
    ...
    sealtime.errors.ConfigError: NatsJetStream(format='csv'): only 'jsonl' (one JSON object per message) is supported
    """

    # Each broker source spells out its own keyword settings (for users, help() and the
    # docs): alike in form to the other sources' signatures only.
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
        max_retry_interval: float = 30.0,
        ack_wait: float = 600.0,
    ) -> None:
        if format.lower() not in ("jsonl", "json"):
            raise ConfigError(
                f"NatsJetStream(format={format!r}): only 'jsonl' (one JSON object per message) "
                "is supported"
            )
        if schema is None:
            raise ConfigError(
                "NatsJetStream: pass schema=..., e.g. schema={'id': 'long', 'name': 'string'}"
            )
        self.subject = subject
        self.stream = stream
        self.url = url
        self.durable = durable or "sealtime_" + re.sub(r"[^A-Za-z0-9_-]", "_", subject)
        if re.search(r"[.*> \t]", self.durable):
            raise ConfigError(
                f"NatsJetStream(durable={self.durable!r}): a consumer name cannot contain "
                "'.', '*', '>' or whitespace"
            )
        self.schema = to_arrow_schema(schema)
        self.format = "jsonl"
        if fetch_batch < 1 or max_per_read < 1:
            raise ConfigError("NatsJetStream: fetch_batch and max_per_read must be >= 1")
        if fetch_timeout <= 0:
            raise ConfigError("NatsJetStream: fetch_timeout must be > 0 seconds")
        self.fetch_batch = int(fetch_batch)
        self.fetch_timeout = float(fetch_timeout)
        self.max_per_read = int(max_per_read)
        self.connect_timeout = float(connect_timeout)
        # Alike in form to RedisStream on purpose: each broker source keeps its own settings.
        self.retry_interval = float(retry_interval)
        self.max_retry_interval = float(max_retry_interval)
        self.ack_wait = float(ack_wait)

    def __repr__(self) -> str:
        return f"NatsJetStream({self.subject!r}, stream={self.stream!r}, url={self.url!r})"

    @property
    def finite(self) -> bool:
        """Always False: a stream never ends."""
        return False

    def open(self, position: Any = None) -> NatsJetStreamReader:
        """A reader resuming at stream sequence ``position + 1`` (None = the start); the
        position itself counts as acknowledged."""
        position = self._check(position, "open")
        return NatsJetStreamReader(self, position, position)

    def resume(self, position: Any, acknowledged: Any = None) -> NatsJetStreamReader:
        """A reader that continues after `position` while the durable's ack floor follows
        `acknowledged` (None: nothing yet): the durable is kept, the messages it delivered
        after its ack floor are caught up on by stream sequence (data after `position`,
        ack handles up to it) and `acknowledged` is acked exactly."""
        position = self._check(position, "resume")
        acknowledged = self._check(acknowledged, "resume")
        return NatsJetStreamReader(self, position, min(acknowledged, position))

    def _check(self, position: Any, method: str) -> int:
        if position is None:
            return 0
        if isinstance(position, bool) or not isinstance(position, int) or position < 0:
            raise ConfigError(
                f"NatsJetStream.{method}(position={position!r}): pass a stream sequence number "
                "returned by this source (an int >= 0), or None for the start"
            )
        return position


@dataclass
class _CatchUp:
    """Reading the messages the durable delivered before a (re)start, by stream sequence.

    `consumer` is the ephemeral ``AckNone`` consumer doing it; it stops at `end` (the
    durable's last delivered stream sequence). The durable's pending first deliveries
    in ``(floor, end]`` carry the delivery sequences ``base + 1, base + 2, …`` in stream
    order (`rank` counts them), up to `top` (the durable's last delivery sequence).
    """

    consumer: str
    end: int
    floor: int
    base: int
    top: int
    rank: int = 0
    done: bool = False


class NatsJetStreamReader(BrokerReader):
    """An open `NatsJetStream`; `position` is the last stream sequence read."""

    def __init__(self, source: NatsJetStream, position: int, acknowledged: int) -> None:
        self.source = source
        self.last = position  # last stream sequence read
        #: the resumption position the dataflow asked to acknowledge (the newest)
        self.acked = acknowledged
        #: the stream sequence of the newest ack the server took (its floor, from us)
        self._sent = 0
        # Ack handles of messages after `_sent`, increasing in both sequences: the stream
        # sequence and the durable's delivery sequence (two int arrays, not message
        # objects: a resumption frontier that lags by a million messages costs 16 MB).
        self._hs = array("q")
        self._hd = array("q")
        self._ack_head = ""  # "$JS.ACK.<stream>.<durable>" (learnt from a delivery)
        self._ack_tail = ""  # the tokens after the delivery sequence (ignored by servers)
        self._catchup: _CatchUp | None = None
        self._consumer = source.durable  # the consumer pulled from now
        self._expected_cseq: int | None = None
        self.link = BrokerHealth(repr(source), source.retry_interval, source.max_retry_interval)
        self._nc: Any = None
        self._js: Any = None
        self._sub: Any = None  # our inbox for pulled messages
        self._inbox = ""
        self._buf: list[Any] = []  # delivered messages not yet handed to read
        self._pull_left = 0  # messages the pull request in flight may still deliver
        self._pull_done: asyncio.Event | None = None
        self._pull_status = ""  # the status that ended the last pull ("" = none came)
        self._consumer_gone = ""
        self._need_reset = False
        self._closed = False
        self._io = _LoopThread(f"sealtime-nats-{source.stream}")
        self.link.setup(self._setup_sync, force=True)

    # ------------------------------------------------------------------ API

    @property
    def position(self) -> int:
        """The last stream sequence number read."""
        return self.last

    @property
    def catching_up(self) -> bool:
        """True while the reader re-reads what the durable delivered before a restart."""
        return self._catchup is not None

    def read(self, max_rows: int | None = None) -> ReadBatch:
        """The next messages (at most `max_rows`), decoded; position = last sequence read."""
        src = self.source
        self.link.check()
        want = src.max_per_read if max_rows is None else min(max_rows, src.max_per_read)
        if not self.link.connect(self._setup_sync, reset=self._need_reset):
            return self._batch([])
        if want <= 0:
            return self._batch([])
        timeout = src.fetch_timeout * (2 + want // src.fetch_batch) + 10
        try:
            if self._catchup is not None:
                msgs = self._io.run(self._fetch_catchup(want), timeout)
            else:
                msgs = self._io.run(self._fetch(want), timeout)
        except Exception as exc:
            # Connected but failing (e.g. the consumer was deleted): set up again.
            self.link.stall(exc, reconnect=self._connected())
            return self._batch([])
        payloads = self._accept(msgs)
        if self._catchup is not None and self._catchup.done and not self._need_reset:
            try:
                self._io.run(self._end_catchup(), src.connect_timeout + 10)
                # Read on from the durable in the same call: a catch-up over messages
                # that were logged already yields no rows, and a tick should not be lost.
                more = want - len(payloads)
                if more > 0:
                    payloads += self._accept(self._io.run(self._fetch(more), timeout))
            except Exception as exc:
                self.link.stall(exc, reconnect=True)
        if self._connected():
            self.link.running()
        if self.acked > self._sent:
            self._flush_acks()  # e.g. the resumption position, once caught up on it
        return self._batch(payloads)

    def acknowledge(self, position: Any) -> None:
        """Ack upstream everything up to stream sequence `position` (AckAll on the message
        with the largest sequence ≤ it), never beyond.

        Idempotent and monotone: positions at or below the last acknowledged one are
        ignored. If the ack cannot be sent (server unreachable) it is retried by the next
        call or read."""
        if isinstance(position, bool) or not isinstance(position, int):
            raise ConfigError(
                f"NatsJetStreamReader.acknowledge({position!r}): pass a position returned by read"
            )
        if position <= self.acked:
            return
        self.acked = position
        self._flush_acks()

    def consumer_info(self) -> Any:
        """The server's info on the durable consumer (ack floor, pending) — for tests."""
        return self._io.run(self._js.consumer_info(self.source.stream, self.source.durable), 10)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            if self._nc is not None:
                if self._catchup is not None:
                    self._io.run(self._drop_catchup_consumer(), 5)
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

    def _connected(self) -> bool:
        return self._nc is not None and self._nc.is_connected

    def _flush_acks(self) -> None:
        """Send one AckAll for the newest handle at or below `acked` (if it is new)."""
        k = bisect.bisect_right(self._hs, self.acked)
        if k == 0 or not self._ack_head:
            return
        sseq, dseq = self._hs[k - 1], self._hd[k - 1]
        subject = f"{self._ack_head}.1.{sseq}.{dseq}.{self._ack_tail}"
        wait = self.source.connect_timeout
        try:
            self._io.run(self._nc.request(subject, b"+ACK", timeout=wait), wait + 10)
        except Exception as exc:
            self.link.stall(exc)
            return
        del self._hs[:k]
        del self._hd[:k]
        self._sent = sseq

    def _learn_ack_subject(self, reply: str) -> None:
        """The durable's ack subject shape, from any delivery's reply subject (of the
        durable or of the catch-up consumer: only the consumer token differs)."""
        tokens = reply.split(".")
        base = 2 if len(tokens) == 9 else 4
        tokens[base + 1] = self.source.durable
        self._ack_head = ".".join(tokens[: base + 2])
        self._ack_tail = ".".join(tokens[base + 5 :])

    def _handle(self, sseq: int, dseq: int) -> None:
        """Keep an ack handle (stream order; redeliveries of older messages are not)."""
        if sseq > self._sent and (not self._hs or sseq > self._hs[-1]):
            self._hs.append(sseq)
            self._hd.append(dseq)

    def _accept(self, chunks: list[list[Any]]) -> list[bytes]:
        """Keep, in order, the messages after the last one read; keep one ack handle per
        message; detect delivery gaps; stop a catch-up at its end."""
        payloads: list[bytes] = []
        catchup = self._catchup
        for msgs in chunks:
            for msg in msgs:
                sseq, cseq = _sequences(msg.reply)
                if self._expected_cseq is not None and cseq != self._expected_cseq:
                    self._need_reset = True  # a delivery went missing: ask the server again
                    return payloads
                self._expected_cseq = cseq + 1
                if not self._ack_head:
                    self._learn_ack_subject(msg.reply)
                if catchup is not None:
                    if sseq > catchup.end:
                        catchup.done = True  # the durable delivers the rest
                        return payloads
                    if sseq > catchup.floor:
                        catchup.rank += 1
                        if catchup.base + catchup.rank <= catchup.top:
                            self._handle(sseq, catchup.base + catchup.rank)
                    if sseq == catchup.end:
                        catchup.done = True
                else:
                    self._handle(sseq, cseq)
                if sseq > self.last:  # else a redelivery, or already logged
                    payloads.append(msg.data)
                    self.last = sseq
        return payloads

    def _setup_sync(self) -> None:
        """One setup attempt (`BrokerHealth.setup` paces and classifies them)."""
        self._io.run(self._setup(), self.source.connect_timeout * 3 + 10)
        self._need_reset = False

    async def _connect(self) -> None:
        import nats

        if self._nc is not None and not self._nc.is_closed:
            return
        src = self.source

        link = self.link

        async def disconnected() -> None:
            if link.status == "running":
                link.stall("disconnected; reconnecting")

        async def reconnected() -> None:
            if link.status == "stalled":
                link.running()

        async def error(exc: Exception) -> None:
            if not link.failed:
                link.reason = f"{type(exc).__name__}: {exc}"

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
        """Find where the durable stands (never deleting it when it fits) and plan the
        reading: straight on from the durable, or a catch-up first."""
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy, RetentionPolicy
        from nats.js.errors import NotFoundError

        src = self.source
        await self._connect()
        try:
            info = await self._js.stream_info(src.stream)
        except NotFoundError:
            raise BrokerFailed(
                f"stream {src.stream!r} not found on {src.url}; create it first, e.g. "
                f"`nats stream add {src.stream} --subjects '{src.subject}'`"
            ) from None
        if info.config.retention == RetentionPolicy.WORK_QUEUE:
            raise BrokerFailed(
                f"stream {src.stream!r} uses work-queue retention, which needs one ack per "
                "message and one consumer per subject; use limits or interest retention"
            )
        await self._drop_catchup_consumer()
        consumer = None
        with contextlib.suppress(NotFoundError):
            consumer = await self._js.consumer_info(src.stream, src.durable)
        if consumer is not None and not self._fits(consumer):
            # Another configuration (subject, ack policy, push): not this source's cursor.
            with contextlib.suppress(NotFoundError):
                await self._js.delete_consumer(src.stream, src.durable)
            consumer = None
        self._hs = array("q")
        self._hd = array("q")
        self._consumer = src.durable
        if consumer is None:
            # A new durable right after the acknowledged position: it delivers what was
            # logged but not acknowledged again (skipped, but ack handles), then the rest.
            await self._create_durable(self.acked + 1)
            self._sent = self.acked
            self._expected_cseq = 1
        else:
            floor, delivered = consumer.ack_floor, consumer.delivered
            self._sent = floor.stream_seq
            low = min(floor.stream_seq, self.last)
            if delivered.stream_seq > low:
                # Delivered before, still pending at the durable: catch up by sequence.
                eph = await self._js.add_consumer(
                    src.stream,
                    ConsumerConfig(
                        ack_policy=AckPolicy.NONE,
                        deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                        opt_start_seq=low + 1,
                        filter_subject=src.subject,
                        inactive_threshold=300.0,
                        mem_storage=True,
                    ),
                )
                self._catchup = _CatchUp(
                    eph.name,
                    end=delivered.stream_seq,
                    floor=floor.stream_seq,
                    base=floor.consumer_seq,
                    top=delivered.consumer_seq,
                )
                self._consumer = eph.name
                self._expected_cseq = 1
            else:
                self._expected_cseq = delivered.consumer_seq + 1
        await self._new_inbox()

    def _fits(self, consumer: Any) -> bool:
        from nats.js.api import AckPolicy

        cfg = consumer.config
        return (
            cfg.filter_subject == self.source.subject
            and cfg.ack_policy == AckPolicy.ALL
            and cfg.deliver_subject is None
        )

    async def _create_durable(self, start: int) -> None:
        from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
        from nats.js.errors import BadRequestError

        src = self.source
        try:
            await self._js.add_consumer(
                src.stream,
                ConsumerConfig(
                    durable_name=src.durable,
                    ack_policy=AckPolicy.ALL,
                    ack_wait=src.ack_wait,
                    max_ack_pending=-1,
                    deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                    opt_start_seq=max(start, 1),
                    filter_subject=src.subject,
                ),
            )
        except BadRequestError as exc:
            raise BrokerFailed(f"cannot create consumer {src.durable!r}: {exc}") from None

    async def _new_inbox(self) -> None:
        """Pulled messages arrive on a fresh inbox, so stale deliveries of an earlier
        consumer or pull request cannot mix in; a callback buffers them."""
        if self._sub is not None:
            with contextlib.suppress(Exception):
                await self._sub.unsubscribe()
        self._buf = []
        self._consumer_gone = ""
        self._pull_done = asyncio.Event()
        self._inbox = self._nc.new_inbox()
        self._sub = await self._nc.subscribe(self._inbox, cb=self._on_message)

    async def _end_catchup(self) -> None:
        """The catch-up reached the durable's last delivery: read on from the durable."""
        catchup = self._catchup
        assert catchup is not None
        await self._drop_catchup_consumer()
        self._consumer = self.source.durable
        self._expected_cseq = catchup.top + 1
        await self._new_inbox()

    async def _drop_catchup_consumer(self) -> None:
        """Delete the catch-up consumer (if that fails it expires by itself)."""
        catchup, self._catchup = self._catchup, None
        if catchup is not None:
            with contextlib.suppress(Exception):
                await self._js.delete_consumer(self.source.stream, catchup.consumer)

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
        self._pull_status = status
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
        self._pull_status = ""
        self._pull_done.clear()
        await self._nc.publish(
            f"$JS.API.CONSUMER.MSG.NEXT.{src.stream}.{self._consumer}",
            json.dumps(request).encode(),
            reply=self._inbox,
        )
        # On a timeout, late deliveries still land in the buffer (and keep their order).
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._pull_done.wait(), src.fetch_timeout + src.connect_timeout)

    def _chunks(self, want: int) -> list[list[Any]]:
        src = self.source
        msgs, self._buf = self._buf[:want], self._buf[want:]
        return [msgs[i : i + src.fetch_batch] for i in range(0, len(msgs), src.fetch_batch)]

    async def _fetch(self, want: int) -> list[list[Any]]:
        """Pull until `want` messages are buffered or the consumer has no more."""
        src = self.source
        waited = False
        while len(self._buf) < want and self._nc.is_connected:
            n = min(src.fetch_batch, want - len(self._buf))
            before = len(self._buf)
            await self._pull(n, wait=False)
            if self._consumer_gone:
                raise _ConsumerGone(f"consumer {self._consumer!r}: {self._consumer_gone}")
            got = len(self._buf) - before
            if got >= n:
                continue
            if got > 0 or waited:
                break  # the consumer is drained
            waited = True  # nothing at all: wait once, up to fetch_timeout
            await self._pull(n, wait=True)
            if len(self._buf) == before:
                break
        return self._chunks(want)

    async def _fetch_catchup(self, want: int) -> list[list[Any]]:
        """Pull from the catch-up consumer until `want` messages after the position are
        buffered, its end is, or the server says it has nothing more (the rest up to the
        end was deleted from the stream, e.g. by its limits: the catch-up is over).

        Messages up to the position (already logged: ack handles only) do not count
        against `want` — else a restart whose frontier lags by more than one read would
        spend its first ticks reading few or no rows — but against `_CATCHUP_SKIPS`, so
        one call stays short however far the frontier lags."""
        src = self.source
        catchup = self._catchup
        assert catchup is not None
        taken = rows = skipped = 0  # messages to return, of them rows, the others
        while self._nc.is_connected:
            while taken < len(self._buf) and rows < want and not catchup.done:
                sseq = _sequences(self._buf[taken].reply)[0]
                if sseq > catchup.end:
                    catchup.done = True  # (not taken: the durable delivers it)
                    break
                taken += 1
                if sseq > self.last:
                    rows += 1
                else:
                    skipped += 1
                catchup.done = sseq == catchup.end
            if rows >= want or catchup.done or skipped >= _CATCHUP_SKIPS:
                break
            before = len(self._buf)
            await self._pull(src.fetch_batch, wait=False)
            if self._consumer_gone:
                raise _ConsumerGone(f"consumer {self._consumer!r}: {self._consumer_gone}")
            if len(self._buf) == before:
                if self._pull_status in ("404", "408"):
                    catchup.done = True
                break
        msgs, self._buf = self._buf[:taken], self._buf[taken:]
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
        raise BrokerFailed(
            f"not a JetStream ack subject: {reply!r}; the message did not come through a "
            "JetStream consumer (is the subject also published to outside the stream?)"
        )
    return int(tokens[base + 3]), int(tokens[base + 4])
