"""GraphBuilder validation, cycle checks (timely's `is_acyclic`) and path summaries."""

from __future__ import annotations

import pytest
from hypothesis import given, note, settings

from sealtime.progress import (
    Add,
    CycleError,
    GraphBuilder,
    GraphError,
    Identity,
    ProductSummary,
    Source,
    Target,
)
from sealtime.time import Antichain
from tests.conftest import examples
from tests.progress.oracle import (
    Reader,
    brute_force_frontiers,
    byte_strings,
    decode_graph,
    minimal,
    time_of,
)


def _loop(last: Add | Identity) -> GraphBuilder:
    b = GraphBuilder()
    b.add_node(0, 1, 1, [[Antichain.from_elem(Identity())]])
    b.add_node(1, 1, 1, [[Antichain.from_elem(Identity())]])
    b.add_node(2, 1, 1, [[Antichain.from_elem(last)]])
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    return b


def test_timely_is_acyclic_example() -> None:
    b = _loop(Identity())
    assert b.is_acyclic()
    b.add_edge(Source(2, 0), Target(0, 0))
    assert not b.is_acyclic()
    with pytest.raises(CycleError, match="cycle on which time does not advance") as err:
        b.build()
    assert set(err.value.cycle) == {
        Target(0, 0),
        Source(0, 0),
        Target(1, 0),
        Source(1, 0),
        Target(2, 0),
        Source(2, 0),
    }
    assert "Add(1)" in str(err.value)  # the message says how to fix it


def test_timely_two_port_node_is_acyclic() -> None:
    # A cycle in the node graph, but every location cycle crosses the advancing port.
    b = GraphBuilder()
    b.add_node(0, 2, 2, [[Identity(), None], [None, Add(1)]])
    b.add_edge(Source(0, 0), Target(0, 1))
    b.add_edge(Source(0, 1), Target(0, 0))
    assert b.is_acyclic()
    b.build()


def test_advancing_loop_builds() -> None:
    b = _loop(Add(1))
    b.add_edge(Source(2, 0), Target(0, 0))
    assert b.is_acyclic()
    tracker = b.build()
    assert tracker.graph.summary(Target(2, 0), Target(0, 0)) == Antichain([Add(1)])
    assert tracker.graph.summary(Source(2, 0), Target(2, 0)) == Antichain([Identity()])


def test_bounded_non_advancing_summary_still_forms_a_bad_cycle() -> None:
    # Add(0, limit) keeps times unchanged (up to the limit): not a way out of a cycle.
    b = _loop(Add(0, limit=100))
    b.add_edge(Source(2, 0), Target(0, 0))
    with pytest.raises(CycleError):
        b.build()


def test_product_loop_needs_an_advancing_coordinate() -> None:
    for summary, ok in [
        (ProductSummary(Identity(), Add(1)), True),
        (ProductSummary(Add(1), Identity()), True),
        (ProductSummary(Identity(), Identity()), False),
    ]:
        b = GraphBuilder()
        b.add_node(0, 1, 1, [[summary]])
        b.add_edge(Source(0, 0), Target(0, 0))
        assert b.is_acyclic() == ok


def test_one_advancing_alternative_is_not_enough() -> None:
    # The antichain {Identity} ∪ ... : if any summary keeps the time, the cycle is bad.
    b = GraphBuilder()
    b.add_node(
        0, 1, 1, {(0, 0): [ProductSummary(Identity(), Add(1)), ProductSummary(Add(1), Identity())]}
    )
    b.add_edge(Source(0, 0), Target(0, 0))
    assert b.is_acyclic()
    b2 = GraphBuilder()
    b2.add_node(0, 1, 1, {(0, 0): [Add(1, limit=3), Add(0)]})
    b2.add_edge(Source(0, 0), Target(0, 0))
    assert not b2.is_acyclic()


def test_validation_messages() -> None:
    b = GraphBuilder()
    b.add_node(0, 1, 1, name="map")
    with pytest.raises(GraphError, match="node 0 was already added"):
        b.add_node(0, 1, 1)
    with pytest.raises(GraphError, match="inputs must be a non-negative int"):
        b.add_node(1, -1, 1)
    with pytest.raises(GraphError, match="input 2 does not exist"):
        b.add_node(1, 1, 1, {(2, 0): Identity()})
    with pytest.raises(GraphError, match=r"must be \(input, output\) pairs"):
        b.add_node(1, 1, 1, {0: Identity()})  # type: ignore[dict-item]
    with pytest.raises(GraphError, match="1 row\\(s\\) but the node has 2 input"):
        b.add_node(1, 2, 1, [[Identity()]])
    with pytest.raises(GraphError, match="row 0 has 2 entries but the node has 1 output"):
        b.add_node(1, 1, 1, [[Identity(), Identity()]])
    with pytest.raises(GraphError, match="must be PathSummary objects"):
        b.add_node(1, 1, 1, [[1]])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="needs a Source \\(output port\\) then a Target"):
        b.add_edge(Target(0, 0), Source(0, 0))  # type: ignore[arg-type]
    b.add_edge(Source(0, 0), Target(5, 0))
    b.add_edge(Source(0, 3), Target(0, 0))
    with pytest.raises(GraphError) as err:
        b.build()
    message = str(err.value)
    assert "node 5 was never added" in message
    assert "node 0 ('map') has no output 3 (it has 1 output(s))" in message
    b2 = GraphBuilder()
    b2.add_node(0, 0, 1)
    b2.add_node(1, 1, 0)
    b2.add_edge(Source(0, 0), Target(1, 0))
    with pytest.raises(GraphError, match="already added"):
        b2.add_edge(Source(0, 0), Target(1, 0))
    with pytest.raises(TypeError, match="non-negative int"):
        Source(-1, 0)


def test_default_summary_connects_everything_with_identity() -> None:
    b = GraphBuilder()
    b.add_node(0, 2, 2)
    g = b.graph()
    for i in range(2):
        for o in range(2):
            assert g.internal_summary(0, i, o) == Antichain([Identity()])
    assert g.shape(0) == (2, 2)
    assert g.nodes() == (0,)
    with pytest.raises(GraphError, match="no node 3"):
        g.shape(3)


def test_path_summaries_fixpoint_through_a_loop() -> None:
    # input(0) -> body(1, two inputs) -> feedback(2, +1) -> body input 1; body -> out(3)
    b = GraphBuilder()
    b.add_node(0, 0, 1)
    b.add_node(1, 2, 1)
    b.add_node(2, 1, 1, [[Add(1)]])
    b.add_node(3, 1, 0)
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    b.add_edge(Source(2, 0), Target(1, 1))
    b.add_edge(Source(1, 0), Target(3, 0))
    g = b.graph()
    assert g.summary(Source(0, 0), Target(3, 0)) == Antichain([Identity()])
    assert g.summary(Source(0, 0), Target(1, 1)) == Antichain([Add(1)])
    assert g.summary(Target(1, 1), Target(1, 1)) == Antichain([Identity()])
    assert g.summary(Target(2, 0), Target(1, 1)) == Antichain([Add(1)])
    assert g.summary(Source(2, 0), Target(2, 0)) == Antichain([Identity()])
    assert g.summary(Target(3, 0), Target(1, 0)) == Antichain()
    with pytest.raises(TypeError, match="lead to a Target"):
        g.path_summaries(Source(0, 0))  # type: ignore[arg-type]


def test_incomparable_summaries_are_all_kept() -> None:
    b = GraphBuilder()
    b.add_node(0, 0, 1)
    b.add_node(
        1, 1, 1, [[[ProductSummary(Add(1), Identity()), ProductSummary(Identity(), Add(1))]]]
    )
    b.add_node(2, 1, 0)
    b.add_edge(Source(0, 0), Target(1, 0))
    b.add_edge(Source(1, 0), Target(2, 0))
    chain = b.graph().summary(Source(0, 0), Target(2, 0))
    assert set(chain.elements()) == {
        ProductSummary(Add(1), Identity()),
        ProductSummary(Identity(), Add(1)),
    }


@settings(max_examples=examples(1000))
@given(byte_strings)
def test_path_summaries_match_single_pointstamp_reachability(data: bytes) -> None:
    # For one pointstamp (L, t): the minimal s(t) over summaries(L, T) is exactly the
    # brute-force frontier at T.
    r = Reader(data)
    kind = r.choice(["int", "product"])
    spec = decode_graph(r, kind, cyclic=r.choice([False, True]), max_nodes=5)
    note(f"graph: {spec}")
    graph = spec.builder().graph()
    locations = spec.locations()
    origin = r.choice(locations)
    t = time_of(r, kind)
    expected = brute_force_frontiers(spec, {(origin, t): 1})
    for target in (loc for loc in locations if isinstance(loc, Target)):
        chain = graph.summary(origin, target)
        produced = [s.results_in(t) for s in chain]
        assert minimal(p for p in produced if p is not None) == expected[target]
