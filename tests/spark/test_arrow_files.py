"""`sealtime.spark.arrow_files`: collecting through files the tasks write gives exactly
``toArrow``'s table (schema, rows, row order), leaves no file behind, falls back to
PySpark's path where it cannot run; `sealtime.spark.jvm` builds its helper or says no."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import pytest
from pyspark.errors import PySparkException

from sealtime.spark import arrow_files, jvm
from sealtime.spark.arrow_files import ArrowFileCollector, collector
from sealtime.spark.frames import to_arrow

IN_CI = os.environ.get("CI") == "true"

ROWS = (
    "SELECT id, CAST(id AS STRING) AS s, IF(id % 7 = 0, NULL, id * 1.5D) AS d,"
    " timestamp_millis(1700000000000 + id) AS t, named_struct('a', id, 'b', array(id, id)) AS st,"
    " map('k', CAST(id AS DECIMAL(12, 3))) AS m, repeat('x', CAST(id % 50 AS INT)) AS pad"
    " FROM range({n})"
)


@pytest.fixture(scope="module")
def files(spark) -> ArrowFileCollector:
    found = collector(spark)
    if found is None:
        message = "no JVM helper: javac missing or the helper does not compile (see the log)"
        if IN_CI:
            pytest.fail(message)  # CI machines have a JDK: the fast path must be tested
        pytest.skip(message)
    return found


@pytest.mark.parametrize("n, parts", [(0, 3), (1, 1), (50_000, 5)])
def test_equals_to_arrow(spark, files, n, parts):
    df = spark.sql(ROWS.format(n=n)).repartition(parts, "id").sortWithinPartitions("id")
    got = files.collect(df)
    want = df.toArrow()
    assert got is not None
    assert got.num_rows == n
    # (toArrow casts to the schema PySpark derives; Spark's own batches may say UTC
    # differently: to_arrow evens that out, so compare what the engine uses)
    assert to_arrow(df).equals(want)
    assert got.cast(want.schema).equals(want)  # same rows in the same order


def test_nothing_is_left_behind(spark, files):
    files.collect(spark.range(1000).repartition(4))
    assert list(files.directory.iterdir()) == []


def test_zero_partitions_fall_back(spark, files):
    df = spark.createDataFrame(spark.sparkContext.emptyRDD(), "x long")
    assert files.collect(df) is None
    t = to_arrow(df)
    assert t.num_rows == 0 and t.schema.names == ["x"]


def test_a_failing_query_raises_what_pyspark_raises(spark, files):
    df = spark.sql("SELECT raise_error('boom') AS x FROM range(3)")
    before = files.fallbacks
    with pytest.raises(PySparkException, match="boom"):
        to_arrow(df)
    assert files.fallbacks == before + 1
    assert list(files.directory.iterdir()) == []


def test_turned_off_or_not_local(spark, monkeypatch):
    monkeypatch.setenv(arrow_files.DISABLE_ENV, "0")
    assert collector(spark) is None
    monkeypatch.delenv(arrow_files.DISABLE_ENV)
    cluster = SimpleNamespace(sparkContext=SimpleNamespace(master="spark://h:7077"))
    assert collector(cluster) is None


def test_directories_of_dead_processes_go(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    gone = tmp_path / f"{dead.stdout.strip()}-abc"
    alive = tmp_path / f"{os.getpid()}-def"
    other = tmp_path / "notes"
    for d in (gone, alive, other):
        d.mkdir()
    arrow_files._remove_dead(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([alive.name, other.name])


def test_read_into_memory_off_shm(spark, files):
    """Off a memory file system the files are read into memory, not mapped."""
    plain = ArrowFileCollector(files._method, files.directory, mapped=False)
    df = spark.range(10).repartition(2)
    assert sorted(plain.collect(df)["id"].to_pylist()) == list(range(10))


def test_helper_not_built_without_javac_or_when_it_does_not_compile(tmp_path, monkeypatch):
    monkeypatch.setattr(jvm, "_javac", lambda: None)
    assert jvm._build() is None
    monkeypatch.undo()
    if jvm._javac() is None:
        pytest.skip("no javac here")
    broken = tmp_path / "java" / "sealtime" / "spark"
    broken.mkdir(parents=True)
    (broken / "Broken.java").write_text("package sealtime.spark; class Broken { nope }")
    monkeypatch.setattr(jvm, "_JAVA_ROOT", tmp_path / "java")
    monkeypatch.setenv(jvm.CACHE_ENV, str(tmp_path / "cache"))
    assert jvm._build() is None
    assert not list((tmp_path / "cache" / "jvm").glob("*.jar"))


def test_helper_is_cached(tmp_path, monkeypatch):
    if jvm._javac() is None:
        pytest.skip("no javac here")
    monkeypatch.setenv(jvm.CACHE_ENV, str(tmp_path))
    first = jvm._build()
    assert first is not None and first.exists()
    stamp = first.stat().st_mtime_ns
    assert jvm._build() == first and first.stat().st_mtime_ns == stamp
