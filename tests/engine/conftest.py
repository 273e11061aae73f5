"""Fixtures for the engine tests: the real NATS JetStream stream fixture is shared with
the source tests."""

from tests.sources.conftest import nats_stream  # noqa: F401 - a fixture
