"""Tenant isolation (property test) and forgetting: no recall, in any mode and through any
generator, returns another tenant's memory or a forgotten one, before or after compact()."""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.memory import DEFAULT_PARAMS, GENERATORS, MODES, MemoryStore

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402 - after importorskip
from hypothesis import strategies as st  # noqa: E402

DIM = 8
TENANTS = ("t0", "t1", "t2")
WORDS = ("river", "garden", "deploy", "friday", "peanut", "budget", "orion", "dana", "the", "and")
TAGS = ("policy", "health", "deploy")
ENTITIES = ("Orion", "Dana", "Atlas")
NOW = 1_800_000_000.0
DAY = 86400.0
#: Small quotas so that every generator is under pressure and the graph expands.
PARAMS = DEFAULT_PARAMS.replace(dense_quota=3, bm25_quota=3, tag_quota=2, temporal_quota=2, importance_quota=2,
                                graph_quota=3, bm25_delta_min_docs=8, bm25_delta_fraction=0.2)


def random_store(seed: int, n: int) -> tuple[MemoryStore, np.ndarray, list[str], np.random.Generator]:
    rng = np.random.default_rng(seed)
    store = MemoryStore(dim=DIM, params=PARAMS)
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    tenants = [TENANTS[i] for i in rng.integers(0, len(TENANTS), size=n)]
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 5)))) for _ in range(n)]
    ids = store.add_many(
        texts, vectors, tenants=tenants, importances=rng.uniform(0, 1, n), valences=rng.uniform(-1, 1, n),
        tags=[list(rng.choice(TAGS, size=int(rng.integers(0, 3)), replace=False)) for _ in range(n)],
        entities=[list(rng.choice(ENTITIES, size=int(rng.integers(0, 3)), replace=False)) for _ in range(n)],
        created_at=NOW - DAY * rng.uniform(0, 100, n),
    )
    return store, ids, tenants, rng


def random_cue(rng: np.random.Generator) -> dict:
    return {
        "cue_text": " ".join(rng.choice(WORDS, size=int(rng.integers(1, 4)))),
        "cue_vector": rng.standard_normal(DIM).astype(np.float32),
        "tenant": TENANTS[int(rng.integers(0, len(TENANTS)))],
        "cue_tags": list(rng.choice(TAGS, size=int(rng.integers(0, 2)), replace=False)),
        "cue_entities": list(rng.choice(ENTITIES, size=int(rng.integers(0, 2)), replace=False)),
        "at_time": NOW,
    }


def assert_clean(store: MemoryStore, cue: dict, tenant_of: dict, forgotten: set, reinforce: bool) -> None:
    for mode in MODES:
        result = store.recall(k=10, mode=mode, reinforce=reinforce, **cue)
        returned = set(result.ids.tolist())
        admitted = set().union(*(set(ids.tolist()) for ids in result.admitted.values()))
        seen = returned | admitted | set(result.candidate_ids.tolist())
        assert all(tenant_of[i] == cue["tenant"] for i in seen), mode
        assert all(hit.tenant == cue["tenant"] for hit in result), mode
        assert not seen & forgotten, mode


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 40), n_forget=st.integers(0, 5),
       compact=st.booleans(), reinforce=st.booleans())
def test_no_recall_crosses_tenants_or_returns_forgotten(seed, n, n_forget, compact, reinforce):
    store, ids, tenants, rng = random_store(seed, n)
    tenant_of = dict(zip(ids.tolist(), tenants))
    forgotten = set(rng.choice(ids, size=min(n_forget, n), replace=False).tolist())
    cues = [random_cue(rng) for _ in range(3)]
    for cue in cues:
        assert_clean(store, cue, tenant_of, set(), reinforce)  # also builds the BM25 index
    for memory_id in forgotten:
        store.forget(memory_id)
    # memories added after the BM25 build land in the delta
    more = store.add_many(["river garden delta"] * 3, rng.standard_normal((3, DIM)).astype(np.float32),
                          tenants=list(rng.choice(TENANTS, size=3)))
    tenant_of.update({int(i): store.get(int(i)).tenant for i in more})
    if compact:
        store.compact()
    for cue in cues:
        assert_clean(store, cue, tenant_of, forgotten, reinforce)


def test_forgotten_memory_is_dropped_by_every_generator_before_and_after_compact(store_location):
    """The forgotten memory is the best candidate of every generator; it must vanish from all."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal(DIM).astype(np.float32)
    q /= np.linalg.norm(q)
    path = store_location()
    store = MemoryStore(path, dim=DIM, params=PARAMS)
    store.add_many([f"filler note {i}" for i in range(30)], rng.standard_normal((30, DIM)).astype(np.float32),
                   importances=0.2, entities=[["Orion"]] * 30, created_at=NOW - 50 * DAY)
    store.recall("warm up", q, mode="full")  # build the main BM25 index first: the target lands in the delta
    target = store.add("quetzal quetzal sighting", q, importance=1.0, tags=["policy"], entities=["Orion"],
                       created_at=NOW)
    cue = {"cue_text": "quetzal sighting", "cue_vector": q, "cue_tags": ["policy"], "cue_entities": ["Orion"],
           "at_time": NOW}
    full = store.recall(k=5, mode="full", reinforce=False, **cue)
    for generator in ("dense", "bm25", "tag", "temporal", "importance"):
        assert full.admitted[generator][0] == target, generator
    store.forget(target)

    def check(s: MemoryStore) -> None:
        for mode in MODES:
            result = s.recall(k=31, mode=mode, reinforce=False, **cue)
            assert target not in set(result.ids.tolist()) | set(result.candidate_ids.tolist()), mode
            for generator in GENERATORS:
                admitted = result.admitted.get(generator)
                assert admitted is None or target not in set(admitted.tolist()), (mode, generator)
        assert s.why_not(target, **cue).reason == "tombstoned"

    check(store)
    store.compact()
    check(store)
    store.close()
    reopened = MemoryStore(path, params=PARAMS)
    check(reopened)
    reopened.compact(purge=True)
    assert reopened.why_not(target, **cue).reason == "not_found"
    reopened.close()
