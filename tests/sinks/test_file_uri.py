"""A ``file://`` data dir and sink path work end to end: a dataflow with a Parquet and a
Persist sink runs, is abandoned mid-run, resumes on the same URIs, and its committed
output equals an uninterrupted run on plain paths (issue 11, one filesystem layer)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

import sealtime as st
from sealtime.sinks.parquet import COMMITS
from sealtime.testing import write_jsonl_files

SCHEMA = {"k": "long", "v": "long", "ts": "long"}


def write_input(directory: Path, files: int = 4, per_file: int = 20) -> None:
    write_jsonl_files(
        directory,
        files,
        per_file,
        lambda i, j: {"k": j % 3, "v": i * 100 + j, "ts": i * 4000 + j * 100},
    )


def build(spark, data_dir: str, out: str, input_dir: Path) -> tuple[st.Dataflow, st.sinks.Parquet]:
    flow = st.Dataflow("u", data_dir=data_dir, spark=spark, checkpoint_every=2, record=False)
    src = st.sources.Files(str(input_dir), schema=SCHEMA, finite=True, settle=0, max_per_read=20)
    s = flow.source("s", src, time="ts", lateness="1s")
    windows = s.window(st.Tumbling("5s")).aggregate(by="k", n=st.count(), top=st.max("v"))
    totals = s.aggregate(by="k", total=st.sum("v"))
    parquet = st.sinks.Parquet(out)
    windows.sink(parquet)
    totals.sink(st.sinks.Persist("totals"))
    return flow, parquet


def outputs(flow: st.Dataflow, parquet: st.sinks.Parquet) -> tuple[list, list]:
    files = [pq.read_table(d) for d in parquet.directories() if any(Path(d).glob("*.parquet"))]
    windows = [row for table in files for row in table.to_pylist()]
    persist = next(s for _, s in flow.sinks if isinstance(s, st.sinks.Persist))
    totals = persist.read_arrow().to_pylist()
    key = lambda r: tuple(sorted(r.items()))  # noqa: E731
    return sorted(windows, key=key), sorted(totals, key=key)


def test_file_uri_data_dir_runs_and_resumes(spark, tmp_path):
    inputs = tmp_path / "in"
    write_input(inputs)

    plain, plain_sink = build(spark, str(tmp_path / "plain"), str(tmp_path / "plain-out"), inputs)
    plain.run()
    expected = outputs(plain, plain_sink)
    assert expected[0] and expected[1]

    data_uri = "file://" + str(tmp_path / "uri")
    out_uri = "file://" + str(tmp_path / "uri-out")
    flow, sink = build(spark, data_uri, out_uri, inputs)
    assert flow.data_dir == str(tmp_path / "uri")  # normalized to the local path
    flow.run(ticks=3)
    committed_before = len(sink.commits())
    assert committed_before >= 1
    del flow, sink  # abandoned mid-run: a restart on the same URIs resumes

    flow, sink = build(spark, data_uri, out_uri, inputs)
    flow.run()
    assert outputs(flow, sink) == expected
    # the shards live under the data dir, the commit records under the sink's path
    assert (tmp_path / "uri" / "shards" / "u.totals").is_dir()
    assert len(list((tmp_path / "uri-out" / COMMITS).glob("*.json"))) == len(sink.commits())
    assert len(sink.commits()) > committed_before
