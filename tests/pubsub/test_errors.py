"""Pub-sub errors are `SealtimeError`s and keep the built-in bases callers catch."""

from __future__ import annotations

import pytest

from sealtime.errors import ConfigError, NotFoundError, SealtimeError, StateError
from sealtime.progress import DowngradeError
from sealtime.pubsub import ProtocolError, Publisher, SubscribeError, subscribe, subscribe_stream
from sealtime.pubsub.protocol import FrameDecoder


def test_protocol_and_subscribe_errors():
    decoder = FrameDecoder()
    decoder.feed(b"GET / HTTP/1.1\r\n\r\n")
    with pytest.raises(ProtocolError) as bad:
        decoder.next_message()
    assert isinstance(bad.value, SealtimeError)
    with pytest.raises(SubscribeError) as refused:
        subscribe_stream(("127.0.0.1", 1), timeout=2)
    assert isinstance(refused.value, SealtimeError) and isinstance(refused.value, ConnectionError)


def test_publisher_misuse():
    with pytest.raises(ConfigError, match=r"Publisher\(max_frame_size=10\)"):
        Publisher("p", max_frame_size=10)
    pub = Publisher("p", lower=[3])
    with pytest.raises(DowngradeError) as back:
        pub.advance_lower([1])
    assert isinstance(back.value, ValueError)
    pub.close()
    with pytest.raises(StateError) as closed:
        pub.advance_lower([5])
    assert isinstance(closed.value, RuntimeError)


def test_unknown_topic_is_a_key_error_with_a_readable_message():
    with pytest.raises(NotFoundError) as info:
        subscribe("prices", catalog={"bids": "127.0.0.1:1"})
    assert isinstance(info.value, KeyError)
    assert str(info.value) == "topic 'prices' is not in the catalog (known: ['bids'])"
