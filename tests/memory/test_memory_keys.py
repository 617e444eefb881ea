"""External keys on memories (issue #34 item 4): unique per tenant in the store's file, so several
writers agree on them; old (format version 1) files gain the column and its index on open."""

from __future__ import annotations

import pickle
import sqlite3

import numpy as np
import pytest

from fieldrank.memory import DuplicateKeyError, MemoryStore, StoreFormatError

DIM = 4


def _vector(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.normal(size=DIM)
    return v / np.linalg.norm(v)


def _version_one_file(path) -> int:
    """A store file as format version 1 wrote it (no key column, no key index), with one memory."""
    with MemoryStore(path, DIM) as store:
        memory_id = store.add("written by version 1", _vector(0), tenant="t", tags=["old"])
    connection = sqlite3.connect(path)
    connection.execute("DROP INDEX memories_key")
    connection.execute("ALTER TABLE memories DROP COLUMN key")
    connection.execute("UPDATE meta SET value = '1' WHERE key = 'format_version'")
    connection.commit()
    connection.close()
    return memory_id


def test_a_version_one_file_opens_and_is_migrated_to_keys(tmp_path):
    path = tmp_path / "v1.db"
    old_id = _version_one_file(path)
    with MemoryStore(path) as store:
        assert store.get(old_id).text == "written by version 1"
        new_id = store.put("k", "keyed", _vector(1), tenant="t")
        assert store.get_by_key("k", tenant="t").id == new_id
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT value FROM meta WHERE key = 'format_version'").fetchone() == ("2",)
    assert connection.execute("SELECT name FROM sqlite_master WHERE name = 'memories_key'").fetchone()
    connection.close()
    with MemoryStore(path) as again:  # the migrated file opens as a version-2 store
        assert again.get_by_key("k", tenant="t").text == "keyed" and len(again) == 2


def test_the_file_refuses_a_second_live_memory_with_a_key(tmp_path):
    path = tmp_path / "s.db"
    with MemoryStore(path, DIM) as store:
        store.add("one", _vector(0), tenant="t", key="k")
    connection = sqlite3.connect(path)
    row = connection.execute("SELECT * FROM memories").fetchone()
    columns = [c[1] for c in connection.execute("PRAGMA table_info(memories)")]
    duplicate = list(row)
    duplicate[columns.index("id")] = 99
    with pytest.raises(sqlite3.IntegrityError):  # the database itself, not a read before the write
        connection.execute(f"INSERT INTO memories VALUES ({', '.join('?' for _ in duplicate)})", duplicate)
    duplicate[columns.index("tenant")] = "other"  # unique per tenant
    connection.execute(f"INSERT INTO memories VALUES ({', '.join('?' for _ in duplicate)})", duplicate)
    connection.close()


def test_two_store_objects_agree_on_every_key(tmp_path):
    path = tmp_path / "s.db"
    first, second = MemoryStore(path, DIM), MemoryStore(path)
    a = first.put("k", "from first", _vector(0), tenant="t")
    b = second.put("k", "from second", _vector(1), tenant="t")  # replaces in place: one memory
    assert a == b and len(first) == len(second) == 1
    assert first.get_by_key("k", tenant="t").text == "from second"
    with pytest.raises(DuplicateKeyError) as raised:
        first.add("a third", _vector(2), tenant="t", key="k")
    assert raised.value.memory_id == a and len(second) == 1  # nothing written
    assert second.forget_by_key("k", tenant="t") is True
    assert first.forget_by_key("k", tenant="t") is False  # the delete stays deleted
    with pytest.raises(KeyError):
        first.get_by_key("k", tenant="t")
    c = first.put("k", "again", _vector(3), tenant="t")  # a forgotten memory frees its key
    assert c != a and second.get_by_key("k", tenant="t").id == c
    assert first.put("k", "other tenant", _vector(3), tenant="u") != c


def test_keys_in_memory_add_many_and_pickling():
    store = MemoryStore(dim=DIM)
    ids = store.add_many(["a", "b"], np.stack([_vector(0), _vector(1)]), keys=["x", None])
    assert store.get_by_key("x").id == ids[0]
    with pytest.raises(DuplicateKeyError):
        store.add_many(["c", "d"], np.stack([_vector(2), _vector(3)]), keys=["y", "y"])
    with pytest.raises(DuplicateKeyError):
        store.add("e", _vector(4), key="x")
    assert len(store) == 2
    copy = pickle.loads(pickle.dumps(store))
    assert copy.put("x", "replaced", _vector(5)) == ids[0] and len(copy) == 2
    revision = store.revision
    store.forget_by_key("x")
    assert store.revision != revision


def test_an_index_named_as_the_key_index_but_defined_otherwise_is_refused(tmp_path):
    path = tmp_path / "s.db"
    MemoryStore(path, DIM).close()
    connection = sqlite3.connect(path)
    connection.execute("DROP INDEX memories_key")
    connection.execute("CREATE INDEX memories_key ON memories (tenant, key)")  # not unique
    connection.commit()
    connection.close()
    with pytest.raises(StoreFormatError, match="memories_key"):
        MemoryStore(path)


def test_ids_lists_the_live_memories_with_other_stores_commits(tmp_path):
    path = tmp_path / "s.db"
    first, second = MemoryStore(path, DIM), MemoryStore(path)
    a = first.add("a", _vector(0), tenant="t")
    b = first.add("b", _vector(1), tenant="u")
    c = second.add("c", _vector(2), tenant="t")
    assert first.ids().tolist() == [a, b, c] and first.ids(tenant="t").tolist() == [a, c]
    second.forget(a)
    assert first.ids(tenant="t").tolist() == [c] and first.ids().dtype == np.int64
