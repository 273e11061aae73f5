"""The job of the disk-full test (`sealtime run tests.cli.disk_job:build`): JSON lines
with an incompressible payload (``DISK_INPUT`` names the directory) -> a Persist sink,
so the ingest log and the shard fill a small filesystem within a few ticks."""

from __future__ import annotations

import os

import sealtime as st

SCHEMA = {"i": "long", "payload": "string"}


def build(data_dir: str, spark=None) -> st.Dataflow:
    flow = st.Dataflow("disk", data_dir=data_dir, spark=spark, record=False)
    files = st.sources.Files(
        os.environ["DISK_INPUT"], format="jsonl", schema=SCHEMA, finite=True, settle=0
    )
    flow.source("rows", files).sink(st.sinks.Persist("rows"))
    return flow
