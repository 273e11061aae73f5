from __future__ import annotations

import shutil
import tempfile

import pytest

import sealtime as st


@pytest.fixture(scope="session")
def make_flow(spark):
    """A factory of fresh dataflows on the shared SparkSession (one data dir each)."""
    dirs = []

    def make(**kwargs):
        d = tempfile.mkdtemp(prefix="sealtime-test-")
        dirs.append(d)
        kwargs.setdefault("spark", spark)
        return st.Dataflow("t", data_dir=d, **kwargs)

    yield make
    for d in dirs:
        shutil.rmtree(d, ignore_errors=True)
