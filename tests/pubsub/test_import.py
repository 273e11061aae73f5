"""The subscriber is a light process: it must import and work without pyspark (or Java)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = textwrap.dedent(
    """
    import sys

    class BlockSpark:
        '''Meta-path hook: any import of pyspark or py4j fails loudly.'''

        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("pyspark", "py4j"):
                raise ImportError(f"blocked import of {name} (the subscriber must not need it)")
            return None

    sys.meta_path.insert(0, BlockSpark())

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
    # Only the time core and pub-sub are needed.
    modules = ast.literal_eval(result.stdout[3:].strip())
    assert all(
        m == "sealtime" or m.startswith(("sealtime.pubsub", "sealtime.time")) for m in modules
    )
