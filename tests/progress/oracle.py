"""Brute-force reference for progress tracking, and hypothesis strategies for graphs.

The oracle shares no code with the tracker: it enumerates every (location, time) pair
reachable from the positive pointstamps by naive breadth-first search over a finite time
universe, then keeps the minimal times per location. The universe is bounded by
"largest pointstamp coordinate + (number of input ports) × (largest single step)", which
is enough: every minimal time is produced by a path without repeated locations (going
round a cycle only makes times larger, since summaries are monotone and inflationary),
and such a path takes each node-internal step from a different input port.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from sealtime.progress import (
    Add,
    CycleError,
    GraphBuilder,
    Identity,
    PathSummary,
    ProductSummary,
    Source,
    Target,
)
from sealtime.time import Product

Location = Source | Target


@dataclass
class GraphSpec:
    """A plain description of a random graph (what the test hands to the builder)."""

    shapes: dict[int, tuple[int, int]]
    internal: dict[int, dict[tuple[int, int], list[PathSummary]]]
    edges: list[tuple[Source, Target]] = field(default_factory=list)

    def builder(self) -> GraphBuilder:
        b = GraphBuilder()
        for node, (inputs, outputs) in self.shapes.items():
            b.add_node(node, inputs, outputs, self.internal[node])
        for s, t in self.edges:
            b.add_edge(s, t)
        return b

    def locations(self) -> list[Location]:
        out: list[Location] = []
        for node, (inputs, outputs) in self.shapes.items():
            out.extend(Target(node, i) for i in range(inputs))
            out.extend(Source(node, o) for o in range(outputs))
        return out


# -- the oracle ------------------------------------------------------------------------


def _le(a: Any, b: Any) -> bool:
    if isinstance(a, Product):
        return _le(a.outer, b.outer) and _le(a.inner, b.inner)
    return a <= b


def _within(t: Any, bound: int) -> bool:
    if isinstance(t, Product):
        return _within(t.outer, bound) and _within(t.inner, bound)
    return t <= bound


def _max_coord(t: Any) -> int:
    if isinstance(t, Product):
        return max(_max_coord(t.outer), _max_coord(t.inner))
    return t


def _max_step(s: PathSummary) -> int:
    if isinstance(s, Add):
        return s.n
    if isinstance(s, ProductSummary):
        return max(_max_step(s.outer), _max_step(s.inner))
    return 0


def minimal(times: Iterable[Any]) -> set[Any]:
    """The minimal elements of a finite set of times, by pairwise comparison."""
    ts = set(times)
    return {t for t in ts if not any(u != t and _le(u, t) for u in ts)}


def brute_force_frontiers(
    spec: GraphSpec, counts: dict[tuple[Location, Any], int]
) -> dict[Location, set[Any]]:
    """Minimal reachable times at every location from the positive pointstamps."""
    seeds = [(loc, t) for (loc, t), c in counts.items() if c > 0]
    steps = [_max_step(s) for ss in spec.internal.values() for v in ss.values() for s in v]
    n_targets = sum(inputs for inputs, _ in spec.shapes.values())
    bound = max((_max_coord(t) for _, t in seeds), default=0) + n_targets * max(steps, default=0)
    out_edges: dict[Source, list[Target]] = {}
    for s, t in spec.edges:
        out_edges.setdefault(s, []).append(t)
    seen = set(seeds)
    work = deque(seeds)
    while work:
        loc, t = work.popleft()
        nexts: list[tuple[Location, Any]] = []
        if isinstance(loc, Source):
            nexts = [(tgt, t) for tgt in out_edges.get(loc, ())]
        else:
            for (i, o), summaries in spec.internal[loc.node].items():
                if i == loc.port:
                    for s in summaries:
                        nt = s.results_in(t)
                        if nt is not None and _within(nt, bound):
                            nexts.append((Source(loc.node, o), nt))
        for item in nexts:
            if item not in seen:
                seen.add(item)
                work.append(item)
    by_loc: dict[Location, list[Any]] = {loc: [] for loc in spec.locations()}
    for loc, t in seen:
        by_loc[loc].append(t)
    return {loc: minimal(ts) for loc, ts in by_loc.items()}


# -- random graphs and batches, decoded from bytes ------------------------------------
#
# Hypothesis draws one byte string per example and the functions below decode it; one
# draw is far cheaper than hundreds of small ones, and shrinking the bytes (shorter,
# towards zero) still shrinks the graph, because byte 0 always decodes to the simplest
# choice and running out of bytes decodes as zeros.


class Reader:
    """Deterministic choices from a byte string (zeros once exhausted)."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def int(self, lo: int, hi: int) -> int:
        """An int in [lo, hi]."""
        if self.pos >= len(self.data):
            return lo
        b = self.data[self.pos]
        self.pos += 1
        return lo + b % (hi - lo + 1)

    def choice(self, items: list[Any]) -> Any:
        return items[self.int(0, len(items) - 1)]


def int_summary(r: Reader) -> PathSummary:
    kind = r.int(0, 2)
    if kind == 0:
        return Identity()
    if kind == 1:
        return Add(r.int(0, 3))
    return Add(r.int(0, 3), limit=r.int(0, 12))


def _int_component(r: Reader) -> PathSummary:
    kind = r.int(0, 2)
    if kind == 0:
        return Identity()
    if kind == 1:
        return Add(r.int(0, 2))
    return Add(r.int(0, 2), limit=r.int(0, 8))


def product_summary(r: Reader) -> PathSummary:
    if r.int(0, 3) == 0:
        return Identity()
    return ProductSummary(_int_component(r), _int_component(r))


def time_of(r: Reader, kind: str) -> Any:
    if kind == "int":
        return r.int(0, 6)
    return Product(r.int(0, 3), r.int(0, 3))


def _advancing(kind: str) -> PathSummary:
    return Add(1) if kind == "int" else ProductSummary(Identity(), Add(1))


def decode_graph(r: Reader, kind: str, cyclic: bool, max_nodes: int = 6) -> GraphSpec:
    """A random graph; a DAG (edges only to higher nodes) or one with advancing cycles."""
    summary = int_summary if kind == "int" else product_summary
    n = r.int(1, max_nodes)
    shapes: dict[int, tuple[int, int]] = {}
    internal: dict[int, dict[tuple[int, int], list[PathSummary]]] = {}
    for node in range(n):
        inputs = r.int(0 if node == 0 else 1, 2)
        outputs = r.int(1, 2)
        shapes[node] = (inputs, outputs)
        table: dict[tuple[int, int], list[PathSummary]] = {}
        for i in range(inputs):
            for o in range(outputs):
                if r.int(0, 4) < 4:  # mostly connected
                    table[(i, o)] = [summary(r) for _ in range(r.int(1, 2))]
        internal[node] = table
    sources = [Source(v, o) for v, (_, outs) in shapes.items() for o in range(outs)]
    targets = [Target(v, i) for v, (ins, _) in shapes.items() for i in range(ins)]
    pairs = [(s, t) for s in sources for t in targets if cyclic or s.node < t.node]
    edges: list[tuple[Source, Target]] = []
    if pairs:
        for _ in range(r.int(0, 2 * n + 2)):
            pair = r.choice(pairs)
            if pair not in edges:
                edges.append(pair)
    spec = GraphSpec(shapes, internal, edges)
    if cyclic:
        # Repair cycles on which time need not advance by making every summary of the
        # nodes on the reported cycle advance.
        while True:
            try:
                spec.builder().graph()
                break
            except CycleError as err:
                for node in {loc.node for loc in err.cycle}:
                    for key, ss in internal[node].items():
                        internal[node][key] = [s if s.advances() else _advancing(kind) for s in ss]
    return spec


def decode_rounds(
    r: Reader, spec: GraphSpec, kind: str, allow_negative: bool = False
) -> list[list[tuple[Location, Any, int]]]:
    """Batches of pointstamp changes. Each batch carries its net changes plus noise
    pairs (+k and -k at the same pointstamp, at random places in the batch) that cancel
    within it, so counts go transiently negative. Net counts stay ≥ 0 unless
    `allow_negative`."""
    locations = spec.locations()
    counts: dict[tuple[Location, Any], int] = {}
    out = []
    for _ in range(r.int(1, 4)):
        batch: list[tuple[Location, Any, int]] = []
        for _ in range(r.int(0, 4)):
            loc = r.choice(locations)
            t = time_of(r, kind)
            current = counts.get((loc, t), 0)
            low = -3 if allow_negative else -current
            d = r.int(low, 2)
            if d:
                counts[(loc, t)] = current + d
                batch.append((loc, t, d))
        for _ in range(r.int(0, 3)):
            loc = r.choice(locations)
            t = time_of(r, kind)
            k = r.int(1, 3)
            batch.insert(r.int(0, len(batch)), (loc, t, -k))
            batch.insert(r.int(0, len(batch)), (loc, t, k))
        out.append(batch)
    return out


#: The one hypothesis strategy the property tests draw from.
byte_strings = st.binary(min_size=400, max_size=400)
