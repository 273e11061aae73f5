"""Tests on a standalone Spark cluster (master + two workers on loopback) started from
the pyspark package: equality with local mode, and survival of a killed executor."""
