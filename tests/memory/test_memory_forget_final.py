"""A forget is final in every process (issue 25).

No recall, ``get``, ``why_not``, ``update``, ``len``, ``in`` or ``tenants`` of any store object or
process returns or revives a memory after its ``forget()`` returned, with purges, compactions and
reopens in any interleaving. Before the fix a store refreshed only by reading rows newer than the
revision it had applied, and ``compact(purge=True)`` deletes the tombstoned rows: a store that had
not read the tombstone yet never learned of the forget (2,439 hits of forgotten memories in 60 s).

Two store objects on one file are two SQLite connections, exactly as two processes are; the
deterministic interleavings below use them, and one test runs a real second process.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import sqlite3

import numpy as np
import pytest

from fieldrank.memory import MemoryStore
from tests.postgres_server import query_store

DIM = 16
SEED = 2525
N = 40
NOW = 1_760_000_000.0


def unit_rows(n: int, seed: int = SEED) -> np.ndarray:
    X = np.random.default_rng(seed).normal(size=(n, DIM))
    return (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)


VECTORS = unit_rows(N)


def make_file(path) -> list[int]:
    with MemoryStore(path, dim=DIM) as store:
        ids = store.add_many([f"note {i} about topic {i % 5}" for i in range(N)], VECTORS,
                             tags=[["t"]] * N, created_at=NOW).tolist()
    return ids


def assert_gone(store: MemoryStore, memory_id: int) -> None:
    """Every read path of ``store`` agrees that ``memory_id`` is not a live memory."""
    hits = store.recall(None, VECTORS[memory_id], N, mode="vector", at_time=NOW, reinforce=False)
    assert memory_id not in hits.ids.tolist()
    for mode in ("hybrid", "full"):
        assert memory_id not in store.recall(f"note {memory_id}", VECTORS[memory_id], N, mode=mode,
                                             at_time=NOW, reinforce=False).ids.tolist()
    with pytest.raises(KeyError):
        store.get(memory_id)
    assert memory_id not in store
    assert store.why_not(memory_id, None, VECTORS[memory_id], N, mode="vector",
                         at_time=NOW).reason in ("tombstoned", "not_found")
    with pytest.raises(KeyError):
        store.update(memory_id, importance=0.9)


@contextlib.contextmanager
def forgotten_first(store: MemoryStore, method: str, other: MemoryStore, memory_id: int):
    """Inside the block, ``store``'s backend ``method`` lets ``other`` forget ``memory_id`` first: a race
    injected after ``store`` refreshed and before it writes."""
    original = getattr(store._backend, method)

    def injected(*args, **kwargs):
        assert other.forget(memory_id)
        return original(*args, **kwargs)

    setattr(store._backend, method, injected)
    try:
        yield
    finally:
        delattr(store._backend, method)


@pytest.fixture
def two_stores(store_location):
    """The store of make_file at ``path`` open in two stores ``a`` and ``b`` (closed after the test);
    on each backend."""
    path = store_location()
    make_file(path)
    a, b = MemoryStore(path), MemoryStore(path)
    yield path, a, b
    a.close()
    b.close()


def live_in_file(path) -> set[int]:
    return {i for (i,) in query_store(path, "SELECT id FROM memories WHERE tombstone = 0")}


# The interleavings of the writer (forget, purge, compact, reopen) with a reader that last looked
# at the file before the forget. Each is a list of writer steps run between the reader's last
# look and its next call.
INTERLEAVINGS = {
    "forget": ["forget"],
    "forget, purge": ["forget", "purge"],
    "forget, compact, purge": ["forget", "compact", "purge"],
    "forget, purge, reopen, add": ["forget", "purge", "reopen", "add"],
    "forget, purge, forget another, purge": ["forget", "purge", "forget_other", "purge"],
    "forget, purge, add, update another": ["forget", "purge", "add", "update_other"],
}


@pytest.mark.parametrize("steps", list(INTERLEAVINGS.values()), ids=list(INTERLEAVINGS))
def test_a_lagging_reader_never_returns_a_forgotten_memory(store_location, steps):
    path = store_location()
    make_file(path)
    writer, reader = MemoryStore(path), MemoryStore(path)
    target, other = 7, 11
    assert target in reader.recall(None, VECTORS[target], 3, mode="vector", at_time=NOW).ids.tolist()
    for step in steps:
        if step == "forget":
            assert writer.forget(target)
        elif step == "forget_other":
            assert writer.forget(other)
        elif step == "purge":
            writer.compact(purge=True)
        elif step == "compact":
            writer.compact()
        elif step == "reopen":
            writer.close()
            writer = MemoryStore(path)
        elif step == "add":
            writer.add("a new note", unit_rows(1, 99)[0], created_at=NOW)
        elif step == "update_other":
            writer.update(3, text="note 3 rewritten")
    assert_gone(reader, target)
    assert len(reader) == len(writer)
    if "forget_other" in steps:
        assert_gone(reader, other)
    # The reader's own compaction and purge change nothing of that; the file keeps the forget.
    reader.compact(purge=True)
    assert_gone(reader, target)
    assert target not in live_in_file(path)
    with MemoryStore(path) as reopened:
        assert_gone(reopened, target)
    writer.close()
    reader.close()


def test_a_stale_store_compacts_and_purges_only_after_refreshing(two_stores):
    """compact() refreshes first: a store that has not seen another's forget neither keeps nor
    purges on its stale view, and a forget committed between its refresh and its purge is dropped too."""
    path, a, b = two_stores
    assert a.forget(5)
    dropped = b.compact(purge=True)  # b had not seen the forget
    assert dropped == 1
    assert_gone(b, 5)
    assert 5 not in live_in_file(path)
    # A forget that lands inside b's purge transaction window: injected between refresh and purge.
    with forgotten_first(b, "purge_tombstones", a, 6):
        b.compact(purge=True)
    assert_gone(b, 6)
    assert_gone(a, 6)


def test_update_of_a_forgotten_or_purged_id_raises_and_never_revives(two_stores):
    path, a, b = two_stores
    assert b.get(4).id == 4 and b.get(8).id == 8
    # forgotten (not purged) in another store, b stale: KeyError, nothing written
    assert a.forget(4)
    with pytest.raises(KeyError, match="forgotten"):
        b.update(4, text="revived?")
    # purged in another store, b stale
    assert a.forget(8)
    a.compact(purge=True)
    with pytest.raises(KeyError):
        b.update(8, importance=1.0)
    # the race: the forget lands after b's refresh, before b's write (injected at the write)
    with forgotten_first(b, "replace", a, 9), pytest.raises(KeyError, match="forgotten"):
        b.update(9, text="revived?")
    assert_gone(b, 9)
    assert {4, 8, 9}.isdisjoint(live_in_file(path))
    assert query_store(path, "SELECT text FROM memories WHERE id = 9") == [("note 9 about topic 4",)]
    for store in (a, b):
        for memory_id in (4, 8, 9):
            assert_gone(store, memory_id)
    # a forget racing with a forget: the second says it was not live; both agree afterwards
    with forgotten_first(b, "tombstone", a, 12):
        assert b.forget(12) is False
    assert_gone(b, 12)


def test_a_supersede_of_a_memory_forgotten_elsewhere_raises_and_writes_nothing(two_stores):
    path, a, b = two_stores
    assert b.get(2).id == 2
    with forgotten_first(b, "insert", a, 2), pytest.raises(KeyError, match="supersedes"):
        b.add("replacement", unit_rows(1, 5)[0], supersedes=2, created_at=NOW)
    assert len(b) == len(a) == N - 1
    assert 2 not in live_in_file(path)


def test_reinforcement_never_links_or_revives_a_memory_forgotten_elsewhere(two_stores):
    path, a, b = two_stores
    result = b.recall(None, VECTORS[0], 5, mode="vector", at_time=NOW, reinforce=False)
    hit_ids = result.ids.tolist()
    victim = hit_ids[1]
    with forgotten_first(b, "reinforce", a, victim):
        b._reinforce(hit_ids, NOW + 10)
    assert query_store(path, "SELECT COUNT(*) FROM links WHERE a = ? OR b = ?", (victim, victim)) == [(0,)]
    assert query_store(path, "SELECT recall_count, tombstone FROM memories WHERE id = ?", (victim,)) == [(0, 1)]
    assert_gone(b, victim)


# ---------------------------------------------------------------------------- two real processes


def reader_process(path: str, pipe, done) -> None:
    """Recall, get and update forgotten memories as the parent reports them; count violations.

    An id arrives only after the parent's forget() returned, and it is added to ``forgotten``
    before the next call starts: any of those calls that returns (or revives) it is a violation.
    """
    try:
        store = MemoryStore(path)
        vectors = {i: store.get(i).embedding for i in range(N)}
        forgotten: set[int] = set()
        violations: list[str] = []
        checks = 0
        pipe.send("ready")
        while True:
            while pipe.poll():
                message = pipe.recv()
                if message == "stop":
                    pipe.send((checks, violations))
                    return
                forgotten.add(message)
                pipe.send(("ack", message))  # lockstep phases wait for it
            recent = sorted(forgotten)[-3:] or [0]
            for memory_id in recent:
                hits = store.recall(None, vectors[memory_id], 5, mode="vector", at_time=NOW).ids.tolist()
                returned = forgotten.intersection(hits)
                if returned:
                    violations.append(f"recall returned forgotten {sorted(returned)}")
                if memory_id in forgotten:
                    try:
                        store.get(memory_id)
                        violations.append(f"get returned forgotten {memory_id}")
                    except KeyError:
                        pass
                    try:
                        store.update(memory_id, importance=0.25)
                        violations.append(f"update succeeded on forgotten {memory_id}")
                    except KeyError:
                        pass
                    if memory_id in store:
                        violations.append(f"{memory_id} in store after forget")
                checks += 1
    except BaseException as exc:  # reported to the parent, which fails the test with it
        pipe.send((-1, [f"{type(exc).__name__}: {exc}"]))


def test_two_processes_forget_and_purge_against_recall_get_and_update(store_location):
    path = store_location()
    make_file(path)
    context = multiprocessing.get_context("spawn")
    parent_end, child_end = context.Pipe()
    done = context.Event()
    child = context.Process(target=reader_process, args=(path, child_end, done))
    child.start()
    try:
        assert parent_end.poll(120), "the reader process did not start"
        assert parent_end.recv() == "ready"
        order = np.random.default_rng(SEED).permutation(N)[: N - 4].tolist()
        with MemoryStore(path) as writer:
            # Phase 1, lockstep (deterministic): forget (and, for every other id, purge at once,
            # before the reader can have read the tombstone), then report it and wait for the
            # reader to have taken it; its next calls must not see it.
            for position, memory_id in enumerate(order[:20]):
                assert writer.forget(memory_id)
                if position % 2 == 0:
                    writer.compact(purge=True)
                parent_end.send(memory_id)
                assert parent_end.poll(60)
                assert parent_end.recv() == ("ack", memory_id)
            # Phase 2, free-running: forgets, purges and compactions race the reader's calls.
            for position, memory_id in enumerate(order[20:]):
                assert writer.forget(memory_id)
                if position % 3 == 0:
                    writer.compact(purge=True)
                elif position % 3 == 1:
                    writer.compact()
                parent_end.send(memory_id)
            writer.compact(purge=True)
        done.set()
        parent_end.send("stop")
        report = None
        while report is None:
            assert parent_end.poll(120), "the reader process did not report"
            message = parent_end.recv()
            if not (isinstance(message, tuple) and message[0] == "ack"):
                report = message
        checks, violations = report
        assert not violations, violations[:10]
        assert checks >= 20
    finally:
        child.join(timeout=60)
        if child.is_alive():
            child.kill()
    assert live_in_file(path) == set(range(N)) - set(order)


@pytest.mark.parametrize("key", ["purge_epoch", "revision"])
def test_the_refresh_counters_in_meta_are_checked_on_open(tmp_path, key):
    """A file without them (older) opens (missing reads as 0); a tampered one is refused naming the key."""
    from fieldrank.memory import StoreFormatError

    path = str(tmp_path / "m.sqlite")
    make_file(path)
    with MemoryStore(path) as store:
        store.forget(1)
        store.compact(purge=True)  # writes purge_epoch
    with sqlite3.connect(path) as connection:
        connection.execute("DELETE FROM meta WHERE key = ?", (key,))
    with MemoryStore(path) as store:
        assert len(store) == N - 1
        assert_gone(store, 1)
    with sqlite3.connect(path) as connection:
        connection.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, 'abc')", (key,))
    with pytest.raises(StoreFormatError, match=key):
        MemoryStore(path)
