"""`per_slot_topk` / `per_slot_count` against brute force: every (group, slot), every item."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.errors import InternalError, PlanError
from sealtime.kernels import MAX_K, per_slot_count, per_slot_topk
from sealtime.kernels.interval_top_k import KEY_BITS
from tests.conftest import examples

# CI=true runs the full counts; local runs a third (tests/conftest.py `examples`).
SETTINGS = settings(max_examples=examples(300, 100), deadline=None)

Intervals = tuple[list[int], list[tuple[int, int, int, int, int]]]  # n_slots, (g, lo, hi, r, c)


def arrays(case: Intervals) -> tuple[np.ndarray, ...]:
    n_slots, ivs = case
    cols = np.array(ivs, dtype=np.int64).reshape(-1, 5).T
    return (np.array(n_slots, dtype=np.int64), *cols)


def brute_topk(case: Intervals, k: int) -> list[tuple[int, int, int, int]]:
    n_slots, ivs = case
    rows = []
    for g, n in enumerate(n_slots):
        for s in range(n):
            present = sorted((r, c) for gg, lo, hi, r, c in ivs if gg == g and lo <= s < hi)
            taken = 0
            for r, c in present:
                if taken >= k:
                    break
                t = min(c, k - taken)
                rows.append((g, s, r, t))
                taken += t
    return rows


def brute_count(case: Intervals) -> list[int]:
    n_slots, ivs = case
    return [
        sum(1 for gg, lo, hi, _, _ in ivs if gg == g and lo <= s < hi)
        for g, n in enumerate(n_slots)
        for s in range(n)
    ]


def check(case: Intervals, k: int, key_bits: int = KEY_BITS) -> None:
    n_slots, key, lo, hi, rank, count = arrays(case)
    res = per_slot_topk(n_slots, key, lo, hi, rank, count, k, key_bits=key_bits)
    got = list(zip(res.group.tolist(), res.slot.tolist(), res.rank.tolist(), res.taken.tolist()))
    assert got == brute_topk(case, k)
    # offsets index the rows by global slot
    starts = np.concatenate([[0], np.cumsum(n_slots)])
    t = starts[res.group] + res.slot
    assert len(res.offsets) == starts[-1] + 1 and res.offsets[0] == 0
    assert (np.repeat(np.arange(starts[-1]), np.diff(res.offsets)) == t).all()
    for arr in (res.group, res.slot, res.rank, res.taken, res.offsets):
        assert arr.dtype == np.int64
    assert per_slot_count(n_slots, key, lo, hi).tolist() == brute_count(case)


@st.composite
def group_items(draw: st.DrawFn, g: int, n: int, ranks: st.SearchStrategy[int]) -> list:
    """Items of one group: distinct ranks, each with disjoint (possibly adjacent) intervals."""
    out = []
    item_ranks = draw(st.lists(ranks, unique=True, max_size=6))
    for r in item_ranks:
        cuts = sorted(draw(st.lists(st.integers(0, n), unique=True, min_size=2, max_size=5)))
        for lo, hi in zip(cuts, cuts[1:]):
            if draw(st.booleans()):
                out.append((g, lo, hi, r, draw(st.sampled_from([1, 1, 2, 3, 10, 2**62]))))
    return out


@st.composite
def cases(draw: st.DrawFn, max_groups: int = 6, max_slots: int = 12) -> Intervals:
    n_slots = draw(st.lists(st.integers(1, max_slots), min_size=1, max_size=max_groups))
    ranks = st.one_of(st.integers(-5, 10), st.sampled_from([-(2**63), 2**63 - 1]))
    ivs = [iv for g, n in enumerate(n_slots) for iv in draw(group_items(g, n, ranks))]
    return n_slots, draw(st.permutations(ivs))  # input order must not matter


@SETTINGS
@given(cases(), st.sampled_from([1, 2, 3, 7]))
def test_many_small_groups(case: Intervals, k: int) -> None:
    check(case, k)


@settings(max_examples=examples(100, 30), deadline=None)
@given(cases(max_groups=3, max_slots=70), st.sampled_from([1, 2, 3, 7]))
def test_few_big_groups(case: Intervals, k: int) -> None:
    check(case, k)


@pytest.mark.parametrize("k", [1, 2, 3, 7, 50])
def test_random_large(k: int) -> None:
    # Many items per slot, intervals touching slot 0 and the last slot of each group.
    rng = np.random.default_rng(k)
    n_slots = [300, 1, 2, 37, 64, 65]
    ivs = []
    for g, n in enumerate(n_slots):
        for r in range(60):
            cuts = np.unique(np.concatenate([[0, n], rng.integers(0, n + 1, size=3)]))
            for lo, hi in zip(cuts[:-1].tolist(), cuts[1:].tolist()):
                if rng.random() < 0.7:
                    ivs.append(
                        (g, lo, hi, int(rng.integers(-40, 40)) * 100 + r, int(rng.integers(1, 4)))
                    )
    check((n_slots, ivs), k)


def test_empty_inputs() -> None:
    e = np.zeros(0, dtype=np.int64)
    res = per_slot_topk(np.array([2, 3]), e, e, e, e, e, 3)
    assert len(res) == 0 and res.offsets.tolist() == [0] * 6
    assert per_slot_count(np.array([2, 3]), e, e, e).tolist() == [0] * 5
    res = per_slot_topk(np.zeros(0, dtype=np.int64), e, e, e, e, e, 1)
    assert len(res) == 0 and res.offsets.tolist() == [0]
    # groups with no slots are allowed
    check(([0, 2, 0], [(1, 0, 2, 4, 1)]), 2)


def test_split_when_keys_do_not_fit() -> None:
    case = (
        [4, 4, 4, 4],
        [(g, lo, lo + 2, r, 1) for g in range(4) for lo in range(3) for r in (lo, lo + 1)],
    )
    expected = brute_topk(case, 2)
    check(case, 2, key_bits=8)  # 16 slots do not fit, 4 slots do
    assert len(expected) > 0
    with pytest.raises(InternalError, match="int64 keys"):
        per_slot_topk(*arrays(case), 2, key_bits=3)


def test_invalid_inputs() -> None:
    one = np.array([0])
    ok = dict(
        n_slots=np.array([3]), key=one, lo=one, hi=np.array([2]), rank=one, count=np.array([1])
    )
    per_slot_topk(**ok, k=MAX_K)
    for bad_k in (0, MAX_K + 1):
        with pytest.raises(PlanError, match="k must"):
            per_slot_topk(**ok, k=bad_k)
    for field, value in [
        ("lo", np.array([2])),  # lo == hi
        ("hi", np.array([4])),  # past the group's slots
        ("lo", np.array([-1])),
        ("key", np.array([1])),
        ("count", np.array([0])),
        ("rank", np.array([1, 2])),
    ]:
        with pytest.raises(InternalError):
            per_slot_topk(**{**ok, field: value}, k=2)
    with pytest.raises(TypeError):
        per_slot_topk(**{**ok, "lo": np.array([0.0])}, k=2)
    with pytest.raises(InternalError):
        per_slot_count(np.array([-1]), one[:0], one[:0], one[:0])


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("n", range(1, 18))
def test_single_group_every_size(n: int, k: int) -> None:
    # A full-range interval reaches the tree's root when n is a power of two.
    ivs = [(0, 0, n, 5, 1), (0, 0, max(1, n // 2), 9, 2), (0, n - 1, n, 1, 1)]
    ivs += [(0, lo, min(n, lo + 3), 7, 1) for lo in range(0, n, 4)]
    check(([n], ivs), k)
    check(([n, 1], ivs + [(1, 0, 1, 3, 4)]), k)
