"""Nexmark q0-q23 as SQL files (``bench/nexmark/qN.sql``), applied to a sealtime dataflow.

Each query file defines view ``qN`` (and any views it needs) over the views ``person``,
``auction`` and ``bid`` of ``bench/nexmark/_tables.sql``, which read the one source
``nexmark`` (the flat table of `sealtime.sources.nexmark.NEXMARK_SCHEMA`). The harness
builds that source in Python and applies the statements with `sealtime.sql.pipeline`,
which is what ``sealtime run`` does with a file (``bench/nexmark/_source.sql`` is the
same source as a statement, for ``sealtime run``).

q13 reads a second source, ``side_input``: `write_side_input` writes its one Parquet file
(10,000 rows ``key``, ``value`` = the text of ``key``, event time 0). q14 calls the
scalar function ``count_char(s, c)``: `register_udfs` registers it on the session as a
Spark SQL function (a pandas UDF: whole Arrow batches, no row at a time in Python).

>>> sorted(QUERY_NAMES)[:3], len(QUERY_NAMES)
(['q0', 'q1', 'q10'], 24)
>>> [s.split(' AS')[0] for s in statement_heads("q5")]
['CREATE VIEW q5']
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

__all__ = [
    "QUERY_DIR",
    "QUERY_NAMES",
    "SIDE_INPUT_DIR",
    "SIDE_INPUT_ROWS",
    "apply_query",
    "count_char_arrow",
    "query_text",
    "register_udfs",
    "statement_heads",
    "write_side_input",
]

QUERY_DIR = Path(__file__).resolve().parent / "nexmark"
QUERY_NAMES = [f"q{i}" for i in range(24)]
#: the directory (under the pipeline's base dir) q13's side input is read from
SIDE_INPUT_DIR = "side_input"
SIDE_INPUT_ROWS = 10_000


def query_text(name: str) -> str:
    """The text of ``bench/nexmark/<name>.sql``."""
    return (QUERY_DIR / f"{name}.sql").read_text(encoding="utf-8")


def statement_heads(name: str) -> list[str]:
    """The first line of each statement of a query file (comments skipped)."""
    from sealtime.sql.statements import split

    out = []
    for stmt in split(query_text(name)):
        lines = [ln for ln in stmt.source_text.splitlines() if ln.strip()]
        out.append(next(ln for ln in lines if not ln.lstrip().startswith("--")).strip())
    return out


def write_side_input(base_dir: str | os.PathLike, rows: int = SIDE_INPUT_ROWS) -> Path:
    """q13's static table: ``key`` 0..rows-1, ``value`` its decimal text, ``t`` = 0 (event
    time before every bid, so the table is complete before the first bid is joined)."""
    out = Path(base_dir) / SIDE_INPUT_DIR
    out.mkdir(parents=True, exist_ok=True)
    keys = pa.array(range(rows), pa.int64())
    table = pa.table(
        {"key": keys, "value": keys.cast(pa.string()), "t": pa.array([0] * rows, pa.int64())}
    )
    path = out / "side.parquet"
    pq.write_table(table, path)
    return path


def count_char_arrow(values: pa.Array, char: str) -> pa.Array:
    """Occurrences of `char` in each string (NULL counts 0): q14's ``count_char``.

    >>> count_char_arrow(pa.array(["abcc", None, ""]), "c").to_pylist()
    [2, 0, 0]
    """
    import pyarrow.compute as pc

    counts = pc.count_substring(values, char)
    return pc.fill_null(counts, 0).cast(pa.int32())


def register_udfs(spark: Any) -> None:
    """Register q14's ``count_char(s, c)`` on `spark` (a pandas UDF over Arrow batches).

    sealtime's SQL evaluates scalar expressions with Spark, so a function registered on
    the session is callable from a view; there is no sealtime API to declare one (the
    plan fingerprint does not see its code)."""
    from pyspark.sql.functions import pandas_udf

    @pandas_udf("int")
    def count_char(s: pd.Series, c: pd.Series) -> pd.Series:
        char = c.iloc[0] if len(c) else "c"
        arr = count_char_arrow(pa.array(s, pa.string()), char)
        return pd.Series(arr.to_numpy(zero_copy_only=False), index=s.index)

    spark.udf.register("count_char", count_char)


def _items(texts: Iterable[str]) -> list[Any]:
    from sealtime.sql.statements import parse_text

    return [item for t in texts for item in parse_text(t)]


def apply_query(flow: Any, name: str, base_dir: str | os.PathLike) -> Any:
    """Apply ``_tables.sql`` and ``<name>.sql`` to `flow` (which has source ``nexmark``)
    and return view `name`'s collection. Raises the `SqlError` of the first statement
    sealtime cannot translate (the dataflow keeps the statements before it)."""
    from sealtime.sql.pipeline import Pipeline

    pipeline = Pipeline(flow, str(base_dir))
    for item in _items([(QUERY_DIR / "_tables.sql").read_text(encoding="utf-8")]):
        pipeline.execute(item)
    for item in _items([query_text(name)]):
        pipeline.execute(item)
    return pipeline.view(name)
