"""Probe: less_than / less_equal / done against the tracker's frontier."""

from __future__ import annotations

import pytest

from sealtime.progress import GraphBuilder, GraphError, Probe, Source, Target
from sealtime.time import Antichain, Product


def _pipeline():
    b = GraphBuilder()
    b.add_node(0, 0, 1)
    b.add_node(1, 1, 1)
    b.add_edge(Source(0, 0), Target(1, 0))
    return b.build()


def test_probe_follows_the_frontier() -> None:
    tracker = _pipeline()
    probe = Probe(tracker, Target(1, 0))
    assert probe.done()
    cap = tracker.capability(Source(0, 0), 3)
    tracker.propagate_all()
    assert not probe.done()
    assert probe.less_equal(3) and not probe.less_than(3)
    assert probe.less_than(4) and not probe.less_equal(2)
    assert probe.frontier() == Antichain([3])
    cap.downgrade(5)
    tracker.propagate_all()
    assert not probe.less_equal(4)  # every time ≤ 4 is sealed at the input
    cap.drop()
    tracker.propagate_all()
    assert probe.done() and not probe.less_equal(100)
    assert repr(probe) == "Probe(Target(node=1, port=0), frontier=Antichain([]))"


def test_probe_with_partially_ordered_times() -> None:
    tracker = _pipeline()
    probe = Probe(tracker, Source(1, 0))
    a = tracker.capability(Source(0, 0), Product(0, 5))
    b = tracker.capability(Source(0, 0), Product(5, 0))
    tracker.propagate_all()
    assert probe.frontier() == Antichain([Product(0, 5), Product(5, 0)])
    assert not probe.less_equal(Product(1, 1))  # incomparable to both elements
    assert probe.less_equal(Product(5, 5)) and probe.less_than(Product(5, 5))
    a.drop()
    b.drop()
    tracker.propagate_all()
    assert probe.done()


def test_probe_validates_its_location() -> None:
    tracker = _pipeline()
    with pytest.raises(GraphError, match="no node 4"):
        Probe(tracker, Target(4, 0))
    with pytest.raises(TypeError, match="needs a Tracker"):
        Probe(object(), Target(1, 0))  # type: ignore[arg-type]
    assert Probe(tracker, Source(0, 0)).location == Source(0, 0)
