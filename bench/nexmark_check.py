"""Comparing a system's Nexmark output with the reference, as multisets of rows.

Rows are compared in a canonical form: timestamps as int64 milliseconds, every integer
as int64, decimals and floats as float64 rounded to 6 decimals (sums and averages may
differ in the last bit between engines), nulls as sentinels (so that a column with nulls
keeps its type). A result is digested a table at a time into row hashes and
multiplicities (`Digest`), so that a 9.2M-row result is never a list of Python objects.

* `Digest.of(tables, columns, diff=True)`: a differential stream (``_diff``), consolidated.
* `compare(got, want)`: equal as multisets, with the rows missing and extra.
* `check_ties(got_tables, ties, columns)`: for top-n results whose SQL leaves ties open
  (`bench.nexmark_reference.Ties`): equal on the determined columns, and every row one
  of the allowed candidates.

>>> t = pa.table({"a": [1, 2, 2], "_diff": [1, 1, -1]})
>>> Digest.of([t], ["a"], diff=True).rows()
1
>>> w = Digest.of([pa.table({"a": [1]})], ["a"])
>>> compare(Digest.of([t], ["a"], diff=True).multiset(), w.multiset())
{'ok': True, 'missing': 0, 'extra': 0}
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Digest", "canonical", "check_ties", "compare", "row_hashes"]

_NULL_INT = -(2**63) + 7
_NULL_STR = "\x00NULL"


def canonical(table: pa.Table | pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """The columns of `table` in a comparable form (see the module docstring).

    >>> canonical(pa.table({"x": pa.array([1, None], pa.int32())}), ["x"])["x"].tolist()
    [1, -9223372036854775801]
    """
    if isinstance(table, pd.DataFrame):
        table = pa.Table.from_pandas(table[columns], preserve_index=False)
    out: dict[str, np.ndarray] = {}
    for name in columns:
        col = table.column(name)
        typ = col.type
        if pa.types.is_timestamp(typ):
            col = pc.cast(pc.cast(col, pa.timestamp("ms", tz=typ.tz), safe=False), pa.int64())
            typ = pa.int64()
        elif pa.types.is_date(typ):
            col = pc.cast(pc.cast(col, pa.date32()), pa.int32())
            typ = pa.int32()
        if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
            out[name] = pc.fill_null(pc.cast(col, pa.int64()), _NULL_INT).to_numpy()
        elif pa.types.is_decimal(typ) or pa.types.is_floating(typ):
            values = pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False)
            out[name] = np.round(values, 6)
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_null(typ):
            out[name] = (
                pc.fill_null(pc.cast(col, pa.string()), _NULL_STR)
                .to_numpy(zero_copy_only=False)
                .astype(object)
            )
        else:
            raise TypeError(f"column {name!r}: no canonical form for {typ}")
    return pd.DataFrame(out)


def row_hashes(df: pd.DataFrame) -> np.ndarray:
    """One uint64 per row of a canonical frame."""
    return pd.util.hash_pandas_object(df, index=False).to_numpy()


@dataclass
class Digest:
    """A result as row hashes, their multiplicities and (optionally) a key per row
    (`key_of`, e.g. the row's window, to compare only some windows)."""

    hashes: np.ndarray
    weights: np.ndarray
    keys: np.ndarray | None

    @classmethod
    def of(
        cls,
        tables: Iterable[pa.Table | pd.DataFrame],
        columns: list[str],
        diff: bool = False,
        key_of: Callable[[pd.DataFrame], np.ndarray] | None = None,
    ) -> Digest:
        hashes, weights, keys = [], [], []
        for t in tables:
            if len(t) == 0:
                continue
            df = canonical(t, columns)
            hashes.append(row_hashes(df))
            if diff:
                d = t["_diff"] if isinstance(t, pd.DataFrame) else t.column("_diff")
                weights.append(np.asarray(d, dtype=np.int64))
            else:
                weights.append(np.ones(len(df), dtype=np.int64))
            if key_of is not None:
                keys.append(np.asarray(key_of(df), dtype=np.int64))
        return cls(
            np.concatenate(hashes) if hashes else np.zeros(0, dtype=np.uint64),
            np.concatenate(weights) if weights else np.zeros(0, dtype=np.int64),
            None
            if key_of is None
            else (np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)),
        )

    def rows(self) -> int:
        return int(self.weights.sum())

    def multiset(self, mask: np.ndarray | None = None) -> pd.Series:
        """Row hash -> multiplicity (0 dropped), optionally of the rows in `mask`."""
        h, w = (
            (self.hashes, self.weights) if mask is None else (self.hashes[mask], self.weights[mask])
        )
        keys, inverse = np.unique(h, return_inverse=True)
        counts = np.bincount(inverse, weights=w, minlength=len(keys)).astype(np.int64)
        keep = counts != 0
        return pd.Series(counts[keep], index=pd.Index(keys[keep], dtype="uint64"))


def compare(got: pd.Series, want: pd.Series) -> dict[str, int | bool]:
    """Equal as multisets? With the number of rows missing from `got` and extra in it."""
    diff = got.sub(want, fill_value=0)
    return {
        "ok": bool((diff == 0).all()) and bool((got > 0).all()),
        "missing": int(-diff[diff < 0].sum()),
        "extra": int(diff[diff > 0].sum()),
    }


def check_ties(
    tables: list[pa.Table], ties, columns: list[str], want_key: pd.Series, diff: bool
) -> dict[str, int | bool]:
    """A top-n result against `ties` (`bench.nexmark_reference.Ties`): the multiset of
    its `ties.key` columns equals `want_key`, and every row present is a candidate."""
    got_key = Digest.of(tables, ties.key, diff=diff).multiset()
    res = compare(got_key, want_key)
    full = Digest.of(tables, columns, diff=diff).multiset()
    allowed = set(row_hashes(canonical(ties.candidates, columns)).tolist())
    present = full.index[full > 0]
    res["not_candidates"] = int(sum(1 for h in present.tolist() if h not in allowed))
    res["ok"] = bool(res["ok"]) and res["not_candidates"] == 0 and bool((full > 0).all())
    return res
