"""Creating the SparkSession sealtime runs on.

Local mode is the embedded default. The settings below are the ones that matter on small
machines: a 4g driver (the 1g default runs out of memory on 1M-row batches), few shuffle
partitions (ticks are small; 200 partitions would be 200 tiny tasks per shuffle), Arrow
for conversions at Python sinks, Python workers on Unix sockets (loopback TCP stalls
small tasks ~40 ms) under sealtime's quiet daemon (`sealtime.spark.daemon`), and the UI
off unless asked for.

Local mode and cluster mode differ in one network setting (see ``docs/cluster.md``):

* **local** (`master` None or ``local[...]``): the driver and its executor threads share
  one JVM, so the driver binds to loopback (``127.0.0.1``). This avoids a container's
  hostname resolving to an address nothing listens on.
* **cluster** (``spark://host:port``): executors on other machines connect back to the
  driver, so loopback would be wrong. The driver's address comes, first found first, from
  ``conf["spark.driver.host"]``, the environment variable ``SEALTIME_DRIVER_HOST``, Spark's
  own ``SPARK_LOCAL_IP``, or the configuration ``spark-submit`` was given; otherwise
  Spark picks this machine's hostname. Before the session is built the master's port must
  accept a TCP connection, and after it is built an executor must register within
  `executor_timeout` seconds (env ``SEALTIME_EXECUTOR_TIMEOUT``, default 60): either
  failure is a `ConfigError` naming the setting to fix, instead of Spark's endless
  "Initial job has not accepted any resources" warning.

Under ``spark-submit`` (the JVM exists already and ``PYSPARK_GATEWAY_PORT`` is set) the
submitted ``--master`` and ``--conf`` values win: `master` None means "the one
spark-submit was given", and the defaults below do not override submitted settings.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "DEFAULT_CONF",
    "DRIVER_HOST_ENV",
    "EXECUTOR_TIMEOUT_ENV",
    "SHORT_NAMES",
    "get_or_create_session",
    "import_short_names",
    "quiet_query_errors",
    "is_local_master",
    "master_addresses",
]

DEFAULT_CONF: dict[str, str] = {
    "spark.driver.memory": "4g",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.unionOutputPartitioning": "false",
    "spark.driver.extraJavaOptions": "-Duser.timezone=UTC",
    "spark.executor.extraJavaOptions": "-Duser.timezone=UTC",
    # Spark 4's default: an expression that fails (division by zero, a bad cast) raises
    # instead of giving NULL; SQL views route such rows to their errors (docs/sql.md).
    "spark.sql.ansi.enabled": "true",
    # On a cluster, record=True traces use reliable checkpoints (files in the data dir,
    # which survive executor loss); delete them once their frame is unreferenced.
    "spark.cleaner.referenceTracking.cleanCheckpoints": "true",
    # Reads of the ingest log name their files (a hydration or a catch-up, hundreds):
    # past Spark's default of 32 paths it lists them with a Spark job, 1.2–3.8 s for
    # 33–150 files against 0.26–0.5 s listed on the driver (docs/dataplane.md).
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "4096",
}
# Python workers talk to their executor over a Unix socket where the platform has them:
# over loopback TCP a task with a small input waits ~40 ms for its last bytes (Nagle's
# algorithm against delayed ACKs; docs/dataplane.md has the measurements).
if hasattr(socket, "AF_UNIX"):
    DEFAULT_CONF["spark.python.unix.domain.socket.enabled"] = "true"
    # Over a Unix socket PySpark's own daemon prints a BrokenPipeError traceback each time
    # an executor closes an idle worker (after a minute idle, and at exit); this one is
    # PySpark's without that traceback. Workers must be able to import sealtime, as
    # every kernel already needs (docs/cluster.md).
    DEFAULT_CONF["spark.python.daemon.module"] = "sealtime.spark.daemon"

#: environment variable naming the address executors use to reach the driver (cluster mode)
DRIVER_HOST_ENV = "SEALTIME_DRIVER_HOST"
#: environment variable: seconds to wait for the first executor (cluster mode)
EXECUTOR_TIMEOUT_ENV = "SEALTIME_EXECUTOR_TIMEOUT"
_LOOPBACK = "127.0.0.1"
_MASTER_CONNECT_TIMEOUT = 5.0


#: JVM classes PySpark names by their short names on its hot paths (every DataFrame
#: operation goes through ``PythonUtils`` or ``PythonSQLUtils``)
SHORT_NAMES = (
    "org.apache.spark.api.python.PythonUtils",
    "org.apache.spark.api.python.PythonRDD",
    "org.apache.spark.api.python.SerDeUtil",
    "org.apache.spark.api.python.SimplePythonFunction",
    "org.apache.spark.api.python.PythonAccumulatorV2",
    "org.apache.spark.api.python.BytesToString",
    "org.apache.spark.sql.api.python.PythonSQLUtils",
    "org.apache.spark.sql.api.python.ArrowIteratorServer",
)


def import_short_names(spark: SparkSession) -> None:
    """Import `SHORT_NAMES` into the py4j view one class at a time. PySpark imports
    their packages (``org.apache.spark.api.python.*``, ...), so py4j resolves a short
    name by trying each imported package in turn, and every miss makes the JVM search
    all of Spark's jars (0.3 ms for ``PythonUtils`` on every call); a class imported by
    itself is found first (the py4j costs: docs/dataplane.md). Idempotent; `Engine`
    calls it for a session it is given.

    >>> from sealtime.spark.session import get_or_create_session
    >>> import_short_names(get_or_create_session())
    """
    from py4j.java_gateway import java_import

    jvm = spark.sparkContext._jvm
    for name in SHORT_NAMES:
        java_import(jvm, name)


def quiet_query_errors(spark: SparkSession) -> None:
    """Silence Spark's ``SQLQueryContextLogger``, which logs every failed query (an
    unknown function in a view, a division by zero) as JSON with the Java stack trace on
    stderr, although the exception also reaches the caller, who reports it in words.

    >>> from sealtime.spark.session import get_or_create_session
    >>> quiet_query_errors(get_or_create_session())
    """
    jvm = spark.sparkContext._jvm
    log4j = jvm.org.apache.logging.log4j
    log4j.core.config.Configurator.setLevel("SQLQueryContextLogger", log4j.Level.OFF)


def is_local_master(master: str | None) -> bool:
    """True for local mode: no master, or a ``local``/``local[N]``/``local[*]`` URL.

    >>> is_local_master(None), is_local_master("local[2]"), is_local_master("spark://h:7077")
    (True, True, False)
    """
    return master is None or master.startswith("local")


def master_addresses(master: str) -> list[tuple[str, int]]:
    """The (host, port) pairs of a ``spark://`` URL (several with standby masters).

    >>> master_addresses("spark://a:7077,b:7078")
    [('a', 7077), ('b', 7078)]
    >>> master_addresses("spark://a")
    [('a', 7077)]
    """
    if not master.startswith("spark://"):
        return []
    out = []
    for part in master[len("spark://") :].rstrip("/").split(","):
        host, _, port = part.rpartition(":") if ":" in part else (part, "", "7077")
        try:
            out.append((host.strip("[]"), int(port)))
        except ValueError:
            raise ConfigError(
                f"master={master!r}: {part!r} is not host:port; use e.g. "
                "master='spark://master-host:7077'"
            ) from None
    return out


def get_or_create_session(
    master: str | None = None,
    app_name: str = "sealtime",
    conf: Mapping[str, str] | None = None,
    *,
    executor_timeout: float | None = None,
) -> SparkSession:
    """Return the active SparkSession or build one with sealtime's defaults.

    `master` defaults to ``local[*]`` (or, under ``spark-submit``, to the submitted
    master); pass a ``spark://host:port`` URL to run on a standalone cluster. `conf`
    overrides the defaults. `executor_timeout` (cluster mode): seconds to wait for the
    first executor before failing with a `ConfigError` (default: env
    ``SEALTIME_EXECUTOR_TIMEOUT``, else 60). See the module docstring for the driver's
    address.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    conf = dict(conf or {})
    submitted: dict[str, str] = {}
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        # Under spark-submit the JVM runs already: read what it was submitted with, so
        # that `master=None` and our defaults do not override the user's --master/--conf.
        SparkContext._ensure_initialized()
        submitted = dict(SparkConf().getAll())
    effective = master or submitted.get("spark.master") or "local[*]"
    # The workers must run the same interpreter as the driver (same path on every host).
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    merged = {k: v for k, v in DEFAULT_CONF.items() if k not in submitted}
    if is_local_master(effective):
        # One JVM: loopback is always reachable, and a container's hostname may not be.
        # (The environment variable covers the JVM's other services when it is launched
        # by this call; the conf covers a JVM that exists already.)
        os.environ.setdefault("SPARK_LOCAL_IP", _LOOPBACK)
        merged["spark.driver.host"] = _LOOPBACK
        merged["spark.driver.bindAddress"] = _LOOPBACK
    else:
        host = _driver_host(conf, submitted)
        if host is not None:
            merged["spark.driver.host"] = host
            _check_driver_host(effective, host)
        _check_master_reachable(effective)
    merged.update(conf)
    builder = SparkSession.builder.appName(app_name)
    if master is not None or not submitted:
        builder = builder.master(effective)
    for key, value in merged.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    quiet_query_errors(session)
    import_short_names(session)
    if not is_local_master(effective):
        try:
            actual = session.sparkContext.getConf().get("spark.driver.host")
            if actual:
                _check_driver_host(effective, actual)
            _wait_for_executors(session, effective, actual, executor_timeout)
        except BaseException:
            session.stop()  # a half-usable session must not become the active one
            raise
    return session


def _driver_host(conf: Mapping[str, str], submitted: Mapping[str, str]) -> str | None:
    """The driver's address for cluster mode, first found first (module docstring)."""
    for value in (
        conf.get("spark.driver.host"),
        os.environ.get(DRIVER_HOST_ENV),
        os.environ.get("SPARK_LOCAL_IP"),
        submitted.get("spark.driver.host"),
    ):
        if value:
            return value
    return None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_driver_host(master: str, driver_host: str) -> None:
    """A loopback driver address works only when every master (and so, in practice,
    every worker) is on loopback too; otherwise executors could never connect back."""
    remote = [h for h, _ in master_addresses(master) if not _is_loopback(h)]
    if remote and _is_loopback(driver_host):
        raise ConfigError(
            f"master={master!r} is on another host ({remote[0]}), but the driver would "
            f"listen on {driver_host}, which executors there cannot reach. Set "
            f"{DRIVER_HOST_ENV} (or conf spark.driver.host) to an address of this machine "
            "that the workers can reach, and unset SPARK_LOCAL_IP if it says 127.0.0.1"
        )


def _check_master_reachable(master: str) -> None:
    """Fail fast, naming `master`, when no master of a ``spark://`` URL accepts a TCP
    connection (Spark itself would retry for minutes and then exit the whole process)."""
    addresses = master_addresses(master)
    if not addresses:
        return  # yarn, k8s://...: Spark's own client finds and reports those
    errors = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=_MASTER_CONNECT_TIMEOUT):
                return
        except OSError as e:
            errors.append(f"{host}:{port}: {e.strerror or e}")
    raise ConfigError(
        f"master={master!r}: cannot reach the Spark master ({'; '.join(errors)}). Start "
        "it (spark-class org.apache.spark.deploy.master.Master --host HOST --port 7077) or "
        "fix the URL; the port is the master's RPC port (7077 by default), not its web UI "
        "port (8080)"
    )


def _wait_for_executors(
    session: SparkSession, master: str, driver_host: str | None, timeout: float | None
) -> None:
    """Wait until one executor has registered with the driver.

    An executor that cannot connect back to the driver dies at start and the worker
    launches another, so Spark itself only logs "Initial job has not accepted any
    resources" forever; a bounded wait turns that into an error naming the fix.
    """
    sc = session.sparkContext
    if sc.getConf().get("spark.dynamicAllocation.enabled", "false").lower() == "true":
        return  # executors come on demand; none at start is normal
    if timeout is None:
        timeout = float(os.environ.get(EXECUTOR_TIMEOUT_ENV, "60"))
    deadline = time.monotonic() + timeout
    status = sc._jsc.sc()
    while True:
        # (the map includes the driver's own block manager, hence > 1)
        if status.getExecutorMemoryStatus().size() > 1:
            return
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
    port = sc.getConf().get("spark.driver.port", "?")
    raise ConfigError(
        f"master={master!r}: no executor registered within {timeout:g} s "
        f"({EXECUTOR_TIMEOUT_ENV} to wait longer). Either the workers have no free cores "
        "or memory for this application (see the master's web UI; lower "
        "spark.executor.memory / spark.executor.cores), or they cannot connect back to "
        f"the driver at {driver_host}:{port}: set {DRIVER_HOST_ENV} (or conf "
        "spark.driver.host) to an address of this machine the workers can reach, and let "
        "them reach spark.driver.port and spark.blockManager.port (fix both ports behind "
        "a firewall)"
    )
