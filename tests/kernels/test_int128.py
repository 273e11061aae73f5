"""`Int128` against Python ints: wrapping arithmetic, segmented sums, decimal128 round trips."""

from __future__ import annotations

import decimal
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.errors import InternalError
from sealtime.kernels import Int128
from tests.conftest import examples

MAX38 = 10**38 - 1
CTX = decimal.Context(prec=100)  # exact: the default 28 digits would round
# CI=true runs the full counts; local runs a third (tests/conftest.py `examples`).
SETTINGS = settings(max_examples=examples(300, 100), deadline=None)
FEW = settings(max_examples=examples(150, 50), deadline=None)  # builds pyarrow arrays


def wrap(v: int) -> int:
    """`v` modulo 2**128 as a signed two's-complement value."""
    v &= (1 << 128) - 1
    return v - (1 << 128) if v >= 1 << 127 else v


def in_range(v: int) -> bool:
    return -(2**127) <= v < 2**127


# Mostly decimal(38)-sized values, with the extremes and tiny values over-represented.
EDGES = [0, 1, -1, MAX38, -MAX38, 2**127 - 1, -(2**127)]
EDGES += [2**64, 2**64 - 1, -(2**64), 2**63, -(2**63)]
i128 = st.one_of(
    st.sampled_from(EDGES),
    st.integers(-MAX38, MAX38),
    st.integers(-(2**127), 2**127 - 1),
    st.integers(-1000, 1000),
    st.integers(MAX38 - 1000, MAX38).map(lambda v: v * (-1) ** (v % 2)),
)
i64 = st.one_of(
    st.integers(-(2**63), 2**63 - 1),
    st.integers(-5, 5),
    st.sampled_from([-(2**63), 2**63 - 1, 2**32, -(2**32)]),
)
pairs = st.lists(st.tuples(i128, i128), max_size=12)


@SETTINGS
@given(pairs)
def test_elementwise_ops(ps: list[tuple[int, int]]) -> None:
    a = Int128.from_pyints(p[0] for p in ps)
    b = Int128.from_pyints(p[1] for p in ps)
    assert a.to_pyints() == [p[0] for p in ps]
    assert (a + b).to_pyints() == [wrap(x + y) for x, y in ps]
    assert (a - b).to_pyints() == [wrap(x - y) for x, y in ps]
    assert (-a).to_pyints() == [wrap(-x) for x, _ in ps]
    assert (a == b).tolist() == [x == y for x, y in ps]
    assert (a != b).tolist() == [x != y for x, y in ps]
    assert (a < b).tolist() == [x < y for x, y in ps]
    assert (a <= b).tolist() == [x <= y for x, y in ps]
    assert (a > b).tolist() == [x > y for x, y in ps]
    assert (a >= b).tolist() == [x >= y for x, y in ps]
    assert a.is_zero().tolist() == [x == 0 for x, _ in ps]
    assert a.sign().tolist() == [(x > 0) - (x < 0) for x, _ in ps]
    assert (a == a).all() and not (a != a).any()


@SETTINGS
@given(st.lists(st.tuples(i128, i64), max_size=12))
def test_mul_int64(ps: list[tuple[int, int]]) -> None:
    a = Int128.from_pyints(p[0] for p in ps)
    m = np.array([p[1] for p in ps], dtype=np.int64)
    assert a.mul_int64(m).to_pyints() == [wrap(x * y) for x, y in ps]


@SETTINGS
@given(st.lists(i64, max_size=12))
def test_from_int64(vs: list[int]) -> None:
    assert Int128.from_int64(np.array(vs, dtype=np.int64)).to_pyints() == vs


@SETTINGS
@given(st.lists(st.tuples(i128, st.booleans()), min_size=1, max_size=16))
def test_segment_sums(ps: list[tuple[int, bool]]) -> None:
    values = [p[0] for p in ps]
    starts = np.array([True] + [p[1] for p in ps[1:]])
    a = Int128.from_pyints(values)
    exp_cum, exp_sum, running = [], [], 0
    for v, s in zip(values, starts):
        if s:
            if exp_cum:
                exp_sum.append(running)
            running = 0
        running += v
        exp_cum.append(running)
    exp_sum.append(running)
    cum, exact = a.segment_cumsum_checked(starts)
    assert cum.to_pyints() == [wrap(v) for v in exp_cum]
    assert exact.tolist() == [in_range(v) for v in exp_cum]
    assert a.segment_cumsum(starts).to_pyints() == cum.to_pyints()
    tot, exact = a.segment_sum_checked(starts)
    assert tot.to_pyints() == [wrap(v) for v in exp_sum]
    assert exact.tolist() == [in_range(v) for v in exp_sum]
    assert a.segment_sum(starts).to_pyints() == tot.to_pyints()


def test_segment_sums_many_extremes() -> None:
    # 10_000 values of +-(10**38 - 1): partial sums wander far past 2**127 and come back.
    rng = np.random.default_rng(1)
    signs = rng.choice([-1, 1], size=10_000, p=[0.45, 0.55])
    a = Int128.from_pyints(int(s) * MAX38 for s in signs)
    starts = np.zeros(10_000, dtype=bool)
    starts[[0, 17, 5000]] = True
    cum, exact = a.segment_cumsum_checked(starts)
    expected = []
    running = 0
    for i, s in enumerate(signs):
        running = 0 if starts[i] else running
        running += int(s) * MAX38
        expected.append(running)
    assert cum.to_pyints() == [wrap(v) for v in expected]
    assert exact.tolist() == [in_range(v) for v in expected]
    assert not exact.all()


def test_empty_and_bad_starts() -> None:
    empty = Int128.zeros(0)
    assert len(empty.segment_cumsum(np.zeros(0, dtype=bool))) == 0
    assert len(empty.segment_sum(np.zeros(0, dtype=bool))) == 0
    assert len(Int128.concat([])) == 0
    with pytest.raises(InternalError, match="starts\\[0\\]"):
        Int128.from_pyints([1, 2]).segment_cumsum(np.array([False, True]))
    with pytest.raises(InternalError, match="length"):
        Int128.from_pyints([1, 2]).segment_sum(np.array([True]))


@SETTINGS
@given(st.lists(st.lists(i128, max_size=5), max_size=4), st.data())
def test_take_concat(parts: list[list[int]], data: st.DataObject) -> None:
    flat = [v for p in parts for v in p]
    joined = Int128.concat([Int128.from_pyints(p) for p in parts])
    assert joined.to_pyints() == flat and len(joined) == len(flat)
    idx = data.draw(st.lists(st.integers(0, max(len(flat) - 1, 0)), max_size=8)) if flat else []
    assert joined.take(np.array(idx, dtype=np.int64)).to_pyints() == [flat[i] for i in idx]


# --- decimal128 ---------------------------------------------------------------------------

dec_values = st.lists(
    st.one_of(st.none(), st.integers(-MAX38, MAX38), st.sampled_from([MAX38, -MAX38, 0])),
    max_size=12,
)


def to_pa(values: list[int | None], scale: int, chunks: int) -> pa.ChunkedArray:
    typ = pa.decimal128(38, scale)
    py = [None if v is None else decimal.Decimal(v).scaleb(-scale, CTX) for v in values]
    cuts = np.linspace(0, len(py), chunks + 1).astype(int)
    return pa.chunked_array([pa.array(py[a:b], typ) for a, b in zip(cuts, cuts[1:])], typ)


@FEW
@given(
    dec_values,
    st.integers(0, 38),
    st.integers(1, 3),
    st.integers(0, 5),
    st.integers(0, 5),
)
def test_from_decimal_sliced_chunked(
    values: list[int | None], scale: int, chunks: int, head: int, tail: int
) -> None:
    chunked = to_pa(values, scale, chunks)
    start = min(head, len(values))
    stop = max(start, len(values) - tail)
    flat = chunked.combine_chunks()
    cases = [
        (chunked, values),
        (flat, values),
        (chunked.slice(start, stop - start), values[start:stop]),
        (flat.slice(start, stop - start), values[start:stop]),  # non-zero offset
    ]
    for arr, expect in cases:
        ints, valid = Int128.from_decimal(arr)
        assert ints.to_pyints() == [0 if v is None else v for v in expect]
        assert valid.tolist() == [v is not None for v in expect]
        # Round trip: same values, same nulls.
        back = ints.to_decimal(arr.type, valid)
        assert back.equals(arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr)


def test_from_decimal_rejects_other_types() -> None:
    with pytest.raises(TypeError):
        Int128.from_decimal(pa.array([1, 2]))
    with pytest.raises(TypeError):
        Int128.from_pyints([1]).to_decimal(pa.int64())  # type: ignore[arg-type]


@FEW
@given(st.lists(st.tuples(i128, st.booleans()), max_size=12), st.integers(1, 38), st.data())
def test_to_decimal_overflow_to_null(
    ps: list[tuple[int, bool]], precision: int, data: st.DataObject
) -> None:
    scale = data.draw(st.integers(0, precision))
    typ = pa.decimal128(precision, scale)
    values = [p[0] for p in ps]
    valid = np.array([p[1] for p in ps], dtype=bool)
    arr = Int128.from_pyints(values).to_decimal(typ, valid)
    arr.validate(full=True)
    assert arr.type == typ
    expect = [
        decimal.Decimal(v).scaleb(-scale, CTX) if ok and abs(v) < 10**precision else None
        for v, ok in zip(values, valid)
    ]
    assert arr.to_pylist() == expect
    assert Int128.from_pyints(values).to_decimal(typ).null_count == sum(
        abs(v) >= 10**precision for v in values
    )


@SETTINGS
@given(st.lists(i128, max_size=12), st.integers(-5, 40))
def test_to_float64(values: list[int], scale: int) -> None:
    got = Int128.from_pyints(values).to_float64(scale)
    again = Int128.from_pyints(values).to_float64(scale)
    assert got.tobytes() == again.tobytes()
    for v, f in zip(values, got.tolist()):
        exact = Fraction(v, 10**scale) if scale >= 0 else Fraction(v * 10**-scale)
        if abs(v) < 2**53 and 0 <= scale <= 22:
            assert f == float(exact)  # correctly rounded
        else:
            assert abs(Fraction(f) - exact) <= abs(exact) * Fraction(1, 2**50)
