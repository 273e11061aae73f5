"""`ShardHistory`: view history in a durable shard — a subscriber resumes with no gap and no
duplicate after the publishing process restarted, and compaction is honoured."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sealtime.pubsub import Epoch, Progress, Publisher, Snapshot, SubscribeError, subscribe_view
from sealtime.pubsub.durable import ShardHistory
from sealtime.storage import MetadataStore, Shard
from sealtime.time import Antichain

SCHEMA = pa.schema([("k", pa.string())])


def _publish(pub: Publisher, history: ShardHistory, t: int, pairs: list) -> None:
    """What the Publish sink does for one sealed time: shard first, then send, then seal."""
    upd = pa.Table.from_arrays(
        [pa.array([k for k, _ in pairs]), pa.array([d for _, d in pairs], pa.int64())],
        names=["k", "_diff"],
    )
    timed = upd.append_column("_time", pa.array([t] * len(pairs), pa.int64()))
    history.shard.compare_and_append(timed, t, t + 1).expect_ok()
    pub.send(t, upd)
    pub.advance_lower([t + 1])
    history.seal(t + 1)


def _events(sub, n):
    return [sub.next_event(timeout=10) for _ in range(n)]


def test_resume_after_publisher_restart_no_gap_no_duplicate(tmp_path):
    store = MetadataStore.open(tmp_path)
    shard = Shard.create(store, "v", SCHEMA, tmp_path)
    history = ShardHistory(shard)
    pub = Publisher("v", history=history).start()
    sub = subscribe_view(pub.address, timeout=10)
    _publish(pub, history, 0, [("a", 1), ("b", 1)])
    _publish(pub, history, 1, [("a", -1)])
    first = _events(sub, 6)
    assert isinstance(first[0], Snapshot) and first[0].table.num_rows == 0
    assert [type(e).__name__ for e in first[1:]] == [
        "Progress",
        "Epoch",
        "Progress",
        "Epoch",
        "Progress",
    ]
    sub.close()
    pub.close()
    # "Restart": new history object, new publisher, same shard.
    history2 = ShardHistory(Shard.open(store, "v", tmp_path))
    assert history2.sealed == 2
    pub2 = Publisher("v", lower=[2], history=history2).start()
    _publish(pub2, history2, 2, [("c", 1)])
    resumed = subscribe_view(pub2.address, resume_from=[1], timeout=10)
    got = _events(resumed, 3)
    epochs = [(e.time, e.table.to_pylist()) for e in got if isinstance(e, Epoch)]
    assert epochs == [(1, [{"k": "a", "_diff": -1}]), (2, [{"k": "c", "_diff": 1}])]
    assert [e.lower for e in got if isinstance(e, Progress)][-1] == Antichain([3])
    fresh = subscribe_view(pub2.address, timeout=10)
    snap = fresh.next_event(timeout=10)
    assert sorted(r["k"] for r in snap.table.to_pylist()) == ["b", "c"]
    # Compaction: resuming below since is refused with the reason; snapshots still work.
    history2.compact(1)
    with pytest.raises(SubscribeError, match="compacted"):
        subscribe_view(pub2.address, resume_from=[1], timeout=10)
    ok = subscribe_view(pub2.address, resume_from=[2], timeout=10)
    assert isinstance(ok.next_event(timeout=10), Epoch)
    for s in (resumed, fresh, ok):
        s.close()
    pub2.close()
    store.close()


def test_open_epoch_served_from_memory_until_sealed(tmp_path):
    """Between the shard append and `seal`, a new subscriber gets each update once."""
    store = MetadataStore.open(tmp_path)
    history = ShardHistory(Shard.create(store, "v", SCHEMA, tmp_path))
    pub = Publisher("v", history=history).start()
    upd = pa.Table.from_arrays([pa.array(["a"]), pa.array([1], pa.int64())], names=["k", "_diff"])
    history.shard.compare_and_append(
        upd.append_column("_time", pa.array([0], pa.int64())), 0, 1
    ).expect_ok()
    pub.send(0, upd)
    pub.advance_lower([1])
    # Not sealed yet: the shard batch is invisible, the in-memory copy is served.
    assert history.snapshot(Antichain([1])).num_rows == 1
    assert [t for t, _ in history.updates_from(Antichain([0]))] == [0]
    history.seal(1)
    assert history.snapshot(Antichain([1])).num_rows == 1
    assert [t for t, _ in history.updates_from(Antichain([0]))] == [0]
    pub.close()
    store.close()
