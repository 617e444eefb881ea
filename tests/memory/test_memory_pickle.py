"""A MemoryStore pickles and deep-copies (issue #37): a file store reopens its file by path, an
in-memory one copies its rows; a copy recalls as the original does, bit for bit, and the two
change independently afterwards."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

from fieldrank.memory import MemoryStore
from tests.helpers import SEED, unit_rows

DIM = 16
NOW = 1.7e9
DAY = 86400.0


def lived_in(store: MemoryStore, rng: np.random.Generator) -> np.ndarray:
    """Memories with sessions, entities, tiers; forgets, an update, a supersede, reinforcing recalls."""
    n = 240
    E = unit_rows(rng, n, DIM)
    ids = store.add_many([f"note {i} about topic {i % 7}" for i in range(n)], E,
                         entities=[[f"person{i % 5}"] for i in range(n)], sessions=[f"s{i // 4}" for i in range(n)],
                         importances=rng.uniform(0, 1, n), tiers=["core" if i % 11 == 0 else "episodic" for i in range(n)],
                         created_at=NOW - rng.uniform(0, 300, n) * DAY)
    for memory_id in ids[::9]:
        store.forget(int(memory_id))
    store.update(int(ids[1]), text="the note changed", importance=0.9)
    store.add("a replacement note", E[2], supersedes=int(ids[2]), created_at=NOW)
    for i, q in enumerate(unit_rows(rng, 25, DIM)):
        store.recall("note topic", q, 10, at_time=NOW + i * DAY, cue_entities=["person1"] if i % 3 else None)
    return ids


def outcome(store: MemoryStore, cues: np.ndarray, ids: np.ndarray) -> list:
    out = []
    for q in cues:
        for mode in ("hybrid", "full", "rerank"):
            result = store.recall("note topic 3", q, 10, mode=mode, at_time=NOW + 40 * DAY, reinforce=False)
            out.append([(h.id, h.score.hex(), h.fused_score.hex(), dict(h.admitted_by), h.recall_count)
                        for h in result])
        why = store.why_not(int(ids[5]), "note topic 3", q, 10, at_time=NOW + 40 * DAY)
        out.append((why.reason, why.rank, dict(why.generator_ranks)))
    return out


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_an_in_memory_copy_recalls_as_the_original_and_changes_alone(how):
    rng = np.random.default_rng(SEED)
    store = MemoryStore(dim=DIM)
    ids = lived_in(store, rng)
    twin = pickle.loads(pickle.dumps(store)) if how == "pickle" else copy.deepcopy(store)
    cues = unit_rows(rng, 6, DIM)
    assert len(twin) == len(store) and twin.tenants() == store.tenants()
    assert outcome(twin, cues, ids) == outcome(store, cues, ids)
    forgotten = int(ids[9])
    assert twin.why_not(forgotten, "note", cues[0]).reason == "tombstoned"
    # independent afterwards: a write or a reinforcing recall in the copy leaves the original alone
    before = [store.get(int(i)).recall_count for i in ids[1:40:3]]
    twin.add("only in the copy", cues[0])
    for q in cues:
        twin.recall("note topic", q, 10, at_time=NOW + 50 * DAY)
    assert len(twin) == len(store) + 1
    assert [store.get(int(i)).recall_count for i in ids[1:40:3]] == before


def test_a_file_store_pickles_as_its_path(store_location):
    path = store_location()
    rng = np.random.default_rng(SEED)
    with MemoryStore(path, dim=DIM, synchronous="NORMAL") as store:
        ids = lived_in(store, rng)
        twin = pickle.loads(pickle.dumps(store))
        opened = MemoryStore(path)  # what any process opening the file sees (rows in id order)
        try:
            assert twin.path == store.path and len(twin) == len(store)
            cues = unit_rows(rng, 3, DIM)
            assert outcome(twin, cues, ids) == outcome(opened, cues, ids)
            new_id = twin.add("written through the copy", cues[0])
            assert store.get(new_id).text == "written through the copy"  # one file, two objects
        finally:
            twin.close()
            opened.close()
        deep = copy.deepcopy(store)
        deep.close()


def test_a_closed_store_does_not_pickle():
    store = MemoryStore(dim=DIM)
    store.close()
    with pytest.raises(ValueError, match="closed"):
        pickle.dumps(store)
