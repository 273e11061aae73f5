"""`parse_address`: the one address grammar (publishers, catalogs, ``--ui``)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sealtime.errors import ConfigError
from sealtime.pubsub import parse_address

hosts = st.sampled_from(["127.0.0.1", "0.0.0.0", "localhost", "example.org", "::1", "fe80::2"])
ports = st.integers(0, 65535)


@given(hosts, ports)
def test_host_and_port_round_trip(host, port):
    text = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    assert parse_address(text) == (host, port)
    assert parse_address((host, port)) == (host, port)


@given(ports)
def test_without_a_host_it_is_loopback(port):
    assert parse_address(str(port)) == ("127.0.0.1", port)
    assert parse_address(f":{port}") == ("127.0.0.1", port)


@pytest.mark.parametrize("text", ["", "web", "web:", "web:x", "h:-1", "h:1.5", "h:65536", "h:٣"])
def test_bad_addresses_name_the_setting(text):
    with pytest.raises(ConfigError, match=r"^--ui=") as info:
        parse_address(text, "--ui")
    assert isinstance(info.value, ValueError)
