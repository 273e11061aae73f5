"""Locations in a dataflow graph: operator output ports (`Source`) and input ports (`Target`).

Progress tracking counts *pointstamps*: a (location, time) pair with a count. At a
`Source` the count is the number of capabilities an operator holds to send at that time;
at a `Target` it is the number of messages in flight to that input. Edges run from a
`Source` to a `Target` and never change times; nodes connect their `Target`s (inputs) to
their `Source`s (outputs) through path summaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

__all__ = ["Location", "Source", "Target"]


@dataclass(frozen=True, order=True)
class _Port:
    """A port: node `node`, port index `port` (both non-negative ints). Ports of the two
    kinds never compare equal (dataclass equality needs the same class)."""

    node: int
    port: int

    #: is this an output port (`Source`) / an input port (`Target`)?
    is_source: ClassVar[bool] = False
    is_target: ClassVar[bool] = False

    def __post_init__(self) -> None:
        _check_index(type(self).__name__, "node", self.node)
        _check_index(type(self).__name__, "port", self.port)


@dataclass(frozen=True, order=True)
class Source(_Port):
    """Output port `port` of node `node`: where capabilities are held, where edges start.

    >>> Source(1, 0)
    Source(node=1, port=0)
    >>> Source(1, 0).is_source, Source(1, 0).is_target
    (True, False)
    >>> Source(1, 0) == Target(1, 0)
    False
    """

    is_source: ClassVar[bool] = True


# `Target` mirrors `Source` on purpose: the two kinds of port differ only in their role.
@dataclass(frozen=True, order=True)
class Target(_Port):
    """Input port `port` of node `node`: where messages arrive, where edges end.

    >>> Target(2, 1)
    Target(node=2, port=1)
    >>> Target(2, 1).is_target, Target(2, 1).is_source
    (True, False)
    """

    is_target: ClassVar[bool] = True


#: Any port of the graph: an output port (`Source`) or an input port (`Target`).
Location = Source | Target


def _check_index(kind: str, field: str, value: object) -> None:
    # bool is an int subclass; Source(True, 0) is almost certainly a bug.
    if type(value) is not int or value < 0:
        raise TypeError(f"{kind}.{field} must be a non-negative int, got {value!r}")
