"""The Python worker daemon of sealtime's sessions: PySpark's own daemon, quiet when an
executor has already closed a worker's connection.

sealtime's sessions run Python workers over Unix sockets (``DEFAULT_CONF``). An executor
closes the connection of a Python worker that has sat idle for a minute, and of every
worker when Spark stops. The worker then finds the end of its input, writes a last
message that nobody will read, and PySpark's daemon prints a ``BrokenPipeError``
traceback to the executor's stderr, because a write to a Unix socket whose peer is gone
fails at once. A long job with quiet periods would fill its log with such tracebacks
although nothing failed. This daemon is PySpark's, except that a worker whose connection
is gone ends without a traceback: a broken pipe means the executor has already stopped
reading, so no task waits for what the worker could not write.

Spark starts it as ``python -m sealtime.spark.daemon`` (``spark.python.daemon.module``),
so it imports nothing from sealtime but this module (``import sealtime`` and
``sealtime.spark`` are light): the daemon forks its workers, and libraries that start
threads (pyarrow, pandas) must not be loaded before a fork.

"""

from __future__ import annotations

import socket

import pyspark.daemon as _pyspark_daemon

__all__ = ["worker"]

_pyspark_worker = _pyspark_daemon.worker


def worker(sock: socket.socket, authenticated: bool) -> int:
    """Run PySpark's worker on ``sock``; a connection the executor has closed ends it
    with exit code 1 (the daemon's child then leaves, as after any failed worker)
    instead of a traceback. (Tested in a child process, ``tests/spark/test_daemon.py``:
    the worker resets signal handlers.)"""
    try:
        return _pyspark_worker(sock, authenticated)
    except BrokenPipeError:
        return 1


if __name__ == "__main__":
    # The manager's forked children call the module-level `worker` of pyspark.daemon.
    _pyspark_daemon.worker = worker
    _pyspark_daemon.manager()
