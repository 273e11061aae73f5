"""The SparkSession sealtime builds (`sealtime.spark.session`)."""

from __future__ import annotations

import socket

import pyarrow as pa
import pytest

from sealtime.spark.session import DEFAULT_CONF


@pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="the platform has no Unix sockets")
def test_python_workers_use_unix_sockets(spark):
    """Python workers reach their executor over a Unix socket (loopback TCP stalls small
    tasks), and a Python task and an accumulator work over it."""
    assert DEFAULT_CONF["spark.python.unix.domain.socket.enabled"] == "true"
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.python.unix.domain.socket.enabled") == "true"
    seen = spark.sparkContext.accumulator(0)

    def double(batches):
        for b in batches:
            seen.add(b.num_rows)
            yield pa.RecordBatch.from_arrays([pa.compute.multiply(b.column(0), 2)], ["x"])

    rows = spark.range(0, 5, numPartitions=2).mapInArrow(double, "x long").collect()
    assert sorted(r.x for r in rows) == [0, 2, 4, 6, 8]
    assert seen.value == 5
