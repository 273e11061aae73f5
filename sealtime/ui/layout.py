"""A top-down layout of the dataflow graph, computed once in Python for the web page.

Layers: each node first goes to the layer of its longest path from a root (sources on
top, sinks at the bottom). Then, bottom-up, a node moves down to just above the
highest of its consumers other than leaves that only it feeds, so that a source read only by a join
sits next to the join's other input instead of on top with an edge crossing every
layer in between; leaves (sinks, unread side outputs) then sit one layer below their
inputs. Within a layer, nodes are ordered by the mean column of their inputs (so edges
cross less); nodes without inputs come after the others, in plan order. The page draws
the boxes and edges at these positions, so it needs no graph library.

>>> pos = layout({0: [], 1: [0], 2: [0], 3: [1, 2]})
>>> [pos[n][1] for n in range(4)], pos[1][0] < pos[2][0]
([0, 1, 1, 2], True)
>>> # a second source read only at layer 3 moves down next to the join's other input
>>> pos = layout({0: [], 1: [0], 2: [1], 3: [], 4: [2, 3], 5: [3]})
>>> [pos[n][1] for n in range(6)]
[0, 1, 2, 2, 3, 3]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["layout"]


def layout(inputs: Mapping[int, Sequence[int]]) -> dict[int, tuple[float, int]]:
    """``{node: (x, layer)}`` for a DAG given as ``{node: [its inputs]}`` (inputs listed
    before the nodes that read them, as in a plan). `x` is a column index, centred on 0
    within each layer so that narrow layers sit in the middle."""
    order = list(inputs)
    consumers: dict[int, list[int]] = {n: [] for n in order}
    for node in order:
        for i in inputs[node]:
            consumers[i].append(node)
    layer: dict[int, int] = {}
    for node in order:  # plan order is topological
        layer[node] = 1 + max((layer[i] for i in inputs[node]), default=-1)
    # Pull nodes down towards their anchoring consumers (those that are not leaves
    # hanging off this node alone), then hang leaves below their inputs.
    for node in reversed(order):
        anchors = [c for c in consumers[node] if consumers[c] or len(inputs[c]) > 1]
        if anchors:
            layer[node] = max(layer[node], min(layer[c] for c in anchors) - 1)
    for node in order:
        if not consumers[node] and inputs[node]:
            layer[node] = 1 + max(layer[i] for i in inputs[node])
    rows: dict[int, list[int]] = {}
    for node in order:
        rows.setdefault(layer[node], []).append(node)
    # Two passes: the first places nodes without inputs last in their layer; the
    # second puts each of them under the mean column of its consumers (as placed by
    # the first), so a source feeding a join sits above the join.
    first = _place(rows, inputs, {})
    roots = {
        n: _mean([first[c][0] for c in anchors])
        for n in order
        if not inputs[n] and layer[n]
        for anchors in [[c for c in consumers[n] if consumers[c] or len(inputs[c]) > 1]]
        if anchors
    }
    return _place(rows, inputs, roots)


def _place(
    rows: Mapping[int, list[int]], inputs: Mapping[int, Sequence[int]], roots: Mapping[int, float]
) -> dict[int, tuple[float, int]]:
    """Columns per layer, top-down: each node wants the mean column of its inputs (or
    ``roots[n]``; nodes without either go last), in that order, at least one column
    apart, shifted so that the layer stays centred on what its nodes want."""
    out: dict[int, tuple[float, int]] = {}
    for level in sorted(rows):
        want: dict[int, float | None] = {}
        for n in rows[level]:
            if inputs[n]:
                want[n] = _mean([out[i][0] for i in inputs[n]])
            else:
                want[n] = roots.get(n)
        placed = [n for n in rows[level] if want[n] is not None]
        placed.sort(key=lambda n: want[n])  # (stable: plan order among equals)
        nodes = placed + [n for n in rows[level] if want[n] is None]
        xs: list[float] = []
        for n in nodes:
            w = want[n]
            x = (w if w is not None else xs[-1] + 1) if xs else (w or 0.0)
            xs.append(max(x, xs[-1] + 1) if xs else x)
        wanted = [want[n] for n in placed]
        shift = _mean(wanted) - _mean(xs[: len(placed)]) if placed else -(len(nodes) - 1) / 2
        for n, x in zip(nodes, xs):
            out[n] = (x + shift, level)
    return out


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)
