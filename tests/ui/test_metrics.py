"""`/metrics` of a running job parses with prometheus_client and shows the frontier move."""

from __future__ import annotations

import math
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(url: str) -> dict[str, list]:
    text = urllib.request.urlopen(url + "metrics", timeout=10).read().decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def source_frontier(families) -> float:
    (sample,) = [
        s for s in families["sealtime_source_frontier_seconds"] if s.labels["source"] == "events"
    ]
    return sample.value


def test_metrics_show_frontier_moving(job):
    url = job.flow._ui_server.url
    job.wait_ticks(1)
    first = scrape(url)
    f1 = source_frontier(first)
    assert math.isfinite(f1)
    # The set the issue asks for, with Prometheus names.
    for name in (
        "sealtime_source_frontier_lag_seconds",
        "sealtime_operator_frontier_seconds",
        "sealtime_operator_frontier_lag_seconds",
        "sealtime_source_rows",  # the parser strips `_total` from counter names
        "sealtime_source_late_rows",
        "sealtime_source_error_rows",
        "sealtime_tick_duration_seconds",
        "sealtime_bindings",
        "sealtime_commits",
        "sealtime_operator_state_bytes",
        "sealtime_publication_subscribers",
        "sealtime_publication_queue_messages",
    ):
        assert name in first, name
    ops = {s.labels["operator"] for s in first["sealtime_operator_frontier_seconds"]}
    assert {"events", "events.late"} <= ops
    buckets = [s for s in first["sealtime_tick_duration_seconds"] if s.name.endswith("_count")]
    assert buckets and buckets[0].value >= 1

    deadline = time.monotonic() + 120
    while source_frontier(scrape(url)) <= f1:
        assert time.monotonic() < deadline, "the frontier did not move"
        time.sleep(0.3)
    later = scrape(url)
    assert source_frontier(later) > f1
    (rows,) = [s for s in later["sealtime_source_rows"] if s.name.endswith("_total")]
    assert rows.value >= 3
