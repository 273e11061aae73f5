"""A top-down layout of the dataflow graph, computed once in Python for the web page.

Each node goes to the layer of its longest path from a root (sources on top, sinks at
the bottom); nodes of one layer are spread left to right in plan order. The page only
draws the boxes and edges at the positions given here, so it needs no graph library.

>>> pos = layout({0: [], 1: [0], 2: [0], 3: [1, 2]})
>>> [pos[n][1] for n in range(4)], pos[1][0] < pos[2][0]
([0, 1, 1, 2], True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["layout"]


def layout(inputs: Mapping[int, Sequence[int]]) -> dict[int, tuple[float, int]]:
    """``{node: (x, layer)}`` for a DAG given as ``{node: [its inputs]}`` (inputs listed
    before the nodes that read them, as in a plan). `x` is a column index, centred on 0
    within each layer so that narrow layers sit in the middle."""
    layer: dict[int, int] = {}
    for node in inputs:  # plan order is topological
        layer[node] = 1 + max((layer[i] for i in inputs[node]), default=-1)
    rows: dict[int, list[int]] = {}
    for node, level in layer.items():
        rows.setdefault(level, []).append(node)
    out: dict[int, tuple[float, int]] = {}
    for level, nodes in rows.items():
        # Order a layer by the mean column of its inputs, so edges cross less.
        if level:
            nodes.sort(key=lambda n: _mean([out[i][0] for i in inputs[n]] or [0.0]))
        width = len(nodes)
        for i, node in enumerate(nodes):
            out[node] = (i - (width - 1) / 2, level)
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
