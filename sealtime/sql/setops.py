"""``INTERSECT`` and ``EXCEPT`` (``DISTINCT`` or ``ALL``) through counts per row.

Both sides' rows are tagged (1, 0) and (0, 1), unioned, and counted per distinct row
(``aggregate`` over every column: NULLs are equal there, as set operations want):
``INTERSECT`` keeps the rows with both counts positive, ``EXCEPT`` those of the left
side only; the ``ALL`` forms keep ``least(l, r)`` / ``l - r`` copies of each (``explode``
of a sequence, a per-row operator, so a count that changes retracts the old copies and
inserts the new ones).

>>> from sealtime.sql.parse import parse
>>> [type(parse(q).tree).__name__ for q in ("SELECT k FROM a INTERSECT SELECT k FROM b",
...                                         "SELECT k FROM a EXCEPT ALL SELECT k FROM b")]
['Intersect', 'Except']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pyspark.sql import functions as F
from sqlglot import exp

import sealtime.plan.aggregates as A

from .relation import Field, Relation
from .translate import col_ref

if TYPE_CHECKING:
    from .translate import Translator

__all__ = ["translate"]


def translate(tr: Translator, node: exp.Intersect | exp.Except) -> Relation:
    """``left INTERSECT|EXCEPT [ALL] right`` (see the module docstring)."""
    word = "INTERSECT" if isinstance(node, exp.Intersect) else "EXCEPT"
    keep_all = node.args.get("distinct") is False
    if node.args.get("by_name"):
        raise tr.error(f"{word} BY NAME", "select the columns in the same order", node)
    branches = [node.this, node.expression]
    rels = [tr.strip(tr.query(b)) for b in branches]
    names, colls, _ = tr.aligned(word, node, branches, rels)
    taken = set(names)
    left_n, right_n = tr.fresh("__l", taken), tr.fresh("__r", taken)
    tagged = [
        coll.with_columns({left_n: F.lit(1 - i).cast("long"), right_n: F.lit(i).cast("long")})
        for i, coll in enumerate(colls)
    ]
    counts = (
        tagged[0]
        .union(tagged[1])
        .aggregate(by=names, **{left_n: A.sum(left_n), right_n: A.sum(right_n)})
    )
    lc, rc = F.col(left_n), F.col(right_n)
    if word == "INTERSECT":
        kept = counts.filter((lc > 0) & (rc > 0))
        copies = F.least(lc, rc)
    else:
        kept = counts.filter(lc > rc if keep_all else (lc > 0) & (rc == 0))
        copies = lc - rc
    if keep_all:
        copy = tr.fresh("__c", taken)
        kept = kept.flat_map(**{copy: F.sequence(F.lit(1).cast("long"), copies)})
    out = kept.select(*[col_ref(n) for n in names])
    return Relation(out, [Field(n, n) for n in names])
