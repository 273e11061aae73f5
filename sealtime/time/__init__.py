"""Timestamps, frontiers and change batches: the time core of sealtime (pure Python).

Mirrors timely dataflow's `timely::order` and `timely::progress::{frontier, change_batch}`
plus differential's lattice operations:

* `order`: the `PartialOrder` protocol, free `less_equal`/`less_than` (ints compare with
  `<=`), `Product` timestamps, `minimum`, and `sort_key` (a total order for output only);
* `antichain`: `Antichain`, the frontier type (empty = finished);
* `mutable_antichain`: `MutableAntichain`, counted times with an incrementally maintained
  frontier;
* `change_batch`: `ChangeBatch`, consolidated `(time, diff)` updates;
* `lattice`: `join`, `meet`, `advance_by`.

>>> from sealtime.time import Antichain, MutableAntichain, Product, advance_by
>>> Antichain([Product(1, 0), Product(0, 1), Product(1, 1)])
Antichain([Product(0, 1), Product(1, 0)])
>>> advance_by(Product(3, 7), Antichain([Product(4, 8), Product(5, 3)]))
Product(4, 7)
"""

from sealtime.time.antichain import Antichain
from sealtime.time.change_batch import ChangeBatch
from sealtime.time.lattice import advance_by, join, meet
from sealtime.time.mutable_antichain import MutableAntichain
from sealtime.time.order import (
    MAX_TIME,
    MIN_TIME,
    PartialOrder,
    Product,
    Timestamp,
    describe_frontier,
    frontier_le,
    less_equal,
    less_than,
    minimum,
    sort_key,
    sorted_times,
)

__all__ = [
    "MAX_TIME",
    "MIN_TIME",
    "Antichain",
    "ChangeBatch",
    "MutableAntichain",
    "PartialOrder",
    "Product",
    "Timestamp",
    "advance_by",
    "describe_frontier",
    "frontier_le",
    "join",
    "less_equal",
    "less_than",
    "meet",
    "minimum",
    "sort_key",
    "sorted_times",
]
