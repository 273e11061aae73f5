"""Spark's ``hash`` of one int or long column, computed in Python.

Spark's ``hash(c)`` (the expression ``repartition`` partitions by) is Murmur3 x86_32
with seed 42, over the value's 4 bytes (int) or 8 bytes (long, low word first). It is
fixed by Spark's on-disk formats (bucketed tables depend on it), so a value chosen
here lands where Spark puts it. Knowing it in Python spares a Spark job, the first of
a process and so the slowest, when an engine is built (`sealtime.operators.keys`).

>>> spark_hash_int(0), spark_hash_int(1), spark_hash_int(-1)
(933211791, -559580957, -1604776387)
>>> spark_hash_long(1), spark_hash_long(-1)
(-1712319331, -939490007)
"""

from __future__ import annotations

__all__ = ["SEED", "spark_hash_int", "spark_hash_long"]

#: the seed of Spark's ``hash`` expression (``Murmur3Hash``)
SEED = 42

_C1, _C2 = 0xCC9E2D51, 0x1B873593
_MASK = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _MASK


def _mix_k1(k1: int) -> int:
    k1 = (k1 * _C1) & _MASK
    return (_rotl(k1, 15) * _C2) & _MASK


def _mix_h1(h1: int, k1: int) -> int:
    h1 = _rotl(h1 ^ k1, 13)
    return (h1 * 5 + 0xE6546B64) & _MASK


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _MASK
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _MASK
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1  # (a Java int)


def spark_hash_int(value: int, seed: int = SEED) -> int:
    """``hash(CAST(value AS INT))`` as Spark computes it (a signed 32-bit int)."""
    return _fmix(_mix_h1(seed & _MASK, _mix_k1(value & _MASK)), 4)


def spark_hash_long(value: int, seed: int = SEED) -> int:
    """``hash(CAST(value AS BIGINT))`` as Spark computes it (a signed 32-bit int)."""
    v = value & 0xFFFFFFFFFFFFFFFF
    h1 = _mix_h1(seed & _MASK, _mix_k1(v & _MASK))
    h1 = _mix_h1(h1, _mix_k1(v >> 32))
    return _fmix(h1, 8)
