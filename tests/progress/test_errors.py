"""The progress package's errors are `SealtimeError`s that keep their built-in bases."""

from __future__ import annotations

import pytest

from sealtime.errors import InternalError, PlanError, SealtimeError, StateError
from sealtime.progress import (
    Add,
    Capability,
    CapabilityError,
    CycleError,
    DowngradeError,
    GraphBuilder,
    GraphError,
    RoundUp,
    Source,
    Target,
)
from sealtime.time import ChangeBatch


def test_graph_errors_are_plan_errors() -> None:
    b = GraphBuilder()
    b.add_node(0, 1, 1)
    b.add_edge(Source(0, 0), Target(0, 0))  # a loop on which time need not advance
    with pytest.raises(CycleError) as info:
        b.build()
    assert isinstance(info.value, GraphError)
    assert isinstance(info.value, PlanError) and isinstance(info.value, ValueError)


def test_capability_errors_are_state_errors() -> None:
    cap = Capability(3, ChangeBatch())
    cap.drop()
    with pytest.raises(CapabilityError) as info:
        cap.drop()
    assert isinstance(info.value, StateError) and isinstance(info.value, RuntimeError)
    with pytest.raises(DowngradeError) as down:
        Capability(5, ChangeBatch()).downgrade(3)
    assert isinstance(down.value, CapabilityError) and isinstance(down.value, ValueError)


@pytest.mark.parametrize("make", [lambda: Add(-1), lambda: Add(0, limit=2**64), lambda: RoundUp(0)])
def test_bad_summaries_are_plan_errors(make) -> None:
    with pytest.raises(PlanError):
        make()


def test_no_internal_error_is_a_user_error() -> None:
    assert issubclass(InternalError, SealtimeError) and issubclass(InternalError, RuntimeError)
    assert not issubclass(InternalError, (PlanError, StateError))
