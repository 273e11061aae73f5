"""MetadataStore: opening, transactions, migrations, key/value — on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from sealtime.storage import DEFAULT_SQLITE_FILENAME, MetadataStore, MetadataStoreError

# ----------------------------------------------------------------- opening / URLs


def test_open_sqlite_path_url_and_directory(tmp_path):
    a = MetadataStore.open(tmp_path / "sub" / "a.db")
    b = MetadataStore.open(f"sqlite:///{tmp_path}/b.db")
    c = MetadataStore.open(tmp_path)
    try:
        assert (tmp_path / "sub" / "a.db").exists()
        assert (tmp_path / "b.db").exists()
        assert (tmp_path / DEFAULT_SQLITE_FILENAME).exists()
        assert a.dialect.name == b.dialect.name == "sqlite"
    finally:
        for s in (a, b, c):
            s.close()
    conn = sqlite3.connect(tmp_path / "b.db")
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


@pytest.mark.parametrize(
    "url, fragment",
    [
        ("mysql://localhost/x", "is not a supported metadata store"),
        ("sqlite://relative.db", "is not a valid SQLite URL"),
        ("sqlite:///:memory:", "in-memory SQLite is not supported"),
    ],
)
def test_bad_urls_name_the_setting(url, fragment):
    with pytest.raises(MetadataStoreError) as exc:
        MetadataStore.open(url)
    assert f"metadata={url!r}" in str(exc.value)
    assert fragment in str(exc.value)


def test_unreachable_postgres_message_names_setting_and_fix():
    url = "postgresql://someone:hunter2@127.0.0.1:1/nowhere"
    with pytest.raises(MetadataStoreError) as exc:
        MetadataStore.open(url, timeout=2)
    msg = str(exc.value)
    assert "metadata='postgresql://someone:***@127.0.0.1:1/nowhere' could not connect:" in msg
    assert "check the server is running" in msg
    assert "use the default SQLite store" in msg
    assert "hunter2" not in msg


def test_bad_schema_name_rejected():
    with pytest.raises(MetadataStoreError, match="not a plain identifier"):
        MetadataStore.open("postgresql://root@127.0.0.1:1/x?schema=a-b")


# --------------------------------------------------------------- transactions


def test_transaction_commits_and_rolls_back(store):
    store.ensure_table("CREATE TABLE IF NOT EXISTS t_tx (k TEXT PRIMARY KEY, v BIGINT)")
    with store.transaction() as tx:
        tx.execute("INSERT INTO t_tx (k, v) VALUES (?, ?)", ("a", 1))
        tx.execute("INSERT INTO t_tx (k, v) VALUES (?, ?)", ("b", 2))
    with pytest.raises(RuntimeError), store.transaction() as tx:
        tx.execute("INSERT INTO t_tx (k, v) VALUES (?, ?)", ("c", 3))
        raise RuntimeError("boom")
    assert store.query("SELECT k, v FROM t_tx ORDER BY k") == [("a", 1), ("b", 2)]


def test_nested_transactions_join_and_roll_back_together(store):
    store.ensure_table("CREATE TABLE IF NOT EXISTS t_nest (k TEXT PRIMARY KEY)")
    with store.transaction() as outer:
        outer.execute("INSERT INTO t_nest (k) VALUES (?)", ("x",))
        with store.transaction() as inner:
            assert inner is outer
            inner.execute("INSERT INTO t_nest (k) VALUES (?)", ("y",))
    assert store.query("SELECT COUNT(*) FROM t_nest") == [(2,)]

    with pytest.raises(MetadataStoreError, match="rolled back"), store.transaction() as outer:
        outer.execute("INSERT INTO t_nest (k) VALUES (?)", ("z",))
        try:
            with store.transaction() as inner:
                inner.execute("INSERT INTO t_nest (k) VALUES (?)", ("w",))
                raise ValueError("inner failure")
        except ValueError:
            pass  # swallowed, but the transaction must not commit half a change
    assert store.query("SELECT COUNT(*) FROM t_nest") == [(2,)]


def test_write_inside_readonly_is_refused(store):
    with (
        pytest.raises(MetadataStoreError, match="read-only"),
        store.transaction(readonly=True),
        store.transaction(),
    ):
        pass


def test_readonly_transaction_sees_one_snapshot(store, open_store):
    store.kv_put("ns", "k", 1)
    other = open_store()
    with store.transaction(readonly=True) as tx:
        first = tx.query("SELECT value FROM sealtime_kv WHERE key = ?", ("k",))
        done = threading.Event()

        def writer():
            other.kv_put("ns", "k", 2)
            done.set()

        t = threading.Thread(target=writer)
        t.start()
        t.join(10)
        assert done.is_set(), "a writer must not be blocked by a reader"
        again = tx.query("SELECT value FROM sealtime_kv WHERE key = ?", ("k",))
        assert first == again == [("1",)]
    assert store.kv_get("ns", "k") == 2


def test_store_is_usable_from_threads(store):
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for j in range(5):
                store.kv_put("threads", f"{i}-{j}", j)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(store.kv_items("threads")) == 20


def test_closed_store_refuses_work(open_store):
    s = open_store()
    s.close()
    with pytest.raises(MetadataStoreError, match="closed"):
        s.kv_get("a", "b")


# ---------------------------------------------------------- migrations and kv


def test_migrations_are_versioned_per_component(store):
    steps = ["CREATE TABLE IF NOT EXISTS t_mig (k TEXT PRIMARY KEY)"]
    assert store.migrate("comp", steps) == 1
    assert store.migrate("comp", steps) == 1  # idempotent
    seen = []

    def add_rows(tx):
        seen.append(tx.dialect.name)
        tx.execute("INSERT INTO t_mig (k) VALUES (?)", ("from-callable",))

    steps = [*steps, "ALTER TABLE t_mig ADD COLUMN v BIGINT", add_rows]
    assert store.migrate("comp", steps) == 3
    assert seen == [store.dialect.name]
    assert store.query("SELECT k, v FROM t_mig") == [("from-callable", None)]
    with pytest.raises(MetadataStoreError, match="newer than this sealtime knows"):
        store.migrate("comp", steps[:1])


def test_failed_migration_leaves_version_unchanged(store):
    steps = ["CREATE TABLE IF NOT EXISTS t_mig2 (k TEXT)", "THIS IS NOT SQL"]
    with pytest.raises(Exception):  # noqa: B017 - driver-specific syntax error
        store.migrate("comp2", steps)
    # Both steps ran in one transaction: neither the table nor the version exist.
    assert (
        store.query("SELECT version FROM sealtime_migrations WHERE component = ?", ("comp2",)) == []
    )
    assert store.migrate("comp2", steps[:1]) == 1


def test_kv_and_upsert(store):
    assert store.kv_get("ns", "missing", default="d") == "d"
    store.kv_put("ns", "a", {"x": [1, 2]})
    store.kv_put("ns", "a", {"x": [3]})
    store.kv_put("ns", "b", "text")
    store.kv_put("other", "a", 1)
    assert store.kv_items("ns") == {"a": {"x": [3]}, "b": "text"}
    assert store.kv_delete("ns", "a") is True
    assert store.kv_delete("ns", "a") is False
    assert store.kv_items("ns") == {"b": "text"}
    with store.transaction() as tx:
        tx.upsert("sealtime_kv", {"namespace": "u", "key": "k"}, {"value": '"v1"'})
        tx.upsert("sealtime_kv", {"namespace": "u", "key": "k"}, {"value": '"v2"'})
    assert store.kv_get("u", "k") == "v2"
    with pytest.raises(MetadataStoreError, match="identifier"), store.transaction() as tx:
        tx.upsert("sealtime_kv; DROP", {"namespace": "u"}, {})


def test_percent_and_placeholders_are_portable(store):
    store.kv_put("p", "100%", "a%b")
    assert store.query("SELECT key FROM sealtime_kv WHERE key LIKE '%!%' ESCAPE '!'") == [("100%",)]
    assert store.kv_get("p", "100%") == "a%b"
