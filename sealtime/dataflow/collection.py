"""`Collection`: a time-varying multiset of rows, the handle users build dataflows with.

Every operator has differential semantics: for every time ``t``,
``output accumulated to t == f(input accumulated to t)``. Operators are Spark DataFrame
expressions; no Python function is called per row.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..columns import CNT, DIFF, SYSTEM_COLUMNS, TIME
from ..errors import ConfigError, PlanError, SchemaError
from ..plan import (
    LAST_UPDATE,
    TIMED_OUT_AT,
    WINDOW_END,
    WINDOW_START,
    AdvanceTime,
    Aggregate,
    Aggregation,
    AssignWindows,
    Consolidate,
    Distinct,
    Filter,
    Inspect,
    Join,
    Map,
    Negate,
    PlanNode,
    Project,
    Reduce,
    SessionReduce,
    Timeout,
    TopK,
    TopKOrder,
    Union,
    WindowedReduce,
    parse_order_by,
)
from ..plan.fingerprint import frame_text
from ..plan.windows import Session, WindowSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from .dataflow import Dataflow

__all__ = ["Collection"]


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def _window_bounds() -> list[T.StructField]:
    """The ``window_start``/``window_end`` columns (ms, end exclusive) windows add."""
    return [
        T.StructField(WINDOW_START, T.LongType(), False),
        T.StructField(WINDOW_END, T.LongType(), False),
    ]


class Collection:
    """A stream of updates ``(row, _time, _diff)`` with a frontier.

    Created by `Dataflow.source` and by the operators below; each operator returns a new
    Collection. The frontier of a collection is available as `frontier` while the
    dataflow runs. The examples use `sealtime.testing.TestFlow`, whose `updates` returns
    ``(*row, time, diff)`` tuples in time order.

    >>> import sealtime as st
    >>> from sealtime.testing import TestFlow
    >>> t = TestFlow()
    >>> words = t.rows({"w": "string"}, [(1, {"w": "a"}), (2, {"w": "b"}), (2, {"w": "a"})])
    >>> t.updates(words.aggregate(by="w", n=st.count()))
    [('a', 1, 1, 1), ('a', 1, 2, -1), ('a', 2, 2, 1), ('b', 1, 2, 1)]
    """

    def __init__(self, flow: Dataflow, node: PlanNode) -> None:
        self._flow = flow
        self._node = node

    # ------------------------------------------------------------------ introspection
    @property
    def schema(self) -> T.StructType:
        """Spark schema of the data columns (without ``_time``/``_diff``).

        >>> from sealtime.testing import TestFlow
        >>> TestFlow().rows({"k": "string", "v": "long"}, []).schema.simpleString()
        'struct<k:string,v:bigint>'
        """
        return self._node.schema

    @property
    def columns(self) -> list[str]:
        """Names of the data columns.

        >>> from sealtime.testing import TestFlow
        >>> TestFlow().rows({"k": "string", "v": "long"}, []).columns
        ['k', 'v']
        """
        return self._node.columns

    @property
    def name(self) -> str:
        """The operator's name (a source's: the name it was added with).

        >>> from sealtime.testing import TestFlow
        >>> TestFlow().rows({"k": "string"}, [], name="bids").name
        'bids'
        """
        return self._node.name

    @property
    def node(self) -> PlanNode:
        """The plan node this collection is the output of (`sealtime.plan`)."""
        return self._node

    @property
    def flow(self) -> Dataflow:
        """The dataflow this collection belongs to."""
        return self._flow

    @property
    def frontier(self) -> int | None:
        """The times not yet sealed are those >= this value; None = empty (finished).
        Before anything is sealed it is `sealtime.time.MIN_TIME`
        (`sealtime.time.describe_frontier` says it in words).

        >>> from sealtime.testing import TestFlow
        >>> from sealtime.time import describe_frontier
        >>> t = TestFlow()
        >>> s = t.rows({"k": "string"}, [(5, {"k": "a"})])
        >>> describe_frontier(s.frontier)
        'no time sealed yet'
        >>> t.run()
        >>> describe_frontier(s.frontier)
        'all times sealed'
        """
        return self._flow._engine_frontier(self._node)

    def __repr__(self) -> str:
        return f"Collection({self._node.describe()}, columns={self.columns})"

    # ------------------------------------------------------------------ stateless
    def _delta_schema(self, frame: DataFrame) -> T.StructType:
        """The data columns of a probe frame (system columns dropped)."""
        return T.StructType([f for f in frame.schema.fields if f.name not in SYSTEM_COLUMNS])

    def _project(self, name: str, projection: Sequence[str | Column]) -> Collection:
        """A `Project` of this collection to `projection` (each entry named)."""
        probe = self._flow._empty_delta(self._node.schema).select(*projection, TIME, DIFF)
        return self._flow._add(
            Project,
            name=name,
            inputs=(self._node,),
            schema=self._delta_schema(probe),
            projection=tuple(projection),
        )

    def select(self, *columns: str | Column) -> Collection:
        """Project to `columns` (names or Spark Column expressions).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"a": "long", "b": "long"}, [(1, {"a": 1, "b": 2})])
        >>> t.updates(s.select("a", (F.col("b") * 2).alias("b2")))
        [(1, 4, 1, 1)]
        """
        for c in columns:
            if isinstance(c, str) and c in SYSTEM_COLUMNS:
                raise PlanError(f"select({c!r}): system columns are kept automatically")
        return self._project("select", columns)

    def with_columns(
        self, columns: Mapping[str, Column] | None = None, **named: Column
    ) -> Collection:
        """Add or replace columns given as Spark Column expressions.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> orders = t.rows({"qty": "long", "price": "long"}, [(1, {"qty": 3, "price": 5})])
        >>> t.updates(orders.with_columns(total=F.col("qty") * F.col("price")))
        [(3, 5, 15, 1, 1)]
        """
        exprs = dict(columns or {})
        exprs.update(named)
        for k in exprs:
            if k in SYSTEM_COLUMNS:
                raise PlanError(f"with_columns({k}=...): {k} is a system column")
        # (withColumns as one projection: replaced columns keep their place)
        kept = self.columns
        projection: list[str | Column] = [exprs[c].alias(c) if c in exprs else c for c in kept]
        projection += [e.alias(k) for k, e in exprs.items() if k not in kept]
        return self._project("with_columns", projection)

    def filter(self, condition: Column | str) -> Collection:
        """Keep rows satisfying `condition` (a Column or a SQL expression string).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1}), (1, {"v": 7})])
        >>> t.updates(s.filter("v > 5"))
        [(7, 1, 1)]
        """
        cond = F.expr(condition) if isinstance(condition, str) else condition
        self._flow._empty_delta(self._node.schema).filter(cond)  # (a bad condition fails now)
        return self._flow._add(
            Filter, name="filter", inputs=(self._node,), schema=self._node.schema, condition=cond
        )

    def flat_map(self, **exploded: Column) -> Collection:
        """Replace one row by one row per element of an array expression.

        ``col.flat_map(word=F.split("line", " "))`` gives a row per word (``explode``).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> lines = t.rows({"line": "string"}, [(1, {"line": "to be"})])
        >>> t.updates(lines.flat_map(word=F.split("line", " ")))
        [('to be', 'be', 1, 1), ('to be', 'to', 1, 1)]
        """
        if len(exploded) != 1:
            raise PlanError("flat_map takes exactly one name=array_expression")
        ((name, expr),) = exploded.items()
        if name in SYSTEM_COLUMNS:
            raise PlanError(f"flat_map({name}=...): {name} is a system column")
        each = F.explode(expr).alias(name)
        projection: list[str | Column] = [each if c == name else c for c in self.columns]
        if name not in self.columns:
            projection.append(each)
        return self._project("flat_map", projection)

    def map(self, fn: Callable[[DataFrame], DataFrame]) -> Collection:
        """Apply a per-row DataFrame transformation `fn` (it must keep ``_time``/``_diff``
        and must not aggregate, sort or look at other rows).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1})])
        >>> t.updates(s.map(lambda df: df.withColumn("v", F.col("v") + 10)))
        [(11, 1, 1)]
        """
        # The node's name: a function's own name, else its type's (a callable object).
        named = isinstance(fn, (types.FunctionType, types.MethodType, types.BuiltinFunctionType))
        probe = fn(self._flow._empty_delta(self._node.schema))
        missing = [c for c in (TIME, DIFF) if c not in probe.columns]
        if missing:
            raise PlanError(f"map: the function dropped {missing}; keep the system columns")
        return self._flow._add(
            Map,
            name=fn.__name__ if named else type(fn).__name__,
            inputs=(self._node,),
            schema=self._delta_schema(probe),
            fn=fn,
            # (what the function computes, for the plan's fingerprint)
            expressions=frame_text(probe),
        )

    def negate(self) -> Collection:
        """The same updates with negated multiplicities (``-_diff``).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> t.updates(t.rows({"v": "long"}, [(1, {"v": 1})]).negate())
        [(1, 1, -1)]
        """
        return self._flow._add(
            Negate, name="negate", inputs=(self._node,), schema=self._node.schema
        )

    def consolidate(self) -> Collection:
        """Sum multiplicities of identical (row, time) updates and drop zeros.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"k": "string"}, [(1, {"k": "a"}), (1, {"k": "a"}), (1, {"k": "b"})])
        >>> both = s.union(s.filter("k = 'b'").negate())
        >>> t.updates(both.consolidate())
        [('a', 1, 2)]
        """
        return self._flow._add(
            Consolidate, name="consolidate", inputs=(self._node,), schema=self._node.schema
        )

    def union(self, *others: Collection, priority_column: str | None = None) -> Collection:
        """Concatenate collections with the same columns; inputs in priority order.

        With `priority_column`, each row carries its input's index (0 = this collection,
        the highest priority) in that column, and order-sensitive operators downstream
        (``top_k``) break ties by it before anything else (Triceps' merge priorities).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> west = t.rows({"item": "string"}, [(1, {"item": "pen"})])
        >>> east = t.rows({"item": "string"}, [(2, {"item": "ink"})])
        >>> t.updates(west.union(east, priority_column="source"))
        [('pen', 0, 1, 1), ('ink', 1, 2, 1)]
        """
        nodes = (self._node, *(o._node for o in others))
        names = self.columns
        for o in others:
            if o._flow is not self._flow:
                raise PlanError("union: collections belong to different dataflows")
            if sorted(o.columns) != sorted(names):
                raise SchemaError(
                    f"union: columns differ: {names} vs {o.columns}; select the same columns first"
                )
        schema = self._node.schema
        if priority_column is not None:
            schema = T.StructType(
                list(schema.fields) + [T.StructField(priority_column, T.IntegerType(), False)]
            )
        return self._flow._add(
            Union,
            name="union",
            inputs=nodes,
            schema=schema,
            priority=priority_column,
            names=tuple(names),
        )

    def window(self, spec: WindowSpec) -> Collection:
        """Assign windows from ``_time``: adds ``window_start``/``window_end`` (ms, end
        exclusive) for `Tumbling`/`Sliding`; for `Session`, the sessions are formed per key
        by the `aggregate`/`top_k` that follows. A following aggregate emits each window
        once, when sealed.

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> clicks = t.rows({"page": "string"}, [(1_000, {"page": "a"}), (12_000, {"page": "a"})])
        >>> t.updates(clicks.window(st.Tumbling("10s")))
        [('a', 0, 10000, 1000, 1), ('a', 10000, 20000, 12000, 1)]
        """
        if not isinstance(spec, WindowSpec):
            raise TypeError(f"window() takes st.Tumbling, st.Sliding or st.Session, got {spec!r}")
        return self._flow._add(
            AssignWindows,
            name=f"window({spec})",
            inputs=(self._node,),
            schema=self._windowed_schema(bounds=not isinstance(spec, Session)),
            spec=spec,
        )

    def advance_time(self, to: str | int) -> Collection:
        """Advance every update's time to the next multiple of `to` (a duration): an
        update at ``t`` moves to ``ceil(t / to) * to``; a time on a multiple stays
        (differential's ``delay``, Materialize's timestamp rounding). Downstream results
        then change at most once per `to` of logical time, with no update lost: the
        accumulated output at each multiple equals the input's at that time, and there
        is no output at the times in between. The output frontier is the input's rounded
        up, so a downstream operator seals the multiple ``T`` once every input time
        ``<= T`` is sealed. Put it before ``window()`` (windows of the coarse time) or
        after a windowed aggregate — not between the two. See docs/time.md.

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> ev = t.rows({"k": "string"}, [(1, {"k": "a"}), (999, {"k": "a"}), (1001, {"k": "a"})])
        >>> t.updates(ev.advance_time(to="1s").aggregate(by="k", n=st.count()))
        [('a', 2, 1000, 1), ('a', 2, 2000, -1), ('a', 3, 2000, 1)]
        """
        from ..durations import parse_duration

        granularity = parse_duration(to, "advance_time(to)")
        if granularity < 1:
            raise ConfigError(
                f"advance_time(to={to!r}): the granularity must be at least 1 ms, e.g. to='1s'"
            )
        if self._node.window is not None:
            raise PlanError(
                f"advance_time(to={to!r}) after window({self._node.window}): a windowed "
                "aggregate needs every update inside its window, and rounding can move it "
                "past window_end; call advance_time() before window(), or on the "
                "aggregate's output"
            )
        return self._flow._add(
            AdvanceTime,
            name=f"advance_time({granularity}ms)",
            inputs=(self._node,),
            schema=self._node.schema,
            granularity=granularity,
        )

    def constant(self, schema: T.StructType, rows: Sequence[Sequence[Any]]) -> Collection:
        """A collection holding `rows` (values in `schema`'s column order) at every time,
        from the earliest on. It reads nothing of this collection but its frontier: the
        rows are sealed as this collection's times are. (SQL uses it for the one row an
        aggregate without ``GROUP BY`` has over no input.)

        >>> from pyspark.sql import types as T
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(5, {"v": 1})])
        >>> one = T.StructType([T.StructField("n", T.LongType())])
        >>> [(r[0], r[2]) for r in t.updates(s.constant(one, [(0,)]))]
        [(0, 1)]
        """
        from ..plan.constant import Constant

        width = len(schema.fields)
        fixed = tuple(tuple(row) for row in rows)
        if any(len(row) != width for row in fixed):
            raise SchemaError(f"constant(): every row needs {width} values ({schema.names})")
        return self._flow._add(
            Constant, name="constant", inputs=(self._node,), schema=schema, rows=fixed
        )

    def inspect(self, fn: Callable[[pa.Table, int | None, int | None], None]) -> Collection:
        """Call ``fn(updates: pyarrow.Table, lower, upper)`` with each sealed range's updates
        (a debugging tap; the collection passes through unchanged). `lower` is None for
        the first range, `upper` None once every time is sealed. (Below, the input's
        frontier moves from nothing sealed to 5, the next time it holds, to done.)

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1}), (5, {"v": 2})])
        >>> tap = s.inspect(lambda u, lo, hi: print(u.column("v").to_pylist(), lo, hi))
        >>> t.run()
        [1] None 5
        [2] 5 None
        """
        return self._flow._add(
            Inspect, name="inspect", inputs=(self._node,), schema=self._node.schema, fn=fn
        )

    # ------------------------------------------------------------------ stateful
    def aggregate(
        self, by: str | Sequence[str] | None = None, **aggregates: Aggregate
    ) -> Collection:
        """Group by `by` and compute named aggregates (``st.sum``, ``st.count``, ...).

        Over a windowed collection the window columns join the key and each window is
        emitted once, when sealed; otherwise the result is updated at every time its
        group changes (retracting the previous value).

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> buys = t.rows({"item": "string", "qty": "long"},
        ...               [(1, {"item": "pen", "qty": 2}), (2, {"item": "pen", "qty": 3})])
        >>> t.updates(buys.aggregate(by="item", total=st.sum("qty"), n=st.count()))
        [('pen', 2, 1, 1, 1), ('pen', 2, 1, 2, -1), ('pen', 5, 2, 2, 1)]
        """
        keys = _as_list(by)
        self._check_columns("aggregate(by=...)", keys)
        if not aggregates:
            raise PlanError("aggregate() needs at least one name=st.<aggregate>(...)")
        for name, agg in aggregates.items():
            if not isinstance(agg, Aggregate):
                raise TypeError(
                    f"aggregate({name}=...) takes st.sum/count/min/max/avg/count_distinct"
                )
            agg.check(name, self._node.schema)
        group = self._window_key(keys)
        types = {f.name: f for f in self._node.schema.fields}
        out_fields = [
            types[k] if k in types else T.StructField(k, T.LongType(), False) for k in group
        ]
        probe = self._flow._spark.createDataFrame([], self._node.schema)
        from ..spark.reducers import AggregateReducer

        reducer = AggregateReducer(aggregates, self._node.schema)
        probe = reducer(
            probe.withColumn(CNT, F.lit(1).cast("long")), [k for k in group if k in types]
        )
        out_fields += [f for f in probe.schema.fields if f.name in aggregates]
        return self._reduce(keys, Aggregation(dict(aggregates)), T.StructType(out_fields))

    def timeout(self, by: str | Sequence[str], after: str | int) -> Collection:
        """A row when a key of `by` has had no update for `after` of logical time.

        For every time ``t`` at which a key's updates do not cancel out, if the key has
        no update in ``(t, t + after]``, the result gets ``(by..., last_update=t,
        timed_out_at=t + after)`` at time ``t + after`` (append-only; ``last_update`` and
        ``timed_out_at`` are ms). It depends only on the data and the bindings — no
        clock is read — so every run, restart and replay emits the same rows at the same
        times. An input that is finished times out every key still pending.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> readings = t.rows({"sensor": "string"},
        ...                   [(1_000, {"sensor": "s1"}), (3_000, {"sensor": "s1"})])
        >>> t.updates(readings.timeout(by="sensor", after="5s"))
        [('s1', 3000, 8000, 8000, 1)]
        """
        from ..durations import parse_duration

        keys = _as_list(by)
        if not keys:
            raise PlanError("timeout(by=...) needs at least one key column, e.g. by='sensor'")
        self._check_columns("timeout(by=...)", keys)
        after_ms = parse_duration(after, "timeout(after)")
        if after_ms < 1:
            raise ConfigError(f"timeout(after={after!r}) must be > 0, e.g. after='5m'")
        clash = [c for c in (LAST_UPDATE, TIMED_OUT_AT) if c in keys]
        if clash:
            raise PlanError(
                f"timeout(by={keys}): {clash} name output columns; rename the key first"
            )
        types = {f.name: f for f in self._node.schema.fields}
        schema = T.StructType(
            [types[k] for k in keys]
            + [
                T.StructField(LAST_UPDATE, T.LongType(), False),
                T.StructField(TIMED_OUT_AT, T.LongType(), False),
            ]
        )
        return self._flow._add(
            Timeout,
            name="timeout",
            inputs=(self._node,),
            schema=schema,
            by=tuple(keys),
            after=after_ms,
        )

    def top_k(
        self, by: str | Sequence[str] | None = None, order_by: str | Sequence[str] = (), k: int = 1
    ) -> Collection:
        """The first `k` rows per group of `by`, ordered by `order_by` (``"-col"`` is
        descending). Ties are broken by the union priority column, then by the other
        columns, so the result never depends on arrival order.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> bids = t.rows({"item": "string", "price": "long"},
        ...               [(1, {"item": "pen", "price": 3}), (2, {"item": "pen", "price": 9})])
        >>> t.updates(bids.top_k(by="item", order_by="-price", k=1))
        [('pen', 3, 1, 1), ('pen', 3, 2, -1), ('pen', 9, 2, 1)]
        """
        keys = _as_list(by)
        self._check_columns("top_k(by=...)", keys)
        order = parse_order_by(order_by)
        if not order:
            raise ConfigError("top_k needs order_by=..., e.g. order_by='-price'")
        if not isinstance(k, int) or isinstance(k, bool) or k <= 0:
            raise ConfigError(f"top_k(k={k!r}): k must be a positive int")
        for key in order:
            if key.column in keys:
                raise PlanError(
                    f"top_k(order_by={key.column!r}): {key.column!r} is a key (by=) column; "
                    "every row of a group has the same value there, so it cannot order them"
                )
        fields = list(self._node.schema.fields)
        if isinstance(self._node.window, Session):
            fields += _window_bounds()
        return self._reduce(keys, TopKOrder(order, k), T.StructType(fields))

    def _window_key(self, keys: list[str]) -> list[str]:
        spec = self._node.window
        if spec is None:
            return keys
        return [WINDOW_START, WINDOW_END] + [k for k in keys if k not in (WINDOW_START, WINDOW_END)]

    def _reduce(
        self, keys: list[str], reduction: Aggregation | TopKOrder, schema: T.StructType
    ) -> Collection:
        """The reduction over this collection: per window when it is windowed (each
        window emitted once, when sealed), else at every time."""
        spec = self._node.window
        common = {"name": reduction.what, "inputs": (self._node,), "schema": schema}
        if spec is not None:
            per_window = SessionReduce if isinstance(spec, Session) else WindowedReduce
            return self._flow._add(per_window, by=tuple(keys), reduction=reduction, **common)
        if isinstance(reduction, TopKOrder):
            return self._flow._add(
                TopK, by=tuple(keys), order_by=reduction.order_by, k=reduction.k, **common
            )
        return self._flow._add(Reduce, by=tuple(keys), aggregates=reduction.aggregates, **common)

    def join(self, other: Collection, on: str | Sequence[str], how: str = "inner") -> Collection:
        """Equi-join on the `on` columns; ``how`` is ``"inner"`` or ``"left"``.

        A left join keeps every row of this collection; rows without a match get nulls in
        the other side's columns (it is built from an inner join, a distinct of the other
        side's keys and a negation, so it is differential like the rest).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> sales = t.rows({"item": "string", "qty": "long"}, [(1, {"item": "pen", "qty": 2})])
        >>> stock = t.rows({"item": "string", "price": "long"}, [(2, {"item": "pen", "price": 4})])
        >>> t.updates(sales.join(stock, on="item", how="left"))
        [('pen', 2, None, 1, 1), ('pen', 2, 4, 2, 1), ('pen', 2, None, 2, -1)]
        """
        if other._flow is not self._flow:
            raise PlanError(
                f"join: the other collection belongs to dataflow {other._flow.name!r}, this one "
                f"to {self._flow.name!r}; build both sides from one Dataflow (a dataflow's "
                "sources share one clock and one log)"
            )
        keys = _as_list(on)
        if not keys:
            raise PlanError("join(on=...) needs at least one column")
        self._check_columns("join(on=...)", keys)
        other._check_columns("join(on=...)", keys)
        clash = (set(self.columns) & set(other.columns)) - set(keys)
        if clash:
            raise PlanError(
                f"join: both sides have columns {sorted(clash)} that are not join keys; "
                "rename them on one side first (select/with_columns)"
            )
        if how == "inner":
            return self._inner_join(other, keys)
        if how != "left":
            raise ConfigError(f"join(how={how!r}): use 'inner' or 'left'")
        inner = self._inner_join(other, keys)
        matched_keys = other.select(*keys).distinct()
        matched = self._inner_join(matched_keys, keys)
        unmatched = self.union(matched.negate())
        right_fields = [f for f in other.schema.fields if f.name not in keys]
        padded = unmatched.with_columns(
            {f.name: F.lit(None).cast(f.dataType) for f in right_fields}
        ).select(*inner.columns)
        return inner.union(padded)

    def _inner_join(self, other: Collection, keys: list[str]) -> Collection:
        left_fields = {f.name: f for f in self._node.schema.fields}
        fields = [left_fields[k] for k in keys]
        fields += [f for f in self._node.schema.fields if f.name not in keys]
        fields += [f for f in other._node.schema.fields if f.name not in keys]
        return self._flow._add(
            Join,
            name="join",
            inputs=(self._node, other._node),
            schema=T.StructType([T.StructField(f.name, f.dataType, True) for f in fields]),
            on=tuple(keys),
        )

    def distinct(self) -> Collection:
        """Set semantics: each row present (positive multiplicity) appears once.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"k": "string"}, [(1, {"k": "a"}), (1, {"k": "a"}), (2, {"k": "a"})])
        >>> t.updates(s.distinct())
        [('a', 1, 1)]
        """
        return self._flow._add(
            Distinct, name="distinct", inputs=(self._node,), schema=self._node.schema
        )

    def over(
        self,
        by: str | Sequence[str] | None = None,
        order_by: str | Sequence[str] = (),
        **functions: Any,
    ) -> Collection:
        """Every row with window functions over its partition of `by` in the order
        `order_by` (``"-col"`` descending; ties broken by the other columns, never by
        arrival order), as SQL's ``OVER (PARTITION BY ... ORDER BY ...)``. Each function
        is ``name=st.plan.OverFunction(name, kind, column, ...)`` or a tuple ``(kind,
        column)`` / ``(kind, column, offset)``; kinds: row_number, rank, dense_rank,
        percent_rank, cume_dist, ntile, lag, lead, first_value, last_value, count, sum,
        avg, min, max. A partition touched by an update is recomputed at that time.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"k": "string", "v": "long"}, [(1, {"k": "a", "v": 5}), (2, {"k": "a", "v": 3})])
        >>> t.updates(s.over(by="k", order_by="v", r=("row_number", None), prev=("lag", "v")))
        [('a', 5, 1, None, 1, 1), ('a', 3, 1, None, 2, 1), ('a', 5, 1, None, 2, -1), ('a', 5, 2, 3, 2, 1)]
        """
        from ..plan.over import Over, OverFunction, OverOrder

        keys = _as_list(by)
        self._check_columns("over(by=...)", keys)
        order = tuple(OverOrder(o.column, o.ascending) for o in parse_order_by(order_by))
        self._check_columns("over(order_by=...)", [o.column for o in order])
        fns = []
        for name, f in functions.items():
            if not isinstance(f, OverFunction):
                kind, column, *rest = f
                f = OverFunction(name, kind, column, *(rest[:1] or [1]))
            if f.name != name:
                f = OverFunction(name, f.kind, f.column, f.offset, f.default, f.frame)
            if f.column is not None:
                self._check_columns(f"over({name}=...)", [f.column])
            if name in self.columns or name in SYSTEM_COLUMNS:
                raise PlanError(f"over({name}=...): {name!r} is a column already")
            fns.append(f)
        if not fns:
            raise PlanError("over() needs at least one name=(kind, column)")
        probe = self._flow._empty_delta(self._node.schema)
        from pyspark.sql.window import Window

        spec = Window.partitionBy(*keys) if keys else Window.partitionBy()
        if order:
            spec = spec.orderBy(
                *[F.col(o.column).asc() if o.ascending else F.col(o.column).desc() for o in order]
            )
        fields = list(self._node.schema.fields)
        for f in fns:
            fields.append(T.StructField(f.name, _over_type(f, probe, spec), True))
        return self._flow._add(
            Over,
            name="over",
            inputs=(self._node,),
            schema=T.StructType(fields),
            by=tuple(keys),
            order_by=order,
            functions=tuple(fns),
        )

    def collect(
        self, by: str | Sequence[str] | None = None, **lists: tuple[str, str]
    ) -> Collection:
        """Per group of `by`, lists of a column's values: ``name=("list", column)``
        (every non-null value, with repeats: SQL's ``collect_list``) or ``("set",
        column)`` (each value once: ``collect_set``), in ascending order; updated at
        every time the group changes.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"k": "string", "v": "long"}, [(1, {"k": "a", "v": 5}), (2, {"k": "a", "v": 3})])
        >>> sorted(t.updates(s.collect(by="k", vs=("list", "v"))), key=lambda u: u[-2:])
        [('a', [5], 1, 1), ('a', [5], 2, -1), ('a', [3, 5], 2, 1)]
        """
        from ..plan.over import Collect, CollectList

        keys = _as_list(by)
        self._check_columns("collect(by=...)", keys)
        if not lists:
            raise PlanError("collect() needs at least one name=('list'|'set', column)")
        types = {f.name: f for f in self._node.schema.fields}
        fields = [types[k] for k in keys]
        specs = []
        for name, (kind, column) in lists.items():
            if kind not in ("list", "set"):
                raise ConfigError(f"collect({name}=({kind!r}, ...)): use 'list' or 'set'")
            self._check_columns(f"collect({name}=...)", [column])
            specs.append(CollectList(name, kind, column))
            fields.append(T.StructField(name, T.ArrayType(types[column].dataType, True), False))
        # Alike in form to over()'s node: each plan node takes its own fields by name.
        return self._flow._add(
            Collect,
            name="collect",
            inputs=(self._node,),
            schema=T.StructType(fields),
            by=tuple(keys),
            lists=tuple(specs),
        )

    def temporal_filter(self, since: str | None = None, until: str | None = None) -> Collection:
        """The rows while ``since <= logical time < until``: `since`/`until` name long
        columns (ms; NULL: unbounded). A row enters at ``max(its time, since)`` and is
        retracted at ``until`` — when the frontier passes it, whatever the clock says
        (Materialize's ``mz_now()`` filters; docs/time.md).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long", "expires": "long"}, [(1, {"v": 7, "expires": 5})])
        >>> t.updates(s.temporal_filter(until="expires"))
        [(7, 5, 1, 1), (7, 5, 5, -1)]
        """
        from ..plan.temporal import TemporalFilter

        bounds = [c for c in (since, until) if c is not None]
        self._check_columns("temporal_filter()", bounds)
        for c in bounds:
            dtype = self._node.schema[c].dataType
            if not isinstance(dtype, (T.LongType, T.IntegerType)):
                raise SchemaError(
                    f"temporal_filter(): column {c!r} is {dtype.simpleString()}; bounds are "
                    "logical times in ms (long): e.g. with_columns(until=F.unix_millis(ts))"
                )
        return self._flow._add(
            TemporalFilter,
            name="temporal_filter",
            inputs=(self._node,),
            schema=self._node.schema,
            since=since,
            until=until,
        )

    def interval_join(
        self, other: Collection, on: str | Sequence[str], lower: int, upper: int
    ) -> Collection:
        """The inner join on `on` of the pairs whose times satisfy ``lower <= other's
        time - this time <= upper`` (ms, the rows' logical times: event-time sources).
        Each side keeps a row only while a later row of the other side could still match
        it (Flink's interval join); the output is that of `join` filtered by the
        interval, plus each side's expiry column (``__expire_l``, ``__expire_r``).

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> a = t.rows({"k": "string", "x": "long"}, [(10, {"k": "a", "x": 1})])
        >>> b = t.rows({"k": "string", "y": "long"}, [(12, {"k": "a", "y": 2}), (30, {"k": "a", "y": 3})])
        >>> j = a.interval_join(b, on="k", lower=0, upper=5).select("k", "x", "y")
        >>> [r[:3] for r in t.updates(j)]
        [('a', 1, 2)]
        """
        from ..plan.interval_join import IntervalJoin

        if other._flow is not self._flow:
            raise PlanError("interval_join: the other collection belongs to another dataflow")
        if not (isinstance(lower, int) and isinstance(upper, int)) or lower > upper:
            raise ConfigError(
                f"interval_join(lower={lower!r}, upper={upper!r}): ms with lower <= upper"
            )
        keys = _as_list(on)
        self._check_columns("interval_join(on=...)", keys)
        other._check_columns("interval_join(on=...)", keys)
        left = self.with_columns({"__expire_l": F.col(TIME) + F.lit(upper + 1)})
        right = other.with_columns({"__expire_r": F.col(TIME) - F.lit(lower - 1)})
        clash = (set(left.columns) & set(right.columns)) - set(keys)
        if clash:
            raise PlanError(
                f"interval_join: both sides have columns {sorted(clash)} that are not join "
                "keys; rename them on one side first"
            )
        types = {f.name: f for f in left.schema.fields}
        fields = [types[k] for k in keys]
        fields += [f for f in left.schema.fields if f.name not in keys]
        fields += [f for f in right.schema.fields if f.name not in keys]
        joined = self._flow._add(
            IntervalJoin,
            name="interval_join",
            inputs=(left.node, right.node),
            schema=T.StructType([T.StructField(f.name, f.dataType, True) for f in fields]),
            on=tuple(keys),
            lower=lower,
            upper=upper,
            left_expiry="__expire_l",
            right_expiry="__expire_r",
        )
        # the times of the pair, from the expiry columns: right - left within the bounds
        gap = (F.col("__expire_r") + F.lit(lower - 1)) - (F.col("__expire_l") - F.lit(upper + 1))
        return joined.filter(gap.between(lower, upper))

    def cumulate(self, size: str | int, step: str | int) -> Collection:
        """Flink's cumulating windows: periods of `size` from multiples of it, each
        emitting windows that grow by `step` (``[s, s+step)``, ``[s, s+2*step)``, ...,
        ``[s, s+size)``); adds ``window_start``/``window_end`` (one row per window
        holding the row). An aggregate that follows emits each window once, when sealed.

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1_000, {"v": 1}), (3_000, {"v": 2})])
        >>> [r[:3] for r in t.updates(s.cumulate("4s", "2s").aggregate(total=st.sum("v")))]
        [(0, 2000, 1), (0, 4000, 3)]
        """
        from ..durations import parse_duration
        from ..plan.cumulate import AssignCumulating, Cumulating

        spec = Cumulating(
            parse_duration(size, "cumulate(size)"), parse_duration(step, "cumulate(step)")
        )
        return self._flow._add(
            AssignCumulating,
            name=f"cumulate({spec.size}ms, {spec.step}ms)",
            inputs=(self._node,),
            schema=self._windowed_schema(bounds=True),
            spec=spec,
        )

    def _windowed_schema(self, bounds: bool) -> T.StructType:
        """This schema without its ``window_start``/``window_end``, and with new ones at
        the end when `bounds`."""
        fields = [f for f in self._node.schema.fields if f.name not in (WINDOW_START, WINDOW_END)]
        return T.StructType(fields + (_window_bounds() if bounds else []))

    def _check_columns(self, what: str, cols: Sequence[str]) -> None:
        missing = [c for c in cols if c not in self.columns]
        if missing:
            raise SchemaError(f"{what}: no column(s) {missing}; columns are {self.columns}")

    # ------------------------------------------------------------------ outputs
    def sink(self, sink: Any) -> Collection:
        """Send every sealed time range of this collection to `sink` (``st.sinks.*``).

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1})])
        >>> _ = s.sink(st.sinks.Callback(lambda u, lo, hi: print(u.num_rows, "row(s) up to", hi)))
        >>> t.run()
        1 row(s) up to None
        """
        self._flow._add_sink(self._node, sink)
        return self

    def publish(self, topic: str, **options: Any) -> Collection:
        """Publish this collection's sealed epochs to subscribers (``st.subscribe``).

        Options: ``partitions=N`` (rows split by a hash of the row, or of ``by=`` columns,
        into N publishers), ``mode="stream"`` (no history) or ``"view"`` (durable history:
        snapshot + resumable updates), ``host``/``port`` (loopback, ephemeral by default),
        ``history_dir`` (view shards; default ``<data_dir>/publish``) and `Publisher`
        options. The topic is recorded in the dataflow's catalog (see docs/catalog.md).

        >>> import sealtime as st
        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1}), (2, {"v": 2})])
        >>> _ = s.publish("values", mode="view")
        >>> t.run()
        >>> sub = st.subscribe("values", catalog=t.flow.data_dir, mode="view")
        >>> sub.next_event(timeout=10).table.column("v").to_pylist()
        [1, 2]
        """
        self._flow._add_publication(self._node, topic, options)
        return self

    def updates(self) -> pa.Table:
        """All ``(row..., _time, _diff)`` updates produced so far, consolidated per
        (row, time) and sorted, as a ``pyarrow.Table``.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1}), (1, {"v": 1})])
        >>> t.run()
        >>> s.updates().to_pylist()
        [{'v': 1, '_time': 1, '_diff': 2}]
        """
        return self._flow._updates(self._node)

    def to_spark(self, as_of: int | None = None) -> DataFrame:
        """The accumulated contents at time `as_of` (default: the latest sealed time) as a
        Spark DataFrame, one row per unit of multiplicity.

        >>> from sealtime.testing import TestFlow
        >>> t = TestFlow()
        >>> s = t.rows({"v": "long"}, [(1, {"v": 1}), (2, {"v": 2}), (3, {"v": 1}, -1)])
        >>> t.run()
        >>> sorted(r.v for r in s.to_spark(as_of=2).collect()), s.to_spark().count()
        ([1, 2], 1)
        """
        return self._flow._to_spark(self._node, as_of)


def _over_type(fn: Any, probe: DataFrame, spec: Any) -> T.DataType:
    """The type Spark gives window function `fn` (analysis only, no job)."""
    col = None if fn.column is None else F.col(fn.column)
    make = {
        "row_number": lambda: F.row_number(),
        "rank": lambda: F.rank(),
        "dense_rank": lambda: F.dense_rank(),
        "percent_rank": lambda: F.percent_rank(),
        "cume_dist": lambda: F.cume_dist(),
        "ntile": lambda: F.ntile(fn.offset),
        "lag": lambda: F.lag(col, fn.offset),
        "lead": lambda: F.lead(col, fn.offset),
        "first_value": lambda: F.first_value(col),
        "last_value": lambda: F.last_value(col),
        "count": lambda: F.count(col if col is not None else F.lit(1)),
        "sum": lambda: F.sum(col),
        "avg": lambda: F.avg(col),
        "min": lambda: F.min(col),
        "max": lambda: F.max(col),
    }.get(fn.kind)
    if make is None:
        raise ConfigError(f"over(): unknown window function {fn.kind!r}")
    return probe.select(make().over(spec)).schema.fields[0].dataType
