"""The progress label of ``sealtime run`` after a restart (issue 32): ``catch-up`` for
the backlog the restart found, ``run`` after — it used to stay ``catch-up`` for the
whole run."""

from __future__ import annotations

import io

import sealtime as st
from sealtime.jobs import run_job


def build(data_dir: str) -> st.Dataflow:
    # (an hour's tick: no tick of this test starts a whole tick behind the clock)
    flow = st.Dataflow("phase", data_dir=data_dir, tick="1h", record=False)
    rows = [(1000 * t, {"k": t % 2, "v": t}) for t in range(1, 9)]
    src = flow.source("s", st.sources.Rows({"k": "long", "v": "long"}, rows))
    src.aggregate(by="k", total=st.sum("v")).sink(st.sinks.Persist("totals"))
    return flow


def labels(text: str) -> list[str]:
    """The phase of each progress line (``<phase>: tick i, ...``)."""
    return [line.split(":")[0] for line in text.splitlines() if ": tick " in line]


def test_the_catch_up_label_ends_with_the_backlog(spark, tmp_path):
    spec = "tests.engine.test_progress_phase:build"
    first = io.StringIO()
    assert run_job(spec, str(tmp_path), ticks=2, out=first) == 0
    assert labels(first.getvalue()) == ["run"]  # (the last line only: no phase change)
    again = io.StringIO()
    assert run_job(spec, str(tmp_path), ticks=3, out=again) == 0
    text = again.getvalue()
    assert "resuming 'phase'" in text
    # The restart's first tick catches up (no checkpoint: the log since the start); the
    # next ones run. Each change of phase is a line; the last line closes the run.
    assert labels(text) == ["catch-up", "run", "run"], text
