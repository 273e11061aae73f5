"""Process entry points for the multi-process storage tests (spawned, so importable)."""

from __future__ import annotations

import pyarrow as pa

from sealtime.storage import MetadataStore, Shard


def append_worker(url, schema, name, root, tag, barrier, results) -> None:
    """Race one compare_and_append(0 -> 10) against the other processes."""
    store = MetadataStore.open(url, schema=schema)
    try:
        shard = Shard.open(store, name, root)
        batch = pa.table({"w": [tag] * 3, "_time": [0, 4, 9], "_diff": [1, 1, 1]})
        barrier.wait(120)
        res = shard.compare_and_append(batch, 0, 10)
        results.put((tag, res.ok, res.upper))
    finally:
        store.close()
