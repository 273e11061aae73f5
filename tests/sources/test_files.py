"""Tests of the `Files` source: order, completeness, resumption, bad records, schemas."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from sealtime.sources.decode import SchemaMismatchError
from sealtime.sources.files import Files

SCHEMA = {"k": "string", "v": "long"}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def jsonl(rows: list[tuple[str, int]]) -> str:
    return "".join(json.dumps({"k": k, "v": v}) + "\n" for k, v in rows)


def put(directory: Path, name: str, text: str) -> None:
    """Write a complete file the safe way: a hidden temporary name, then a rename."""
    tmp = directory / f".{name}.tmp"
    tmp.write_text(text)
    os.replace(tmp, directory / name)


def write_format(directory: Path, name: str, fmt: str, rows: list[tuple[str, int]]) -> None:
    if fmt == "jsonl":
        put(directory, name, jsonl(rows))
    elif fmt == "csv":
        put(directory, name, "k,v\n" + "".join(f"{k},{v}\n" for k, v in rows))
    else:
        table = pa.table({"k": [k for k, _ in rows], "v": [v for _, v in rows]})
        pq.write_table(table, directory / name, row_group_size=7)


def drain(reader, max_rows=None, limit=100):
    batches = []
    for _ in range(limit):
        b = reader.read(max_rows)
        batches.append(b)
        if b.exhausted or (b.data.num_rows == 0 and b.errors is None):
            break
    return batches


def values(batches) -> list[int]:
    return [v for b in batches for v in b.data.column("v").to_pylist()]


def test_reads_every_file_once_in_name_order(tmp_path: Path):
    put(tmp_path, "b.jsonl", jsonl([("b", 3), ("b", 4)]))
    put(tmp_path, "a.jsonl", jsonl([("a", 1), ("a", 2)]))
    put(tmp_path, "c.txt", jsonl([("c", 99)]))  # does not match the pattern
    put(tmp_path, "_meta.jsonl", jsonl([("m", 99)]))  # underscore: ignored
    (tmp_path / ".hidden.jsonl").write_text(jsonl([("h", 99)]))
    src = Files(tmp_path, "jsonl", SCHEMA, pattern="*.jsonl", finite=True, settle=0)
    batches = drain(src.open(), max_rows=3)
    assert values(batches) == [1, 2, 3, 4]
    assert batches[-1].exhausted
    assert batches[-1].position == {
        "file": "b.jsonl",
        "offset": os.path.getsize(tmp_path / "b.jsonl"),
    }
    for b in batches:  # positions are JSON
        assert json.loads(json.dumps(b.position)) == b.position
        assert b.data.schema == src.schema


def test_files_appearing_over_time(tmp_path: Path):
    src = Files(tmp_path, "jsonl", SCHEMA, settle=0)
    assert not src.finite
    r = src.open()
    assert r.read().data.num_rows == 0
    put(tmp_path, "001.jsonl", jsonl([("x", 1)]))
    assert values([r.read()]) == [1]
    assert r.read().data.num_rows == 0
    put(tmp_path, "002.jsonl", jsonl([("x", 2), ("x", 3)]))
    put(tmp_path, "003.jsonl", jsonl([("x", 4)]))
    b = r.read()
    assert values([b]) == [2, 3, 4] and not b.exhausted
    assert r.health() == "running"


def test_partial_files_are_not_read_early(tmp_path: Path):
    clock = Clock()
    src = Files(tmp_path, "jsonl", SCHEMA, settle=1.0, clock=clock)
    r = src.open()
    path = tmp_path / "001.jsonl"
    with open(path, "w") as f:
        f.write(jsonl([("x", 1)]) + '{"k": "x", "v"')  # a writer in the middle of a line
        f.flush()
        assert r.read().data.num_rows == 0  # first sighting
        clock.now += 0.5
        assert r.read().data.num_rows == 0  # not settled yet
        f.write(": 2}\n")
    clock.now += 0.6
    assert r.read().data.num_rows == 0  # it changed: the settle clock restarts
    put(tmp_path, "002.jsonl", jsonl([("y", 3)]))  # complete, but after an incomplete file
    clock.now += 0.5
    assert r.read().data.num_rows == 0  # 001 still settling: 002 must wait (name order)
    clock.now += 0.6
    b = r.read()  # 001 settled; 002 was first seen 0.6 s ago: it waits
    assert values([b]) == [1, 2] and b.errors is None
    clock.now += 0.5
    assert values([r.read()]) == [3]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_resume_mid_file_without_loss_or_duplicate(tmp_path: Path, fmt: str):
    rows = [(f"k{i}", i) for i in range(100)]
    for f in range(4):
        write_format(tmp_path, f"part-{f}.{fmt}", fmt, rows[f * 25 : (f + 1) * 25])
    src = Files(tmp_path, fmt, SCHEMA, finite=True, settle=0)
    rng = np.random.default_rng(3)
    got: list[int] = []
    positions = []
    r = src.open()
    for _ in range(200):
        b = r.read(int(rng.integers(1, 12)))
        got.extend(b.data.column("v").to_pylist())
        positions.append(b.position)
        if b.exhausted:
            break
        if rng.random() < 0.4:  # restart from the JSON position
            r.close()
            r = src.open(json.loads(json.dumps(b.position)))
    assert got == list(range(100))
    assert any(p["offset"] > 0 for p in positions[:-1])
    # a restart from the final position reads nothing more
    assert src.open(positions[-1]).read().data.num_rows == 0


def test_restart_does_not_reread_earlier_files(tmp_path: Path):
    put(tmp_path, "a.jsonl", jsonl([("a", 1)]))
    put(tmp_path, "b.jsonl", jsonl([("b", 2), ("b", 3)]))
    src = Files(tmp_path, "jsonl", SCHEMA, settle=0)
    r = src.open()
    b = r.read(2)
    assert values([b]) == [1, 2] and b.position["file"] == "b.jsonl"
    r2 = src.open(b.position)
    put(tmp_path, "c.jsonl", jsonl([("c", 4)]))
    assert values([r2.read()]) == [3, 4]


def test_malformed_records_go_to_errors(tmp_path: Path):
    text = (
        jsonl([("a", 1)])
        + "{not json}\n"
        + '{"k": "b", "v": "two"}\n'
        + "\n"
        + jsonl([("c", 3)])
        + '["array"]\n'
        + jsonl([("d", 4)])
    )
    put(tmp_path, "a.jsonl", text)
    put(tmp_path, "b.csv", "k,v\nx,5\ny\nz,notanumber\nw,6\n")
    r = Files(tmp_path, "jsonl", SCHEMA, pattern="*.jsonl", finite=True, settle=0).open()
    b = r.read()
    assert b.data.column("v").to_pylist() == [1, 3, 4]
    assert b.errors.column("raw").to_pylist() == [
        "{not json}",
        '{"k": "b", "v": "two"}',
        '["array"]',
    ]
    # Each reason names the file and its line's own byte offset (whatever the chunk).
    at = [text.encode().index(raw.encode()) for raw in b.errors.column("raw").to_pylist()]
    for reason, offset in zip(b.errors.column("reason").to_pylist(), at, strict=True):
        assert reason.startswith(f"a.jsonl[byte {offset}]: "), reason
    assert b.errors.schema.names == ["raw", "reason"]
    r = Files(tmp_path, "csv", SCHEMA, pattern="*.csv", finite=True, settle=0).open()
    b = r.read()
    assert b.data.to_pylist() == [{"k": "x", "v": 5}, {"k": "w", "v": 6}]
    errs = b.errors.to_pylist()
    assert [e["raw"] for e in errs] == ["y", "z,notanumber"]
    assert "expected 2 fields, found 1" in errs[0]["reason"]
    assert "column 'v'" in errs[1]["reason"] and "notanumber" in errs[1]["reason"]


def test_parquet_schema_mismatch_names_source_column_and_fix(tmp_path: Path):
    pq.write_table(pa.table({"k": ["a"], "v": ["not an int"]}), tmp_path / "a.parquet")
    src = Files(tmp_path, "parquet", SCHEMA, finite=True, settle=0)
    with pytest.raises(SchemaMismatchError) as info:
        src.open().read()
    msg = str(info.value)
    assert repr(src) in msg and "'v'" in msg and "a.parquet" in msg
    assert "int64" in msg and "string" in msg and "change the declared type" in msg
    assert isinstance(info.value, ValueError)


def test_parquet_lossless_widening_is_accepted(tmp_path: Path):
    t = pa.table({"k": ["a"], "v": pa.array([7], pa.int32()), "extra": [1.5]})
    pq.write_table(t, tmp_path / "a.parquet")
    b = Files(tmp_path, "parquet", SCHEMA, finite=True, settle=0).open().read()
    assert b.data.schema.field("v").type == pa.int64() and b.data.column("v").to_pylist() == [7]


def test_csv_header_without_a_declared_column(tmp_path: Path):
    put(tmp_path, "a.csv", "k,value\nx,1\n")
    src = Files(tmp_path, "csv", SCHEMA, finite=True, settle=0)
    r = src.open()
    with pytest.raises(SchemaMismatchError, match=r"column 'v' is missing.*add a 'v' column"):
        r.read()
    assert r.health().startswith("failed: ")


def test_out_of_order_file_is_reported_once(tmp_path: Path):
    put(tmp_path, "b.jsonl", jsonl([("b", 1)]))
    r = Files(tmp_path, "jsonl", SCHEMA, settle=0).open()
    assert values([r.read()]) == [1]
    put(tmp_path, "a.jsonl", jsonl([("a", 0)]))  # sorts before the file already read
    b = r.read()
    assert b.data.num_rows == 0
    assert b.errors.column("raw").to_pylist() == [str(tmp_path / "a.jsonl")]
    assert "sort in arrival order" in b.errors.column("reason")[0].as_py()
    assert r.read().errors is None


def test_missing_directory_stalls_until_created(tmp_path: Path):
    d = tmp_path / "later"
    r = Files(d, "jsonl", SCHEMA, settle=0).open()
    assert r.read().data.num_rows == 0 and r.health() == "stalled"
    d.mkdir()
    put(d, "a.jsonl", jsonl([("a", 1)]))
    assert values([r.read()]) == [1] and r.health() == "running"


def test_acknowledge_is_monotone(tmp_path: Path):
    r = Files(tmp_path, "jsonl", SCHEMA, settle=0).open()
    r.acknowledge({"file": "b", "offset": 3})
    r.acknowledge({"file": "a", "offset": 100})
    r.acknowledge({"file": "b", "offset": 3})
    assert r.acknowledged == {"file": "b", "offset": 3}


def test_bad_positions_and_arguments(tmp_path: Path):
    src = Files(tmp_path, "jsonl", SCHEMA)
    with pytest.raises(ValueError, match="not a Files position"):
        src.open(5)
    with pytest.raises(ValueError, match="pass schema"):
        Files(tmp_path, "jsonl")
    put(tmp_path, "a.jsonl", jsonl([("a", 1)]))
    with pytest.raises(ValueError, match="beyond the end"):
        src.open({"file": "a.jsonl", "offset": 10_000})


def test_long_lines_and_byte_budget(tmp_path: Path):
    rows = [("x" * 5000, i) for i in range(20)]
    put(tmp_path, "a.jsonl", jsonl(rows))
    src = Files(tmp_path, "jsonl", SCHEMA, finite=True, settle=0, max_bytes_per_read=3000)
    r = src.open()
    got = []
    for _ in range(100):
        b = r.read()
        got.extend(b.data.column("v").to_pylist())
        if b.exhausted:
            break
    assert got == list(range(20))


def test_read_linked_batches_are_all_linked_or_all_copied(tmp_path: Path):
    # a.parquet has the declared types (linkable); b.parquet widens v (int32 -> long),
    # so its rows must be copied; c.parquet is linkable again.
    pq.write_table(pa.table({"k": ["a", "b"], "v": [1, 2]}), tmp_path / "a.parquet")
    widened = pa.table({"k": ["c"], "v": pa.array([3], pa.int32())})
    pq.write_table(widened, tmp_path / "b.parquet")
    pq.write_table(pa.table({"k": ["d"], "v": [4]}), tmp_path / "c.parquet")
    reader = Files(tmp_path, "parquet", SCHEMA, finite=True, settle=0).open()
    batches = [reader.read_linked(None, ["v"]) for _ in range(3)]
    assert [type(b).__name__ for b in batches] == ["LinkedBatch", "ReadBatch", "LinkedBatch"]
    first, copied, last = batches
    assert [(os.path.basename(p), a, e, n) for p, a, e, n in first.links] == [
        ("a.parquet", 0, 2, 2)
    ]
    assert first.data.column_names == ["v"] and first.data.column("v").to_pylist() == [1, 2]
    assert (
        copied.data.column("k").to_pylist() == ["c"] and copied.data.column("v").type == pa.int64()
    )
    assert [os.path.basename(p) for p, *_ in last.links] == ["c.parquet"] and last.exhausted
