"""Shared test fixtures: one SparkSession for the whole run, hypothesis profiles, tiers.

The `ci` profile (selected when CI=true) runs the example counts the issues ask for;
the `dev` profile is the default for quick local runs.

Tiers (docs/testing.md): tests marked ``full`` (long crash runs, the standalone cluster,
benchmark-shaped runs) are deselected unless pytest is given ``--full`` or a ``-m``
expression of its own; ``bash scripts/test`` runs the default tier, ``bash scripts/test
--full`` both.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, Phase, settings

settings.register_profile(
    "ci",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=True,
)
settings.register_profile(
    "dev",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

IN_CI = bool(os.environ.get("CI"))

#: the marker of the full tier (registered in pyproject.toml)
FULL = "full"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--full",
        action="store_true",
        default=False,
        help="also run the full tier: tests marked `full` (long crash, cluster and "
        "benchmark-shaped runs); see docs/testing.md",
    )


def full_tier(config: pytest.Config) -> bool:
    """Whether tests marked ``full`` run: with ``--full``, or when the user chose tests by
    a ``-m`` expression of their own (``-m full`` runs the full tier alone)."""
    return bool(config.getoption("--full") or config.getoption("markexpr"))


#: set by `pytest_configure` before test modules are imported, read by `examples`
_TIER_ENV = "SEALTIME_TEST_TIER"


def pytest_configure(config: pytest.Config) -> None:
    os.environ[_TIER_ENV] = FULL if full_tier(config) else "default"


def pytest_report_header(config: pytest.Config) -> str:
    if full_tier(config):
        return "tier: full (tests marked `full` included)"
    return "tier: default (tests marked `full` deselected; --full runs them)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if full_tier(config):
        return
    # Deselected, not skipped: pytest's summary counts them ("N deselected").
    kept = [item for item in items if item.get_closest_marker(FULL) is None]
    if len(kept) < len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker(FULL)])
        items[:] = kept


def examples(ci: int, dev: int | None = None, *, default: int | None = None) -> int:
    """Example count for a property. Under CI=true: `ci` in the full tier, and `default`
    (when given, else `ci`) in the default tier, for the Spark oracles whose examples
    cost tens of seconds each (docs/testing.md). Otherwise `dev` (default ci // 5)."""
    if IN_CI:
        if default is not None and os.environ.get(_TIER_ENV) != FULL:
            return default
        return ci
    return dev if dev is not None else max(10, ci // 5)


def spark_settings(max_examples: int) -> settings:
    """Settings for properties whose examples run Spark jobs (seconds each): no shrinking
    (it could take far longer than the run; the failing example is printed as found)."""
    return settings(max_examples=max_examples, phases=[Phase.explicit, Phase.reuse, Phase.generate])


#: the default tier's Spark evaluates expressions without generating Java code: tests
#: move a few rows per job, where compiling each job's code costs more than it saves
#: (16 % less time on the oracle tests, docs/testing.md). Spark's own settings for its
#: tests; the full tier, the benchmarks and `sealtime run` children keep code generation.
INTERPRETED = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
}


@contextlib.contextmanager
def spark_conf(spark, settings: dict[str, str]) -> Iterator[None]:
    """`settings` on the session while the block runs; the previous values after."""
    saved = {k: spark.conf.get(k, None) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


@pytest.fixture
def codegen(spark):
    """Spark's code generation for one test (tests of the generated code itself), in any
    tier: the default tier's session is otherwise interpreted (`INTERPRETED`)."""
    on = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}
    with spark_conf(spark, on):
        yield spark


@pytest.fixture(scope="session")
def spark(request):
    """The one SparkSession of the test run (local mode, small, UI off; interpreted in
    the default tier: `INTERPRETED`)."""
    from sealtime.spark.session import get_or_create_session

    session = get_or_create_session(
        master="local[2]",
        app_name="sealtime-tests",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.ui.enabled": "false",
            **({} if full_tier(request.config) else INTERPRETED),
        },
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def make_flow(spark):
    """A factory of fresh dataflows on the shared SparkSession (one data dir each)."""
    dirs = []

    def make(**kwargs):
        d = tempfile.mkdtemp(prefix="sealtime-test-")
        dirs.append(d)
        kwargs.setdefault("spark", spark)
        import sealtime as st

        return st.Dataflow("t", data_dir=d, **kwargs)

    yield make
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="session")
def s3_server():
    """A moto S3 server on loopback with one bucket, ``s3a://sealtime-test`` registered
    to reach it (as a user would register a MinIO endpoint). Yields its ``fs.s3a.*``
    settings and ``"bucket"``. ``moto[server]`` is in the test extra."""
    import pyarrow.fs as pafs

    from sealtime.storage.fs import (
        register_filesystem,
        s3_options_from_hadoop,
        unregister_filesystem,
    )

    server_mod = pytest.importorskip("moto.server", reason="moto[server] is in the test extra")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    conf = {
        "fs.s3a.endpoint": f"http://{host}:{port}",
        "fs.s3a.access.key": "test",
        "fs.s3a.secret.key": "test",
        "fs.s3a.path.style.access": "true",
        "fs.s3a.endpoint.region": "us-east-1",
    }
    bucket = "sealtime-test"
    s3 = pafs.S3FileSystem(**s3_options_from_hadoop(conf), allow_bucket_creation=True)
    s3.create_dir(bucket)
    register_filesystem(f"s3a://{bucket}", s3)
    yield {**conf, "bucket": bucket}
    unregister_filesystem(f"s3a://{bucket}")
    server.stop()
