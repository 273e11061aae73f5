"""Locations: value semantics and validation."""

from __future__ import annotations

import pytest

from sealtime.progress import Source, Target


def test_locations_are_values() -> None:
    assert Source(1, 0) == Source(1, 0)
    assert Source(1, 0) != Target(1, 0)
    assert len({Source(1, 0), Source(1, 0), Target(1, 0)}) == 2
    assert sorted([Source(2, 0), Source(1, 1), Source(1, 0)]) == [
        Source(1, 0),
        Source(1, 1),
        Source(2, 0),
    ]
    assert Source(0, 0).is_source and not Source(0, 0).is_target
    assert Target(0, 0).is_target and not Target(0, 0).is_source


def test_locations_are_immutable_and_validated() -> None:
    with pytest.raises(AttributeError):
        Source(0, 0).node = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="Target.port must be a non-negative int"):
        Target(0, -1)
    with pytest.raises(TypeError, match="Source.node must be a non-negative int"):
        Source(True, 0)  # type: ignore[arg-type]
