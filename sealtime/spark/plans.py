"""Building a tick's Spark plan with few py4j calls.

Every tick rebuilds each operator's DataFrame (its input files and times change), and in
classic PySpark each column expression built in Python is one or more round trips to the
JVM (``F.col`` alone costs about 2 ms on a 2-core machine). Operators therefore build
their fixed expressions once: a `Projection` keeps its columns *and* their JVM sequence,
so applying it to a new frame is one call; `map_in_arrow` passes prebuilt input columns
instead of resolving each column of the frame by name.

>>> from sealtime.spark.session import get_or_create_session
>>> spark = get_or_create_session()
>>> p = Projection(["x", F.col("x").alias("y")])
>>> p.apply(spark.range(2).withColumnRenamed("id", "x")).columns
['x', 'y']
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql.pandas.functions import pandas_udf
from pyspark.util import PythonEvalType

from ..errors import InternalError

__all__ = [
    "CompiledStep",
    "GroupedAggregation",
    "ParquetScan",
    "Projection",
    "map_in_arrow",
    "runtime_long",
]


def runtime_long(value: int) -> str:
    """SQL text of the BIGINT `value` that Spark reads at run time instead of compiling
    it into generated code.

    Spark compiles each stage of a plan to Java (whole-stage code generation) and caches
    the compiled class by its source text, but it writes an integer literal into that
    text. A value that changes every tick (an ingestion-time tick's binding time) would
    make every tick's stage new source, compiled again by Janino: 13-18 ms per stage on
    a 2-core machine. An array literal is passed to the generated code as an object
    instead, and a higher-order function over it is not folded back into a literal, so
    the text stays the same from tick to tick. (``coalesce`` keeps the column
    non-nullable, as the literal was.) Not for filters meant to reach the Parquet
    reader: only literals are pushed down.

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> spark.range(1).selectExpr(f"{runtime_long(1700000000123)} AS t").first().t
    1700000000123
    """
    return f"coalesce(transform(array({int(value)}L), x -> x)[0], 0L)"


class Projection:
    """A fixed list of column expressions (names or `Column`) applied by ``select``.

    Iterating gives the columns, so ``df.select(*projection)`` works too; `apply` is the
    fast path: the JVM sequence of the columns is made on first use and reused."""

    def __init__(self, columns: Sequence[str | Column]) -> None:
        self.columns: list[Column] = [F.col(c) if isinstance(c, str) else c for c in columns]
        self._jseq: Any = None

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def jseq(self, df: DataFrame) -> Any:
        """The columns as a JVM sequence (made on first use, then reused)."""
        if self._jseq is None:
            jvm = df.sparkSession.sparkContext._jvm
            assert jvm is not None
            self._jseq = jvm.PythonUtils.toSeq([c._jc for c in self.columns])
        return self._jseq

    def apply(self, df: DataFrame, *extra: Column) -> DataFrame:
        """``df.select(*columns, *extra)`` with one py4j call, plus one per `extra`
        column (a column that changes every tick, like a literal time)."""
        seq = self.jseq(df)
        for c in extra:
            seq = seq.appended(c._jc)  # (Scala 2.13's Seq :+, a new sequence)
        return type(df)(df._jdf.select(seq), df.sparkSession)


class GroupedAggregation:
    """``df.groupBy(*group).agg(*aggregates)`` with its expressions built once; `apply`
    makes two py4j calls (``groupBy`` with names resolves each through the JVM).

    >>> from sealtime.spark.session import get_or_create_session
    >>> spark = get_or_create_session()
    >>> g = GroupedAggregation(["k"], [F.sum("v").alias("s")])
    >>> df = spark.createDataFrame([(1, 2), (1, 3)], "k long, v long")
    >>> [tuple(r) for r in g.apply(df).collect()]
    [(1, 5)]
    """

    def __init__(self, group: Sequence[str | Column], aggregates: Sequence[Column]) -> None:
        if not aggregates:
            raise InternalError("GroupedAggregation needs at least one aggregate")
        self.group = Projection(group)
        self.first = aggregates[0]
        self.rest = Projection(aggregates[1:])

    def apply(self, df: DataFrame) -> DataFrame:
        jdf = df._jdf.groupBy(self.group.jseq(df)).agg(self.first._jc, self.rest.jseq(df))
        return type(df)(jdf, df.sparkSession)


class ParquetScan:
    """``spark.read.schema(schema).parquet(*paths)`` with the JVM reader built once per
    SparkSession: reading one path is one py4j call (PySpark's reader costs about a dozen,
    since it converts the schema and the path list through the JVM every time).

    >>> import pyarrow as pa, pyarrow.parquet as pq, tempfile, os
    >>> from sealtime.spark.session import get_or_create_session
    >>> path = os.path.join(tempfile.mkdtemp(), "x.parquet")
    >>> pq.write_table(pa.table({"x": [1, 2]}), path)
    >>> scan = ParquetScan("x long")
    >>> [r.x for r in scan.read(get_or_create_session(), [path]).collect()]
    [1, 2]
    """

    def __init__(self, schema: Any) -> None:
        #: a Spark ``StructType`` or a DDL string
        self.schema = schema
        self._session: Any = None
        self._jreader: Any = None
        self._legacy_path = False

    def read(self, spark: Any, paths: Sequence[str]) -> DataFrame:
        """The files `paths` (at least one) as a DataFrame of `schema`."""
        if not paths:
            raise InternalError("ParquetScan.read needs at least one path")
        if self._session is not spark:
            jspark = spark._jsparkSession
            reader = jspark.read()
            if isinstance(self.schema, str):
                reader = reader.schema(self.schema)
            else:
                reader = reader.schema(jspark.parseDataType(self.schema.json()))
            self._jreader = reader.format("parquet")
            # (with the legacy path option, load(path) would set an option on the shared
            # reader: take the sequence form then)
            legacy = spark.conf.get("spark.sql.legacy.pathOptionBehavior.enabled", "false")
            self._legacy_path = str(legacy).lower() == "true"
            self._session = spark
        if len(paths) == 1 and not self._legacy_path:
            jdf = self._jreader.load(paths[0])
        else:
            jvm = spark.sparkContext._jvm
            jdf = self._jreader.load(jvm.PythonUtils.toSeq(list(paths)))
        return DataFrame(jdf, spark)


def map_in_arrow(
    df: DataFrame,
    func: Callable[[Iterator[Any]], Iterator[Any]],
    schema: Any,
    args: Sequence[Column],
) -> DataFrame:
    """``df.mapInArrow(func, schema)`` where `args` are references to every column of
    `df`, in order, built once by the caller (``mapInArrow`` resolves each column of the
    frame through the JVM on every call)."""
    udf = pandas_udf(func, returnType=schema, functionType=PythonEvalType.SQL_MAP_ARROW_ITER_UDF)
    column = udf(*args)
    return type(df)(df._jdf.mapInArrow(column._jc, False, None), df.sparkSession)


@dataclass(frozen=True, eq=False)  # hashed by identity (a marker cache key)
class CompiledStep:
    """A keyed operator's per-tick plan pieces, built once: the projection of its input
    (`prep`), references to the kernel's input columns (`args`, for `map_in_arrow`) and
    the projection of the kernel's output (`finalize`)."""

    prep: Projection
    args: tuple[Column, ...]
    finalize: Projection

    @classmethod
    def of(cls, prep: Sequence[str | Column], kernel_input: Any, finalize: Sequence[str | Column]):
        """From the columns, with `kernel_input` the Arrow schema the projection yields."""
        args = tuple(F.col(n) for n in kernel_input.names)
        return cls(Projection(prep), args, Projection(finalize))
