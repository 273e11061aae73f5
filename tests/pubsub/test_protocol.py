"""Wire protocol: time codec, message round trips, incremental decoding, skipping, limits."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sealtime.pubsub.frontier import UpperFrontier, merge_lowers, merge_uppers
from sealtime.pubsub.protocol import (
    PREFIX_SIZE,
    Close,
    DataMessage,
    FrameDecoder,
    Hello,
    InitialFrontierSnapshot,
    LowerFrontierUpdate,
    ProtocolError,
    ViewSnapshot,
    decode_antichain,
    decode_time,
    encode_antichain,
    encode_message,
    encode_time,
    table_to_ipc,
)
from sealtime.time import Antichain, Product, less_than
from tests.conftest import examples
from tests.pubsub.test_group import brute_max, brute_min

ints = st.integers(-(2**63), 2**64 - 1)


def nested_times(depth: int):
    if depth == 0:
        return ints
    inner = nested_times(depth - 1)
    return st.builds(Product, inner, inner)


times = st.integers(0, 3).flatmap(nested_times)


@settings(max_examples=examples(ci=300, dev=60))
@given(t=times)
def test_time_round_trip(t):
    assert decode_time(encode_time(t)) == t


@pytest.mark.parametrize("bad", [2**64, -(2**63) - 1, 1.5, "3", True, None, (1, 2)])
def test_unencodable_times_are_rejected(bad):
    with pytest.raises(TypeError):
        encode_time(bad)


@pytest.mark.parametrize("bad", [1.5, "x", None, True, [1], [1, 2, 3], {"a": 1}, b"x"])
def test_malformed_times_are_protocol_errors(bad):
    with pytest.raises(ProtocolError):
        decode_time(bad)


def test_deeply_nested_time_is_rejected_not_a_recursion_error():
    obj: object = 0
    for _ in range(10_000):
        obj = [obj, 0]
    with pytest.raises(ProtocolError):
        decode_time(obj)


def test_antichain_codec_checks_incomparability_and_shape():
    a = Antichain([Product(0, 1), Product(1, 0)])
    assert decode_antichain(encode_antichain(a)) == a
    with pytest.raises(ProtocolError, match="not pairwise incomparable"):
        decode_antichain([[0, 1], [1, 1]])
    with pytest.raises(ProtocolError, match="different shapes"):
        decode_antichain([1, [0, 1]])


TABLE = pa.Table.from_arrays(
    [pa.array([1, 2, 3], pa.int64()), pa.array(["a", None, "c"])], names=["x", "s"]
)

MESSAGES = [
    Hello(role="subscriber"),
    Hello(role="publisher", name="n", partition=3, schema=TABLE.schema),
    Hello(role="subscriber", mode="view", resume=Antichain([Product(2, 3)])),
    InitialFrontierSnapshot(Antichain([Product(0, 1), Product(1, 0)]), Antichain([Product(2, 2)])),
    InitialFrontierSnapshot(Antichain(), Antichain()),
    LowerFrontierUpdate(((3, -1), (7, 1))),
    DataMessage(Product(1, Product(2, 3)), TABLE, partition=2),
    ViewSnapshot(Antichain([4]), TABLE),
    Close("bye ✓"),
]


@pytest.mark.parametrize("msg", MESSAGES, ids=lambda m: type(m).__name__)
def test_message_round_trip(msg):
    decoded = FrameDecoder.decode_one(encode_message(msg))
    assert type(decoded) is type(msg)
    for name in msg.__dataclass_fields__:
        a, b = getattr(msg, name), getattr(decoded, name)
        if isinstance(a, pa.Table | pa.Schema):
            assert a.equals(b)
        else:
            assert a == b, name


@settings(max_examples=examples(ci=100, dev=25))
@given(cuts=st.lists(st.integers(0, 10_000), max_size=30))
def test_decoder_handles_any_chunking(cuts):
    stream = b"".join(encode_message(m) for m in MESSAGES)
    positions = sorted({c % (len(stream) + 1) for c in cuts})
    decoder = FrameDecoder()
    got = []
    last = 0
    for pos in [*positions, len(stream)]:
        decoder.feed(stream[last:pos])
        last = pos
        while (msg := decoder.next_message()) is not None:
            got.append(msg)
    assert [type(m) for m in got] == [type(m) for m in MESSAGES]
    assert not decoder.mid_frame


def test_skipped_payload_is_never_buffered_nor_decoded():
    big = pa.Table.from_arrays([pa.array(np.arange(200_000, dtype=np.int64))], names=["x"])
    frame = encode_message(DataMessage(1, big)) + encode_message(Close("end"))
    seen = []
    decoder = FrameDecoder(skip=lambda h: seen.append(h) or h["t"] == 1)
    peak = 0
    for i in range(0, len(frame), 4096):
        decoder.feed(frame[i : i + 4096])
        peak = max(peak, len(decoder._buf))
        if (msg := decoder.next_message()) is not None:
            assert msg == Close("end")
    assert peak <= 2 * 4096  # the 1.6 MB payload never accumulated
    assert decoder.skipped_frames == 1
    assert decoder.skipped_bytes == len(table_to_ipc(big))
    assert [h["k"] for h in seen] == ["data"]


def test_frame_limits_are_checked_before_reading():
    decoder = FrameDecoder(max_frame_size=100)
    frame = encode_message(DataMessage(1, TABLE))
    decoder.feed(frame[:PREFIX_SIZE])  # only the prefix: already refused
    with pytest.raises(ProtocolError, match="exceeds the limit of 100 bytes"):
        decoder.next_message()


@settings(max_examples=examples(ci=200, dev=50))
@given(st.lists(times.filter(lambda t: type(t) is Product), max_size=12))
def test_upper_frontier_is_the_maximal_antichain(ts):
    shape = {_depth(t) for t in ts}
    if len(shape) > 1:
        return  # mixed nestings do not compare
    upper = UpperFrontier(ts)
    assert set(upper.elements()) == brute_max(ts)
    for t in ts:
        assert upper.covers(t)
    for a in upper.elements():
        for b in upper.elements():
            assert not less_than(a, b)


def _depth(t) -> int:
    return 0 if type(t) is int else 1 + _depth(t.outer)


small_products = st.builds(Product, st.integers(0, 4), st.integers(0, 4))


@settings(max_examples=examples(ci=200, dev=50))
@given(st.lists(st.lists(small_products, max_size=4), min_size=1, max_size=5))
def test_merges_match_brute_force(parts):
    union = [t for part in parts for t in part]
    assert set(merge_uppers(parts).elements()) == brute_max(union)
    lowers = [Antichain(part) for part in parts]
    assert set(merge_lowers(lowers).elements()) == brute_min(union)
