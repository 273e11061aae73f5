"""The reachability `Tracker`: frontiers at every port from pointstamp counts.

Semantics are timely dataflow's `progress::reachability::Tracker`. Callers report
*pointstamp* count changes — capabilities held at output ports (`update_source`) and
messages in flight to input ports (`update_target`) — and `propagate_all()` works out the
consequences: for every location, the *frontier* of times that may still appear there,
which is the set of minimal `summary.results_in(t)` over every positive pointstamp `t`
upstream and every path summary from it. Only frontier changes are reported.

How (and why) propagation is incremental:

1. Pending count changes are consolidated per (location, time) first, so counts may go
   negative inside a batch; only the net change matters. Each location's counts live in
   a `MutableAntichain`, which reports only changes of *its* frontier.
2. Each location also keeps the counts of its *implications*: one per (upstream frontier
   element, path step) that lands on it. A frontier change at a location is pushed to
   its successors only (along edges unchanged, across a node through its internal
   summaries), exactly as timely does; nothing is recomputed from scratch.
3. Work is ordered so that every (time, location) is settled once. Timely orders its
   worklist by time; we order by (strongly connected component in topological order,
   then time within a cyclic component, then a topological order of the arcs that do
   not advance time). On a DAG this visits each affected location once, with all of its
   changes in one batch; on a cycle it is timely's time order, which terminates because
   every cycle advances time (checked when the graph is built).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush
from typing import Any

from sealtime.errors import InternalError
from sealtime.progress.capability import Capability
from sealtime.progress.graph import Graph
from sealtime.progress.location import Location, Source, Target
from sealtime.time import Antichain, ChangeBatch, MutableAntichain, less_equal, less_than, sort_key

__all__ = ["Tracker"]

# One propagated step: (successor location id, summary function or None for identity,
# the successor's cyclic-component head or -1 if it is acyclic).
_Step = tuple[int, Callable[[Any], Any] | None, int]


class Tracker:
    """Tracks pointstamps on a fixed graph and maintains the frontier at every port.

    Made by `GraphBuilder.build()`. Changes are buffered by `update_source` /
    `update_target` (and by capabilities, through `source_batch`) until
    `propagate_all()`, which returns the frontier changes as `(location, time, diff)`.

    The example of timely's `reachability` module — three nodes in a loop, the last one
    adding 1 to times (the graph of `GraphBuilder`'s example, built again on purpose so
    that each doctest stands alone):

    >>> from sealtime.progress import Add, GraphBuilder, Identity, Source, Target
    >>> b = GraphBuilder()
    >>> b.add_node(0, 1, 1, [[Identity()]])
    >>> b.add_node(1, 1, 1, [[Identity()]])
    >>> b.add_node(2, 1, 1, [[Add(1)]])
    >>> b.add_edge(Source(0, 0), Target(1, 0))
    >>> b.add_edge(Source(1, 0), Target(2, 0))
    >>> b.add_edge(Source(2, 0), Target(0, 0))
    >>> tracker = b.build()
    >>> tracker.update_source(Source(0, 0), 17, 1)
    >>> sorted(c for c in tracker.propagate_all() if c[0].is_target)
    [(Target(node=0, port=0), 18, 1), (Target(node=1, port=0), 17, 1), (Target(node=2, port=0), 17, 1)]
    >>> tracker.update_source(Source(0, 0), 17, -1)
    >>> sorted(c for c in tracker.propagate_all() if c[0].is_target)
    [(Target(node=0, port=0), 18, -1), (Target(node=1, port=0), 17, -1), (Target(node=2, port=0), 17, -1)]
    """

    def __init__(self, graph: Graph) -> None:
        if not isinstance(graph, Graph):
            raise TypeError(f"Tracker needs a Graph (GraphBuilder.graph()), got {graph!r}")
        self._graph = graph
        self._compile(graph)
        n = len(self._locs)
        # Pointstamp counts (may be transiently negative) and implication counts.
        self._points: list[MutableAntichain[Any]] = [MutableAntichain() for _ in range(n)]
        self._icounts: list[dict[Any, int]] = [{} for _ in range(n)]
        self._ifront: list[list[Any]] = [[] for _ in range(n)]
        # Buffered pointstamp changes: location id -> {time: diff}.
        self._pending: dict[int, dict[Any, int]] = {}
        # Change batches shared with capabilities, drained by propagate_all.
        self._batches: dict[int, ChangeBatch[Any]] = {}
        # Sum of the pointstamp frontier sizes: zero iff nothing is tracked.
        self._total = 0

    # -- construction ----------------------------------------------------------------

    def _compile(self, graph: Graph) -> None:
        locations = graph.locations()
        index = {loc: i for i, loc in enumerate(locations)}
        n = len(locations)
        steps: list[list[tuple[int, Any]]] = [[] for _ in range(n)]  # (dst, summary|None)
        for source, target in graph.edges():
            steps[index[source]].append((index[target], None))
        for node in graph.nodes():
            inputs, outputs = graph.shape(node)
            for i in range(inputs):
                for o in range(outputs):
                    for s in graph.internal_summary(node, i, o).elements():
                        steps[index[Target(node, i)]].append((index[Source(node, o)], s))

        # Strongly connected components in topological order (Tarjan emits them in
        # reverse): components upstream are settled before anything downstream.
        comps = _tarjan(n, [[d for d, _ in out] for out in steps])
        comps.reverse()
        scc_rank = [0] * n
        for r, comp in enumerate(comps):
            for v in comp:
                scc_rank[v] = r

        # A topological order of the arcs that may keep a time unchanged (acyclic: the
        # builder rejected non-advancing cycles); within one time of a cyclic
        # component, processing in this order settles each location once.
        flat = [[d for d, s in out if s is None or not s.advances()] for out in steps]
        topo = _kahn(n, flat)

        # Renumber locations by (component, topological position) so that ids are the
        # processing order inside a component.
        order = sorted(range(n), key=lambda v: (scc_rank[v], topo[v]))
        new_id = [0] * n
        for i, v in enumerate(order):
            new_id[v] = i
        self._locs: list[Location] = [locations[v] for v in order]
        self._ids: dict[Location, int] = {loc: i for i, loc in enumerate(self._locs)}
        # Work is queued per location id for acyclic components (single locations) and
        # per component for cyclic ones, under the id of the component's first location
        # (its "head"); since ids follow component order, a heap of ids visits
        # components in topological order.
        head = [-1] * n
        for comp in comps:
            if len(comp) > 1:
                first = min(new_id[v] for v in comp)
                for v in comp:
                    head[new_id[v]] = first
        self._head: list[int] = head
        self._steps: list[list[_Step]] = [
            [
                (
                    new_id[d],
                    None if s is None or _is_identity(s) else s.results_in,
                    head[new_id[d]],
                )
                for d, s in steps[v]
            ]
            for v in order
        ]

    # -- inputs ----------------------------------------------------------------------

    @property
    def graph(self) -> Graph:
        """The graph this tracker was built for.

        >>> from sealtime.progress import GraphBuilder
        >>> b = GraphBuilder(); b.add_node(0, 1, 1); b.build().graph.shape(0)
        (1, 1)
        """
        return self._graph

    def update_source(self, source: Source, time: Any, diff: int) -> None:
        """Buffer a change of `diff` capabilities at output port `source`, time `time`.

        >>> from sealtime.progress import GraphBuilder, Source
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); t = b.build()
        >>> t.update_source(Source(0, 0), 3, 1); t.propagate_all()
        [(Source(node=0, port=0), 3, 1)]
        """
        if type(source) is not Source:
            raise TypeError(f"update_source needs a Source (output port), got {source!r}")
        self._buffer(source, time, diff)

    # Deliberately parallel to `update_source`: one checked entry point per port kind.
    def update_target(self, target: Target, time: Any, diff: int) -> None:
        """Buffer a change of `diff` messages in flight to input port `target` at `time`.

        >>> from sealtime.progress import GraphBuilder, Target
        >>> b = GraphBuilder(); b.add_node(0, 1, 0); t = b.build()
        >>> t.update_target(Target(0, 0), 3, 2); t.propagate_all()
        [(Target(node=0, port=0), 3, 1)]
        """
        if type(target) is not Target:
            raise TypeError(f"update_target needs a Target (input port), got {target!r}")
        self._buffer(target, time, diff)

    def update(self, location: Location, time: Any, diff: int) -> None:
        """`update_source` or `update_target`, depending on the kind of `location`.

        >>> from sealtime.progress import GraphBuilder, Source
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); t = b.build()
        >>> t.update(Source(0, 0), 1, 1); t.update(Source(0, 0), 1, -1); t.propagate_all()
        []
        """
        self._buffer(location, time, diff)

    def _buffer(self, location: Location, time: Any, diff: int) -> None:
        lid = self._ids.get(location)
        if lid is None:
            self._graph.check_location(location)  # raises with a precise message
        if type(diff) is not int:
            raise TypeError(f"diff must be an int, got {diff!r}")
        if diff:
            pending = self._pending.get(lid)  # type: ignore[arg-type]
            if pending is None:
                self._pending[lid] = {time: diff}  # type: ignore[index]
            else:
                pending[time] = pending.get(time, 0) + diff

    def source_batch(self, source: Source) -> ChangeBatch[Any]:
        """The change batch shared with capabilities at `source` (one per port).

        Anything added to it is applied by the next `propagate_all()`.

        >>> from sealtime.progress import GraphBuilder, Source
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); t = b.build()
        >>> t.source_batch(Source(0, 0)).update(5, 1); t.propagate_all()
        [(Source(node=0, port=0), 5, 1)]
        """
        if type(source) is not Source:
            raise TypeError(f"capabilities live at a Source (output port), got {source!r}")
        lid = self._ids.get(source)
        if lid is None:
            self._graph.check_location(source)
        batch = self._batches.get(lid)  # type: ignore[arg-type]
        if batch is None:
            batch = self._batches[lid] = ChangeBatch()  # type: ignore[index]
        return batch

    def capability(self, source: Source, time: Any) -> Capability[Any]:
        """Mint a capability for `time` at output port `source` (counted from now on).

        >>> from sealtime.progress import GraphBuilder, Source
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); t = b.build()
        >>> cap = t.capability(Source(0, 0), 0); t.propagate_all()
        [(Source(node=0, port=0), 0, 1)]
        >>> cap.downgrade(2); t.propagate_all()
        [(Source(node=0, port=0), 0, -1), (Source(node=0, port=0), 2, 1)]
        >>> cap.drop(); t.propagate_all(); t.frontier(Source(0, 0))
        [(Source(node=0, port=0), 2, -1)]
        Antichain([])
        """
        return Capability(time, self.source_batch(source), source)

    # -- propagation -----------------------------------------------------------------

    def propagate_all(self) -> list[tuple[Location, Any, int]]:
        """Apply all buffered changes; return the frontier changes, consolidated.

        Each entry `(location, time, diff)` says `time` joined (`+1`) or left (`-1`) the
        frontier at `location` (timely's `pushed()` changes, here handed back directly).

        >>> from sealtime.progress import GraphBuilder, Source, Target
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_node(1, 1, 0)
        >>> b.add_edge(Source(0, 0), Target(1, 0)); t = b.build()
        >>> t.update_source(Source(0, 0), 4, 1); t.update_source(Source(0, 0), 4, -1)
        >>> t.propagate_all()  # netted out within the batch: no change
        []
        """
        pending = self._pending
        for lid, batch in self._batches.items():
            if batch:
                mine = pending.get(lid)
                if mine is None:
                    mine = pending[lid] = {}
                for t, d in batch.drain():
                    mine[t] = mine.get(t, 0) + d
        if not pending:
            return []
        self._pending = {}

        steps = self._steps
        head = self._head
        locs = self._locs
        icounts = self._icounts
        ifront = self._ifront
        heap: list[int] = []  # acyclic location ids and cyclic component heads with work
        # Pending changes per acyclic location id (a list: indexing beats a dict here).
        single: list[list[tuple[Any, int]] | None] = [None] * len(locs)
        scc: dict[int, tuple[list[Any], dict[Any, dict[Any, int]]]] = {}
        changed: list[tuple[Location, Any, int]] = []  # the result, in settle order
        revisits = False

        def push_cyclic(dst: int, h: int, t: Any, d: int) -> None:
            # Queue `(t, d)` at `dst` in cyclic component `h`, keyed by (time, id).
            work = scc.get(h)
            if work is None:
                work = scc[h] = ([], {})
                heappush(heap, h)
            key = (t if type(t) is int else sort_key(t), dst)
            bucket = work[1].get(key)
            if bucket is None:
                work[1][key] = {t: d}
                heappush(work[0], key)
            else:
                bucket[t] = bucket.get(t, 0) + d

        def spread(lid: int, out: list[tuple[Any, int]]) -> None:
            # Record frontier changes at `lid` and queue them at its successors.
            succ = steps[lid]
            loc = locs[lid]
            for t, d in out:
                changed.append((loc, t, d))
                for dst, fn, h in succ:
                    if fn is None:
                        nt = t
                    else:
                        nt = fn(t)
                        if nt is None:
                            continue
                    if h < 0:
                        bucket = single[dst]
                        if bucket is None:
                            single[dst] = [(nt, d)]
                            heappush(heap, dst)
                        else:
                            bucket.append((nt, d))
                    else:
                        push_cyclic(dst, h, nt, d)

        # Step 1: pointstamp counts -> changes of each location's own frontier, which
        # are the first implication changes at that location (queued as `spread` does,
        # inlined like it below).
        total = 0
        points = self._points
        for lid, updates in pending.items():
            out = points[lid].update_iter(updates.items())
            if out:
                h = head[lid]
                for t, d in out:
                    total += d
                    if h < 0:
                        bucket = single[lid]
                        if bucket is None:
                            single[lid] = [(t, d)]
                            heappush(heap, lid)
                        else:
                            bucket.append((t, d))
                    else:
                        push_cyclic(lid, h, t, d)
        self._total += total

        # Step 2: settle implications, component by component.
        while heap:
            lid = heappop(heap)
            updates = single[lid]
            if updates is not None:
                single[lid] = None
                # An acyclic location: everything upstream is settled, so all of its
                # changes are here; apply them as one batch. (Int fast path inline, and
                # `_apply`'s and `ChangeBatch.update`'s counting deliberately inlined: this
                # is the tracker's hot loop.)
                counts = icounts[lid]
                frontier = ifront[lid]
                rebuild = False
                for t, d in updates:
                    if d:
                        c = counts.get(t, 0) + d
                        if c:
                            counts[t] = c
                        else:
                            del counts[t]
                        if not rebuild:
                            if type(t) is int:
                                rebuild = not frontier or t <= frontier[0]
                            else:
                                rebuild = _may_change(frontier, t, d)
                if not rebuild:
                    continue
                if type(t) is int:
                    # Int frontiers are the least positive count, if any.
                    positive = [u for u, c in counts.items() if c > 0]
                    if positive:
                        m = min(positive)
                        if frontier:
                            o = frontier[0]
                            if o == m:
                                continue
                            out = [(o, -1), (m, 1)]
                        else:
                            out = [(m, 1)]
                        ifront[lid] = [m]
                    elif frontier:
                        out = [(frontier[0], -1)]
                        ifront[lid] = []
                    else:
                        continue
                else:
                    out = _refrontier(counts, ifront, lid, frontier)
                    if out is None:
                        continue
                # Record the changes and queue them at the successors: deliberately the
                # body of `spread` inlined, as this is the hot loop of a chain (a call
                # per location costs more than the work); keep the two in step.
                succ = steps[lid]
                loc = locs[lid]
                for t, d in out:
                    changed.append((loc, t, d))
                    for dst, fn, h in succ:
                        if fn is None:
                            nt = t
                        else:
                            nt = fn(t)
                            if nt is None:
                                continue
                        if h < 0:
                            bucket = single[dst]
                            if bucket is None:
                                single[dst] = [(nt, d)]
                                heappush(heap, dst)
                            else:
                                bucket.append((nt, d))
                        else:
                            push_cyclic(dst, h, nt, d)
                continue
            # A cyclic component: timely's order, one (time, location) at a time.
            work, buckets = scc[lid]
            revisits = True
            while work:
                key = heappop(work)
                at = key[1]
                out = _apply(icounts[at], ifront, at, buckets.pop(key))
                if out:
                    spread(at, out)
            del scc[lid]

        if revisits:
            # A location visited at several times may have reported a transient change
            # that a later visit undid; report only the net change. (Locations are
            # unique objects here, so their id() is a cheap key.)
            net: dict[tuple[int, Any], list[Any]] = {}
            for loc, t, d in changed:
                entry = net.get((id(loc), t))
                if entry is None:
                    net[(id(loc), t)] = [loc, t, d]
                else:
                    entry[2] += d
            return [(loc, t, d) for loc, t, d in net.values() if d]
        return changed

    # -- outputs ---------------------------------------------------------------------

    def frontier(self, location: Location) -> Antichain[Any]:
        """The frontier at `location` after the last `propagate_all()`.

        At a `Target` it bounds every time that may still arrive at that input; at a
        `Source`, every time that may still be produced there. Empty = finished.

        >>> from sealtime.progress import Add, GraphBuilder, Source, Target
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.add_node(1, 1, 1, [[Add(3)]])
        >>> b.add_edge(Source(0, 0), Target(1, 0)); t = b.build()
        >>> t.update_source(Source(0, 0), 10, 1); _ = t.propagate_all()
        >>> t.frontier(Target(1, 0)), t.frontier(Source(1, 0))
        (Antichain([10]), Antichain([13]))
        """
        return Antichain(self._ifront[self._id(location)])

    def pointstamps(self, location: Location) -> list[tuple[Any, int]]:
        """The accumulated pointstamp counts at `location` (non-zero ones, sorted).

        >>> from sealtime.progress import GraphBuilder, Source
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); t = b.build()
        >>> t.update_source(Source(0, 0), 2, 3); _ = t.propagate_all()
        >>> t.pointstamps(Source(0, 0))
        [(2, 3)]
        """
        return list(self._points[self._id(location)].updates())

    def tracking_anything(self) -> bool:
        """True if some pointstamp has a positive count, or changes are buffered.

        >>> from sealtime.progress import GraphBuilder
        >>> b = GraphBuilder(); b.add_node(0, 0, 1); b.build().tracking_anything()
        False
        """
        return self._total > 0 or bool(self._pending) or any(self._batches.values())

    def _id(self, location: Location) -> int:
        lid = self._ids.get(location)
        if lid is None:
            self._graph.check_location(location)  # raises: every port of the graph has an id
            raise InternalError(
                f"{location!r} is a port of the graph without an id"
            )  # pragma: no cover
        return lid

    def _frontier_list(self, lid: int) -> list[Any]:
        # Package-internal: live view for Probe (do not mutate).
        return self._ifront[lid]

    def __repr__(self) -> str:
        return f"Tracker({len(self._graph.nodes())} nodes, {len(self._locs)} locations)"


def _may_change(frontier: list[Any], t: Any, d: int) -> bool:
    """Could a count change of `d` at `t` change this frontier? (partial orders)"""
    for f in frontier:
        if less_than(f, t):
            return False  # strictly beyond the frontier: never visible
    # A decrement at a time not ≥ the frontier hits a non-positive count.
    return d > 0 or any(less_equal(f, t) for f in frontier)


def _refrontier(
    counts: dict[Any, int], fronts: list[list[Any]], lid: int, old: list[Any]
) -> list[tuple[Any, int]] | None:
    """Recompute the frontier at `lid` from `counts`; return its changes (or None)."""
    positive = [t for t, c in counts.items() if c > 0]
    if not positive:
        new: list[Any] = []
    elif type(positive[0]) is int:
        new = [min(positive)]
    else:
        new = []
        for t in positive:
            if any(less_equal(e, t) for e in new):
                continue
            new = [e for e in new if not less_equal(t, e)]
            new.append(t)
    fronts[lid] = new
    if len(old) == 1 and len(new) == 1:
        o, n = old[0], new[0]
        if o == n:
            return None
        return [(o, -1), (n, 1)]
    old_set = set(old)
    new_set = set(new)
    out = [(t, -1) for t in old if t not in new_set]
    out.extend((t, 1) for t in new if t not in old_set)
    return out or None


def _apply(
    counts: dict[Any, int], fronts: list[list[Any]], lid: int, updates: dict[Any, int]
) -> list[tuple[Any, int]] | None:
    """Apply implication count changes at one location; return its frontier changes."""
    frontier = fronts[lid]
    rebuild = False
    for t, d in updates.items():
        if not d:
            continue
        c = counts.get(t, 0) + d
        if c:
            counts[t] = c
        else:
            del counts[t]
        if not rebuild:
            if type(t) is int:
                # Int frontiers hold at most one element; anything strictly beyond it
                # cannot change the frontier.
                rebuild = not frontier or t <= frontier[0]
            else:
                rebuild = _may_change(frontier, t, d)
    if not rebuild:
        return None
    return _refrontier(counts, fronts, lid, frontier)


def _is_identity(summary: Any) -> bool:
    # Exactly-identity summaries skip the function call in the hot loop.
    from sealtime.progress.summary import Identity

    return type(summary) is Identity


def _tarjan(n: int, adj: list[list[int]]) -> list[list[int]]:
    """Strongly connected components, in reverse topological order (iterative Tarjan)."""
    index = [-1] * n
    low = [0] * n
    on_stack = [False] * n
    stack: list[int] = []
    comps: list[list[int]] = []
    counter = 0
    for root in range(n):
        if index[root] != -1:
            continue
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = True
        work = [(root, 0)]
        while work:
            v, i = work[-1]
            if i < len(adj[v]):
                work[-1] = (v, i + 1)
                w = adj[v][i]
                if index[w] == -1:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack[w] = True
                    work.append((w, 0))
                elif on_stack[w] and index[w] < low[v]:
                    low[v] = index[w]
            else:
                work.pop()
                if work:
                    u = work[-1][0]
                    if low[v] < low[u]:
                        low[u] = low[v]
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack[w] = False
                        comp.append(w)
                        if w == v:
                            break
                    comps.append(comp)
    return comps


def _kahn(n: int, adj: list[list[int]]) -> list[int]:
    """Position of each vertex in a topological order of the (acyclic) graph `adj`."""
    indeg = [0] * n
    for out in adj:
        for w in out:
            indeg[w] += 1
    queue = deque(v for v in range(n) if indeg[v] == 0)
    pos = [0] * n
    i = 0
    while queue:
        v = queue.popleft()
        pos[v] = i
        i += 1
        for w in adj[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    if i != n:  # pragma: no cover - the builder rejects such graphs
        raise InternalError("a cycle without a time-advancing summary reached the tracker")
    return pos
