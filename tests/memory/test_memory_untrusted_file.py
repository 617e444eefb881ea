"""A store file is untrusted input (issue #34 items 1-3 and 6).

Opening a file writes nothing to it until it is known to be a store of this format (or empty and
created on purpose); schema objects a store does not have (triggers, views, other tables and
indexes) are refused by name; stored embeddings are checked as the API checks them (unit norm);
memory texts have a size limit (``max_text_bytes``)."""

from __future__ import annotations

import hashlib
import sqlite3

import numpy as np
import pytest

from fieldrank.memory import MemoryStore, StoreFormatError
from tests.helpers import SEED, unit_rows

DIM = 8


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def store_file(tmp_path):
    path = tmp_path / "memory.sqlite"
    rng = np.random.default_rng(SEED)
    with MemoryStore(path, dim=DIM) as store:
        store.add_many([f"secret {i}" for i in range(6)], unit_rows(rng, 6, DIM))
    return path


def plant(path, *statements: str) -> None:
    connection = sqlite3.connect(path)
    for statement in statements:
        connection.execute(statement)
    connection.commit()
    connection.close()


@pytest.mark.parametrize("planted, named", [
    (("CREATE TABLE loot (t TEXT)",
      "CREATE TRIGGER keep BEFORE DELETE ON memories BEGIN INSERT INTO loot VALUES (old.text); "
      "SELECT RAISE(IGNORE); END"), ["trigger 'keep'", "table 'loot'"]),
    (("CREATE TRIGGER spy AFTER UPDATE ON memories BEGIN SELECT 1; END",), ["trigger 'spy'"]),
    (("CREATE VIEW texts AS SELECT text FROM memories",), ["view 'texts'"]),
    (("CREATE INDEX by_tenant ON memories (tenant)",), ["index 'by_tenant'"]),
])
def test_schema_objects_a_store_does_not_have_are_refused_by_name(store_file, planted, named):
    """Item 1: a planted trigger ran on the store's own writes (a forget + purge reported success
    while the row stayed and its text was copied away); now the file is refused, untouched."""
    plant(store_file, *planted)
    before = digest(store_file)
    with pytest.raises(StoreFormatError) as refused:
        MemoryStore(store_file)
    for name in named:
        assert name in str(refused.value)
    assert digest(store_file) == before


def test_another_applications_file_with_a_meta_table_is_refused_untouched(tmp_path):
    """Item 2: a file with its own ``meta`` table gained the store's tables and WAL mode before
    it was refused."""
    path = tmp_path / "app.sqlite"
    plant(path, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)", "INSERT INTO meta VALUES ('owner', 'app')",
          "CREATE TABLE users (name TEXT)")
    before = digest(path)
    with pytest.raises(ValueError, match="not a fieldrank.memory file"):
        MemoryStore(path, dim=DIM)
    assert digest(path) == before
    connection = sqlite3.connect(path)
    tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    journal = connection.execute("PRAGMA journal_mode").fetchone()[0]
    connection.close()
    assert tables == {"meta", "users"} and journal == "delete"


def test_an_empty_or_missing_file_without_dim_is_left_as_it_was(tmp_path):
    """Item 2: a zero-length file opened without ``dim`` was left with the schema (and a missing
    path with a new file holding it)."""
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="dim is required"):
        MemoryStore(empty)
    assert empty.read_bytes() == b""
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(ValueError, match="dim is required"):
        MemoryStore(missing)
    assert not missing.exists()
    with MemoryStore(empty, dim=DIM) as store:  # created on purpose
        store.add("first", unit_rows(np.random.default_rng(SEED), 1, DIM)[0])
    with MemoryStore(empty) as store:
        assert len(store) == 1


def test_a_stored_embedding_that_is_not_a_unit_vector_is_refused(store_file):
    """Item 3: the open-time check accepted any finite norm; a row scaled to norm 28 won every
    vector recall."""
    row = np.frombuffer(sqlite3.connect(store_file).execute(
        "SELECT embedding FROM memories WHERE id = 3").fetchone()[0], dtype="<f4")
    plant(store_file, f"UPDATE memories SET embedding = X'{(row * 28).astype('<f4').tobytes().hex()}' WHERE id = 3")
    with pytest.raises(StoreFormatError, match="norm 28") as refused:
        MemoryStore(store_file)
    assert (refused.value.table, refused.value.row, refused.value.column) == ("memories", 3, "embedding")


def test_a_store_written_by_this_version_still_opens_and_is_not_rewritten(store_file):
    before = digest(store_file)
    with MemoryStore(store_file) as store:
        assert len(store) == 6
    assert digest(store_file) == before


def test_memory_text_size_limit(tmp_path):
    """Item 6: a 100 MB memory made opening the store and its first recall take minutes."""
    rng = np.random.default_rng(SEED)
    store = MemoryStore(tmp_path / "memory.sqlite", dim=DIM, max_text_bytes=1000)
    vector = unit_rows(rng, 1, DIM)[0]
    with pytest.raises(ValueError, match="text is 1001 bytes in UTF-8, more than the store's max_text_bytes=1000"):
        store.add("x" * 1001, vector)
    with pytest.raises(ValueError, match=r"texts\[1\] is 1002 bytes"):
        store.add_many(["fine", "é" * 501], unit_rows(rng, 2, DIM))
    memory_id = store.add("é" * 500, vector)  # exactly 1000 bytes
    with pytest.raises(ValueError, match="max_text_bytes"):
        store.update(memory_id, text="y" * 1001)
    assert len(store) == 1 and store.get(memory_id).text == "é" * 500
    store.close()
    assert MemoryStore(dim=DIM).max_text_bytes == 256 * 1024
    with pytest.raises(ValueError, match="max_text_bytes"):
        MemoryStore(dim=DIM, max_text_bytes=0)
