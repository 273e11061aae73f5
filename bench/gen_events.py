"""Write the `Generator`'s events as Parquet files, for benchmarks.

    python bench/gen_events.py OUT_DIR --events 1000000 --files 4 [--seed 0]
        [--rate 10000] [--out-of-order 2s] [--late-fraction 0.01] [--late-by 30s]

Event ``n`` of the generator goes to file ``n * files // n_events`` in order, so the
files, read in name order, are the generator's log; every file holds the same number of
events (± 1). Writing uses pyarrow only (no Spark).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

try:
    from sealtime.sources.generator import Generator
except ImportError:  # run as a script from a checkout without the package installed
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from sealtime.sources.generator import Generator

__all__ = ["write_events"]

FILE_PATTERN = "events-*.parquet"


def write_events(
    out_dir: str | Path,
    n_events: int,
    files: int,
    seed: int = 0,
    *,
    chunk_rows: int = 1_000_000,
    compression: str = "snappy",
    **generator_kwargs: Any,
) -> list[Path]:
    """Write events ``0 .. n_events - 1`` of ``Generator(seed=seed, **generator_kwargs)``.

    Returns the paths of the `files` Parquet files (``events-00000.parquet`` ...), in
    event order. Existing ``events-*.parquet`` files in `out_dir` are removed first, so the
    directory holds exactly this data set (a Spark file source reads the whole directory).
    Events are generated and written `chunk_rows` at a time (one row group per chunk).
    """
    if n_events < 0:
        raise ValueError(f"n_events={n_events}: must be >= 0")
    if files < 1:
        raise ValueError(f"files={files}: must be >= 1")
    if n_events and files > n_events:
        raise ValueError(f"files={files}: more files than events ({n_events}); pass fewer files")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob(FILE_PATTERN):
        old.unlink()
    gen = Generator(seed=seed, limit=n_events, **generator_kwargs)
    paths = []
    for i in range(files):
        first, end = i * n_events // files, (i + 1) * n_events // files
        path = out / f"events-{i:05d}.parquet"
        with pq.ParquetWriter(path, gen.schema, compression=compression) as writer:
            for lo in range(first, max(end, first + 1), chunk_rows):
                writer.write_table(gen.generate(lo, min(chunk_rows, end - lo)))
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("out_dir")
    p.add_argument("--events", type=int, default=1_000_000)
    p.add_argument("--files", type=int, default=4)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rate", type=int, default=10_000, help="events per second of event time")
    p.add_argument("--out-of-order", default="0s", help="jitter, e.g. 2s")
    p.add_argument("--late-fraction", type=float, default=0.0)
    p.add_argument("--late-by", default="30s")
    p.add_argument("--extra-bytes", type=int, default=0)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    paths = write_events(
        args.out_dir,
        args.events,
        args.files,
        args.seed,
        rate=args.rate,
        out_of_order=args.out_of_order,
        late_fraction=args.late_fraction,
        late_by=args.late_by,
        extra_bytes=args.extra_bytes,
    )
    seconds = time.perf_counter() - t0
    size = sum(path.stat().st_size for path in paths)
    print(
        f"wrote {args.events} events in {len(paths)} files ({size / 1e6:.1f} MB) "
        f"to {args.out_dir} in {seconds:.2f} s ({args.events / max(seconds, 1e-9):,.0f} events/s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
