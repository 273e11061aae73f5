"""`Collection`: a time-varying multiset of rows, the handle users build dataflows with.

Every operator has differential semantics: for every time ``t``,
``output accumulated to t == f(input accumulated to t)``. Operators are Spark DataFrame
expressions; no Python function is called per row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..spark.plans import Projection
from .aggregates import Aggregate
from .fingerprint import frame_text
from .plan import Node
from .windows import Session, WindowSpec

if TYPE_CHECKING:
    import pyarrow as pa

    from .dataflow import Dataflow

__all__ = ["Collection"]

_SYSTEM = ("_time", "_diff", "_cnt")


def _as_list(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


class Collection:
    """A stream of updates ``(row, _time, _diff)`` with a frontier.

    Created by `Dataflow.source` and by the operators below; each operator returns a new
    Collection. The frontier of a collection is available as `frontier` while the
    dataflow runs.
    """

    def __init__(self, flow: Dataflow, node: Node) -> None:
        self._flow = flow
        self._node = node

    # ------------------------------------------------------------------ introspection
    @property
    def schema(self) -> T.StructType:
        """Spark schema of the data columns (without ``_time``/``_diff``)."""
        return self._node.schema

    @property
    def columns(self) -> list[str]:
        """Names of the data columns."""
        return self._node.columns

    @property
    def name(self) -> str:
        return self._node.name

    @property
    def frontier(self) -> int | None:
        """The times not yet sealed are those >= this value; None = empty (finished)."""
        return self._flow._engine_frontier(self._node)

    def __repr__(self) -> str:
        return f"Collection({self._node.describe()}, columns={self.columns})"

    # ------------------------------------------------------------------ stateless
    def _derive(
        self, kind: str, name: str, fn: Callable[[DataFrame], DataFrame], **extra: Any
    ) -> Collection:
        """A per-row operator given as a function of the input delta DataFrame."""
        probe = fn(self._flow._empty_delta(self._node.schema))
        missing = [c for c in ("_time", "_diff") if c not in probe.columns]
        if missing:
            raise ValueError(f"{name}: the function dropped {missing}; keep the system columns")
        schema = T.StructType([f for f in probe.schema.fields if f.name not in _SYSTEM])
        node = Node(
            kind,
            name,
            [self._node],
            schema,
            # (the expressions `fn` applies, for the plan's fingerprint)
            params={"fn": fn, "plan": frame_text(probe), **extra},
            monotonic=self._node.monotonic,
            window=self._node.window if self._keeps_window(schema) else None,
            priority_column=self._node.priority_column
            if self._node.priority_column in schema.names
            else None,
        )
        return self._flow._add(node)

    def _keeps_window(self, schema: T.StructType) -> bool:
        spec = self._node.window
        if spec is None:
            return False
        return isinstance(spec, Session) or {"window_start", "window_end"} <= set(schema.names)

    def select(self, *columns: str | Column) -> Collection:
        """Project to `columns` (names or Spark Column expressions).

        >>> # flow.source("s", rows).select("a", (F.col("b") * 2).alias("b2"))
        """
        for c in columns:
            if isinstance(c, str) and c in _SYSTEM:
                raise ValueError(f"select({c!r}): system columns are kept automatically")
        built: list[Projection] = []  # made on first use, when Spark is running

        def select(df: DataFrame) -> DataFrame:
            if not built:
                built.append(Projection([*columns, "_time", "_diff"]))
            return built[0].apply(df)

        select.__name__ = "select"
        return self._derive("map", "select", select)

    def with_columns(
        self, columns: Mapping[str, Column] | None = None, **named: Column
    ) -> Collection:
        """Add or replace columns given as Spark Column expressions.

        >>> # orders.with_columns(total=F.col("qty") * F.col("price"))
        """
        exprs = dict(columns or {})
        exprs.update(named)
        for k in exprs:
            if k in _SYSTEM:
                raise ValueError(f"with_columns({k}=...): {k} is a system column")
        return self._derive("map", "with_columns", lambda df: df.withColumns(exprs))

    def filter(self, condition: Column | str) -> Collection:
        """Keep rows satisfying `condition` (a Column or a SQL expression string)."""
        cond = F.expr(condition) if isinstance(condition, str) else condition
        return self._derive("map", "filter", lambda df: df.filter(cond))

    def flat_map(self, **exploded: Column) -> Collection:
        """Replace one row by one row per element of an array expression.

        ``col.flat_map(word=F.split("line", " "))`` gives a row per word (``explode``).
        """
        if len(exploded) != 1:
            raise ValueError("flat_map takes exactly one name=array_expression")
        ((name, expr),) = exploded.items()
        return self._derive("map", "flat_map", lambda df: df.withColumn(name, F.explode(expr)))

    def map(self, fn: Callable[[DataFrame], DataFrame]) -> Collection:
        """Apply a per-row DataFrame transformation `fn` (it must keep ``_time``/``_diff``
        and must not aggregate, sort or look at other rows)."""
        return self._derive("map", getattr(fn, "__name__", "map"), fn)

    def negate(self) -> Collection:
        """The same updates with negated multiplicities (``-_diff``)."""
        node = Node("negate", "negate", [self._node], self._node.schema, window=self._node.window)
        return self._flow._add(node)

    def consolidate(self) -> Collection:
        """Sum multiplicities of identical (row, time) updates and drop zeros."""
        node = Node(
            "consolidate",
            "consolidate",
            [self._node],
            self._node.schema,
            monotonic=self._node.monotonic,
            window=self._node.window,
            priority_column=self._node.priority_column,
        )
        return self._flow._add(node)

    def union(self, *others: Collection, priority_column: str | None = None) -> Collection:
        """Concatenate collections with the same columns; inputs in priority order.

        With `priority_column`, each row carries its input's index (0 = this collection,
        the highest priority) in that column, and order-sensitive operators downstream
        (``top_k``) break ties by it before anything else (Triceps' merge priorities).
        """
        nodes = [self._node] + [o._node for o in others]
        names = [f.name for f in self._node.schema.fields]
        for o in others:
            if o._flow is not self._flow:
                raise ValueError("union: collections belong to different dataflows")
            if sorted(o.columns) != sorted(names):
                raise ValueError(
                    f"union: columns differ: {names} vs {o.columns}; select the same columns first"
                )
        schema = self._node.schema
        if priority_column is not None:
            schema = T.StructType(
                list(schema.fields) + [T.StructField(priority_column, T.IntegerType(), False)]
            )
        specs = {n.window for n in nodes}
        node = Node(
            "union",
            "union",
            nodes,
            schema,
            params={"priority_column": priority_column, "names": names},
            monotonic=all(n.monotonic for n in nodes),
            window=specs.pop() if len(specs) == 1 else None,
            priority_column=priority_column,
        )
        return self._flow._add(node)

    def window(self, spec: WindowSpec) -> Collection:
        """Assign windows from ``_time``: adds ``window_start``/``window_end`` (ms, end
        exclusive) for `Tumbling`/`Sliding`; for `Session`, the sessions are formed per key
        by the `aggregate`/`top_k` that follows. A following aggregate emits each window
        once, when sealed.
        """
        if not isinstance(spec, WindowSpec):
            raise TypeError(f"window() takes st.Tumbling, st.Sliding or st.Session, got {spec!r}")
        fields = [
            f for f in self._node.schema.fields if f.name not in ("window_start", "window_end")
        ]
        if not isinstance(spec, Session):
            fields += [
                T.StructField("window_start", T.LongType(), False),
                T.StructField("window_end", T.LongType(), False),
            ]
        node = Node(
            "window",
            f"window({spec})",
            [self._node],
            T.StructType(fields),
            params={"spec": spec},
            monotonic=self._node.monotonic,
            window=spec,
            priority_column=self._node.priority_column,
        )
        return self._flow._add(node)

    def inspect(self, fn: Callable[[pa.Table, int | None, int | None], None]) -> Collection:
        """Call ``fn(updates: pyarrow.Table, lower, upper)`` with each sealed range's updates
        (a debugging tap; the collection passes through unchanged)."""
        node = Node(
            "inspect",
            "inspect",
            [self._node],
            self._node.schema,
            params={"fn": fn},
            monotonic=self._node.monotonic,
            window=self._node.window,
            priority_column=self._node.priority_column,
        )
        return self._flow._add(node)

    # ------------------------------------------------------------------ stateful
    def aggregate(
        self, by: str | Sequence[str] | None = None, **aggregates: Aggregate
    ) -> Collection:
        """Group by `by` and compute named aggregates (``st.sum``, ``st.count``, ...).

        Over a windowed collection the window columns join the key and each window is
        emitted once, when sealed; otherwise the result is updated at every time its
        group changes (retracting the previous value).
        """
        keys = _as_list(by)
        self._check_columns("aggregate(by=...)", keys)
        if not aggregates:
            raise ValueError("aggregate() needs at least one name=st.<aggregate>(...)")
        for name, agg in aggregates.items():
            if not isinstance(agg, Aggregate):
                raise TypeError(
                    f"aggregate({name}=...) takes st.sum/count/min/max/avg/count_distinct"
                )
            agg.check(name, self._node.schema)
        spec = self._node.window
        group = self._window_key(keys)
        types = {f.name: f for f in self._node.schema.fields}
        out_fields = [
            types[k] if k in types else T.StructField(k, T.LongType(), False) for k in group
        ]
        probe = self._flow._spark.createDataFrame([], self._node.schema)
        from ..spark.reduce import AggregateReducer

        reducer = AggregateReducer(aggregates, self._node.schema)
        probe = reducer(
            probe.withColumn("_cnt", F.lit(1).cast("long")), [k for k in group if k in types]
        )
        out_fields += [f for f in probe.schema.fields if f.name in aggregates]
        return self._reduce(
            "aggregate", keys, {"aggregates": dict(aggregates)}, T.StructType(out_fields), spec
        )

    def top_k(
        self, by: str | Sequence[str] | None = None, order_by: str | Sequence[str] = (), k: int = 1
    ) -> Collection:
        """The first `k` rows per group of `by`, ordered by `order_by` (``"-col"`` is
        descending). Ties are broken by the union priority column, then by the other
        columns, so the result never depends on arrival order."""
        from ..spark.reduce import parse_order_by

        keys = _as_list(by)
        self._check_columns("top_k(by=...)", keys)
        order = parse_order_by(order_by)
        if not order:
            raise ValueError("top_k needs order_by=..., e.g. order_by='-price'")
        spec = self._node.window
        group = self._window_key(keys)
        fields = list(self._node.schema.fields)
        if isinstance(spec, Session):
            fields += [
                T.StructField("window_start", T.LongType(), False),
                T.StructField("window_end", T.LongType(), False),
            ]
        out = T.StructType(fields)
        del group
        return self._reduce("top_k", keys, {"k": k, "order_by": order}, out, spec)

    def _window_key(self, keys: list[str]) -> list[str]:
        spec = self._node.window
        if spec is None:
            return keys
        return ["window_start", "window_end"] + [
            k for k in keys if k not in ("window_start", "window_end")
        ]

    def _reduce(self, what: str, keys, params, schema, spec) -> Collection:
        windowed = spec is not None
        node = Node(
            "windowed_reduce" if windowed else "reduce",
            what,
            [self._node],
            schema,
            params={"what": what, "by": keys, **params},
            # A windowed reduction emits each window once: its output is append-only.
            monotonic=windowed,
            priority_column=self._node.priority_column if what == "top_k" else None,
        )
        return self._flow._add(node)

    def join(self, other: Collection, on: str | Sequence[str], how: str = "inner") -> Collection:
        """Equi-join on the `on` columns; ``how`` is ``"inner"`` or ``"left"``.

        A left join keeps every row of this collection; rows without a match get nulls in
        the other side's columns (it is built from an inner join, a distinct of the other
        side's keys and a negation, so it is differential like the rest).
        """
        if other._flow is not self._flow:
            raise ValueError(
                f"join: the other collection belongs to dataflow {other._flow.name!r}, this one "
                f"to {self._flow.name!r}; build both sides from one Dataflow (a dataflow's "
                "sources share one clock and one log)"
            )
        keys = _as_list(on)
        if not keys:
            raise ValueError("join(on=...) needs at least one column")
        self._check_columns("join(on=...)", keys)
        other._check_columns("join(on=...)", keys)
        clash = (set(self.columns) & set(other.columns)) - set(keys)
        if clash:
            raise ValueError(
                f"join: both sides have columns {sorted(clash)} that are not join keys; "
                "rename them on one side first (select/with_columns)"
            )
        if how == "inner":
            return self._inner_join(other, keys)
        if how != "left":
            raise ValueError(f"join(how={how!r}): use 'inner' or 'left'")
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
        node = Node(
            "join",
            "join",
            [self._node, other._node],
            T.StructType([T.StructField(f.name, f.dataType, True) for f in fields]),
            params={"on": keys},
            monotonic=self._node.monotonic and other._node.monotonic,
        )
        return self._flow._add(node)

    def distinct(self) -> Collection:
        """Set semantics: each row present (positive multiplicity) appears once."""
        node = Node("distinct", "distinct", [self._node], self._node.schema)
        return self._flow._add(node)

    def _check_columns(self, what: str, cols: Sequence[str]) -> None:
        missing = [c for c in cols if c not in self.columns]
        if missing:
            raise ValueError(f"{what}: no column(s) {missing}; columns are {self.columns}")

    # ------------------------------------------------------------------ outputs
    def sink(self, sink: Any) -> Collection:
        """Send every sealed time range of this collection to `sink` (``st.sinks.*``)."""
        self._flow._add_sink(self._node, sink)
        return self

    def publish(self, topic: str, **options: Any) -> Collection:
        """Publish this collection's sealed epochs to subscribers (``st.subscribe``).

        Options: ``partitions=N`` (rows split by a hash of the row, or of ``by=`` columns,
        into N publishers), ``mode="stream"`` (no history) or ``"view"`` (durable history:
        snapshot + resumable updates), ``host``/``port`` (loopback, ephemeral by default),
        ``history_dir`` (view shards; default ``<data_dir>/publish``) and `Publisher`
        options. The topic is recorded in the dataflow's catalog (see docs/catalog.md)."""
        self._flow._add_publication(self._node, topic, options)
        return self

    def updates(self) -> pa.Table:
        """All ``(row..., _time, _diff)`` updates produced so far, consolidated per
        (row, time) and sorted, as a ``pyarrow.Table``."""
        return self._flow._updates(self._node)

    def to_spark(self, as_of: int | None = None) -> DataFrame:
        """The accumulated contents at time `as_of` (default: the latest sealed time) as a
        Spark DataFrame, one row per unit of multiplicity."""
        return self._flow._to_spark(self._node, as_of)
