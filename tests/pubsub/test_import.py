"""The subscriber is a light process: it must import and work without pyspark (or Java)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# Prepended to every script: any import of pyspark or py4j fails loudly.
BLOCK_SPARK = textwrap.dedent(
    """
    import sys

    class BlockSpark:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pyspark", "py4j"):
                raise ImportError(f"blocked import of {name} (the subscriber must not need it)")
            return None

    sys.meta_path.insert(0, BlockSpark())
    """
)

SCRIPT = BLOCK_SPARK + textwrap.dedent(
    """

    import sealtime
    import sealtime.pubsub
    from sealtime.pubsub import Epoch, Publisher, subscribe_group, subscribe_stream
    from sealtime.pubsub.subscriber import Subscription
    import pyarrow as pa

    pub = Publisher("light").start()
    sub = subscribe_stream(pub.address, timeout=10)
    pub.send(1, pa.Table.from_arrays([pa.array([1, 2])], names=["x"]))
    pub.advance_lower([2])
    events = [sub.next_event(timeout=10) for _ in range(3)]
    assert isinstance(events[1], Epoch) and events[1].table.num_rows == 2, events
    sub.close()
    pub.close()
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))
    assert not leaked, leaked
    sealtime_modules = sorted(m for m in sys.modules if m.startswith("sealtime"))
    print("OK", sealtime_modules)
    """
)


def _light(module: str) -> bool:
    """Only the pure-Python cores (time; progress, as a publisher's lower frontier only
    moves forward like a capability), pub-sub, the errors, the system column names and
    the grammars of addresses and metadata locations."""
    return module in (
        "sealtime",
        "sealtime.columns",
        "sealtime.errors",
        "sealtime.net",
        "sealtime.locations",
    ) or module.startswith(("sealtime.pubsub", "sealtime.time", "sealtime.progress"))


#: what ``sealtime catalog`` loads besides: the command line, the wrapper every command
#: runs through, and the argument set-up of ``serve`` (its parser is built for every
#: command; `sealtime.serve` imports its client lazily)
CLI_MODULES = ("sealtime.cli", "sealtime.summaries", "sealtime.serve", "sealtime.serve.main")


def test_subscriber_imports_and_runs_without_pyspark():
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.startswith("OK")
    modules = ast.literal_eval(result.stdout[3:].strip())
    assert all(_light(m) for m in modules), modules


CATALOG_SCRIPT = BLOCK_SPARK + textwrap.dedent(
    """

    import sealtime as st
    from sealtime import cli
    from sealtime.pubsub import Epoch
    from sealtime.pubsub.catalog import open_catalog

    data_dir = sys.argv[1]
    assert [e.name for e in open_catalog(data_dir).entries()] == ["light"]
    assert cli.main(["catalog", "--catalog", data_dir]) == 0
    sub = st.subscribe("light", catalog=data_dir, timeout=10)
    print("SUBSCRIBED", flush=True)
    events = [sub.next_event(timeout=20) for _ in range(3)]
    assert isinstance(events[1], Epoch) and events[1].table.num_rows == 2, events
    sub.close()
    leaked = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))
    assert not leaked, leaked
    print("OK", sorted(m for m in sys.modules if m.startswith("sealtime")))
    """
)


def test_subscribe_through_a_data_dir_catalog_without_pyspark(tmp_path):
    import pyarrow as pa

    from sealtime.pubsub import Publisher
    from sealtime.pubsub.catalog import Catalog
    from sealtime.storage import MetadataStore

    store = MetadataStore.open(tmp_path)
    with Publisher("light").start() as pub:
        host, port = pub.address
        Catalog(store).publish("light", [f"{host}:{port}"], schema=None, dataflow="f")
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen(
            [sys.executable, "-c", CATALOG_SCRIPT, str(tmp_path)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            for line in proc.stdout:
                if line.startswith("SUBSCRIBED"):
                    break
            pub.send(1, pa.Table.from_arrays([pa.array([1, 2])], names=["x"]))
            pub.advance_lower([2])
            out, err = proc.communicate(timeout=60)
        finally:
            proc.kill()
    store.close()
    assert proc.returncode == 0, err[-3000:]
    last = out.strip().splitlines()[-1]
    assert last.startswith("OK")
    modules = ast.literal_eval(last[3:].strip())
    assert all(_light(m) or m in CLI_MODULES for m in modules), modules
