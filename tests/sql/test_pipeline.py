"""Whole pipelines in SQL (`sealtime run file.sql`), the `sealtime sql` shell, and SMILE's
Figure 1 (`examples/smile_figure1.sql`) checked through a view subscriber.

The Figure 1 oracle is Spark itself: at every progress point of the subscription, the
subscriber's state equals ``spark.sql`` of the file's own view texts over the example's
input files filtered to event times ≤ the sealed time.
"""

from __future__ import annotations

import io
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest

import sealtime as st
from sealtime import cli
from sealtime.pubsub import Closed, Epoch, Progress, Snapshot
from sealtime.sql import SqlError
from sealtime.sql.pipeline import build_pipeline
from sealtime.sql.shell import Shell
from sealtime.sql.statements import CreateView, parse_text

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "smile_figure1.sql"
DATA = ROOT / "examples" / "data" / "smile_figure1"
SCHEMAS = {
    "sellers": "item_id long, price double, qty long, ts long",
    "buyers_west": "item_id long, qty long, ts long",
    "buyers_east": "item_id long, qty long, ts long",
}


def copy_example(tmp: Path) -> Path:
    """The example file and its data in `tmp` (so a test may add input files)."""
    shutil.copytree(DATA, tmp / "data" / "smile_figure1")
    shutil.copy(EXAMPLE, tmp / "smile_figure1.sql")
    return tmp / "smile_figure1.sql"


def view_texts(text: str) -> dict[str, str]:
    """The query text of every CREATE VIEW of the file, as written."""
    out = {}
    for item in parse_text(text):
        if isinstance(item, CreateView):
            body = item.statement.source_text
            out[item.name] = re.split(r"(?is)^\s*CREATE\s+VIEW\s+\w+\s+AS\s+", body)[1]
    return out


def oracle(spark, data: Path, texts: dict[str, str], t: int | None) -> Counter:
    """Spark, the same view texts, the input files filtered to event time ≤ t."""
    for name, schema in SCHEMAS.items():
        df = spark.read.csv(str(data / name), header=True, schema=schema)
        if t is not None:
            df = df.filter(f"ts <= {t}")
        df.createOrReplaceTempView(name)
    for name, text in texts.items():
        spark.sql(text).createOrReplaceTempView(name)
    got = Counter(tuple(r) for r in spark.sql("SELECT * FROM available").collect())
    for name in [*SCHEMAS, *texts]:
        spark.catalog.dropTempView(name)
    return got


def accumulate(state: Counter, table, columns: list[str]) -> None:
    for row in table.to_pylist():
        key = tuple(row[c] for c in columns)
        state[key] += row["_diff"]
        if state[key] == 0:
            del state[key]


def test_figure1_view_subscriber_equals_oracle_at_every_progress_point(spark, tmp_path):
    path = copy_example(tmp_path)
    text = path.read_text()
    texts = view_texts(text)
    pipeline = build_pipeline(
        text, str(tmp_path / "d"), name="fig1", base_dir=str(tmp_path), spark=spark, record=False
    )
    flow = pipeline.flow
    columns = pipeline.view("available").columns
    assert columns == ["item_id", "price", "avail"]
    sub = st.subscribe("available", catalog=flow.data_dir, mode="view", timeout=30)
    events: list = []
    try:
        flow.run()
        while not (events and isinstance(events[-1], Progress) and events[-1].lower.is_empty()):
            event = sub.next_event(timeout=60)
            assert event is not None and not isinstance(event, Closed), (event, events)
            events.append(event)
    finally:
        sub.close()
        pipeline.close()
    state: Counter = Counter()
    checked = []
    for event in events:
        if isinstance(event, Snapshot | Epoch):
            accumulate(state, event.table, columns)
        elif isinstance(event, Progress):
            lower = event.lower.elements()
            t = None if not lower else lower[0] - 1
            assert state == oracle(spark, tmp_path / "data" / "smile_figure1", texts, t), t
            checked.append((t, sorted(state)))
    assert len(checked) >= 4, checked
    # item 2 is on sale at 3000; the sale at 4000 brings it to 0: its row is retracted
    before = [rows for t, rows in checked if t is not None and t < 4000]
    after = [rows for t, rows in checked if t is None or t >= 4000]
    assert (2, 20.0, 2) in before[-1] and all(r[0] != 2 for r in after[0]), checked
    retractions = [
        r for e in events if isinstance(e, Epoch) for r in e.table.to_pylist() if r["_diff"] < 0
    ]
    assert {"item_id": 2, "price": 20.0, "avail": 2, "_diff": -1} in retractions
    assert sorted(state) == [(1, 10.0, 2), (5, 4.0, 1)]


def test_run_file_resumes_and_refuses_a_changed_file(spark, tmp_path, capsys):
    path = copy_example(tmp_path)
    data = str(tmp_path / "d")
    out_dir = Path(data) / "out" / "available"

    def final() -> Counter:
        acc: Counter = Counter()
        accumulate(acc, pq.read_table(out_dir), ["item_id", "price", "avail"])
        return acc

    # Stopped after 2 ticks, then run again on the same data dir: it continues.
    assert cli.main(["run", str(path), "--data-dir", data, "--ticks", "2"]) == 0
    assert sorted(final()) != [(1, 10.0, 2), (5, 4.0, 1)]
    assert cli.main(["run", str(path), "--data-dir", data]) == 0
    printed = capsys.readouterr().out
    assert "resuming 'smile_figure1'" in printed
    assert sorted(final()) == [(1, 10.0, 2), (5, 4.0, 1)]
    # the updates of one uninterrupted run, none twice (each (row, time) once)
    table = pq.read_table(out_dir).to_pylist()
    keys = [(r["item_id"], r["price"], r["avail"], r["_time"]) for r in table]
    assert len(keys) == len(set(keys)) == 14
    # A changed view is refused, naming the fix.
    path.write_text(
        path.read_text().replace("COALESCE(b.total, 0) > 0", "COALESCE(b.total, 0) > 1")
    )
    assert cli.main(["run", str(path), "--data-dir", data]) == 2
    err = capsys.readouterr().err
    assert "smile_figure1.sql" in err and "new --data-dir" in err, err


def test_shell_fed_by_stdin(spark, tmp_path):
    copy_example(tmp_path)
    base = str(tmp_path / "data" / "smile_figure1")
    defs = EXAMPLE.read_text().replace("'data/smile_figure1", f"'{base}")
    defs = defs[: defs.index("-- Every update of the view")]  # sources and views only
    script = (
        defs
        + "EXPLAIN SELECT item_id, SUM(qty) AS total FROM buys GROUP BY item_id;\n"
        + "SHOW TABLES;\n"
        + "SUBSCRIBE available WITH (PROGRESS);\n"
        + "SELECT item_id, avail\n  FROM available WHERE avail > 1 AS OF 4000;\n"
        + "SELECT * FROM nowhere;\n"
    )
    out, err = io.StringIO(), io.StringIO()
    shell = Shell(
        str(tmp_path / "d"), spark=spark, stdin=io.StringIO(script), stdout=out, stderr=err
    )
    assert shell.run() == 1  # a statement failed (SHOW, the unknown table); stdin is no tty
    lines = out.getvalue().splitlines()
    assert "sealtime=>" not in out.getvalue()  # no prompts when piped
    assert lines[:5] == ["CREATE SOURCE"] * 3 + ["CREATE VIEW"] * 2
    assert any("aggregate" in line for line in lines), lines  # the EXPLAIN
    head = lines.index("mz_timestamp\tmz_progressed\tmz_diff\titem_id\tprice\tavail")
    updates = [line.split("\t") for line in lines[head + 1 :] if line[:1].isdigit()]
    assert ["4000", "f", "-1", "2", "20.0", "2"] in updates  # the sale that empties item 2
    progress = [int(u[0]) for u in updates if u[1] == "t"]
    assert progress == sorted(progress) and len(progress) >= 3
    assert all(u[2:] == ["\\N"] * 4 for u in updates if u[1] == "t")
    state: Counter = Counter()
    for u in updates:
        if u[1] == "f":
            state[tuple(u[3:])] += int(u[2])
    assert sorted(k for k, n in state.items() if n) == [("1", "10.0", "2"), ("5", "4.0", "1")]
    select = lines.index("item_id\tavail")
    assert lines[select + 1 : select + 3] == ["1\t2", "(1 row)"]
    errors = err.getvalue()
    assert "ERROR: SHOW TABLES at line" in errors and "SHOW SOURCES" in errors
    assert "no source or view named 'nowhere'" in errors


def test_run_file_reports_bad_input_without_a_trace(spark, tmp_path, capsys):
    """Issue 33: ``sealtime run`` ended in a Python traceback on a missing FINITE
    directory and on a CSV header that does not match the schema."""
    f = tmp_path / "p.sql"

    def run(directory) -> str:
        f.write_text(
            f"CREATE SOURCE s FROM FILES '{directory}' (FORMAT csv, SCHEMA 'k string, v long', "
            "FINITE);\nCREATE VIEW v AS SELECT k, v FROM s;\n"
        )
        code = cli.main(["run", str(f), "--data-dir", str(tmp_path / f"d{directory.name}")])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err, err
        return err

    assert "does not exist" in run(tmp_path / "nowhere")
    d = tmp_path / "in"
    d.mkdir()
    (d / "000.csv").write_text("item,amount\nx,1\n")
    err = run(d)
    assert "SchemaMismatchError" in err and "000.csv" in err, err


def test_errors_and_late_records_are_tables_in_a_file_and_in_the_shell(spark, tmp_path, capsys):
    """Issue 33: ``SELECT * FROM orders.errors`` said "no source or view named 'errors'"
    and ``CREATE SINK ... FROM orders.late`` was a syntax error."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "0.jsonl").write_text(
        '{"id": 1, "ts": 5000}\nnot json\n{"id": 2, "ts": 1000}\n{"id": 3, "ts": 6000}\n'
    )
    source = (
        f"CREATE SOURCE orders FROM FILES '{d}' (FORMAT jsonl, SCHEMA 'id long, ts long', "
        "EVENT TIME ts, LATENESS '1s', FINITE);\n"
    )
    f = tmp_path / "p.sql"
    f.write_text(
        source + "CREATE VIEW rejected AS SELECT raw, reason FROM orders.errors;\n"
        "CREATE SINK bad FROM rejected INTO PARQUET 'bad';\n"
        "CREATE SINK late FROM orders.late INTO PARQUET 'late';\n"
    )
    assert cli.main(["run", str(f), "--data-dir", str(tmp_path / "d")]) == 0, capsys.readouterr()
    # (PARQUET paths are relative to the data dir)
    assert [r["raw"] for r in pq.read_table(tmp_path / "d" / "bad").to_pylist()] == ["not json"]
    assert [r["id"] for r in pq.read_table(tmp_path / "d" / "late").to_pylist()] == [2]
    lines, err = _shell(
        str(tmp_path / "s"),
        spark,
        source + "SELECT raw FROM orders.errors;\nSELECT id FROM orders.late;\n",
    )
    assert not err.strip(), err
    assert lines[lines.index("raw") + 1] == "not json"
    assert lines[lines.index("id") + 1] == "2"


def _shell(data_dir, spark, script: str) -> tuple[list[str], str]:
    out, err = io.StringIO(), io.StringIO()
    Shell(data_dir, spark=spark, stdin=io.StringIO(script), stdout=out, stderr=err).run()
    return out.getvalue().splitlines(), err.getvalue()


def test_shell_stops_at_a_failed_tick_and_marks_nothing_consumed(spark, tmp_path):
    """Issue 33: a CSV header that does not match the schema failed the first SELECT, and
    the second printed ``(0 rows)`` while the file was recorded as consumed. Now the
    dataflow stops for the session (later statements say why), and once the file is
    fixed a new shell on the same data dir reads all of it; its first SELECT (no AS OF)
    waits for the first sealed time instead of printing ``(0 rows)``."""
    d = tmp_path / "in"
    d.mkdir()
    (d / "000.csv").write_text("item,amount\nx,1\ny,2\n")
    defs = (
        f"CREATE SOURCE s FROM FILES '{d}' (FORMAT csv, SCHEMA 'k string, v long', FINITE);\n"
        "CREATE VIEW t AS SELECT k, SUM(v) AS total FROM s GROUP BY k;\n"
    )
    data = str(tmp_path / "data")
    _, err = _shell(data, spark, defs + "SELECT * FROM t AS OF 0;\nSELECT * FROM t;\n")
    first, second = [e for e in err.splitlines() if e.startswith("ERROR")]
    assert "SchemaMismatchError" in first, err
    assert "the dataflow stopped" in second and "restart the shell" in second, err
    (d / "000.csv").write_text("k,v\nx,1\ny,2\n")
    lines, err = _shell(data, spark, defs + "SELECT k, total FROM t;\n")
    assert not err.strip(), err
    select = lines.index("k\ttotal")
    assert sorted(lines[select + 1 : select + 3]) == ["x\t1", "y\t2"], lines
    assert lines[select + 3] == "(2 rows)"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "CREATE SOURCE s FROM KAFKA 'b:9092' (FORMAT json)",
            "CREATE SOURCE s at line 1, column 22: unknown connector KAFKA; use FILES, NATS, REDIS or NEXMARK",
        ),
        (
            "CREATE SOURCE s FROM FILES 'd'\n  (FORMAT csv, SCHEMA 'a long', COMPRESSION 'gz')",
            "CREATE SOURCE s at line 2, column 33: unknown option 'COMPRESSION'; options here:",
        ),
        (
            "CREATE VIEW v AS SELECT 1 AS x;\nSUBSCRIBE v;",
            "SUBSCRIBE v at line 2, column 1: SUBSCRIBE is a shell statement",
        ),
        (
            "CREATE VIEW v (a) AS SELECT 1 AS a",
            "CREATE VIEW v at line 1, column 15: a column list after the view name; name the columns with AS",
        ),
        ("DROP VIEW v", "DROP VIEW at line 1, column 1: DROP is a shell statement"),
        (
            "CREATE SINK k FROM v INTO KAFKA 't'",
            "CREATE SINK k at line 1, column 27: unknown sink KAFKA",
        ),
        (
            "PUBLISH v AS TABLE",
            "PUBLISH v at line 1, column 14: AS VIEW (snapshot + resumable updates) or AS STREAM",
        ),
        ("SELECT 'open", "syntax"),
    ],
)
def test_statement_errors_without_spark(text, message):
    with pytest.raises(SqlError) as info:
        build_pipeline(text, "/nonexistent/never-created")
    assert message in str(info.value)


def test_statement_errors_with_a_dataflow(spark, tmp_path):
    def fails(text: str) -> str:
        with pytest.raises(SqlError) as info:
            build_pipeline(text, str(tmp_path / "d"), spark=spark, base_dir=str(tmp_path)).close()
        return str(info.value)

    src = "CREATE SOURCE s FROM FILES 'in' (FORMAT csv, SCHEMA 'k string, v long', FINITE);\n"
    assert "the SCHEMA option is missing" in fails("CREATE SOURCE s FROM FILES 'in' (FORMAT csv)")
    msg = fails("CREATE SOURCE s FROM FILES 'in' (FORMAT csv, SCHEMA 'k string', EVENT TIME ts)")
    assert msg.startswith(
        "CREATE SOURCE s at line 1, column 1: source 's': time='ts' is not a column"
    )
    msg = fails(src + "CREATE SINK k FROM nope INTO PARQUET 'out'")
    assert msg.startswith("CREATE SINK k at line 2, column 1: no source or view named 'nope'")
    msg = fails(src + "CREATE VIEW v AS\n  SELECT k, rand() AS r FROM s")
    assert msg.startswith("CREATE VIEW v: non-deterministic function at line 3, column 13"), msg
    assert os.path.isdir(tmp_path / "d")
