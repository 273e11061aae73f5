"""A data dir that is not a local path, end to end (issue 11: one filesystem layer).

Spark reaches the data dir through Hadoop, sealtime's driver and kernels through
`pyarrow.fs`. Here both are real and neither is the local-path code: Spark sees
``viewfs://<table>/data/...`` (Hadoop's ViewFS, mounted on a temporary directory), and
sealtime reaches the same URI through a `SubTreeFileSystem` registered for that prefix,
so the ingest log, shards, checkpoints and the arrangement runs that Spark tasks read
and write all go through the non-local paths (no memory maps, no hard links, no
renames). The metadata store is PostgreSQL, as a non-local data dir requires.

The dataflow (windows, a running aggregate, a join, a distinct) runs, is abandoned
mid-run, resumes, and its outputs equal an uninterrupted run on a local path.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pyarrow.fs as pafs
import pytest

import sealtime as st
from sealtime.storage.fs import DataFS, register_filesystem, unregister_filesystem
from sealtime.testing import write_jsonl_files
from tests.storage.conftest import _drop_schema, require_postgres

SCHEMA = {"k": "long", "v": "long", "ts": "long"}


def write_input(directory: Path, files: int = 5, per_file: int = 24) -> None:
    write_jsonl_files(
        directory,
        files,
        per_file,
        lambda i, j: {"k": j % 4, "v": (i * 37 + j * 11) % 50, "ts": i * 3000 + j * 120},
    )


def build(spark, data_dir: str, metadata: str | None, inputs: Path):
    flow = st.Dataflow(
        "r", data_dir=data_dir, metadata=metadata, spark=spark, checkpoint_every=2, record=False
    )
    src = st.sources.Files(str(inputs), schema=SCHEMA, finite=True, settle=0, max_per_read=24)
    s = flow.source("s", src, time="ts", lateness="1s")
    windows = s.window(st.Tumbling("5s")).aggregate(by="k", n=st.count(), top=st.max("v"))
    totals = s.aggregate(by="k", total=st.sum("v"))
    joined = s.join(totals, on="k").select("k", "v", "total")
    values = s.select("k", "v").distinct()
    sinks = {}
    for name, col in [("windows", windows), ("joined", joined), ("values", values)]:
        sinks[name] = st.sinks.Persist(name)
        col.sink(sinks[name])
    return flow, sinks


def contents(sinks) -> dict[str, Counter]:
    """Each sink's updates as a multiset of (row, time, diff), not consolidated: every
    operator's output is the canonical stream of differences, so a restart that catches
    up on logged ticks in one step must emit exactly what the uninterrupted run did."""
    key = lambda r: json.dumps(r, sort_keys=True, default=str)  # noqa: E731
    return {name: Counter(map(key, s.read_arrow().to_pylist())) for name, s in sinks.items()}


@pytest.fixture
def remote_dir(spark, tmp_path):
    """``viewfs://<table>/data`` for Spark and for sealtime, on `tmp_path/remote`."""
    table = f"t{uuid.uuid4().hex[:10]}"
    base = tmp_path / "remote"
    base.mkdir()
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    hadoop.set(f"fs.viewfs.mounttable.{table}.link./data", f"file://{base}")
    prefix = f"viewfs://{table}/data"
    register_filesystem(prefix, pafs.SubTreeFileSystem(str(base), pafs.LocalFileSystem()), root="")
    yield prefix, base
    unregister_filesystem(prefix)
    hadoop.unset(f"fs.viewfs.mounttable.{table}.link./data")


@pytest.fixture
def postgres_url():
    url = require_postgres()
    schema = f"sealtime_remote_{uuid.uuid4().hex[:8]}"
    yield f"{url}?schema={schema}", url, schema
    _drop_schema(url, schema)


def test_dataflow_on_a_non_local_data_dir_runs_resumes_and_equals_a_local_run(
    spark, tmp_path, remote_dir, postgres_url
):
    inputs = tmp_path / "in"
    write_input(inputs)
    local, local_sinks = build(spark, str(tmp_path / "local"), None, inputs)
    local.run()
    expected = contents(local_sinks)
    assert all(expected.values())

    prefix, base = remote_dir
    data_dir = f"{prefix}/flow"
    metadata = postgres_url[0]
    assert not DataFS.from_uri(data_dir).local  # the non-local code paths, not os/mmap
    flow, sinks = build(spark, data_dir, metadata, inputs)
    flow.run(ticks=3)
    del flow, sinks  # abandoned mid-run: a restart on the same URIs resumes

    flow, sinks = build(spark, data_dir, metadata, inputs)
    flow.run()
    assert contents(sinks) == expected
    # Everything landed under the mounted directory: log, shards and arrangement runs.
    state = list((base / "flow" / "state").rglob("*.arrow"))
    assert state, "arrangement runs are written under the data dir"
    assert list((base / "flow" / "shards").iterdir())
    assert not list((base / "flow").rglob("*.tmp"))
