"""`sealtime status` on a stopped job and on a running one (a job on a thread)."""

from __future__ import annotations

import json
import shutil
import tempfile

import sealtime as st
from sealtime.cli import main
from tests.ui.conftest import BASE


def test_status_of_stopped_job(spark, capsys):
    data_dir = tempfile.mkdtemp(prefix="sealtime-status-")
    try:
        flow = st.Dataflow("stopped", data_dir=data_dir, spark=spark, checkpoint_every=2)
        rows = [(BASE + 1000 * t, {"k": "a", "v": t}) for t in range(4)]
        src = flow.source("s", st.sources.Rows({"k": "string", "v": "long"}, rows))
        src.aggregate(by="k", n=st.count()).sink(st.sinks.Persist("counts"))
        flow.run()
        flow.close()

        assert main(["status", "--data-dir", data_dir, "--json"]) == 0
        status = json.loads(capsys.readouterr().out)
        (f,) = status["dataflows"]
        assert f["name"] == "stopped"
        assert f["last_binding"]["tick"] == f["ticks"] >= 4
        s = f["sources"]["s"]
        assert s["frontier"] is None and s["exhausted"]  # finished: everything sealed
        assert s["position"] == s["acknowledged"] == 4
        ops = {o["name"]: o for o in f["operators"]}
        assert ops["aggregate"]["kind"] == "reduce" and ops["aggregate"]["frontier"] is None
        assert [c["tick"] for c in f["checkpoints"]]
        (shard,) = [x for x in status["shards"] if x["name"] == "stopped.counts"]
        assert shard["upper"] is None

        assert main(["status", "--data-dir", data_dir]) == 0
        text = capsys.readouterr().out
        assert "dataflow stopped" in text and "last binding: tick" in text
        assert "#4 reduce aggregate" in text and "stopped.counts" in text
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


def test_status_of_running_job(job, capsys):
    job.wait_ticks(1)
    data_dir = job.flow.data_dir
    assert main(["status", "--data-dir", data_dir, "--json"]) == 0
    first = json.loads(capsys.readouterr().out)["dataflows"][0]
    job.wait_ticks(job.ticks + 1)
    assert main(["status", "--data-dir", data_dir, "--json"]) == 0
    later = json.loads(capsys.readouterr().out)["dataflows"][0]
    assert later["last_binding"]["tick"] > first["last_binding"]["tick"]
    events = later["sources"]["events"]
    assert events["position"] >= 3 and events["frontier"] > first["sources"]["events"]["frontier"]
    ops = {o["name"]: o["frontier"] for o in later["operators"]}
    assert ops["events"] == events["frontier"]


def test_status_without_store(tmp_path, capsys):
    assert main(["status", "--data-dir", str(tmp_path)]) == 1
    assert "no metadata store" in capsys.readouterr().err


def test_status_names_the_data_dirs_owner(tmp_path, capsys):
    """The owner (host, pid, since, epoch) from the store's owner record, and whether it
    still holds the data dir: what a refused second start would name."""
    from sealtime.storage import MetadataStore
    from sealtime.storage.ownership import ProcessIdentity, acquire_lease

    store = MetadataStore.open(str(tmp_path))
    other = ProcessIdentity("elsewhere", 4242)
    acquire_lease(store, str(tmp_path), "f", process=other, heartbeat=False).release()
    lease = acquire_lease(store, str(tmp_path), "f", process=other, heartbeat=False)
    assert main(["status", "--data-dir", str(tmp_path), "--json"]) == 0
    (f,) = json.loads(capsys.readouterr().out)["dataflows"]
    owner = f["owner"]
    assert (owner["host"], owner["pid"], owner["epoch"]) == ("elsewhere", 4242, 2)
    assert owner["holds"] and not owner["released"] and owner["since"] > 0
    assert main(["status", "--data-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "  owner: pid 4242 on host 'elsewhere' since " in text and "(epoch 2;" in text

    lease.release()
    assert main(["status", "--data-dir", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert "owner: none (last: pid 4242 on host 'elsewhere'" in text and "; released)" in text
    store.close()
