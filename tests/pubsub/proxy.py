"""A fault-injecting TCP proxy for pub-sub tests: cuts connections, delays and duplicates
frames travelling from the publisher to the subscriber.

It understands only the frame prefix (12 bytes: magic, header and payload lengths), so it
forwards whole frames and can duplicate one exactly or cut a connection after (or in the
middle of) one. Faults are drawn from a seeded `random.Random`, so a failing run can be
replayed.
"""

from __future__ import annotations

import contextlib
import random
import socket
import struct
import threading
import time

_PREFIX = struct.Struct(">2sBBII")


class FaultProxy:
    """Listens on loopback and forwards to `target`, injecting faults downstream.

    * `cut`: probability, per frame, that the connection is cut (both sides closed);
      half of the cuts happen in the middle of the frame.
    * `duplicate`: probability that a frame is sent twice.
    * `delay`: probability that a frame is held back for up to `max_delay` seconds.
    """

    def __init__(
        self,
        target: tuple[str, int],
        *,
        seed: int = 0,
        cut: float = 0.0,
        duplicate: float = 0.0,
        delay: float = 0.0,
        max_delay: float = 0.02,
    ) -> None:
        self.target = target
        self.rng = random.Random(seed)
        self.cut, self.duplicate, self.delay, self.max_delay = cut, duplicate, delay, max_delay
        self.cuts = self.duplicates = self.delays = self.frames = 0
        self._lock = threading.Lock()
        self._server = socket.create_server(("127.0.0.1", 0))
        self.address = self._server.getsockname()[:2]
        self._closed = False
        self._socks: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _draw(self) -> tuple[bool, bool, float]:
        with self._lock:
            cut = self.rng.random() < self.cut
            dup = self.rng.random() < self.duplicate
            wait = self.rng.random() * self.max_delay if self.rng.random() < self.delay else 0.0
            return cut, dup, wait

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=10)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self._socks += [client, upstream]
            threading.Thread(target=self._up, args=(client, upstream), daemon=True).start()
            threading.Thread(target=self._down, args=(upstream, client), daemon=True).start()

    @staticmethod
    def _kill(*socks: socket.socket) -> None:
        for s in socks:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                s.close()

    def _up(self, client: socket.socket, upstream: socket.socket) -> None:
        try:
            while data := client.recv(65536):
                upstream.sendall(data)
        except OSError:
            pass
        self._kill(client, upstream)

    def _down(self, upstream: socket.socket, client: socket.socket) -> None:
        buf = bytearray()
        try:
            while True:
                data = upstream.recv(1 << 20)
                if not data:
                    break
                buf += data
                while len(buf) >= _PREFIX.size:
                    _, _, _, hlen, plen = _PREFIX.unpack_from(buf)
                    end = _PREFIX.size + hlen + plen
                    if len(buf) < end:
                        break
                    frame = bytes(buf[:end])
                    del buf[:end]
                    self.frames += 1
                    cut, dup, wait = self._draw()
                    if wait:
                        self.delays += 1
                        time.sleep(wait)
                    if cut:
                        self.cuts += 1
                        if self.rng.random() < 0.5:
                            client.sendall(frame[: len(frame) // 2])
                        raise ConnectionAbortedError("injected cut")
                    client.sendall(frame)
                    if dup:
                        self.duplicates += 1
                        client.sendall(frame)
        except OSError:
            pass
        self._kill(client, upstream)

    def close(self) -> None:
        self._closed = True
        self._kill(self._server, *self._socks)
