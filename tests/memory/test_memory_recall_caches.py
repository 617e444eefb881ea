"""What a recall memoises (eligible rows, durable rows, timeline, frozen copies:
``columns.Generation.derived``; the links as arrays: ``_signals._links.LinkIndex``) never changes a
result: after every kind of change a recall served from the caches equals one computed from
scratch, field for field; and the vectorised link and reinforcement paths follow their formulas."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fieldrank.memory import DEFAULT_PARAMS, MemoryStore
from fieldrank.memory._columns import DerivedCache
from fieldrank.memory._gates import GateSpec, eligible_rows
from fieldrank.memory._schema import cue_vector

from tests.helpers import DAY, unit_rows

SEED = 20261201
DIM = 16
NOW = 1_800_000_000.0


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def forget_derived(store: MemoryStore) -> None:
    """Drop every memoised value, so that the next recall derives everything again."""
    generation = store._generation
    generation.derived = DerivedCache()
    generation._frozen_live = generation._frozen_superseded_by = (None, None)
    store._links.reindex()


def outcome(result) -> dict:
    return {
        "hits": [(h.id, h.rank, h.score, h.fused_score, dataclasses.asdict(h.factors), dict(h.admitted_by),
                  h.reserved_slot, h.superseded_by, h.recall_count, h.age_days, h.dominant_factor, h.weakest_factor)
                 for h in result],
        "candidates": result.candidate_ids.tolist(),
        "admitted": {g: ids.tolist() for g, ids in result.admitted.items()},
    }


WORDS = ("deploy", "friday", "garden", "budget", "server", "dinner", "travel", "doctor", "launch", "review")


def texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(WORDS[i] for i in rng.integers(0, len(WORDS), 5)) for _ in range(n)]


def test_memoised_recall_equals_a_recall_from_scratch_after_every_change(rng):
    store = MemoryStore(dim=DIM)
    n = 300
    ids = store.add_many(
        texts(rng, n), unit_rows(rng, n, DIM), tenants=["a"] * (n - 40) + ["b"] * 40,
        importances=np.where(rng.random(n) < 0.1, 0.9, 0.3), created_at=NOW - rng.uniform(0, 400, n) * DAY,
        sessions=[f"s{i // 20}" for i in range(n)], entities=[("orion",) if i % 7 == 0 else () for i in range(n)],
    ).tolist()
    cues = unit_rows(rng, 4, DIM)

    def recalls() -> list[dict]:
        out = []
        for i, q in enumerate(cues):
            out.append(outcome(store.recall(f"{WORDS[i]} on friday", q, 10, tenant="a", at_time=NOW,
                                            cue_entities=["orion"] if i % 2 else None, reinforce=False)))
        out.append(outcome(store.recall("deploy budget", cues[0], 8, tenant="b", at_time=NOW, reinforce=False)))
        out.append(outcome(store.recall("deploy", cues[1], 5, tenant="a", at_time=NOW, tier_mask=["episodic"],
                                        min_importance=0.2, reinforce=False)))
        out.append(outcome(store.recall("garden review", None, 10, tenant="a", mode="keyword", at_time=NOW,
                                        reinforce=False)))
        return out

    changes = [
        ("nothing", lambda: None),
        ("add", lambda: store.add("deploy on friday", cues[0], tenant="a", importance=0.9, created_at=NOW)),
        ("add_many", lambda: store.add_many(texts(rng, 5), unit_rows(rng, 5, DIM), tenants="a", created_at=NOW - DAY)),
        ("supersede", lambda: store.add("garden budget changed", cues[2], tenant="a", supersedes=ids[3])),
        ("forget", lambda: store.forget(ids[5])),
        ("update", lambda: store.update(ids[8], text="launch review friday", importance=0.95)),
        ("reinforcing recall", lambda: store.recall("deploy friday", cues[0], 10, tenant="a", at_time=NOW)),
        ("other tenant", lambda: store.add("deploy friday", cues[0], tenant="b")),
        ("compact", lambda: store.compact()),
    ]
    recalls()  # fill the caches
    for name, change in changes:
        change()
        served = recalls()
        assert len(store._generation.derived) > 0, "recall memoises nothing: the comparison would prove nothing"
        forget_derived(store)
        assert recalls() == served, f"a memoised value went stale after: {name}"


def test_memoised_arrays_are_read_only_and_shared(rng):
    store = MemoryStore(dim=DIM)
    store.add_many(texts(rng, 50), unit_rows(rng, 50, DIM), tenants="a")
    store.recall("deploy", unit_rows(rng, 1, DIM)[0], tenant="a", reinforce=False)
    snapshot = store._generation.snapshot()
    eligible = eligible_rows(snapshot, GateSpec(tenant="a"))
    assert eligible is eligible_rows(store._generation.snapshot(), GateSpec(tenant="a"))
    for array in (snapshot.live, snapshot.superseded_by, eligible.rows, eligible.mask):
        assert not array.flags.writeable
    store.forget(int(snapshot.ids[0]))
    fresh = eligible_rows(store._generation.snapshot(), GateSpec(tenant="a"))
    assert fresh is not eligible and fresh.rows.size == eligible.rows.size - 1


def test_link_activation_follows_the_formula(rng):
    """a(T) = Σ over candidate seeds s of max(cos(q, s), 0) · w_hebb(s, T) (no entities)."""
    store = MemoryStore(dim=DIM)
    E = unit_rows(rng, 60, DIM)
    store.add_many(texts(rng, 60), E, tenants="a", created_at=NOW - DAY)
    for q in unit_rows(rng, 12, DIM):  # co-recall links between the memories returned together
        store.recall("deploy friday", q, 6, tenant="a", at_time=NOW)
    q = unit_rows(rng, 1, DIM)[0]
    result = store.recall("deploy friday", q, 10, tenant="a", at_time=NOW, reinforce=False)
    union = set(result.candidate_ids.tolist())
    checked = 0
    for hit in result:
        expected = sum(max(float(E[s] @ q), 0.0) * weight
                       for s, neighbours in store._links.weights.items() if s in union and s != hit.id
                       for target, weight in neighbours.items() if target == hit.id)
        assert hit.factors.graph_activation == pytest.approx(expected, rel=1e-5, abs=1e-12)
        checked += expected > 0
    assert checked > 0


def test_reinforcing_several_memories_applies_each_its_own_gain(rng):
    params = DEFAULT_PARAMS
    store = MemoryStore(dim=DIM)
    q = unit_rows(rng, 1, DIM)[0]
    ages, strengths = (10.0, 60.0, 200.0), (1.0, 2.0, 4.0)
    ids = [store.add(f"rule {i}", q, created_at=NOW - age * DAY, storage_strength=s)
           for i, (age, s) in enumerate(zip(ages, strengths))]
    store.add("unrelated", -q, created_at=NOW)
    result = store.recall(None, q, 3, mode="vector", at_time=NOW)
    assert sorted(result.ids.tolist()) == sorted(ids)
    for memory_id, age, s in zip(ids, ages, strengths):
        d = max(2 ** (-age / (params.retrieval_half_life_days * s)), 0.10)
        memory = store.get(memory_id)
        assert memory.storage_strength == pytest.approx(s + params.storage_gain * (1 - d))
        assert memory.last_access == NOW and memory.recall_count == 1
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            assert store._links.weights[a][b] == store._links.weights[b][a] == pytest.approx(params.hebbian_rate)


def lived_in_store(rng: np.random.Generator) -> tuple[MemoryStore, np.ndarray]:
    """A store with a durable tier (importance 0.9 on a fifth of it) and co-recall links."""
    store = MemoryStore(dim=DIM)
    E = unit_rows(rng, 120, DIM)
    importance = np.where(rng.random(120) < 0.2, 0.9, 0.3)
    store.add_many(texts(rng, 120), E, tenants="a", importances=importance, created_at=NOW - DAY)
    for q in unit_rows(rng, 15, DIM):
        store.recall("deploy friday", q, 8, tenant="a", at_time=NOW)
    return store, E


@pytest.mark.parametrize("mode", ["hybrid", "full"])
def test_link_rows_by_id_table_equal_the_sorted_search(rng, mode, monkeypatch):
    """Graph activation maps link ids to rows through a table over ids, or (sparse ids) a sorted
    search: both give the same recall, field for field."""
    from fieldrank.memory._signals import _graph

    store, _ = lived_in_store(rng)
    cues = unit_rows(rng, 6, DIM)
    with_table = [outcome(store.recall("deploy", q, 10, tenant="a", mode=mode, at_time=NOW, reinforce=False))
                  for q in cues]
    monkeypatch.setattr(_graph, "_ID_TABLE_ROWS_FACTOR", -1)
    monkeypatch.setattr(_graph, "_ID_TABLE_MIN", -1)
    searched = [outcome(store.recall("deploy", q, 10, tenant="a", mode=mode, at_time=NOW, reinforce=False))
                for q in cues]
    assert with_table == searched
    assert any(hit[4]["graph_activation"] > 0 for o in with_table for hit in o["hits"])  # links were followed


def test_reused_cosines_equal_the_cue_times_every_candidate(rng):
    """The cosine factor of every hit (read back from the tier's z pass and the graph's seeds
    where those computed it) is the cue times the stored row, bit for bit, as one einsum gives it."""
    store, _ = lived_in_store(rng)
    generation = store._generation
    embeddings = generation.embeddings.buffer[:generation.n]
    for q in unit_rows(rng, 6, DIM):
        result = store.recall("deploy", q, 20, tenant="a", mode="full", at_time=NOW, reinforce=False)
        rows = np.array([generation.row_of[h.id] for h in result], dtype=np.int64)
        cue = cue_vector(q, DIM)  # the cue as the store holds it (a unit float32 vector)
        expected = np.einsum("ij,j->i", embeddings[rows], cue).astype(np.float64)
        assert [h.factors.cosine for h in result] == expected.tolist()
