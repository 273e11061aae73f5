"""Creating the SparkSession sealtime runs on.

Local mode is the embedded default. The settings below are the ones that matter on small
machines: a 4g driver (the 1g default runs out of memory on 1M-row batches), few shuffle
partitions (ticks are small; 200 partitions would be 200 tiny tasks per shuffle), Arrow
for conversions at Python sinks, and the UI off unless asked for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

__all__ = ["DEFAULT_CONF", "get_or_create_session"]

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
    "spark.sql.ansi.enabled": "false",
}


def get_or_create_session(
    master: str | None = None,
    app_name: str = "sealtime",
    conf: Mapping[str, str] | None = None,
):
    """Return the active SparkSession or build one with sealtime's defaults.

    `master` defaults to ``local[*]``; pass a ``spark://`` URL to run on a cluster.
    """
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    # The workers must run the same interpreter as the driver.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = SparkSession.builder.master(master or "local[*]").appName(app_name)
    merged = dict(DEFAULT_CONF)
    merged.update(conf or {})
    for key, value in merged.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session
