"""Cluster settings of `get_or_create_session` that are checked before any JVM starts:
master URLs, the driver's address, an unreachable master (no Spark needed)."""

from __future__ import annotations

import pytest

from sealtime.errors import ConfigError
from sealtime.spark import session
from tests.cluster.conftest import free_port


def test_local_masters():
    assert session.is_local_master(None)
    assert session.is_local_master("local[2]")
    assert not session.is_local_master("spark://127.0.0.1:7077")


def test_master_addresses():
    assert session.master_addresses("spark://a:7077,b:7078") == [("a", 7077), ("b", 7078)]
    assert session.master_addresses("spark://[::1]:7077") == [("::1", 7077)]
    assert session.master_addresses("yarn") == []
    with pytest.raises(ConfigError, match="not host:port"):
        session.master_addresses("spark://a:x")


def test_unreachable_master_names_the_setting():
    url = f"spark://127.0.0.1:{free_port()}"  # nothing listens there
    with pytest.raises(ConfigError, match="cannot reach the Spark master.*RPC port"):
        session._check_master_reachable(url)


def test_loopback_driver_with_remote_master():
    with pytest.raises(ConfigError, match="SEALTIME_DRIVER_HOST"):
        session._check_driver_host("spark://10.0.0.7:7077", "127.0.0.1")
    session._check_driver_host("spark://127.0.0.1:7077", "127.0.0.1")  # all on loopback
    session._check_driver_host("spark://10.0.0.7:7077", "10.0.0.5")


def test_driver_host_order(monkeypatch):
    monkeypatch.setenv("SEALTIME_DRIVER_HOST", "10.0.0.5")
    monkeypatch.setenv("SPARK_LOCAL_IP", "10.0.0.6")
    assert session._driver_host({"spark.driver.host": "h"}, {}) == "h"
    assert session._driver_host({}, {"spark.driver.host": "s"}) == "10.0.0.5"
    monkeypatch.delenv("SEALTIME_DRIVER_HOST")
    assert session._driver_host({}, {"spark.driver.host": "s"}) == "10.0.0.6"
    monkeypatch.delenv("SPARK_LOCAL_IP")
    assert session._driver_host({}, {"spark.driver.host": "s"}) == "s"
    assert session._driver_host({}, {}) is None
