"""`sealtime.storage.fs.DataFS`: one layer for every driver-side file operation.

Run on a local path, on ``file://`` URIs, and on two non-local pyarrow filesystems to
prove the object-store code path: a `SubTreeFileSystem` registered under a scheme of
its own (no network), and S3 served by moto on loopback (skipped when ``moto[server]``
is not installed; it is in the ``test`` extra).
"""

from __future__ import annotations

import os
import uuid

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import sealtime as st
from sealtime.engine.bindings import BindingPart
from sealtime.engine.checkpoint import remove
from sealtime.engine.ingest_log import LogFile
from sealtime.engine.replay import link_part
from sealtime.errors import ConfigError, StorageError
from sealtime.sinks.parquet import COMMITS, LEGACY_COMMIT_LOG, Parquet
from sealtime.spark.spill import SpillStore
from sealtime.storage import MetadataStore, Shard
from sealtime.storage.fs import (
    HADOOP_SCHEMES,
    DataFS,
    FileSystemError,
    register_filesystem,
    unregister_filesystem,
)

BUCKET = "sealtime-test"  # the bucket of the `s3_server` fixture (tests/conftest.py)


# ----------------------------------------------------------------------- fixtures
@pytest.fixture
def s3_dir(s3_server) -> DataFS:
    d = DataFS.from_uri(f"s3a://{s3_server['bucket']}/t-{uuid.uuid4().hex[:8]}")
    yield d
    d.delete_dir()


@pytest.fixture
def subtree_dir(tmp_path) -> DataFS:
    """A non-local filesystem without network: pyarrow's SubTreeFileSystem over a temp
    directory, registered under ``sub://box``."""
    prefix = f"sub://box{uuid.uuid4().hex[:8]}"
    register_filesystem(
        prefix, pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), root=""
    )
    yield DataFS.from_uri(prefix + "/data")
    unregister_filesystem(prefix)


@pytest.fixture(params=["path", "file_uri", "subtree", "s3"])
def any_dir(request, tmp_path) -> DataFS:
    """One DataFS per kind of location."""
    if request.param == "path":
        return DataFS.from_uri(str(tmp_path / "d"))
    if request.param == "file_uri":
        return DataFS.from_uri("file://" + str(tmp_path / "d"))
    return request.getfixturevalue("subtree_dir" if request.param == "subtree" else "s3_dir")


# ------------------------------------------------------------------ every filesystem
def test_write_read_list_rename_delete(any_dir: DataFS):
    d = any_dir
    d.write_bytes("a/one.json", b"1")
    d.write_bytes("a/b/two.json", b"22")
    assert d.read_bytes("a/one.json") == b"1"
    assert d.exists("a/one.json") and d.is_dir("a") and not d.exists("nope")
    assert [(e.rel, e.is_dir, e.size) for e in d.list("a", recursive=True)] == [
        ("a/b", True, 0),
        ("a/b/two.json", False, 2),
        ("a/one.json", False, 1),
    ]
    assert sorted(d.names("a")) == ["b", "one.json"]
    assert d.names("missing") == [] and d.list("missing") == []
    d.write_bytes("a/one.json", b"replaced")  # atomic replace of an existing file
    assert d.read_bytes("a/one.json") == b"replaced"
    d.rename("a/one.json", "c/moved.json")
    assert not d.exists("a/one.json") and d.read_bytes("c/moved.json") == b"replaced"
    assert d.delete_file("c/moved.json") and not d.delete_file("c/moved.json")
    assert d.delete_files(["a/b/two.json", "gone"]) == 1
    d.write_bytes("z/x", b"x")
    d.delete_dir("z")
    d.delete_dir("z")  # missing: no error
    assert not d.exists("z")
    with d.open_output("s/stream.bin") as f:
        f.write(b"streamed")
    with d.open_input("s/stream.bin") as f:
        assert f.read() == b"streamed"
    with pytest.raises(FileNotFoundError):
        d.read_bytes("s/none")


def test_spellings_round_trip(any_dir: DataFS):
    d = any_dir
    loc = d.join("x", "y.parquet")
    assert d.rel(loc) == "x/y.parquet"
    assert d.rel(d.spark_uri("x/y.parquet")) == "x/y.parquet"
    assert d.rel(d.location + "/../elsewhere") is None
    assert d.child("x").join("y.parquet") == loc
    assert "://" in d.spark_uri("x")  # always fully qualified for Spark
    with pytest.raises(StorageError, match="leaves its directory"):
        d.join("../up")


def test_link_or_copy(any_dir: DataFS, tmp_path):
    src = DataFS.from_uri(str(tmp_path / "src"))
    src.write_bytes("log.parquet", b"rows")
    how = any_dir.link_or_copy(src.join("log.parquet"), "log/log.parquet")
    assert how == ("link" if any_dir.local else "copy")
    assert any_dir.read_bytes("log/log.parquet") == b"rows"
    assert any_dir.link_or_copy(src.join("log.parquet"), "log/log.parquet") == "exists"
    if any_dir.local:
        assert os.path.samefile(src.path("log.parquet"), any_dir.path("log/log.parquet"))
    # and back: from this filesystem to a local directory (a copy unless both are local)
    back = DataFS.from_uri(str(tmp_path / "back"))
    assert back.link_or_copy(any_dir.join("log/log.parquet"), "c") in ("link", "copy")
    assert back.read_bytes("c") == b"rows"


def test_sync_and_durability(any_dir: DataFS):
    d = any_dir
    d.write_bytes("dir/f1", b"1", sync=False)
    d.write_bytes("dir/sub/f2", b"2", sync=False)
    if d.local:
        assert d.sync(["dir"]) == 2  # a directory: every file under it
        assert d.sync(["dir/f1"]) == 1
        assert d.atomic_rename and d.hard_links and "fsync" in d.durability
    else:
        assert d.sync(["dir"]) == 0  # a completed put is as durable as the store makes it
        assert not d.atomic_rename and not d.hard_links
        assert "no atomic rename" in d.durability or "assumed" in d.durability
        assert d.needs_shared_metadata


# ------------------------------------------------------------------ scheme mapping
def test_file_uri_is_local(tmp_path):
    d = DataFS.from_uri("file://" + str(tmp_path))
    assert d.local and d.location == str(tmp_path) and d.path() == str(tmp_path)
    assert d.spark_uri("a") == f"file://{tmp_path}/a"
    assert DataFS.from_uri("file:" + str(tmp_path)).location == str(tmp_path)  # Hadoop's form
    with pytest.raises(ConfigError, match="three slashes"):
        DataFS.from_uri("file://host/x")


def test_hadoop_schemes_map_to_pyarrow():
    assert HADOOP_SCHEMES["s3a"] == "s3" and HADOOP_SCHEMES["abfss"] == "abfs"
    gs = DataFS.from_uri("gs://bucket/flows/a")
    assert (gs.type_name, gs.path("x"), gs.spark_uri("x")) == (
        "gcs",
        "bucket/flows/a/x",
        "gs://bucket/flows/a/x",
    )
    az = DataFS.from_uri("abfss://box@acct.dfs.core.windows.net/flows")
    assert (az.type_name, az.path("x"), az.join("x")) == (
        "abfs",
        "box/flows/x",
        "abfss://box@acct.dfs.core.windows.net/flows/x",
    )
    s3 = DataFS.from_uri("s3a://bucket/p", hadoop_conf={"fs.s3a.endpoint.region": "eu-west-1"})
    assert (s3.type_name, s3.path("x"), s3.spark_uri("x")) == (
        "s3",
        "bucket/p/x",
        "s3a://bucket/p/x",
    )
    assert s3.fs.region == "eu-west-1"


@pytest.mark.parametrize(
    ("uri", "fix"),
    [
        ("wasbs://c@acct.blob.core.windows.net/d", "abfss://"),
        ("oss://bucket/d", "register_filesystem"),
        ("s3a://bucket/d?endpoint_override=x", "hadoop_conf"),
        ("s3a:///d", "s3a://<bucket>/<path>"),
    ],
)
def test_unreachable_scheme_names_setting_and_fix(uri, fix):
    with pytest.raises(ConfigError) as err:
        DataFS.from_uri(uri, setting="Parquet(path)")
    assert str(err.value).startswith(f"Parquet(path)={uri!r}")
    assert fix in str(err.value)


def test_credentials_in_a_uri_are_refused_without_repeating_them():
    with pytest.raises(ConfigError) as err:
        DataFS.from_uri("s3a://key:s3cr3t@bucket/d", setting="Parquet(path)")
    assert str(err.value).startswith("Parquet(path): ")
    assert "fs.s3a.access.key" in str(err.value)
    assert "s3cr3t" not in str(err.value)


@pytest.mark.skipif(bool(os.environ.get("ARROW_LIBHDFS_DIR")), reason="libhdfs configured")
def test_hdfs_without_libhdfs_names_the_fix():
    with pytest.raises(ConfigError, match=r"data_dir='hdfs://.*ARROW_LIBHDFS_DIR"):
        DataFS.from_uri("hdfs://127.0.0.1:1/flows")


def test_errors_are_storage_errors(tmp_path):
    d = DataFS.from_uri(str(tmp_path))
    d.write_bytes("file", b"x")
    with pytest.raises(FileSystemError, match="file") as err:
        d.write_bytes("file/below", b"y")  # a file where a directory should be
    assert isinstance(err.value, StorageError) and isinstance(err.value, OSError)


# -------------------------------------------------- adopters on a non-local filesystem
def test_shard_on_object_store(s3_dir: DataFS, tmp_path):
    store = MetadataStore.open(str(tmp_path))
    try:
        shard = Shard.create(store, "flow.out", pa.schema([("w", pa.string())]), s3_dir.location)
        assert shard.directory == s3_dir.join("flow.out")
        t = pa.table({"w": ["a", "b"], "_time": [0, 1], "_diff": [1, 1]})
        assert shard.compare_and_append(t, 0, 2).ok
        assert not shard.compare_and_append(t, 0, 2).ok  # mismatch: its own file deleted
        assert shard.compare_and_append(
            pa.table({"w": ["a"], "_time": [2], "_diff": [-1]}), 2, 3
        ).ok
        assert shard.snapshot_arrow(2).to_pylist() == [{"w": "b", "_time": 2, "_diff": 1}]
        assert all(f.startswith(f"s3a://{BUCKET}/") for b in shard.batches() for f in b.files)
        # a staging directory written by an external writer (as Spark would)
        staging = shard.new_staging_path()
        staged = DataFS.from_uri(staging)
        import pyarrow.parquet as pq

        pq.write_table(
            pa.table({"w": ["c"], "_time": [3], "_diff": [1]}),
            staged.path("part-0.parquet"),
            filesystem=staged.fs,
        )
        staged.write_bytes("_SUCCESS", b"")
        assert shard.compare_and_append([staging], 3, 4).ok
        assert shard.spark_uri(staging) == staging  # Spark reaches it as s3a://
        shard.downgrade_since(3)
        assert shard.compact(grace_seconds=0) is not None
        assert sorted(r["w"] for r in shard.snapshot_arrow(3).to_pylist()) == ["b", "c"]
        s3_dir.write_bytes("flow.out/orphan.parquet", b"junk")
        assert shard.collect_garbage(grace_seconds=0) >= 1
        assert not s3_dir.exists("flow.out/orphan.parquet")
    finally:
        store.close()


def test_parquet_commit_records_on_object_store(s3_dir: DataFS):
    sink = Parquet(s3_dir.join("out"))
    first = sink.durable_upper()
    for seq, (lo, hi) in enumerate([(first, 10), (10, 20)]):
        sink.publish(
            {"seq": seq, "lower": lo, "upper": hi, "dir": f"commit-{seq:08d}"}, lo, hi, lo, None
        )
    assert [c["upper"] for c in sink.commits()] == [10, 20] and sink.durable_upper() == 20
    assert sorted(s3_dir.names(f"out/{COMMITS}")) == ["00000000.json", "00000001.json"]
    assert Parquet(s3_dir.join("out")).durable_upper() == 20  # a fresh handle reads them
    with pytest.raises(RuntimeError, match="moved past"):
        sink.publish({"seq": 2, "lower": 10, "upper": 30, "dir": "x"}, 10, 30, 10, None)


def test_parquet_reads_a_legacy_commit_log(tmp_path):
    d = DataFS.from_uri(str(tmp_path))
    d.write_bytes(
        LEGACY_COMMIT_LOG, b'{"seq": 0, "upper": 5, "dir": "commit-00000000"}\n{"seq": 1, "up'
    )
    sink = Parquet(str(tmp_path))
    assert sink.durable_upper() == 5  # the torn line is not a commit
    sink.publish({"seq": 1, "lower": 5, "upper": 9, "dir": "commit-00000001"}, 5, 9, 5, None)
    assert [c["upper"] for c in sink.commits()] == [5, 9]


def test_checkpoint_spill_and_replay_links_on_object_store(s3_dir: DataFS, tmp_path):
    s3_dir.write_bytes("checkpoints/00000003/n0001/state.json", b"{}")
    remove(s3_dir.join("checkpoints", "00000003"))
    assert not s3_dir.exists("checkpoints/00000003/n0001/state.json")

    spill = SpillStore(None, s3_dir.join("spill"))
    for gen in (1, 2, 3):
        s3_dir.write_bytes(f"spill/buffer/g{gen:08d}/part-0.parquet", b"x")
    spill.live["buffer"] = spill.path("buffer", 3)
    spill.pinned = {spill.path("buffer", 2)}
    spill.collect_garbage()
    assert sorted(s3_dir.names("spill/buffer")) == ["g00000002", "g00000003"]
    spill.remove_all()
    assert not s3_dir.exists("spill/buffer/g00000003/part-0.parquet")

    local = DataFS.from_uri(str(tmp_path / "old"))
    local.write_bytes("log/s/0001.parquet", b"rows")
    part = BindingPart(1, 2, 1, files=(LogFile(local.join("log/s/0001.parquet"), 1, 1, 1),))
    linked = link_part(part, s3_dir.join("log", "s"))
    assert linked.files[0].path == s3_dir.join("log/s/0001.parquet")
    assert s3_dir.read_bytes("log/s/0001.parquet") == b"rows"
    assert link_part(linked, s3_dir.join("log", "s")) == linked  # resumed replay: no-op


def test_dataflow_on_object_store_needs_postgres_and_says_why(subtree_dir: DataFS):
    # (with PostgreSQL it runs: tests/engine/test_remote_data_dir.py)
    with pytest.raises(ConfigError, match=r"Dataflow\(data_dir='sub://.*metadata='postgresql://"):
        st.Dataflow("f", data_dir=subtree_dir.location)
    with pytest.raises(ConfigError, match=r"Dataflow\(data_dir\)='oss://"):
        st.Dataflow("f", data_dir="oss://bucket/x")
