"""SQLite persistence (WAL, no pickle), crash safety under SIGKILL, and concurrent use.

The round trip, the closed store and the SIGKILL test run on both backends (``store_location``:
an SQLite file and a PostgreSQL schema)."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from fieldrank.memory import MODES, MemoryStore
from fieldrank.memory._persistence import FORMAT_NAME

from tests.helpers import DAY, unit_rows

DIM = 12
NOW = 1_800_000_000.0


def expected_vector(index: int) -> np.ndarray:
    """The embedding the crash child and the thread writer give memory number ``index``."""
    vector = np.random.default_rng(index).standard_normal(DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


# ---------------------------------------------------------------------------- persistence


def test_file_store_round_trip(store_location):
    rng = np.random.default_rng(1)
    path = store_location()
    E = unit_rows(rng, 6, DIM)
    with MemoryStore(path, dim=DIM) as store:
        ids = store.add_many([f"note {i} river" for i in range(6)], E, tenants=["a", "a", "a", "b", "b", "a"],
                             importances=[0.1, 0.9, 0.5, 0.5, 0.5, 0.3], tags=[["x"], ["y"], [], [], ["x"], []],
                             entities=[["Orion"], [], ["Orion"], [], [], []], created_at=NOW - DAY)
        store.update(int(ids[2]), text="changed river text", importance=0.8)
        store.forget(int(ids[5]))
        before = store.recall("river", E[1], 3, tenant="a", mode="full", at_time=NOW)  # reinforces + links
        memories = {i: store.get(i) for i in ids[:5].tolist()}
        snapshot = store.recall("river", E[1], 3, tenant="a", mode="full", at_time=NOW, reinforce=False)
    with MemoryStore(path) as reopened:
        assert reopened.dim == DIM and len(reopened) == 5
        assert {i: reopened.get(i) for i in ids[:5].tolist()} == memories
        assert reopened.get(int(ids[2])).text == "changed river text"
        assert reopened.why_not(int(ids[5]), "river", E[1], tenant="a").reason == "tombstoned"
        again = reopened.recall("river", E[1], 3, tenant="a", mode="full", at_time=NOW, reinforce=False)
        assert again.ids.tolist() == snapshot.ids.tolist()
        assert [h.factors.graph_activation for h in again] == pytest.approx(
            [h.factors.graph_activation for h in snapshot])
        assert all(reopened.get(h.id).recall_count >= 1 for h in before)
        new_id = reopened.add("after reopen", E[0], tenant="a")
        assert new_id == 6  # ids are never reused
    with pytest.raises(ValueError, match="dim must match"):
        MemoryStore(path, dim=DIM + 1)


def test_storage_uses_no_pickle(tmp_path):
    path = tmp_path / "memories.sqlite"
    vector = expected_vector(3)
    with MemoryStore(path, dim=DIM) as store:
        store.add("hello", vector, tags=["a", "b"], entities=["E"])
    connection = sqlite3.connect(path)
    try:
        assert connection.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        meta = dict(connection.execute("SELECT key, value FROM meta"))
        assert meta["format"] == FORMAT_NAME and int(meta["dim"]) == DIM
        blob, tags, entities, kind = connection.execute(
            "SELECT embedding, tags, entities, typeof(embedding) FROM memories").fetchone()
    finally:
        connection.close()
    assert kind == "blob" and len(blob) == 4 * DIM
    np.testing.assert_array_equal(np.frombuffer(blob, dtype="<f4"), vector)
    assert json.loads(tags) == ["a", "b"] and json.loads(entities) == ["E"]
    assert b"\x80\x04" not in blob[:2]  # not a pickle stream


def test_new_file_needs_dim_and_rejects_foreign_files(tmp_path):
    with pytest.raises(ValueError, match="dim is required"):
        MemoryStore(tmp_path / "new.sqlite")
    foreign = tmp_path / "foreign.sqlite"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    connection.execute("INSERT INTO meta VALUES ('format', 'something-else')")
    connection.commit()
    connection.close()
    with pytest.raises(ValueError, match=r"not a fieldrank\.memory file"):
        MemoryStore(foreign)
    with pytest.raises(ValueError, match="synchronous"):
        MemoryStore(tmp_path / "x.sqlite", dim=DIM, synchronous="SOMETIMES")


def test_closed_store_refuses_work(store_location):
    store = MemoryStore(store_location(), dim=DIM)
    store.close()
    with pytest.raises(ValueError, match="closed"):
        store.add("x", expected_vector(0))
    with pytest.raises(ValueError, match="closed"):
        store.recall("x", expected_vector(0))


# ---------------------------------------------------------------------------- SIGKILL mid-stream

CHILD = textwrap.dedent(
    """
    import sys
    import numpy as np
    from fieldrank.memory import MemoryStore

    store = MemoryStore(sys.argv[1], dim={dim})
    for index in range(100_000):
        vector = np.random.default_rng(index).standard_normal({dim}).astype(np.float32)
        if index % 7 == 3:
            ids = store.add_many([f"memory {{index}} part {{j}}" for j in range(3)], np.stack([vector] * 3),
                                 tenants="crash", tags=[["t"]] * 3)
            print(" ".join(str(i) for i in ids), flush=True)
        else:
            memory_id = store.add(f"memory {{index}}", vector, tenant="crash", tags=["t"], entities=["e"])
            print(memory_id, flush=True)
    """
).format(dim=DIM)


def test_sigkill_mid_stream_keeps_every_returned_add(tmp_path, store_location):
    path = store_location()
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    child = subprocess.Popen([sys.executable, str(script), str(path)], stdout=subprocess.PIPE, text=True,
                             cwd=tmp_path)
    returned: list[int] = []
    deadline = time.monotonic() + 60
    try:
        while len(returned) < 60 and time.monotonic() < deadline:
            line = child.stdout.readline()
            if not line:
                break
            returned.extend(int(token) for token in line.split())
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
        child.stdout.close()
    assert child.returncode == -signal.SIGKILL
    assert len(returned) >= 60, "the child stopped early"
    # The child's sequence of adds: one memory per index, or a triple (one transaction) at index % 7 == 3.
    expected: list[tuple[str, int]] = []
    boundaries = {0}
    index = 0
    while len(expected) < len(returned) + 3:
        count = 3 if index % 7 == 3 else 1
        expected += [(f"memory {index} part {j}" if count == 3 else f"memory {index}", index) for j in range(count)]
        boundaries.add(len(expected))
        index += 1
    with MemoryStore(path) as store:
        n = len(store)
        assert set(returned) <= set(range(n))  # every add that returned is there
        assert n in boundaries  # ... and the store ends on a whole add: a triple is all or nothing
        assert n <= len(returned) + 3  # at most the one add in flight at the kill is extra
        for memory_id in range(n):
            memory = store.get(memory_id)
            text, index = expected[memory_id]
            assert memory.text == text and memory.tenant == "crash" and memory.tags == ("t",)
            np.testing.assert_allclose(memory.embedding, expected_vector(index), rtol=1e-6, atol=1e-7)
        result = store.recall("memory", expected_vector(0), 5, tenant="crash", mode="full", reinforce=False)
        assert result.ids[0] == 0


# ---------------------------------------------------------------------------- threads


def test_concurrent_recalls_while_adding_and_forgetting():
    """Readers never crash, never see another tenant, never see a half-added memory."""
    store = MemoryStore(dim=DIM)
    n_seed = 200
    store.add_many([f"memory {i}" for i in range(n_seed)], np.stack([expected_vector(i) for i in range(n_seed)]),
                   tenants=[("even", "odd")[i % 2] for i in range(n_seed)], tags=[["t"]] * n_seed)
    stop = threading.Event()
    errors: list[BaseException] = []
    forgotten: list[int] = []
    checked = [0]

    def writer() -> None:
        try:
            index = n_seed
            while not stop.is_set():
                memory_id = store.add(f"memory {index}", expected_vector(index), tenant=("even", "odd")[index % 2],
                                      tags=["t"])
                assert memory_id == index
                if index % 3 == 0:
                    store.forget(index - 50)
                    forgotten.append(index - 50)
                if index % 97 == 0:
                    store.compact()
                index += 1
        except BaseException as exc:
            errors.append(exc)

    def reader(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            while not stop.is_set():
                tenant = ("even", "odd")[int(rng.integers(0, 2))]
                mode = MODES[int(rng.integers(0, len(MODES)))]
                q = expected_vector(int(rng.integers(0, 400)))
                gone_before = set(forgotten)
                result = store.recall("memory", q, 8, tenant=tenant, mode=mode, cue_tags=["t"],
                                      reinforce=bool(rng.integers(0, 2)))
                for hit in result:
                    assert hit.tenant == tenant and hit.id % 2 == (tenant == "odd")
                    assert hit.text == f"memory {hit.id}"
                    assert hit.factors.cosine == pytest.approx(float(expected_vector(hit.id) @ q), abs=1e-5)
                    assert hit.id not in gone_before
                checked[0] += len(result)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=writer)] + [threading.Thread(target=reader, args=(s,)) for s in range(3)]
    for thread in threads:
        thread.start()
    # run until the readers have checked results and the writer has forgotten something (not for
    # a fixed wall time, which a loaded machine could fill with nothing), within a generous deadline
    deadline = time.monotonic() + 60.0
    time.sleep(0.5)
    while not (checked[0] > 0 and forgotten) and time.monotonic() < deadline and not errors:
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors, errors[0]
    assert checked[0] > 0 and len(forgotten) > 0
