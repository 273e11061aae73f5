"""`/metrics` of a running job parses with prometheus_client and shows the frontier move,
and the per-operator rows, state rows and seconds move too."""

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


def operator_series(families, name: str, operator: str, **labels: str) -> list:
    return [
        s
        for s in families[name]
        if s.labels["operator"] == operator
        and all(s.labels.get(k) == v for k, v in labels.items())
        and not s.name.endswith("_created")
    ]


def operator_value(families, name: str, operator: str, **labels: str) -> float:
    (sample,) = operator_series(families, name, operator, **labels)
    return sample.value


def test_metrics_show_frontier_moving(job):
    url = job.flow.serve_ui().url
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


def test_metrics_show_operator_rows_state_and_seconds(job):
    """Per operator: rows in/out, state rows, steps and seconds, with an `operator` label;
    they move as ticks run; stateless operators fused into a stage export no rows."""
    url = job.flow.serve_ui().url
    job.wait_ticks(2)

    def aggregate_rows(families) -> tuple[float, float, float]:
        return (
            operator_value(families, "sealtime_operator_rows_in", "aggregate"),
            operator_value(families, "sealtime_operator_rows_out", "aggregate"),
            operator_value(families, "sealtime_operator_state_rows", "aggregate"),
        )

    deadline = time.monotonic() + 120
    while True:  # (until the aggregate has stepped with rows: the frontier trails 1 s)
        first = scrape(url)
        if operator_series(first, "sealtime_operator_rows_in", "aggregate"):
            rows_in, rows_out, state = aggregate_rows(first)
            if rows_in > 0:
                break
        assert time.monotonic() < deadline, "the aggregate's rows never showed"
        time.sleep(0.3)
    # Keyed by id: every update is a new key, so rows out = rows in = state rows.
    assert rows_out == rows_in and state >= rows_in
    samples = first["sealtime_operator_rows_in"]
    assert all(s.name == "sealtime_operator_rows_in_total" for s in samples)
    assert {s.labels["kind"] for s in samples} == {"reduce"}  # only where counted
    kernel = operator_value(first, "sealtime_operator_seconds", "aggregate", phase="kernel")
    plan = operator_value(first, "sealtime_operator_seconds", "aggregate", phase="plan")
    assert kernel > 0 and plan > 0
    assert operator_value(first, "sealtime_operator_steps", "aggregate") >= 1
    # A fused stateless operator: steps and plan time, but no row series.
    assert operator_value(first, "sealtime_operator_steps", "filter") >= 1
    assert not operator_series(first, "sealtime_operator_rows_in", "filter")

    while aggregate_rows(scrape(url))[0] <= rows_in:
        assert time.monotonic() < deadline, "the aggregate's rows did not move"
        time.sleep(0.3)
    later = scrape(url)
    in2, out2, state2 = aggregate_rows(later)
    assert in2 > rows_in and out2 > rows_out and state2 > state
    assert operator_value(later, "sealtime_operator_seconds", "aggregate", phase="kernel") > kernel
