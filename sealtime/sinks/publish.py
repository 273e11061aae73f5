"""`Publish` sink: a collection's sealed epochs to subscribers over TCP (stream mode).

Created by ``col.publish("topic")``. The publisher starts when the dataflow is built so
subscribers can connect before the first tick. Each sealed range ``[lo, hi)`` is sent as
one Arrow batch per time (data columns + ``_diff``), then the lower frontier advances to
``hi``; a subscriber therefore receives whole epochs only (`sealtime.pubsub`). The
catalog that names topics lands with the durable-ingestion work; until then subscribers
connect by address (``Publish.address`` / ``Dataflow.publications``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

__all__ = ["Publish"]


class Publish:
    """Publish sealed epochs of a collection under `topic`."""

    def __init__(
        self,
        topic: str,
        partitions: int = 1,
        host: str = "127.0.0.1",
        port: int = 0,
        **options: Any,
    ) -> None:
        from ..engine.ingest import MIN_TIME
        from ..pubsub import Publisher

        if partitions != 1:
            raise ValueError(
                f"publish({topic!r}, partitions={partitions}): only one partition per collection "
                "is supported for now; publish several collections for more"
            )
        self.topic = topic
        self.publisher = Publisher(
            topic, host=host, port=port, lower=(MIN_TIME,), **options
        ).start()

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` subscribers connect to."""
        return self.publisher.address

    def commit(self, delta, lo: int, hi: int | None, info: dict[str, Any]) -> None:
        if delta is not None:
            table = delta.toArrow()
            if table.num_rows:
                times = table.column("_time").to_numpy()
                order = np.argsort(times, kind="stable")
                table = table.take(pa.array(order)).drop_columns(["_time"])
                times = times[order]
                cuts = np.flatnonzero(np.diff(times)) + 1
                for start, end in zip(np.r_[0, cuts], np.r_[cuts, len(times)]):
                    self.publisher.send(
                        int(times[start]), table.slice(int(start), int(end - start))
                    )
        self.publisher.advance_lower([] if hi is None else [hi])

    def close(self) -> None:
        self.publisher.close()
