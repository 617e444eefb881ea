"""Several processes (and several store objects) on one SQLite store file (issue 17).

Ids are allocated inside the write transaction, so concurrent writers never collide
(no ``IntegrityError``); the recall bookkeeping is an SQL increment, so concurrent recalls never
lose a ``recall_count``; a store sees what another one committed at its next call.
"""

from __future__ import annotations

import multiprocessing
import warnings
import zlib

import numpy as np
import pytest

from fieldrank import MemoryStore
from fieldrank.memory import ReinforcementWarning

DIM = 8
SEED = 1717
ADDS_PER_PROCESS = 60
RECALLS_PER_PROCESS = 120
NOW = 1_760_000_000.0


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    X = rng.normal(size=(n, DIM))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


def worker(path: str, name: str, target_vector: np.ndarray, start, queue) -> None:
    """Interleave adds and reinforcing recalls of the target; report ids, unreinforced recalls and any error.

    A recall whose bookkeeping waited past its short lock timeout returns its hits unreinforced
    and says so (``reinforced`` False, issue 25): those are counted, never lost silently.
    """
    warnings.simplefilter("ignore", ReinforcementWarning)
    try:
        # seeded from the name's bytes (str hashes are salted per process, so hash() would not repeat)
        rng = np.random.default_rng([SEED, zlib.crc32(name.encode())])
        store = MemoryStore(path)
        start.wait()
        ids = []
        unreinforced = 0
        for i in range(RECALLS_PER_PROCESS):
            if i < ADDS_PER_PROCESS:
                ids.append(store.add(f"{name} note {i}", unit_rows(rng, 1)[0], created_at=NOW))
            result = store.recall(None, target_vector, 1, mode="vector", at_time=NOW + i)
            assert result.ids.tolist() == [0], result.ids
            unreinforced += not result.reinforced
        assert store.reinforce_failures == unreinforced
        store.close()
        queue.put((name, ids, unreinforced, None))
    except BaseException as exc:  # reported to the parent, which fails the test with it
        queue.put((name, [], 0, f"{type(exc).__name__}: {exc}"))


def test_two_processes_one_file_no_integrity_error_no_lost_update(store_location):
    path = store_location()
    rng = np.random.default_rng(SEED)
    target_vector = unit_rows(rng, 1)[0]
    with MemoryStore(path, dim=DIM) as store:
        assert store.add("the target", target_vector, created_at=NOW) == 0
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    queue = context.Queue()
    processes = [context.Process(target=worker, args=(path, name, target_vector, start, queue))
                 for name in ("left", "right")]
    for process in processes:
        process.start()
    start.set()
    reports = [queue.get(timeout=300) for _ in processes]
    for process in processes:
        process.join(timeout=60)
    errors = [error for _, _, _, error in reports if error]
    assert not errors, errors  # in particular no sqlite3.IntegrityError
    ids = [memory_id for _, batch, _, _ in reports for memory_id in batch]
    unreinforced = sum(count for _, _, count, _ in reports)
    assert len(ids) == len(set(ids)) == 2 * ADDS_PER_PROCESS
    with MemoryStore(path) as reopened:
        assert len(reopened) == 1 + 2 * ADDS_PER_PROCESS
        assert sorted(ids) == list(range(1, 1 + 2 * ADDS_PER_PROCESS))  # dense, allocated in the file
        # zero lost updates: every recall that said it reinforced counted once
        assert reopened.get(0).recall_count == 2 * RECALLS_PER_PROCESS - unreinforced


def test_a_second_store_object_sees_adds_updates_forgets_and_supersedes(store_location):
    path = store_location()
    rng = np.random.default_rng(SEED + 1)
    E = unit_rows(rng, 6)
    writer = MemoryStore(path, dim=DIM)
    reader = MemoryStore(path)
    first = writer.add("Orion runs on MySQL 5.7", E[0], entities=["Orion"], created_at=NOW - 300 * 86400)
    assert reader.get(first).text == "Orion runs on MySQL 5.7"  # refreshed on the next call
    second = reader.add("written by the reader", E[1], created_at=NOW)
    assert second != first and writer.get(second).text == "written by the reader"
    replacement = writer.add("Orion moved to Postgres 16", E[2], entities=["Orion"], supersedes=first,
                             created_at=NOW - 20 * 86400)
    assert reader.get(first).superseded_by == replacement
    assert reader.get(replacement).supersedes == first
    writer.update(second, text="edited by the writer")
    assert reader.get(second).text == "edited by the writer"
    writer.forget(second)
    assert second not in {hit.id for hit in reader.recall("edited", E[1], 5, at_time=NOW, reinforce=False)}
    with pytest.raises(KeyError):
        reader.get(second)
    result = reader.recall("Orion database", E[0], 5, at_time=NOW, cue_entities=["Orion"], reinforce=False)
    order = result.ids.tolist()
    assert order.index(replacement) < order.index(first)  # the stale fact ranks below its replacement
    writer.close()
    reader.close()


def test_an_old_file_without_the_new_columns_is_migrated(tmp_path):
    import sqlite3

    path = str(tmp_path / "old.sqlite")
    rng = np.random.default_rng(SEED + 2)
    with MemoryStore(path, dim=DIM) as store:
        store.add("kept across the migration", unit_rows(rng, 1)[0])
    connection = sqlite3.connect(path)
    for column in ("session", "supersedes", "superseded_by", "revision"):
        connection.execute(f"ALTER TABLE memories DROP COLUMN {column}")
    connection.commit()
    connection.close()
    with MemoryStore(path) as store:
        assert store.get(0).text == "kept across the migration" and store.get(0).session is None
        assert store.add("after", unit_rows(rng, 1)[0]) == 1
