"""Key columns on Spark: how a keyed operator routes its updates to arrangement partitions.

Every keyed operator projects its input to the normalised key columns plus derived
columns, then shuffles:

* ``__h = xxhash64(key)`` — the 64-bit hash kernels sort and search by;
* ``__p = pmod(hash(key), P)`` — the arrangement partition of the key;
* a *carrier*: an int whose Murmur3 hash lands in partition ``__p``, so repartitioning
  by it puts exactly the rows of arrangement partition p in Spark partition p. It is
  the shuffle's partitioning expression, computed from ``__p`` as the rows are written,
  not a column: the shuffle and the kernel's Arrow input carry one column less;
* ``__m`` — false for updates, true for the one *marker* row per partition that is
  added to every shuffle, so that every partition's task runs (and knows its
  partition) even when the tick has no update for it.

Kernels take their partition from ``__p`` in the data, never from Spark's task index:
a task that computes a kernel inside a union of stages has an index offset by the
union's other inputs. Float keys are normalised first (``-0.0`` is ``0.0``), as Spark
does for grouping and joins, so that equal keys always meet in one partition. An
operator without keys (a global aggregate) groups by an internal constant key.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..arrangement.task import MARKER, PARTITION
from ..columns import DIFF, TIME
from ..errors import InternalError
from ..kernels.keyed import HASH
from ..spark.murmur3 import spark_hash_int, spark_hash_long
from ..spark.plans import Projection
from .base import Env

__all__ = ["ALL_KEY", "KeyRouting", "carriers"]

ALL_KEY = "__all"
_CARRIERS: dict[tuple[int, str], list[int]] = {}


def carriers(partitions: int, dtype: str = "int") -> list[int]:
    """For each partition p, the least non-negative value of `dtype` (``int`` or
    ``long``) whose Spark ``hash`` (Murmur3, seed 42: what ``repartition`` uses) is p
    modulo `partitions`, computed in Python (`sealtime.spark.murmur3`), once per
    process.

    >>> carriers(4)
    [12, 6, 2, 0]
    """
    key = (partitions, dtype)
    if key not in _CARRIERS:
        spark_hash = {"int": spark_hash_int, "long": spark_hash_long}[dtype]
        found: dict[int, int] = {}
        for c in range(256 * partitions):
            found.setdefault(spark_hash(c) % partitions, c)  # (% of a positive: pmod)
            if len(found) == partitions:
                break
        if len(found) != partitions:
            raise InternalError(f"no carrier values for all {partitions} partitions")
        _CARRIERS[key] = [found[p] for p in range(partitions)]
    return _CARRIERS[key]


class KeyRouting:
    """The key expressions of one operator (built once, reused every tick).

    `keys` are column names of `schema`; `partitions` is the arrangement's P.
    """

    def __init__(
        self,
        keys: Sequence[str],
        schema: T.StructType,
        partitions: int,
        carriers_of: Sequence[int],
        types: dict[str, T.DataType] | None = None,
        tasks: int | None = None,
    ) -> None:
        self.user_keys = list(keys)
        #: Spark tasks a step runs in (each takes whole partitions; None or >= P: one each)
        self.tasks = tasks
        self.keys = list(keys) or [ALL_KEY]
        self.partitions = partitions
        fields = {f.name: f.dataType for f in schema.fields}
        values: list[Column] = []
        for k in self.user_keys:
            dtype = (types or {}).get(k, fields[k])
            c = F.col(k) if dtype == fields[k] else F.col(k).cast(dtype)
            if isinstance(dtype, (T.FloatType, T.DoubleType)):
                c = F.when(c == 0, F.lit(0.0).cast(dtype)).otherwise(c)
            values.append(c)
        if not self.user_keys:
            values.append(F.lit(0))
        #: the key expressions, unnamed (to build hashes in the same projection) and named
        self.key_values = values
        self.key_exprs = [c.alias(k) for c, k in zip(values, self.keys)]
        # The hashes over the same expressions, so that one projection computes all.
        partition = F.pmod(F.hash(*values), F.lit(partitions))
        self.carriers = carriers_of
        self.derived = [
            F.xxhash64(*values).alias(HASH),
            partition.alias(PARTITION),
            F.lit(False).alias(MARKER),
        ]
        self._markers: dict[Hashable, DataFrame] = {}
        self._carrier: Projection | None = None

    @classmethod
    def of(
        cls,
        keys: Sequence[str],
        schema: T.StructType,
        env: Env,
        types: dict[str, T.DataType] | None = None,
    ) -> KeyRouting:
        """The routing of an operator built with `env` (its partitions and tasks)."""
        found = carriers(env.partitions)
        return cls(keys, schema, env.partitions, found, types=types, tasks=env.tasks)

    def route(self, projected: DataFrame, key: Hashable | None = None) -> DataFrame:
        """Shuffle a frame holding the key columns and `derived` to its partitions, with
        one marker row per partition. `key` names the frame's schema when the caller
        knows it is always the same (it spares a schema lookup through the JVM)."""
        if self._carrier is None:
            carrier_array = F.array(*[F.lit(c).cast("int") for c in self.carriers])
            self._carrier = Projection([F.element_at(carrier_array, F.col(PARTITION) + 1)])
        markers = self.markers(projected, key)
        # (the JVM calls themselves: PySpark's repartition converts its columns each time)
        jdf = projected._jdf.unionByName(markers._jdf, False)
        jdf = jdf.repartition(self.partitions, self._carrier.jseq(projected))
        return self.coalesce(type(projected)(jdf, projected.sparkSession))

    def coalesce(self, routed: DataFrame) -> DataFrame:
        """`routed` (hash partitioned) in `tasks` Spark partitions, each holding whole
        arrangement partitions (coalescing never splits a partition)."""
        if self.tasks is not None and self.tasks < self.partitions:
            return routed.coalesce(self.tasks)
        return routed

    def markers(self, like: DataFrame, key: Hashable | None = None) -> DataFrame:
        """One row per partition with `like`'s columns: nulls, except ``__p``, ``__m``
        (true) and zero ``_time``/``_diff``. Built once per schema."""
        if key is None:
            key = like.schema.json()
        if key not in self._markers:
            spark = like.sparkSession
            special = {
                PARTITION: F.col("id").cast("int"),
                MARKER: F.lit(True),
                TIME: F.lit(0).cast("long"),
                DIFF: F.lit(0).cast("long"),
            }
            cols = [
                special.get(f.name, F.lit(None).cast(f.dataType)).alias(f.name)
                for f in like.schema.fields
            ]
            # One Spark partition: the markers add one small task to the tick, not P.
            self._markers[key] = spark.range(0, self.partitions, 1, 1).select(*cols)
        return self._markers[key]
