"""Tracker: frontiers equal a brute-force fixpoint; timely's documented behaviour."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from hypothesis import given, note, settings

from sealtime.progress import (
    Add,
    GraphBuilder,
    GraphError,
    Identity,
    ProductSummary,
    Source,
    Target,
    Tracker,
)
from sealtime.time import Antichain, Product
from tests.conftest import examples
from tests.progress.oracle import (
    GraphSpec,
    Reader,
    brute_force_frontiers,
    byte_strings,
    decode_graph,
    decode_rounds,
    minimal,
)


def _check_rounds(spec: GraphSpec, batches: list[list[tuple[Any, Any, int]]]) -> None:
    """Feed each batch, propagate, compare with the oracle and the reported changes."""
    tracker = spec.builder().build()
    counts: dict[tuple[Any, Any], int] = {}
    reported: dict[Any, Counter[Any]] = {loc: Counter() for loc in spec.locations()}
    for batch in batches:
        for loc, t, d in batch:
            tracker.update(loc, t, d)
            counts[(loc, t)] = counts.get((loc, t), 0) + d
        changes = tracker.propagate_all()
        # Changes are consolidated: no (location, time) twice, no zero diffs.
        keys = [(loc, t) for loc, t, _ in changes]
        assert len(keys) == len(set(keys))
        for loc, t, d in changes:
            assert d in (-1, 1), changes
            reported[loc][t] += d
        expected = brute_force_frontiers(spec, counts)
        for loc in spec.locations():
            frontier = tracker.frontier(loc)
            assert set(frontier.elements()) == expected[loc], (loc, frontier, expected[loc])
            # Accumulated changes reproduce the frontier exactly.
            acc = {t for t, c in reported[loc].items() if c}
            assert all(c in (0, 1) for c in reported[loc].values()), reported[loc]
            assert acc == expected[loc]


def _property(data: bytes, kind: str, cyclic: bool, allow_negative: bool = False) -> None:
    r = Reader(data)
    spec = decode_graph(r, kind, cyclic, max_nodes=4 if allow_negative else 6)
    batches = decode_rounds(r, spec, kind, allow_negative)
    note(f"graph: {spec}")
    note(f"batches: {batches}")
    _check_rounds(spec, batches)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_dag_int_matches_brute_force(data: bytes) -> None:
    _property(data, "int", cyclic=False)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_cyclic_int_matches_brute_force(data: bytes) -> None:
    _property(data, "int", cyclic=True)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_dag_product_matches_brute_force(data: bytes) -> None:
    _property(data, "product", cyclic=False)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_cyclic_product_matches_brute_force(data: bytes) -> None:
    _property(data, "product", cyclic=True)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_negative_accumulated_counts_are_ignored(data: bytes) -> None:
    # Timely allows a count to be negative between batches (a message consumed before
    # its production is reported); only positive counts contribute to frontiers.
    kind = "int" if data[:1] < b"\x80" else "product"
    _property(data[1:], kind, cyclic=data[-1:] < b"\x80", allow_negative=True)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_frontiers_equal_path_summaries_applied_to_pointstamps(data: bytes) -> None:
    # The transitive summaries of Graph.path_summaries agree with the incremental
    # tracker: frontier(T) = min{ s(p) : p positive at L, s in summaries(L, T) }.
    r = Reader(data)
    kind = r.choice(["int", "product"])
    spec = decode_graph(r, kind, cyclic=r.choice([False, True]))
    batches = decode_rounds(r, spec, kind)
    note(f"graph: {spec}")
    tracker = spec.builder().build()
    counts: dict[tuple[Any, Any], int] = {}
    for batch in batches:
        for loc, t, d in batch:
            tracker.update(loc, t, d)
            counts[(loc, t)] = counts.get((loc, t), 0) + d
    tracker.propagate_all()
    for target in (loc for loc in spec.locations() if isinstance(loc, Target)):
        summaries = tracker.graph.path_summaries(target)
        produced = []
        for (loc, t), c in counts.items():
            if c > 0 and loc in summaries:
                for s in summaries[loc]:
                    result = s.results_in(t)
                    if result is not None:
                        produced.append(result)
        assert set(tracker.frontier(target).elements()) == minimal(produced)


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_capabilities_drive_the_tracker_like_direct_updates(data: bytes) -> None:
    # Random capability lifecycles (mint, clone, downgrade, drop) at random output
    # ports give the same frontiers as the brute force over the live capabilities.
    r = Reader(data)
    spec = decode_graph(r, "int", cyclic=r.choice([False, True]), max_nodes=5)
    note(f"graph: {spec}")
    tracker = spec.builder().build()
    sources = [loc for loc in spec.locations() if isinstance(loc, Source)]
    live: list[Any] = []
    for _ in range(r.int(1, 5)):
        for _ in range(r.int(1, 4)):
            action = r.choice(["mint", "clone", "downgrade", "drop"])
            if action == "mint" or not live:
                live.append(tracker.capability(r.choice(sources), r.int(0, 5)))
            else:
                cap = live[r.int(0, len(live) - 1)]
                if action == "clone":
                    live.append(cap.clone())
                elif action == "downgrade":
                    cap.downgrade(cap.time() + r.int(0, 3))
                else:
                    cap.drop()
                    # By identity: clones compare equal to each other.
                    live = [c for c in live if c is not cap]
        tracker.propagate_all()
        counts: dict[tuple[Any, Any], int] = {}
        for cap in live:
            key = (cap.location, cap.time())
            counts[key] = counts.get(key, 0) + 1
        expected = brute_force_frontiers(spec, counts)
        for loc in spec.locations():
            assert set(tracker.frontier(loc).elements()) == expected[loc]
    for cap in live:
        cap.drop()
    tracker.propagate_all()
    assert not tracker.tracking_anything()
    assert all(tracker.frontier(loc).is_empty() for loc in spec.locations())


# -- timely's documented examples ------------------------------------------------------


def _timely_loop() -> Tracker:
    b = GraphBuilder()
    b.add_node(0, 1, 1, [[Antichain.from_elem(Identity())]])
    b.add_node(1, 1, 1, [[Antichain.from_elem(Identity())]])
    b.add_node(2, 1, 1, [[Antichain.from_elem(Add(1))]])
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(0, 0))
    return b.build()


def test_timely_reachability_module_example() -> None:
    tracker = _timely_loop()
    tracker.update_source(Source(0, 0), 17, 1)
    results = sorted((loc, t, d) for loc, t, d in tracker.propagate_all() if loc.is_target)
    assert results == [
        (Target(0, 0), 18, 1),
        (Target(1, 0), 17, 1),
        (Target(2, 0), 17, 1),
    ]
    tracker.update_source(Source(0, 0), 17, -1)
    results = sorted((loc, t, d) for loc, t, d in tracker.propagate_all() if loc.is_target)
    assert results == [
        (Target(0, 0), 18, -1),
        (Target(1, 0), 17, -1),
        (Target(2, 0), 17, -1),
    ]
    assert not tracker.tracking_anything()


def test_timely_loop_frontiers_at_sources() -> None:
    tracker = _timely_loop()
    tracker.update_source(Source(0, 0), 17, 1)
    tracker.propagate_all()
    # The capability at Source(0, 0) reaches itself again only after +1.
    assert tracker.frontier(Source(0, 0)) == Antichain([17])
    assert tracker.frontier(Source(1, 0)) == Antichain([17])
    assert tracker.frontier(Source(2, 0)) == Antichain([18])


def test_message_in_flight_holds_back_a_target() -> None:
    tracker = _timely_loop()
    tracker.update_target(Target(1, 0), 5, 1)
    tracker.propagate_all()
    assert tracker.frontier(Target(1, 0)) == Antichain([5])
    assert tracker.frontier(Target(2, 0)) == Antichain([5])
    assert tracker.frontier(Target(0, 0)) == Antichain([6])
    # Consuming the message while taking a capability at the same time: nothing changes
    # downstream; the input itself now only waits for what comes round the loop (+1).
    tracker.update_target(Target(1, 0), 5, -1)
    tracker.update_source(Source(1, 0), 5, 1)
    changes = tracker.propagate_all()
    assert sorted(changes) == [(Target(1, 0), 5, -1), (Target(1, 0), 6, 1)]
    assert tracker.frontier(Target(2, 0)) == Antichain([5])


def test_iterative_loop_with_product_times() -> None:
    # input -> body -> feedback(+1 inner) -> body; body also leaves the loop.
    b = GraphBuilder()
    b.add_node(0, 0, 1, name="input")
    b.add_node(1, 2, 1, name="body")
    b.add_node(2, 1, 1, [[ProductSummary(Identity(), Add(1))]], name="feedback")
    b.add_node(3, 1, 0, name="output")
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(1, 1))
    b.add_edge(Source(1, 0), Target(3, 0))
    tracker = b.build()
    cap = tracker.capability(Source(0, 0), Product(0, 0))
    tracker.propagate_all()
    assert tracker.frontier(Target(1, 1)) == Antichain([Product(0, 1)])
    assert tracker.frontier(Target(3, 0)) == Antichain([Product(0, 0)])
    cap.downgrade(Product(1, 0))
    tracker.propagate_all()
    assert tracker.frontier(Target(1, 1)) == Antichain([Product(1, 1)])
    # A message circulating at iteration 3 of epoch 0 holds epoch 0 back downstream.
    tracker.update_target(Target(1, 1), Product(0, 3), 1)
    tracker.propagate_all()
    assert tracker.frontier(Target(3, 0)) == Antichain([Product(0, 3), Product(1, 0)])
    cap.drop()
    tracker.update_target(Target(1, 1), Product(0, 3), -1)
    tracker.propagate_all()
    assert all(tracker.frontier(loc).is_empty() for loc in tracker.graph.locations())


def test_bounded_loop_stops_circulating() -> None:
    b = GraphBuilder()
    b.add_node(0, 1, 1, [[Add(1, limit=3)]])
    b.add_edge(Source(0, 0), Target(0, 0))
    tracker = b.build()
    tracker.update_target(Target(0, 0), 3, 1)
    tracker.propagate_all()
    # 3 + 1 exceeds the limit: nothing comes out of the node.
    assert tracker.frontier(Target(0, 0)) == Antichain([3])
    assert tracker.frontier(Source(0, 0)).is_empty()


def test_chain_downgrade_moves_every_frontier() -> None:
    b = GraphBuilder()
    b.add_node(0, 0, 1)
    for i in range(1, 51):
        b.add_node(i, 1, 1)
        b.add_edge(Source(i - 1, 0), Target(i, 0))
    tracker = b.build()
    cap = tracker.capability(Source(0, 0), 0)
    tracker.propagate_all()
    cap.downgrade(7)
    changes = tracker.propagate_all()
    # Every one of the 101 locations reports -0 and +7.
    assert len(changes) == 2 * 101
    assert tracker.frontier(Target(50, 0)) == Antichain([7])


def test_propagate_without_changes_is_empty() -> None:
    tracker = _timely_loop()
    assert tracker.propagate_all() == []
    tracker.update_source(Source(0, 0), 1, 0)
    assert tracker.propagate_all() == []


def test_updates_at_unknown_locations_are_clear_errors() -> None:
    tracker = _timely_loop()
    with pytest.raises(GraphError, match="no node 9"):
        tracker.update_source(Source(9, 0), 1, 1)
    with pytest.raises(GraphError, match="has no output 1"):
        tracker.update_source(Source(0, 1), 1, 1)
    with pytest.raises(TypeError, match="update_source needs a Source"):
        tracker.update_source(Target(0, 0), 1, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="update_target needs a Target"):
        tracker.update_target(Source(0, 0), 1, 1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="diff must be an int"):
        tracker.update_target(Target(0, 0), 1, 1.5)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="no node 4"):
        tracker.frontier(Target(4, 0))


def test_pointstamps_and_tracking_anything() -> None:
    tracker = _timely_loop()
    tracker.update_target(Target(2, 0), 4, 2)
    assert tracker.tracking_anything()  # buffered
    tracker.propagate_all()
    assert tracker.pointstamps(Target(2, 0)) == [(4, 2)]
    assert tracker.tracking_anything()
    tracker.update_target(Target(2, 0), 4, -2)
    tracker.propagate_all()
    assert not tracker.tracking_anything()


def test_repr_mentions_size() -> None:
    assert repr(_timely_loop()) == "Tracker(3 nodes, 6 locations)"
