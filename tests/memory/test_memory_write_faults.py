"""Faults while writing a store file (issue 25), by injection.

A recall's bookkeeping (reinforcement) never fails the read: with the database locked by another
connection, the connection read-only, or the file at its size limit, the recall returns its hits,
``reinforced`` is False, a ``ReinforcementWarning`` says why, and nothing changes in memory or in
the file. Every other write failure (add, update, forget, purge) is one documented exception type,
``fieldrank.memory.StoreIOError`` (an ``OSError``) naming the file and SQLite's cause, and leaves
memory and file as they were.
"""

from __future__ import annotations

import os
import sqlite3
import time

import numpy as np
import pytest

from fieldrank.memory import MemoryStore, ReinforcementWarning, StoreIOError
from fieldrank.memory._persistence import BUSY_TIMEOUT_MS, REINFORCE_BUSY_TIMEOUT_MS

DIM = 16
N = 60
NOW = 1_760_000_000.0


def unit_rows(n: int, seed: int = 7) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, DIM))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


VECTORS = unit_rows(N)


@pytest.fixture()
def store(tmp_path):
    path = str(tmp_path / "m.sqlite")
    store = MemoryStore(path, dim=DIM)
    store.add_many([f"note {i}" for i in range(N)], VECTORS, created_at=NOW)
    yield store
    store.close()


def state(store: MemoryStore) -> tuple:
    """Everything a recall's bookkeeping may change, in memory."""
    memories = [store.get(i) for i in range(N)]
    links = sorted((a, b, w) for a, neighbours in store._links.weights.items() for b, w in neighbours.items())
    return ([(m.recall_count, m.last_access, m.storage_strength) for m in memories], links)


def file_state(path: str) -> tuple:
    with sqlite3.connect(path) as connection:
        rows = connection.execute("SELECT id, recall_count, last_access, storage_strength FROM memories "
                                  "ORDER BY id").fetchall()
        links = connection.execute("SELECT a, b, weight FROM links ORDER BY a, b").fetchall()
    return rows, links


def recall_all(store: MemoryStore, at: float):
    return store.recall(None, VECTORS[0], N, mode="vector", at_time=at)


def check_unreinforced_recall(store: MemoryStore, cause: str) -> None:
    """The recall returns every hit, flags it, warns with the file and cause, and changes nothing."""
    expected = store.recall(None, VECTORS[0], N, mode="vector", at_time=NOW + 5, reinforce=False).ids
    before, file_before = state(store), file_state(store.path)
    failures = store.reinforce_failures
    with pytest.warns(ReinforcementWarning, match=cause) as caught:
        result = recall_all(store, NOW + 5)
    assert store.path in str(caught[0].message)
    assert result.ids.tolist() == expected.tolist()
    assert len(result) == len(expected) > 0
    assert result.reinforced is False
    assert store.reinforce_failures == failures + 1
    assert state(store) == before
    assert file_state(store.path) == file_before


def check_reinforced_afterwards(store: MemoryStore) -> None:
    before = [store.get(i).recall_count for i in range(N)]
    result = recall_all(store, NOW + 6)
    assert result.reinforced is True
    hit = set(result.ids.tolist())
    expected = [c + (i in hit) for i, c in enumerate(before)]
    assert [store.get(i).recall_count for i in range(N)] == expected
    with MemoryStore(store.path) as reopened:  # and it is in the file
        assert [reopened.get(i).recall_count for i in range(N)] == expected


def test_the_flag_when_nothing_fails(store):
    assert recall_all(store, NOW + 1).reinforced is True
    assert store.recall(None, VECTORS[0], 3, mode="vector", at_time=NOW, reinforce=False).reinforced is False
    in_memory = MemoryStore(dim=DIM)
    in_memory.add("x", VECTORS[0])
    assert in_memory.recall(None, VECTORS[0], 1, mode="vector").reinforced is True
    assert store.reinforce_failures == 0


def test_recall_while_another_connection_holds_the_write_lock(store):
    holder = sqlite3.connect(store.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        started = time.monotonic()
        check_unreinforced_recall(store, "locked")
        # It waited for the short reinforcement timeout, not for the writers' 30 s one.
        assert REINFORCE_BUSY_TIMEOUT_MS < BUSY_TIMEOUT_MS / 10
        assert time.monotonic() - started < BUSY_TIMEOUT_MS / 1000 / 2
        # ... and the connection's own timeout is the writers' one again afterwards.
        assert store._backend._connection.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    check_reinforced_afterwards(store)


def test_recall_on_a_read_only_connection(store):
    store._backend._connection.execute("PRAGMA query_only = ON")  # as a read-only file or mount
    check_unreinforced_recall(store, "readonly")
    store._backend._connection.execute("PRAGMA query_only = OFF")
    check_reinforced_afterwards(store)


def test_recall_when_the_file_is_at_its_size_limit(store):
    connection = store._backend._connection
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    pages = connection.execute("PRAGMA page_count").fetchone()[0]
    connection.execute(f"PRAGMA max_page_count = {pages}")  # as a full disk: no page can be added
    # N hits link N·(N−1)/2 = 1,770 new pairs: more than the free space of the file's pages.
    check_unreinforced_recall(store, "full")
    connection.execute("PRAGMA max_page_count = 1073741823")
    check_reinforced_afterwards(store)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes read-only files")
def test_recall_on_a_read_only_file(tmp_path):
    path = str(tmp_path / "m.sqlite")
    with MemoryStore(path, dim=DIM) as writer:
        writer.add_many([f"note {i}" for i in range(N)], VECTORS, created_at=NOW)
    os.chmod(path, 0o444)
    os.chmod(tmp_path, 0o555)
    try:
        try:
            store = MemoryStore(path)
        except StoreIOError as error:  # SQLite may refuse to open it for WAL: a clear error, naming it
            assert error.path == path
            return
        with store:
            check_unreinforced_recall(store, "readonly")
    finally:
        os.chmod(tmp_path, 0o755)
        os.chmod(path, 0o644)


# ---------------------------------------------------------------------------- other writes


def inject(store: MemoryStore, fault: str):
    connection = store._backend._connection
    if fault == "read-only":
        connection.execute("PRAGMA query_only = ON")
        return "readonly"
    if fault == "locked":
        connection.execute("PRAGMA busy_timeout = 50")
        holder = sqlite3.connect(store.path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        store._holder = holder
        return "locked"
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    connection.execute(f"PRAGMA max_page_count = {connection.execute('PRAGMA page_count').fetchone()[0]}")
    return "full"


@pytest.mark.parametrize("fault", ["read-only", "locked", "full"])
def test_write_errors_are_one_documented_type_and_change_nothing(store, fault):
    big = "x" * 200_000  # needs new pages whatever the free space
    cause = inject(store, fault)
    before, file_before, count = state(store), file_state(store.path), len(store)
    writes = {
        "add": lambda: store.add(big, VECTORS[1], created_at=NOW),
        "add_many": lambda: store.add_many([big, big], VECTORS[:2], created_at=NOW),
        "update": lambda: store.update(3, text=big),
    }
    if fault != "full":  # a forget or a purge frees space: only the other faults can stop them
        writes["forget"] = lambda: store.forget(4)
    for name, write in writes.items():
        with pytest.raises(StoreIOError, match=cause) as caught:
            write()
        error = caught.value
        assert isinstance(error, OSError) and not isinstance(error, sqlite3.Error), name
        assert error.path == error.filename == store.path
        assert store.path in str(error) and cause in error.cause
        assert isinstance(error.__cause__, sqlite3.Error)
        assert len(store) == count and state(store) == before, name
        assert file_state(store.path) == file_before, name
    assert store.get(3).text == "note 3"
    holder = getattr(store, "_holder", None)
    if holder is not None:
        holder.execute("ROLLBACK")
        holder.close()
