"""Kernels: vectorised numpy/pyarrow algorithms that run inside Spark tasks (`mapInArrow`)
over one partition's Arrow data. One concept per module; see each module's docstring.
"""

from .int128 import Int128
from .interval_top_k import MAX_K, PerSlotTopK, per_slot_count, per_slot_topk

__all__ = ["MAX_K", "Int128", "PerSlotTopK", "per_slot_count", "per_slot_topk"]
