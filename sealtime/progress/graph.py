"""Describe a dataflow graph for progress tracking: `GraphBuilder` → `Graph` → `Tracker`.

A graph has nodes (operators) with numbered input and output ports, an *internal summary*
for each connected (input, output) pair of a node, and edges from output ports (`Source`)
to input ports (`Target`). Edges never change times; only internal summaries do.

`GraphBuilder.build()` validates the description (unknown nodes, bad port indices,
malformed summaries, cycles on which time cannot advance) and returns a reachability
`Tracker`. The compiled `Graph` also answers *transitive* path-summary questions: what the
cheapest ways are for a time at any location to reach a given input (timely's
`summarize_outputs`, generalised to every target).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from sealtime.errors import PlanError
from sealtime.progress.location import Location, Source, Target
from sealtime.progress.summary import Identity, PathSummary
from sealtime.time import Antichain

if TYPE_CHECKING:
    from sealtime.progress.reachability import Tracker

__all__ = ["CycleError", "Graph", "GraphBuilder", "GraphError", "SummaryLike"]

#: What `add_node` accepts for one (input, output) pair: a summary, several summaries
#: (an `Antichain` or any iterable; only the minimal ones are kept), or None/empty for
#: "this input is not connected to this output".
SummaryLike = PathSummary | Antichain | Iterable[PathSummary] | None


class GraphError(PlanError):
    """The graph description is invalid (unknown node, bad port, bad summary, ...); a
    `PlanError` (so also a ``ValueError``).

    >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_edge(Source(0, 0), Target(7, 0))
    >>> b.build()
    Traceback (most recent call last):
    ...
    sealtime.progress.graph.GraphError: invalid dataflow graph:
      - edge Source(node=0, port=0) -> Target(node=7, port=0): node 7 was never added (add_node(7, ...))
    """


class CycleError(GraphError):
    """The graph has a cycle along which time need not advance; `cycle` lists it.

    On such a cycle a time can reach itself, so the frontier there could never pass it.
    Every cycle needs a summary that `advances()` (e.g. `Add(1)`, or
    `ProductSummary(Identity(), Add(1))` on a loop's feedback edge).

    >>> b = GraphBuilder(); b.add_node(0, 1, 1); b.add_edge(Source(0, 0), Target(0, 0))
    >>> try:
    ...     b.build()
    ... except CycleError as err:
    ...     err.cycle
    [Target(node=0, port=0), Source(node=0, port=0)]
    """

    def __init__(self, message: str, cycle: list[Location]) -> None:
        super().__init__(message)
        self.cycle = cycle


# Plain slots and assignments, like any small record: alike to other __init__s in form only.
class _Node:
    __slots__ = ("index", "inputs", "outputs", "summary", "name")

    def __init__(
        self,
        index: int,
        inputs: int,
        outputs: int,
        summary: dict[tuple[int, int], Antichain],
        name: str | None,
    ) -> None:
        self.index = index
        self.inputs = inputs
        self.outputs = outputs
        self.summary = summary
        self.name = name


class GraphBuilder:
    """Collects nodes and edges, then `build()`s a `Tracker` (timely's `Builder`).

    `add_node(index, inputs, outputs, summary)` declares a node; `summary` gives the
    internal path summaries from inputs to outputs (default: every input reaches every
    output unchanged, `Identity()`). `add_edge(Source(n, o), Target(m, i))` connects
    output `o` of node `n` to input `i` of node `m`.

    The graph of timely's documentation — three nodes in a loop, the last adding 1 (also
    `Tracker`'s example: each doctest builds it, to stand alone):

    >>> from sealtime.progress import Add
    >>> b = GraphBuilder()
    >>> b.add_node(0, 1, 1, [[Identity()]])
    >>> b.add_node(1, 1, 1, [[Identity()]])
    >>> b.add_node(2, 1, 1, [[Add(1)]])
    >>> b.add_edge(Source(0, 0), Target(1, 0))
    >>> b.add_edge(Source(1, 0), Target(2, 0))
    >>> b.add_edge(Source(2, 0), Target(0, 0))
    >>> tracker = b.build()
    >>> tracker.graph.summary(Source(0, 0), Target(0, 0))
    Antichain([Add(1)])
    """

    def __init__(self) -> None:
        self._nodes: dict[int, _Node] = {}
        self._edges: list[tuple[Source, Target]] = []
        self._edge_set: set[tuple[Source, Target]] = set()

    def add_node(
        self,
        index: int,
        inputs: int,
        outputs: int,
        summary: Mapping[tuple[int, int], SummaryLike]
        | Sequence[Sequence[SummaryLike]]
        | None = None,
        *,
        name: str | None = None,
    ) -> None:
        """Declare node `index` with `inputs` input and `outputs` output ports.

        `summary` is either None (every input connected to every output by
        `Identity()`), a mapping `{(input, output): summaries}` (absent pairs are not
        connected), or a nested sequence `summary[input][output]` (None or empty = not
        connected). `name` only appears in error messages.

        >>> from sealtime.progress import Add
        >>> b = GraphBuilder()
        >>> b.add_node(0, 2, 1, {(0, 0): Identity(), (1, 0): [Add(5), Add(2)]}, name="join")
        >>> b.graph().internal_summary(0, 1, 0)
        Antichain([Add(2)])
        >>> b.add_node(1, 1, 1, {(0, 3): Identity()})
        Traceback (most recent call last):
        ...
        sealtime.progress.graph.GraphError: node 1: summary for (input 0, output 3): output 3 does not exist (the node has 1 output(s): 0..0)
        """
        _check_count("index", index, f"add_node({index!r}, ...)")
        _check_count("inputs", inputs, f"node {index}")
        _check_count("outputs", outputs, f"node {index}")
        if index in self._nodes:
            raise GraphError(f"node {index} was already added; node indices must be unique")
        where = f"node {index}" + (f" ({name!r})" if name else "")
        table: dict[tuple[int, int], Antichain] = {}
        if summary is None:
            for i in range(inputs):
                for o in range(outputs):
                    table[(i, o)] = Antichain.from_elem(Identity())
        elif isinstance(summary, Mapping):
            for key, value in summary.items():
                if not (isinstance(key, tuple) and len(key) == 2):
                    raise GraphError(
                        f"{where}: summary keys must be (input, output) pairs, got {key!r}"
                    )
                i, o = key
                _check_port(where, i, o, inputs, outputs)
                chain = _to_antichain(where, i, o, value)
                if chain:
                    table[(i, o)] = chain
        else:
            rows = list(summary)
            if len(rows) != inputs:
                raise GraphError(
                    f"{where}: summary has {len(rows)} row(s) but the node has {inputs} "
                    f"input(s); give one row per input, one entry per output"
                )
            # Deliberately parallel to the row check above: one message per mismatched count.
            for i, row in enumerate(rows):
                entries = list(row)
                if len(entries) != outputs:
                    raise GraphError(
                        f"{where}: summary row {i} has {len(entries)} entries but the node "
                        f"has {outputs} output(s)"
                    )
                for o, value in enumerate(entries):
                    chain = _to_antichain(where, i, o, value)
                    if chain:
                        table[(i, o)] = chain
        self._nodes[index] = _Node(index, inputs, outputs, table, name)

    def add_edge(self, source: Source, target: Target) -> None:
        """Connect output port `source` to input port `target`.

        Node and port existence is checked by `build()` (nodes may be added later).

        >>> GraphBuilder().add_edge(Target(0, 0), Source(1, 0))
        Traceback (most recent call last):
        ...
        TypeError: add_edge(source, target) needs a Source (output port) then a Target (input port), got Target(node=0, port=0), Source(node=1, port=0)
        """
        if type(source) is not Source or type(target) is not Target:
            raise TypeError(
                "add_edge(source, target) needs a Source (output port) then a Target "
                f"(input port), got {source!r}, {target!r}"
            )
        if (source, target) in self._edge_set:
            raise GraphError(f"edge {source} -> {target} was already added")
        self._edge_set.add((source, target))
        self._edges.append((source, target))

    def graph(self) -> Graph:
        """Validate and compile into an immutable `Graph`; raises `GraphError`.

        >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_node(1, 1, 0)
        >>> b.add_edge(Source(0, 0), Target(1, 0))
        >>> b.graph().locations()
        (Source(node=0, port=0), Target(node=1, port=0))
        """
        problems = []
        for source, target in self._edges:
            for loc in (source, target):
                node = self._nodes.get(loc.node)
                if node is None:
                    problems.append(
                        f"edge {source} -> {target}: node {loc.node} was never added "
                        f"(add_node({loc.node}, ...))"
                    )
                    break
                count = node.outputs if type(loc) is Source else node.inputs
                kind = "output" if type(loc) is Source else "input"
                if loc.port >= count:
                    problems.append(
                        f"edge {source} -> {target}: node {loc.node}{_name(node)} has no "
                        f"{kind} {loc.port} (it has {count} {kind}(s))"
                    )
                    break
        if problems:
            raise GraphError("invalid dataflow graph:\n  - " + "\n  - ".join(problems))
        graph = Graph(self._nodes, self._edges)
        cycle = graph._non_advancing_cycle()
        if cycle is not None:
            path = " -> ".join(graph.describe(loc) for loc in [*cycle, cycle[0]])
            raise CycleError(
                "dataflow graph has a cycle on which time does not advance, so its "
                f"frontier could never pass a time: {path}. Give one operator or feedback "
                "edge on this cycle a summary that advances time (e.g. Add(1), or "
                "ProductSummary(Identity(), Add(1)) on a loop's feedback edge).",
                cycle,
            )
        return graph

    def is_acyclic(self) -> bool:
        """True if no cycle lacks a time-advancing summary (timely's `is_acyclic`).

        Ignores invalid edges; `build()` reports those.

        >>> from sealtime.progress import Add
        >>> b = GraphBuilder()
        >>> b.add_node(0, 2, 2, {(0, 0): Identity(), (1, 1): Add(1)})
        >>> b.add_edge(Source(0, 0), Target(0, 1)); b.add_edge(Source(0, 1), Target(0, 0))
        >>> b.is_acyclic()
        True
        """
        valid = [
            (s, t)
            for s, t in self._edges
            if s.node in self._nodes
            and t.node in self._nodes
            and s.port < self._nodes[s.node].outputs
            and t.port < self._nodes[t.node].inputs
        ]
        return Graph(self._nodes, valid)._non_advancing_cycle() is None

    def build(self) -> Tracker:
        """Validate the graph and return a `Tracker` for it.

        >>> b = GraphBuilder(); b.add_node(0, 0, 1)
        >>> b.build().frontier(Source(0, 0))
        Antichain([])
        """
        from sealtime.progress.reachability import Tracker

        return Tracker(self.graph())


class Graph:
    """A validated, immutable dataflow graph; made by `GraphBuilder.graph()`.

    Besides the shape, it computes transitive path summaries: `path_summaries(target)`
    maps every location from which `target` is reachable to the minimal summaries of
    the paths (an `Antichain`), by a fixpoint over summaries like timely's builder.

    >>> from sealtime.progress import Add
    >>> b = GraphBuilder()
    >>> b.add_node(0, 0, 1); b.add_node(1, 1, 1, [[Add(2)]]); b.add_node(2, 1, 0)
    >>> b.add_edge(Source(0, 0), Target(1, 0)); b.add_edge(Source(1, 0), Target(2, 0))
    >>> g = b.graph()
    >>> g.summary(Source(0, 0), Target(2, 0)), g.summary(Target(2, 0), Target(1, 0))
    (Antichain([Add(2)]), Antichain([]))
    """

    def __init__(self, nodes: Mapping[int, _Node], edges: Sequence[tuple[Source, Target]]):
        # Private: validity is GraphBuilder.graph()'s job.
        self._nodes = dict(sorted(nodes.items()))
        self._edges = tuple(edges)
        self._out_edges: dict[Source, list[Target]] = {}
        self._in_edges: dict[Target, list[Source]] = {}
        for source, target in self._edges:
            self._out_edges.setdefault(source, []).append(target)
            self._in_edges.setdefault(target, []).append(source)
        self._locations: tuple[Location, ...] = tuple(
            loc
            for node in self._nodes.values()
            for loc in (
                *(Target(node.index, i) for i in range(node.inputs)),
                *(Source(node.index, o) for o in range(node.outputs)),
            )
        )
        self._summaries_to: dict[Target, dict[Location, Antichain]] = {}

    def nodes(self) -> tuple[int, ...]:
        """The node indices, ascending.

        >>> b = GraphBuilder(); b.add_node(3, 0, 0); b.add_node(1, 0, 0); b.graph().nodes()
        (1, 3)
        """
        return tuple(self._nodes)

    def shape(self, node: int) -> tuple[int, int]:
        """`(inputs, outputs)` of `node`.

        >>> b = GraphBuilder(); b.add_node(0, 2, 3); b.graph().shape(0)
        (2, 3)
        """
        n = self._node(node)
        return (n.inputs, n.outputs)

    def name(self, node: int) -> str | None:
        """The name given to `add_node`, if any.

        >>> b = GraphBuilder(); b.add_node(0, 0, 0, name="src"); b.graph().name(0)
        'src'
        """
        return self._node(node).name

    def internal_summary(self, node: int, input: int, output: int) -> Antichain:
        """Summaries from input `input` to output `output` of `node` (empty = none).

        >>> b = GraphBuilder(); b.add_node(0, 1, 2, {(0, 1): Identity()})
        >>> b.graph().internal_summary(0, 0, 0), b.graph().internal_summary(0, 0, 1)
        (Antichain([]), Antichain([Identity()]))
        """
        n = self._node(node)
        _check_port(f"node {node}", input, output, n.inputs, n.outputs)
        chain = n.summary.get((input, output))
        return chain.copy() if chain is not None else Antichain()

    def edges(self) -> tuple[tuple[Source, Target], ...]:
        """Every edge, in the order added.

        >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_node(1, 1, 0)
        >>> b.add_edge(Source(0, 0), Target(1, 0)); b.graph().edges()
        ((Source(node=0, port=0), Target(node=1, port=0)),)
        """
        return self._edges

    def targets(self, source: Source) -> tuple[Target, ...]:
        """The inputs that output port `source` is connected to.

        >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_node(1, 1, 0)
        >>> b.add_edge(Source(0, 0), Target(1, 0)); b.graph().targets(Source(0, 0))
        (Target(node=1, port=0),)
        """
        return tuple(self._out_edges.get(source, ()))

    def locations(self) -> tuple[Location, ...]:
        """Every port: per node (ascending), its inputs then its outputs.

        >>> b = GraphBuilder(); b.add_node(0, 1, 1); b.graph().locations()
        (Target(node=0, port=0), Source(node=0, port=0))
        """
        return self._locations

    def __contains__(self, location: object) -> bool:
        node = self._nodes.get(getattr(location, "node", -1))
        if node is None:
            return False
        if type(location) is Source:
            return location.port < node.outputs
        if type(location) is Target:
            return location.port < node.inputs
        return False

    def check_location(self, location: Location) -> None:
        """Raise `GraphError` (or `TypeError`) unless `location` is a port of this graph.

        >>> b = GraphBuilder(); b.add_node(0, 1, 1); b.graph().check_location(Source(0, 1))
        Traceback (most recent call last):
        ...
        sealtime.progress.graph.GraphError: Source(node=0, port=1): node 0 has no output 1 (it has 1 output(s))
        """
        if type(location) is not Source and type(location) is not Target:
            raise TypeError(f"expected a Source or Target location, got {location!r}")
        node = self._nodes.get(location.node)
        if node is None:
            known = ", ".join(map(str, self._nodes)) or "none"
            raise GraphError(f"{location}: no node {location.node} (nodes: {known})")
        kind, count = (
            ("output", node.outputs) if type(location) is Source else ("input", node.inputs)
        )
        if location.port >= count:
            raise GraphError(
                f"{location}: node {location.node}{_name(node)} has no {kind} "
                f"{location.port} (it has {count} {kind}(s))"
            )

    def describe(self, location: Location) -> str:
        """`location` with its node's name, for messages.

        >>> b = GraphBuilder(); b.add_node(0, 1, 1, name="map"); b.graph().describe(Target(0, 0))
        "Target(node=0, port=0) of 'map'"
        """
        node = self._nodes.get(location.node)
        if node is not None and node.name:
            return f"{location} of {node.name!r}"
        return str(location)

    def path_summaries(self, target: Target) -> dict[Location, Antichain]:
        """Minimal summaries of all paths from each location to `target`.

        Includes `target` itself (`Identity()`); locations that cannot reach `target`
        are absent. Computed on first use per target by a backwards fixpoint: each newly
        found summary is extended across edges (unchanged) and node-internal summaries
        (`internal.followed_by(summary)`) until no antichain grows — finite because
        every cycle advances time, so going around it only yields larger summaries.

        >>> from sealtime.progress import Add
        >>> b = GraphBuilder()
        >>> b.add_node(0, 1, 1, [[Add(1)]])
        >>> b.add_edge(Source(0, 0), Target(0, 0))
        >>> b.graph().path_summaries(Target(0, 0))
        {Target(node=0, port=0): Antichain([Identity()]), Source(node=0, port=0): Antichain([Identity()])}
        """
        self.check_location(target)
        if type(target) is not Target:
            raise TypeError(f"path summaries lead to a Target (an input port), got {target!r}")
        cached = self._summaries_to.get(target)
        if cached is None:
            cached = self._compute_summaries_to(target)
            self._summaries_to[target] = cached
        return {loc: chain.copy() for loc, chain in cached.items()}

    def summary(self, location: Location, target: Target) -> Antichain:
        """Minimal summaries of the paths from `location` to `target` (empty if none).

        >>> b = GraphBuilder(); b.add_node(0, 1, 1); b.add_node(1, 1, 1)
        >>> b.add_edge(Source(0, 0), Target(1, 0))
        >>> b.graph().summary(Target(0, 0), Target(1, 0))
        Antichain([Identity()])
        """
        self.check_location(location)
        chain = self.path_summaries(target).get(location)
        return chain if chain is not None else Antichain()

    def _compute_summaries_to(self, target: Target) -> dict[Location, Antichain]:
        results: dict[Location, Antichain] = {target: Antichain.from_elem(Identity())}
        work: deque[tuple[Location, PathSummary]] = deque([(target, Identity())])
        while work:
            loc, summary = work.popleft()
            if type(loc) is Target:
                # Walk back along edges: edges do not change times.
                for source in self._in_edges.get(loc, ()):
                    chain = results.setdefault(source, Antichain())
                    if chain.insert(summary):
                        work.append((source, summary))
            else:
                # Walk back across the node, from this output to each connected input.
                node = self._nodes[loc.node]
                for (i, o), internal in node.summary.items():
                    if o != loc.port:
                        continue
                    upstream = Target(loc.node, i)
                    for first in internal.elements():
                        combined = first.followed_by(summary)
                        if combined is None:
                            continue
                        chain = results.setdefault(upstream, Antichain())
                        if chain.insert(combined):
                            work.append((upstream, combined))
        return {loc: chain for loc, chain in results.items() if chain}

    def _non_advancing_arcs(self) -> dict[Location, list[Location]]:
        # Arcs along which a time can stay the same: every edge, and every node-internal
        # connection with at least one non-advancing summary.
        arcs: dict[Location, list[Location]] = {loc: [] for loc in self._locations}
        for source, target in self._edges:
            arcs[source].append(target)
        for node in self._nodes.values():
            for (i, o), chain in node.summary.items():
                if any(not s.advances() for s in chain.elements()):
                    arcs[Target(node.index, i)].append(Source(node.index, o))
        return arcs

    def _non_advancing_cycle(self) -> list[Location] | None:
        # Iterative DFS with colours; returns one cycle (as a location list) if any.
        arcs = self._non_advancing_arcs()
        state: dict[Location, int] = {}  # 1 = on the stack, 2 = done
        for root in self._locations:
            if root in state:
                continue
            stack: list[tuple[Location, int]] = [(root, 0)]
            path: list[Location] = [root]
            state[root] = 1
            while stack:
                loc, i = stack[-1]
                succ = arcs[loc]
                if i < len(succ):
                    stack[-1] = (loc, i + 1)
                    nxt = succ[i]
                    s = state.get(nxt)
                    if s is None:
                        state[nxt] = 1
                        stack.append((nxt, 0))
                        path.append(nxt)
                    elif s == 1:
                        return path[path.index(nxt) :]
                else:
                    state[loc] = 2
                    stack.pop()
                    path.pop()
        return None

    def _node(self, node: int) -> _Node:
        n = self._nodes.get(node)
        if n is None:
            known = ", ".join(map(str, self._nodes)) or "none"
            raise GraphError(f"no node {node!r} in this graph (nodes: {known})")
        return n


def _name(node: _Node) -> str:
    return f" ({node.name!r})" if node.name else ""


def _check_count(what: str, value: object, where: str) -> None:
    if type(value) is not int or value < 0:
        raise GraphError(f"{where}: {what} must be a non-negative int, got {value!r}")


def _check_port(where: str, i: object, o: object, inputs: int, outputs: int) -> None:
    if type(i) is not int or not 0 <= i < inputs:
        raise GraphError(
            f"{where}: summary for (input {i!r}, output {o!r}): input {i!r} does not exist "
            f"(the node has {inputs} input(s)" + (f": 0..{inputs - 1})" if inputs else ")")
        )
    if type(o) is not int or not 0 <= o < outputs:
        raise GraphError(
            f"{where}: summary for (input {i!r}, output {o!r}): output {o!r} does not exist "
            f"(the node has {outputs} output(s)" + (f": 0..{outputs - 1})" if outputs else ")")
        )


def _to_antichain(where: str, i: int, o: int, value: SummaryLike) -> Antichain:
    if value is None:
        return Antichain()
    try:
        items = [value] if isinstance(value, PathSummary) else list(value)
    except TypeError:
        items = [value]  # not iterable: reported as a bad summary just below
    chain: Antichain = Antichain()
    for s in items:
        if not isinstance(s, PathSummary):
            raise GraphError(
                f"{where}: summary for (input {i}, output {o}) must be PathSummary objects "
                f"(Identity(), Add(n), ProductSummary(...)), got {s!r}"
            )
        chain.insert(s)
    return chain
