"""The Parquet sink commits through the dataflow's metadata store, fenced by the data
dir's owner (issue 32): a fenced writer writes no commit record; a record lost in a crash
is written again from the store; attempts no record names are deleted; record files of
earlier versions are continued. No Spark: the commits are made by hand, as the engine
would after `write`."""

from __future__ import annotations

import json

import pytest

from sealtime.errors import FencedError, WriterConflictError
from sealtime.sinks.base import SinkBinding
from sealtime.sinks.parquet import COMMIT_NAMESPACE, COMMITS, Parquet
from sealtime.storage import MetadataStore
from sealtime.storage.fs import DataFS
from sealtime.storage.ownership import ProcessIdentity, acquire_lease
from sealtime.time.order import MIN_TIME


def bound(path, store) -> Parquet:
    sink = Parquet(str(path))
    sink.bind(SinkBinding("f", "/d", store, "c", None), owner=store)
    return sink


def commit(sink: Parquet, seq: int, lo: int, hi: int) -> dict:
    """What `write` would have produced: a commit directory of this attempt."""
    record = {"seq": seq, "lower": lo, "upper": hi, "dir": f"commit-{seq:08d}-x{hi}", "tick": seq}
    sink.fs.write_bytes(f"{record['dir']}/part-0.parquet", b"rows")
    sink.publish(record, lo, hi, lo, None)
    return record


def record_files(path) -> list[str]:
    return sorted(DataFS.from_uri(str(path)).names(COMMITS))


@pytest.fixture
def stores(tmp_path):
    opened = []

    def open_() -> MetadataStore:
        opened.append(MetadataStore.open(str(tmp_path / "meta")))
        return opened[-1]

    yield open_
    for s in opened:
        s.close()


def test_a_fenced_writer_writes_no_commit_record(tmp_path, stores):
    out = tmp_path / "out"
    old_store, new_store = stores(), stores()
    acquire_lease(old_store, "/d", "f", heartbeat=False)
    old = bound(out, old_store)
    first = old.durable_upper()
    assert first == MIN_TIME
    commit(old, 0, first, 10)
    # Another process takes the data dir over; the old one wakes up and commits.
    acquire_lease(
        new_store, "/d", "f", takeover=True, process=ProcessIdentity("h2", 7), heartbeat=False
    )
    with pytest.raises(FencedError):
        commit(old, 1, 10, 20)
    assert record_files(out) == ["00000000.json"]
    new = bound(out, new_store)
    assert new.durable_upper() == 10
    commit(new, 1, 10, 30)
    assert [c["upper"] for c in new.commits()] == [10, 30]
    assert [c["upper"] for c in Parquet(str(out)).commits()] == [10, 30]  # what readers see


def test_a_record_lost_in_a_crash_is_written_from_the_store(tmp_path, stores):
    out = tmp_path / "out"
    store = stores()
    acquire_lease(store, "/d", "f", heartbeat=False)
    sink = bound(out, store)
    commit(sink, 0, sink.durable_upper(), 10)
    last = commit(sink, 1, 10, 20)
    DataFS.from_uri(str(out)).delete_file(f"{COMMITS}/00000001.json")  # crash before the file
    restarted = bound(out, store)
    assert restarted.durable_upper() == 20
    assert json.loads(DataFS.from_uri(str(out)).read_bytes(f"{COMMITS}/00000001.json")) == last
    assert store.kv_get(COMMIT_NAMESPACE, restarted.fs.location)["seq"] == 1


def test_attempts_no_record_names_are_deleted_when_the_sink_starts(tmp_path, stores):
    out = tmp_path / "out"
    store = stores()
    acquire_lease(store, "/d", "f", heartbeat=False)
    sink = bound(out, store)
    kept = commit(sink, 0, sink.durable_upper(), 10)
    fs = DataFS.from_uri(str(out))
    fs.write_bytes("commit-00000001-deadbeef/part-0.parquet", b"uncommitted")
    fs.write_bytes("commit-00000001-e1-c0ffee/part-0.parquet", b"uncommitted")
    # An attempt in flight of a newer owner (this process would be the fenced one).
    fs.write_bytes("commit-00000001-e9-decade/part-0.parquet", b"in flight")
    restarted = bound(out, store)
    assert restarted.durable_upper() == 10
    assert sorted(n for n in fs.names() if n.startswith("commit-")) == sorted(
        [kept["dir"], "commit-00000001-e9-decade"]
    )


def test_records_of_an_earlier_version_are_continued_with_a_compare(tmp_path, stores):
    out = tmp_path / "out"
    legacy = Parquet(str(out))  # not attached: record files only, as before
    commit(legacy, 0, legacy.durable_upper(), 10)
    store = stores()
    acquire_lease(store, "/d", "f", heartbeat=False)
    sink = bound(out, store)
    assert sink.durable_upper() == 10
    with pytest.raises(WriterConflictError, match="moved past 5"):
        sink.publish({"seq": 1, "lower": 5, "upper": 30, "dir": "x"}, 5, 30, 5, None)
    commit(sink, 1, 10, 30)
    assert [c["upper"] for c in sink.commits()] == [10, 30]
    with pytest.raises(WriterConflictError):  # (also a RuntimeError, as before)
        sink.publish({"seq": 2, "lower": 10, "upper": 40, "dir": "y"}, 10, 40, 10, None)
    assert record_files(out) == ["00000000.json", "00000001.json"]
