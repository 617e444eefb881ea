"""The PostgreSQL backend: the same rankings as SQLite bit for bit, and its errors (issue 39).

One scripted history (adds, updates, supersedes, forgets, reinforcing recalls, a purge, a reopen,
a second store object) is replayed on an SQLite file and on a PostgreSQL schema; every recall
returns the same ids and the same score bits on both. Then the failures: an unreachable server, a
connection lost inside a write (rolled back, nothing half-applied, the next call reconnects), a
wrong schema version, a trigger on the store's tables, no password in ``path``.
"""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.memory import DuplicateKeyError, MemoryStore, StoreFormatError, StoreIOError

from tests.postgres_server import as_user, fresh_schema, query_store

psycopg = pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")

DIM = 24
NOW = 1_800_000_000.0
DAY = 86_400.0
SEED = 3939
MODES = ("vector", "hybrid", "full")


def unit(rng: np.random.Generator, n: int) -> np.ndarray:
    X = rng.standard_normal((n, DIM))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def signature(result) -> list[tuple]:
    """A recall's ids and the exact bits of every score it reports."""
    return [(h.id, np.float64(h.score).view(np.uint64).item(), np.float64(h.fused_score).view(np.uint64).item())
            for h in result.hits]


def replay(location: str) -> list:
    """Run the scripted history on a store at ``location``; returns every recall's signature."""
    rng = np.random.default_rng(SEED)
    E = unit(rng, 120)
    words = ["river", "orion", "budget", "meeting", "garden", "quartz", "lunch", "flight"]
    texts = [" ".join(rng.choice(words, 4)) + f" note {i}" for i in range(120)]
    tenants = [("alice", "bob", "carol")[i % 3] for i in range(120)]
    out = []

    def recalls(store: MemoryStore, step: int, reinforce: bool) -> None:
        for tenant in ("alice", "bob"):
            for j, mode in enumerate(MODES):
                q = E[(step * 7 + j) % 120]
                result = store.recall(texts[(step * 5 + j) % 120], q, 8, tenant=tenant, mode=mode,
                                      at_time=NOW + step * DAY, reinforce=reinforce,
                                      cue_tags=["t1"] if j == 2 else None)
                out.append((step, tenant, mode, signature(result)))

    with MemoryStore(location, dim=DIM) as store:
        ids = store.add_many(texts[:80], E[:80], tenants=tenants[:80], importances=rng.uniform(0, 1, 80).tolist(),
                             tags=[["t1"] if i % 4 == 0 else [] for i in range(80)],
                             entities=[["Orion"] if i % 5 == 0 else [] for i in range(80)],
                             created_at=(NOW - rng.uniform(0, 30, 80) * DAY).tolist()).tolist()
        recalls(store, 0, reinforce=True)
        store.update(ids[3], text="rewritten river orion note", importance=0.95)
        store.forget(ids[6])
        store.forget(ids[9])
        recalls(store, 1, reinforce=True)
        for i in range(80, 100):
            store.add(texts[i], E[i], tenant=tenants[i], importance=0.5, created_at=NOW + i)
        store.add("replacement budget note", E[100], tenant="alice", supersedes=ids[12], created_at=NOW + 200)
        second = MemoryStore(location)
        second.forget(ids[15])
        recalls(second, 2, reinforce=True)
        recalls(store, 3, reinforce=True)
        store.compact(purge=True)
        recalls(second, 4, reinforce=False)
        second.close()
    with MemoryStore(location) as reopened:
        recalls(reopened, 5, reinforce=True)
        reopened.add_many(texts[101:120], E[101:120], tenants=tenants[101:120], created_at=NOW + 300)
        recalls(reopened, 6, reinforce=False)
    return out


def test_one_history_ranks_bit_for_bit_the_same_on_sqlite_and_postgres(tmp_path, postgres_server):
    on_sqlite = replay(str(tmp_path / "replay.sqlite"))
    on_postgres = replay(fresh_schema(postgres_server))
    assert len(on_sqlite) == 7 * 2 * len(MODES)
    assert all(sig for *_, sig in on_sqlite)
    for a, b in zip(on_sqlite, on_postgres):
        assert a == b, (a[:3], a[3][:3], b[3][:3])


def test_unreachable_server_is_a_store_io_error(tmp_path):
    missing = f"postgresql://nobody:secret@/fieldrank?host={tmp_path}&connect_timeout=2"
    with pytest.raises(StoreIOError, match="cannot open the memory store") as caught:
        MemoryStore(missing, dim=DIM)
    assert "secret" not in str(caught.value) and caught.value.operation == "open"


def test_path_shows_no_password(postgres_server):
    location = as_user(fresh_schema(postgres_server), "postgres", "hunter2")
    assert "hunter2" in location
    with MemoryStore(location, dim=DIM) as store:
        assert "hunter2" not in store.path and "hunter2" not in repr(store)
        assert store.path.startswith("postgresql://postgres@/")
        with MemoryStore(store.path) as again:  # the shown location reopens the same store
            assert again.dim == DIM


def backend_pid(store: MemoryStore) -> int:
    return store._backend._connection.info.backend_pid


def terminate(server: str, pid: int) -> None:
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_a_connection_lost_mid_write_writes_nothing_and_the_next_call_reconnects(postgres_server):
    location = fresh_schema(postgres_server)
    rng = np.random.default_rng(SEED)
    E = unit(rng, 6)
    with MemoryStore(location, dim=DIM) as store:
        store.add_many(["one", "two"], E[:2])
        revision_before = query_store(location, "SELECT revision FROM fieldrank_meta")
        original = store._backend.insert

        def lost_inside(make_batch, count, supersede=()):
            def build(first):  # runs inside the write transaction, after the revision bump
                terminate(postgres_server, backend_pid(store))
                return make_batch(first)
            return original(build, count, supersede)

        store._backend.insert = lost_inside
        with pytest.raises(StoreIOError, match="cannot add to the memory store"):
            store.add_many(["three", "four", "five"], E[2:5])
        del store._backend.insert
        assert query_store(location, "SELECT COUNT(*) FROM memories") == [(2,)]
        assert query_store(location, "SELECT revision FROM fieldrank_meta") == revision_before
        assert len(store) == 2
        # a connection lost between calls: the read retries on a fresh connection, the write works
        terminate(postgres_server, backend_pid(store))
        assert store.recall(None, E[0], 2, mode="vector").ids.tolist() == [0, 1]
        assert store.add("six", E[5]) == 2
    with MemoryStore(location) as reopened:
        assert sorted(m.text for m in (reopened.get(i) for i in range(3))) == ["one", "six", "two"]


def test_a_wrong_schema_version_or_foreign_table_is_refused(postgres_server):
    location = fresh_schema(postgres_server)
    with MemoryStore(location, dim=DIM):
        pass
    query_store(location, "UPDATE fieldrank_meta SET format_version = 99")
    with pytest.raises(ValueError, match="format_version 99, expected one of 1, 2"):
        MemoryStore(location)
    query_store(location, "UPDATE fieldrank_meta SET format_version = 1, format = 'other'")
    with pytest.raises(ValueError, match="not a fieldrank.memory store"):
        MemoryStore(location)
    with pytest.raises(ValueError, match="dim is required"):
        MemoryStore(fresh_schema(postgres_server))


def test_a_trigger_on_the_store_tables_is_refused(postgres_server):
    location = fresh_schema(postgres_server)
    with MemoryStore(location, dim=DIM):
        pass
    query_store(location, "CREATE FUNCTION sneaky() RETURNS trigger LANGUAGE plpgsql AS "
                          "'BEGIN RETURN NEW; END'")
    query_store(location, "CREATE TRIGGER spy BEFORE INSERT ON memories FOR EACH ROW EXECUTE FUNCTION sneaky()")
    with pytest.raises(StoreFormatError, match="spy"):
        MemoryStore(location)


def deployment_rls_sql() -> str:
    """The row-level-security block of docs/deployment.md (run here as written)."""
    import re
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "deployment.md").read_text(encoding="utf-8")
    (block,) = re.findall(r"^```sql\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    return block


def test_a_tenant_role_cannot_read_or_write_another_tenants_rows(postgres_server):
    location = fresh_schema(postgres_server, "rls_store")
    rng = np.random.default_rng(SEED)
    E = unit(rng, 10)
    with MemoryStore(location, dim=DIM) as owner:
        alice_ids = owner.add_many([f"alice note {i}" for i in range(4)], E[:4], tenants="alice").tolist()
        bob_ids = owner.add_many([f"bob secret {i}" for i in range(6)], E[4:], tenants="bob").tolist()
        owner.recall(None, E[5], 3, tenant="bob", mode="vector")  # bob's links exist
    with psycopg.connect(location, autocommit=True) as connection:
        connection.execute("DROP ROLE IF EXISTS alice")
        connection.execute(deployment_rls_sql())
    as_alice = as_user(location, "alice")
    with MemoryStore(as_alice) as store:  # the store loads only what alice's role can read
        assert len(store) == 4 and store.tenants() == ("alice",)
        assert store.recall(None, E[5], 10, tenant="bob", mode="vector").ids.tolist() == []
        for memory_id in bob_ids:
            assert memory_id not in store
        new = store.add("alice's new note", E[0], tenant="alice")
        assert new == 10  # ids stay shared: never one of bob's
        with pytest.raises(StoreIOError, match="row-level security"):
            store.add("planted in bob's memory", E[1], tenant="bob")
        with pytest.raises(KeyError):  # not a memory this store knows
            store.forget(bob_ids[0])
        store.compact(purge=True)
    with psycopg.connect(as_alice, autocommit=True) as connection:
        assert {t for (t,) in connection.execute("SELECT DISTINCT tenant FROM fieldrank_memories")} == {"alice"}
        assert connection.execute("SELECT COUNT(*) FROM fieldrank_links").fetchone()[0] == 0
        assert connection.execute("UPDATE fieldrank_memories SET text = 'x' WHERE tenant = 'bob'").rowcount == 0
        assert connection.execute("DELETE FROM fieldrank_memories WHERE tenant = 'bob'").rowcount == 0
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            connection.execute("UPDATE fieldrank_meta SET dim = 3")
    with MemoryStore(location) as owner:  # bob's rows untouched
        assert sorted(m.text for m in (owner.get(i) for i in bob_ids)) == [f"bob secret {i}" for i in range(6)]
        assert len(owner) == 11 and alice_ids[0] in owner


def test_keys_are_unique_in_the_database_and_a_version_one_store_is_migrated(postgres_server):
    """Issue #34 item 4 on PostgreSQL: the partial unique index keeps a key on one live memory per
    tenant (two store objects agree), and a store written before keys gains them on open."""
    location = fresh_schema(postgres_server)
    E = unit(np.random.default_rng(SEED), 4)
    with MemoryStore(location, dim=DIM) as store:
        old = store.add("before keys", E[0], tenant="t")
    query_store(location, "DROP INDEX fieldrank_memories_key")
    query_store(location, "ALTER TABLE fieldrank_memories DROP COLUMN key")
    query_store(location, "UPDATE fieldrank_meta SET format_version = 1")
    first, second = MemoryStore(location), MemoryStore(location)
    assert first.get(old).text == "before keys"
    a = first.put("k", "from first", E[1], tenant="t")
    assert second.put("k", "from second", E[2], tenant="t") == a and len(first) == 2
    with pytest.raises(DuplicateKeyError):
        second.add("a second holder", E[3], tenant="t", key="k")
    assert second.forget_by_key("k", tenant="t") and not first.forget_by_key("k", tenant="t")
    assert first.put("k", "again", E[3], tenant="t") != a and second.get_by_key("k", tenant="t").text == "again"
    assert query_store(location, "SELECT format_version FROM fieldrank_meta") == [(2,)]
    first.close()
    second.close()


def test_bookkeeping_behind_a_held_row_lock_gives_up_and_the_store_goes_on(postgres_server):
    """A recall whose bookkeeping waits past the lock timeout returns its hits unreinforced (as on
    SQLite); nothing of that bookkeeping is written, and the next calls work on the same connection."""
    from fieldrank.memory import ReinforcementWarning

    location = fresh_schema(postgres_server)
    E = unit(np.random.default_rng(SEED), 4)
    with MemoryStore(location, dim=DIM) as store:
        store.add_many(["a", "b", "c", "d"], E)
        with psycopg.connect(location) as blocker:  # a transaction holding every row's lock
            blocker.execute("SELECT id FROM fieldrank_memories FOR UPDATE")
            with pytest.warns(ReinforcementWarning):
                result = store.recall(None, E[0], 2, mode="vector")
            assert result.ids.tolist()[0] == 0 and not result.reinforced
            blocker.rollback()
        assert query_store(location, "SELECT SUM(recall_count) FROM memories") == [(0,)]
        assert store.recall(None, E[0], 2, mode="vector").reinforced
        assert query_store(location, "SELECT SUM(recall_count) FROM memories") == [(2,)]
        assert store.add("e", E[1]) == 4


def test_fieldrank_mcp_opens_a_postgres_store_and_asks_for_its_id_key(postgres_server, capsys):
    from fieldrank.cli import main
    from fieldrank.integrations._common import LEXICAL_DIM
    from fieldrank.integrations._store_access import open_store

    location = fresh_schema(postgres_server)
    with open_store(location) as store:  # a new database store: lexical, as a new file is
        assert store.dim == LEXICAL_DIM
    with open_store(location) as store:  # reopened, not created again
        assert store.dim == LEXICAL_DIM and store.path.startswith("postgresql://")
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    assert main(["mcp", "--store", location]) == 1
    assert "--id-key" in capsys.readouterr().err
