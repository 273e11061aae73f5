"""Prometheus metrics of one dataflow, read from its latest `Snapshot` at scrape time.

The collector is registered in a `CollectorRegistry` of the dataflow's own (never the
process-global one), so several dataflows in one process — a test run — never collide.
Nothing is updated on the tick: a scrape turns the snapshot the engine published into
metric families, so metrics cost the tick nothing.

Frontiers are exported as Unix seconds (``+Inf`` once a stream is finished) and lags
in seconds, following Prometheus' base units; counters end in ``_total``.

Per operator (label ``operator``): rows in and out, state rows, steps and seconds
(``phase="plan"``: building the step on the driver; ``phase="kernel"``: the kernel in
Spark tasks, summed over partitions). A series exists only where the number is
measured: operators fused into their consumer's stage have none (see
`sealtime.ui.snapshot.OperatorCounts`); sources count rows in
``sealtime_source_rows_total``. Counters start when the web view starts.

>>> from sealtime.ui.snapshot import Monitor
>>> text = render(registry_for(Monitor(None)))
>>> "sealtime_ticks_total" in text, "sealtime_tick_duration_seconds_bucket" in text
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from .snapshot import TICK_BUCKETS, Monitor

__all__ = ["SnapshotCollector", "registry_for", "render"]


def _seconds(ms: int | None) -> float:
    """A frontier in Unix seconds; the empty frontier (finished) is +Inf."""
    return math.inf if ms is None else ms / 1000


def _lag(ms: int | None) -> float:
    return 0.0 if ms is None else ms / 1000


class SnapshotCollector(Collector):
    """Metric families from `monitor.snapshot`. `state_bytes` maps an operator's state
    directory to its size (measured by the caller, off the tick; None: not exported)."""

    def __init__(
        self, monitor: Monitor, state_bytes: Callable[[str], int | None] | None = None
    ) -> None:
        self.monitor = monitor
        self.state_bytes = state_bytes

    def collect(self) -> Iterator[Metric]:
        snap = self.monitor.snapshot
        flow = snap.flow
        src_labels = ["dataflow", "source"]
        op_labels = ["dataflow", "operator", "id", "kind"]

        g_front = GaugeMetricFamily(
            "sealtime_source_frontier_seconds",
            "Event/ingestion-time frontier of the source: times below it are sealed (+Inf: finished)",
            labels=src_labels,
        )
        g_lag = GaugeMetricFamily(
            "sealtime_source_frontier_lag_seconds",
            "The ticker's clock minus the source's frontier",
            labels=src_labels,
        )
        c_rows = CounterMetricFamily(
            "sealtime_source_rows", "Rows read from the source", labels=src_labels
        )
        c_late = CounterMetricFamily(
            "sealtime_source_late_rows",
            "Rows routed to the source's late output",
            labels=src_labels,
        )
        c_err = CounterMetricFamily(
            "sealtime_source_error_rows",
            "Rows routed to the source's errors output",
            labels=src_labels,
        )
        g_up = GaugeMetricFamily(
            "sealtime_source_up",
            "1 when the source's health is 'running', else 0",
            labels=[*src_labels, "health"],
        )
        for s in snap.sources:
            labels = [flow, s.name]
            g_front.add_metric(labels, _seconds(s.frontier))
            g_lag.add_metric(labels, _lag(s.lag_ms))
            c_rows.add_metric(labels, s.rows)
            c_late.add_metric(labels, s.late)
            c_err.add_metric(labels, s.errors)
            health = s.health or "unknown"
            g_up.add_metric([*labels, health], 1.0 if health == "running" else 0.0)
        yield from (g_front, g_lag, c_rows, c_late, c_err, g_up)

        o_front = GaugeMetricFamily(
            "sealtime_operator_frontier_seconds",
            "Frontier of the operator's output (+Inf: finished)",
            labels=op_labels,
        )
        o_lag = GaugeMetricFamily(
            "sealtime_operator_frontier_lag_seconds",
            "The ticker's clock minus the operator's output frontier",
            labels=op_labels,
        )
        o_state = GaugeMetricFamily(
            "sealtime_operator_state_bytes",
            "Bytes of the operator's durable state on disk",
            labels=op_labels,
        )
        o_in = CounterMetricFamily(
            "sealtime_operator_rows_in",
            "Updates the operator's kernel consumed (counted inside its Spark tasks)",
            labels=op_labels,
        )
        o_out = CounterMetricFamily(
            "sealtime_operator_rows_out",
            "Updates the operator produced (counted inside its Spark tasks)",
            labels=op_labels,
        )
        o_rows = GaugeMetricFamily(
            "sealtime_operator_state_rows",
            "Rows the operator's state holds after its latest step",
            labels=op_labels,
        )
        o_steps = CounterMetricFamily(
            "sealtime_operator_steps",
            "Ticks in which the operator processed newly sealed times",
            labels=op_labels,
        )
        o_secs = CounterMetricFamily(
            "sealtime_operator_seconds",
            "Time spent on the operator: plan = building its step on the driver, "
            "kernel = its kernel in Spark tasks (summed over partitions)",
            labels=[*op_labels, "phase"],
        )
        for n in snap.nodes:
            if n.is_sink:
                continue
            labels = [flow, n.name, str(n.id), n.kind]
            o_front.add_metric(labels, _seconds(n.frontier_out))
            o_lag.add_metric(labels, _lag(n.lag_ms))
            if n.stateful and n.state_dir and self.state_bytes is not None:
                size = self.state_bytes(n.state_dir)
                if size is not None:
                    o_state.add_metric(labels, size)
            c = n.counts
            if c is None:
                continue
            o_steps.add_metric(labels, c.steps)
            o_secs.add_metric([*labels, "plan"], c.plan_seconds_total)
            if c.counting != "kernel":
                continue
            if c.rows_in_total is not None:
                o_in.add_metric(labels, c.rows_in_total)
            if c.rows_out_total is not None:
                o_out.add_metric(labels, c.rows_out_total)
            if c.state_rows is not None:
                o_rows.add_metric(labels, c.state_rows)
            if c.kernel_seconds_total is not None:
                o_secs.add_metric([*labels, "kernel"], c.kernel_seconds_total)
        yield from (o_front, o_lag, o_state, o_in, o_out, o_rows, o_steps, o_secs)

        ticks = CounterMetricFamily("sealtime_ticks", "Ticks run", labels=["dataflow"])
        ticks.add_metric([flow], snap.tick)
        binds = CounterMetricFamily(
            "sealtime_bindings", "Bindings minted (durable remap entries)", labels=["dataflow"]
        )
        binds.add_metric([flow], snap.bindings_total)
        commits = CounterMetricFamily(
            "sealtime_commits", "Sealed ranges committed by sinks", labels=["dataflow"]
        )
        commits.add_metric([flow], snap.commits_total)
        hist = HistogramMetricFamily(
            "sealtime_tick_duration_seconds", "Wall time of one tick", labels=["dataflow"]
        )
        bounds = [str(b) for b in TICK_BUCKETS] + ["+Inf"]
        hist.add_metric(
            [flow], list(zip(bounds, snap.tick_buckets, strict=True)), snap.tick_seconds_sum
        )
        yield from (ticks, binds, commits, hist)

        subs = GaugeMetricFamily(
            "sealtime_publication_subscribers",
            "Subscribers connected to the publication",
            labels=["dataflow", "topic"],
        )
        depth = GaugeMetricFamily(
            "sealtime_publication_queue_messages",
            "Messages waiting in a subscriber's queue",
            labels=["dataflow", "topic", "partition", "subscriber"],
        )
        for p in snap.publications:
            subs.add_metric([flow, p.topic], p.subscribers)
            for part, queues in enumerate(p.queues):
                for peer, n in queues.items():
                    depth.add_metric([flow, p.topic, str(part), peer], n)
        yield from (subs, depth)


def registry_for(monitor: Monitor, state_bytes: Any = None) -> CollectorRegistry:
    """A fresh registry (not the global one) holding the dataflow's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(monitor, state_bytes))
    return registry


def render(registry: CollectorRegistry) -> str:
    """The registry in Prometheus' text exposition format."""
    return generate_latest(registry).decode("utf-8")
