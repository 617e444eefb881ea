"""MemoryStore API: add/get/update/forget/compact, generators and quotas, gates, fused score,
provenance, why_not, recall dynamics, rerank mode, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

import fieldrank
from fieldrank.memory import (
    DEFAULT_PARAMS,
    FACTOR_NAMES,
    GATES,
    GENERATORS,
    MODE_GENERATORS,
    MODES,
    WHY_NOT_REASONS,
    MemoryParams,
    MemoryStore,
)
from fieldrank.memory._params import (
    RETRIEVAL_STRENGTH_MIN,
    VALENCE_ALIGNMENT_MIN,
)

SEED = 20260116
DIM = 16
DAY = 86400.0
NOW = 1_800_000_000.0


def unit(rng: np.random.Generator, n: int, d: int = DIM) -> np.ndarray:
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def near(vector: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly ``cosine`` to the unit ``vector``."""
    noise = rng.standard_normal(vector.size)
    noise -= (noise @ vector) * vector
    noise /= np.linalg.norm(noise)
    return (cosine * vector + math.sqrt(1 - cosine**2) * noise).astype(np.float32)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


@pytest.fixture
def small_store(rng):
    """Ten memories of tenant "a" and two of tenant "b"; returns (store, embeddings, ids)."""
    store = MemoryStore(dim=DIM)
    E = unit(rng, 12)
    texts = [f"note {i} about gardens and rivers" for i in range(10)] + ["other tenant secret", "other river"]
    tenants = ["a"] * 10 + ["b"] * 2
    ids = store.add_many(texts, E, tenants=tenants, created_at=NOW - DAY * np.arange(12))
    return store, E, ids


# ---------------------------------------------------------------------------- construction, add, get


def test_lazy_export_is_the_store_class():
    assert fieldrank.MemoryStore is MemoryStore
    assert "MemoryStore" in dir(fieldrank)


def test_in_memory_store_requires_dim():
    with pytest.raises(ValueError, match="dim is required"):
        MemoryStore()
    with pytest.raises(TypeError, match="dim must be an int"):
        MemoryStore(dim=3.0)
    with pytest.raises(ValueError, match="dim must be > 0"):
        MemoryStore(dim=0)
    with pytest.raises(TypeError, match="params must be a MemoryParams"):
        MemoryStore(dim=4, params={"dense_quota": 3})


def test_add_and_get_round_trip(rng):
    store = MemoryStore(dim=DIM)
    raw = rng.standard_normal(DIM)  # float64, not unit: converted and normalised once on ingest
    memory_id = store.add("Never deploy on Fridays", raw, tenant="acme", importance=0.9, valence=-0.2,
                          tier="core", tags=["policy", "deploy", "policy"], entities={"production"},
                          storage_strength=2.0, created_at=NOW)
    memory = store.get(memory_id)
    assert memory.id == memory_id == 0
    assert (memory.tenant, memory.text, memory.tier) == ("acme", "Never deploy on Fridays", "core")
    assert memory.tags == ("deploy", "policy") and memory.entities == ("production",)
    assert (memory.importance, memory.valence, memory.storage_strength) == (0.9, -0.2, 2.0)
    assert memory.created_at == memory.last_access == NOW and memory.recall_count == 0
    assert memory.embedding.dtype == np.float32
    np.testing.assert_allclose(memory.embedding, raw / np.linalg.norm(raw), rtol=1e-6)
    assert len(store) == 1 and memory_id in store and 5 not in store
    assert store.tenants() == ("acme",)


def test_add_many_broadcasts_and_returns_ids(rng):
    store = MemoryStore(dim=DIM)
    ids = store.add_many(["a", "b", "c"], unit(rng, 3), tenants="t", importances=[0.1, 0.2, 0.3], tiers="semantic",
                         tags=[["x"], [], ["y", "x"]])
    assert ids.dtype == np.int64 and ids.tolist() == [0, 1, 2]
    assert [store.get(i).importance for i in ids] == [0.1, 0.2, 0.3]
    assert store.get(2).tags == ("x", "y") and store.get(1).tier == "semantic"
    assert store.add_many([], np.zeros((0, DIM), np.float32)).size == 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"importance": 1.5}, ValueError, "importances"),
        ({"importance": "high"}, TypeError, "importances"),
        ({"valence": -2.0}, ValueError, "valences"),
        ({"tier": "forever"}, ValueError, "tier"),
        ({"tags": "policy"}, TypeError, "tags"),
        ({"tags": [3]}, TypeError, "tags"),
        ({"tenant": ""}, ValueError, "tenant"),
        ({"storage_strength": 0.5}, ValueError, "storage_strengths"),
        ({"created_at": float("nan")}, ValueError, "created_at"),
    ],
)
def test_add_rejects_bad_fields(rng, kwargs, error, match):
    store = MemoryStore(dim=DIM)
    with pytest.raises(error, match=match):
        store.add("text", unit(rng, 1)[0], **kwargs)
    assert len(store) == 0  # nothing half-added


@pytest.mark.parametrize(
    ("embedding", "error", "match"),
    [
        (np.zeros(DIM, np.float32), ValueError, "zero vector"),
        (np.full(DIM, np.nan, np.float32), ValueError, "finite"),
        (np.ones(DIM + 1, np.float32), ValueError, "shape"),
        (np.ones((1, DIM), np.float32), ValueError, "1-D"),
        ("vector", TypeError, "numpy array"),
        (np.ones(DIM, dtype=complex), TypeError, "dtype"),
    ],
)
def test_add_rejects_bad_embeddings(embedding, error, match):
    store = MemoryStore(dim=DIM)
    with pytest.raises(error, match=match):
        store.add("text", embedding)


def test_add_many_validates_everything_before_writing(rng):
    store = MemoryStore(dim=DIM)
    with pytest.raises(ValueError, match="importances"):
        store.add_many(["a", "b"], unit(rng, 2), importances=[0.5, 7.0])
    with pytest.raises(ValueError, match="one row per text"):
        store.add_many(["a", "b"], unit(rng, 3))
    with pytest.raises(ValueError, match="one value per memory"):
        store.add_many(["a", "b"], unit(rng, 2), tenants=["x"])
    with pytest.raises(TypeError, match="sequence of str"):
        store.add_many("ab", unit(rng, 2))
    assert len(store) == 0


def test_get_missing_and_forgotten(small_store):
    store, _, ids = small_store
    with pytest.raises(KeyError, match="no memory with id 99"):
        store.get(99)
    store.forget(int(ids[0]))
    with pytest.raises(KeyError, match="was forgotten"):
        store.get(int(ids[0]))
    with pytest.raises(TypeError, match="memory_id must be an int"):
        store.get("0")


# ---------------------------------------------------------------------------- params


def test_params_defaults_and_validation():
    assert DEFAULT_PARAMS.dense_quota == 50 and DEFAULT_PARAMS.bm25_quota == 50
    assert DEFAULT_PARAMS.importance_boost == 1.0 and DEFAULT_PARAMS.rerank_operator == "cfsr"  # additive now (issue 17)
    assert DEFAULT_PARAMS.quota("graph") == DEFAULT_PARAMS.graph_quota
    assert DEFAULT_PARAMS.replace(tag_quota=0).tag_quota == 0
    with pytest.raises(ValueError, match="dense_quota"):
        MemoryParams(dense_quota=-1)
    with pytest.raises(TypeError, match="bm25_quota"):
        MemoryParams(bm25_quota=2.5)
    with pytest.raises(ValueError, match="sim_floor"):
        MemoryParams(sim_floor=0.0)
    with pytest.raises(ValueError, match="rerank_operator"):
        MemoryParams(rerank_operator="ring")
    with pytest.raises(ValueError, match="hebbian_rate"):
        MemoryParams(hebbian_rate=1.5)
    with pytest.raises(ValueError, match="finite"):
        MemoryParams(importance_boost=float("inf"))
    from fieldrank.bm25 import BM25Params

    with pytest.raises(ValueError, match="lucene"):
        MemoryParams(bm25_params=BM25Params(method="robertson"))
    # the store's BM25 is the preset's, neighbour-text expansion included
    assert DEFAULT_PARAMS.bm25_params.context_window == 2 and MemoryParams(bm25_params=BM25Params()).bm25_params == BM25Params()
    assert set(DEFAULT_PARAMS.to_dict()) >= {f"{g}_quota" for g in GENERATORS}


# ---------------------------------------------------------------------------- recall basics


@pytest.mark.parametrize("mode", MODES)
def test_recall_returns_only_own_tenant_with_provenance(small_store, mode):
    store, E, ids = small_store
    result = store.recall("gardens", E[3], 4, tenant="a", mode=mode, at_time=NOW, reinforce=False)
    assert result.mode == mode and result.tenant == "a" and len(result) == 4
    assert set(result.admitted) == set(MODE_GENERATORS[mode])
    for rank, hit in enumerate(result, start=1):
        assert hit.rank == rank and hit.tenant == "a" and hit.id in ids[:10]
        assert set(hit.factors.as_dict()) == set(FACTOR_NAMES)
        assert hit.dominant_factor in FACTOR_NAMES and hit.weakest_factor in FACTOR_NAMES
        assert hit.admitted_by and set(hit.admitted_by) <= set(MODE_GENERATORS[mode])
        assert math.isclose(hit.fused_score, hit.factors.score)
        assert hit.age_days >= 0 and hit.recall_count == 0
    if mode in ("vector", "hybrid", "full"):
        assert result.ids[0] == ids[3]  # the memory whose vector is the cue
    if mode != "rerank":
        scores = [hit.score for hit in result]
        assert scores == sorted(scores, reverse=True)
    assert set(result.ids) <= set(result.candidate_ids)


def test_recall_validates_arguments(small_store):
    store, E, _ = small_store
    with pytest.raises(ValueError, match="mode must be one of"):
        store.recall("x", E[0], mode="semantic")
    with pytest.raises(ValueError, match="k must be > 0"):
        store.recall("x", E[0], 0)
    with pytest.raises(ValueError, match="cue_vector"):
        store.recall("x", E[0][:3])
    with pytest.raises(TypeError, match="cue_text"):
        store.recall(3, E[0])
    with pytest.raises(ValueError, match="tier_mask"):
        store.recall("x", E[0], tier_mask=["eternal"])
    with pytest.raises(ValueError, match="valence_window"):
        store.recall("x", E[0], valence_window=(0.5, -0.5))
    with pytest.raises(TypeError, match="reinforce"):
        store.recall("x", E[0], reinforce=1)


def test_unknown_tenant_and_empty_store_return_nothing(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    for mode in MODES:
        assert len(store.recall("anything", q, mode=mode)) == 0
    store.add("hello world", q, tenant="x")
    for mode in MODES:
        assert len(store.recall("hello", q, tenant="y", mode=mode)) == 0


def test_cue_text_none_switches_bm25_off(small_store):
    store, E, _ = small_store
    result = store.recall(None, E[0], 3, tenant="a", mode="keyword", reinforce=False)
    assert len(result) == 0
    assert len(store.recall(None, E[0], 3, tenant="a", mode="hybrid", reinforce=False)) == 3


# ---------------------------------------------------------------------------- generators and quotas


def test_quotas_are_independent_no_generator_uses_another_budget(rng):
    """A dense crowd cannot crowd out the BM25, importance or temporal admissions."""
    q = unit(rng, 1)[0]
    crowd = np.stack([near(q, 0.9, rng) for _ in range(100)])
    store = MemoryStore(dim=DIM, params=DEFAULT_PARAMS.replace(
        relevance_quota=5, dense_quota=5, bm25_quota=5, tag_quota=5, temporal_quota=5, importance_quota=5,
        graph_quota=5))
    store.add_many([f"crowd member {i}" for i in range(100)], crowd, importances=0.2,
                   created_at=NOW - 100 * DAY)
    far = near(q, 0.05, rng)
    lexical = store.add("zebra migration notes", far, importance=0.2, created_at=NOW - 100 * DAY)
    important = store.add("keep the vault closed", near(q, 0.05, rng), importance=1.0, created_at=NOW - 100 * DAY)
    recent = store.add("just now", near(q, 0.05, rng), importance=0.2, created_at=NOW)
    result = store.recall("zebra migration", q, 10, mode="full", at_time=NOW, reinforce=False)
    assert result.admitted["dense"].size == 5 and set(result.admitted["dense"]) <= set(range(100))
    assert result.admitted["bm25"].tolist() == [lexical]
    assert result.admitted["importance"][0] == important
    assert result.admitted["temporal"][0] == recent
    candidates = set(result.candidate_ids.tolist())
    assert {lexical, important, recent} <= candidates
    hybrid = store.recall("zebra migration", q, 10, mode="hybrid", at_time=NOW, reinforce=False)
    # issue 17: the default mode holds the protected tier, so the durable memory is a candidate.
    assert lexical in set(hybrid.candidate_ids.tolist()) and important in set(hybrid.candidate_ids.tolist())
    vector = store.recall("zebra migration", q, 10, mode="vector", at_time=NOW, reinforce=False)
    assert lexical not in set(vector.candidate_ids.tolist())
    assert result.budget == 35


def test_quota_zero_switches_a_generator_off(small_store):
    _, E, _ = small_store
    params = DEFAULT_PARAMS.replace(dense_quota=0)
    store2 = MemoryStore(dim=DIM, params=params)
    store2.add_many([f"m{i}" for i in range(5)], E[:5])
    assert store2.recall("zzz", E[0], mode="vector").admitted["dense"].size == 0


def test_admission_ranks_are_recorded(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    ids = store.add_many(["alpha beta", "alpha", "gamma"], np.stack([near(q, c, rng) for c in (0.9, 0.5, 0.7)]))
    result = store.recall("alpha beta", q, 3, mode="full", reinforce=False)
    relevance_order = result.admitted["relevance"].tolist()
    by_id = {hit.id: dict(hit.admitted_by) for hit in result}
    for memory_id in ids.tolist():
        assert by_id[memory_id].pop("relevance") == relevance_order.index(memory_id) + 1
        by_id[memory_id] = {g: r for g, r in by_id[memory_id].items() if g in ("dense", "bm25")}
    assert by_id[ids[0]] == {"dense": 1, "bm25": 1}
    assert by_id[ids[2]] == {"dense": 2}
    assert by_id[ids[1]] == {"dense": 3, "bm25": 2}


def test_tag_generator_orders_by_containment_then_recency(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    vectors = unit(rng, 4)
    ids = store.add_many(["a", "b", "c", "d"], vectors, tags=[["x"], ["x", "y"], ["y"], []],
                         created_at=[NOW - 3 * DAY, NOW - 2 * DAY, NOW - DAY, NOW])
    result = store.recall(None, q, 4, mode="full", cue_tags=["x", "y"], reinforce=False)
    assert result.admitted["tag"].tolist() == [ids[1], ids[2], ids[0]]
    hits = {hit.id: hit for hit in result}
    assert hits[ids[1]].factors.tag_containment == 1.0 and hits[ids[0]].factors.tag_containment == 0.5
    assert math.isclose(hits[ids[1]].factors.tag, 1 + DEFAULT_PARAMS.tag_boost)


def test_graph_generator_admits_entity_neighbours_of_candidates(rng):
    q = unit(rng, 1)[0]
    params = DEFAULT_PARAMS.replace(relevance_quota=0, dense_quota=1, bm25_quota=0, temporal_quota=0,
                                    importance_quota=0)
    store = MemoryStore(dim=DIM, params=params)
    seed = store.add("seed", near(q, 0.95, rng), entities=["Orion"])
    neighbour = store.add("neighbour", near(q, 0.0, rng), entities=["Orion"])
    stranger = store.add("stranger", near(q, 0.0, rng), entities=["Vega"])
    result = store.recall(None, q, 3, mode="full", reinforce=False)
    assert result.admitted["dense"].tolist() == [seed]
    assert result.admitted["graph"].tolist() == [neighbour]
    assert stranger not in set(result.candidate_ids.tolist())
    hit = next(h for h in result if h.id == neighbour)
    assert hit.admitted_by == {"graph": 1}
    assert hit.factors.graph_activation == pytest.approx(0.95, rel=1e-5)
    assert hit.factors.graph == pytest.approx(1 + params.graph_boost * 0.95 / 1.95, rel=1e-5)


def test_temporal_generator_centres_on_cue_time(rng):
    store = MemoryStore(dim=DIM, params=DEFAULT_PARAMS.replace(temporal_quota=2))
    ids = store.add_many([f"day {d}" for d in range(10)], unit(rng, 10), created_at=NOW - DAY * np.arange(10))
    result = store.recall(None, unit(rng, 1)[0], 10, mode="full", at_time=NOW, cue_time=NOW - 5.2 * DAY,
                          reinforce=False)
    assert result.admitted["temporal"].tolist() == [ids[5], ids[6]]


# ---------------------------------------------------------------------------- gates


def test_every_gate_excludes_and_why_not_names_it(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    vector = near(q, 0.99, rng)
    target = store.add("target memo", vector, tier="working", tags=["a"], valence=0.8, importance=0.3)
    store.add_many([f"other memo {i}" for i in range(5)], unit(rng, 5), tiers="core", tags=[["a", "b"]] * 5,
                   valences=0.0, importances=0.9)
    cases = {
        "tier": {"tier_mask": ["core"]},
        "required_tags": {"required_tags": ["b"]},
        "valence_window": {"valence_window": (-0.5, 0.5)},
        "min_importance": {"min_importance": 0.5},
    }
    for gate, kwargs in cases.items():
        for mode in MODES:
            result = store.recall("target memo", q, 10, mode=mode, reinforce=False, **kwargs)
            assert target not in set(result.candidate_ids.tolist()), (gate, mode)
        answer = store.why_not(target, "target memo", q, 10, **kwargs)
        assert answer.reason == "gated" and answer.failed_gates == (gate,)
        assert gate in GATES
    both = store.why_not(target, "target memo", q, min_importance=0.5, tier_mask=["core"])
    assert both.failed_gates == ("tier", "min_importance")
    assert store.recall("target memo", q, 1, mode="vector", reinforce=False).ids[0] == target


def test_required_tags_count_as_cue_tags(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    tagged = store.add("x", near(q, 0.1, rng), tags=["deploy"])
    store.add_many([f"y{i}" for i in range(30)], np.stack([near(q, 0.8, rng) for _ in range(30)]))
    result = store.recall(None, q, 5, mode="hybrid", required_tags=["deploy"], reinforce=False)
    assert result.ids.tolist() == [tagged]
    assert result[0].factors.tag_containment == 1.0


# ---------------------------------------------------------------------------- fused score


def test_fused_score_matches_the_formula_by_hand(rng):
    params = DEFAULT_PARAMS
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    cos = 0.6
    memory_id = store.add("deploy rule", near(q, cos, rng), importance=0.8, valence=0.5, tags=["ops", "prod"],
                          entities=["prod"], storage_strength=3.0, created_at=NOW - 90 * DAY)
    store.add_many([f"filler {i}" for i in range(5)], unit(rng, 5), created_at=NOW)
    hit = next(h for h in store.recall("rule", q, 6, mode="full", at_time=NOW, cue_tags=["ops", "misc"],
                                       cue_entities=["prod"], cue_valence=-0.5, reinforce=False)
               if h.id == memory_id)
    f = hit.factors
    d = max(2 ** (-90 / (params.retrieval_half_life_days * 3.0)), RETRIEVAL_STRENGTH_MIN)
    sb = 2 - 1 / 3.0
    assert f.cosine == pytest.approx(cos, abs=1e-5)
    assert f.retrieval_strength == pytest.approx(d) and f.storage_bounded == pytest.approx(sb)
    # importance 0.8 >= durable_importance: durable, so its term does not decay (D' = 1)
    assert f.durable and f.importance == pytest.approx(1 + params.importance_boost * 0.8)
    assert f.valence == pytest.approx(1 - params.valence_weight * 1.0 / 2)
    assert f.tag_containment == 0.5 and f.tag == pytest.approx(1 + params.tag_boost * 0.5)
    activation = params.cue_entity_weight  # one cue entity; no other candidate shares "prod"
    assert f.graph_activation == pytest.approx(activation)
    assert f.graph == pytest.approx(1 + params.graph_boost * activation / (1 + activation))
    # issue 17: additive bounded boosts on the relevance core (was a product of the factors)
    assert f.entity_containment == 1.0 and f.entity == pytest.approx(1 + params.entity_boost)
    assert f.score == pytest.approx(f.relevance + (f.importance - 1) + (f.valence - 1) + (f.tag - 1) + (f.graph - 1)
                                    + (f.entity - 1))
    assert hit.age_days == pytest.approx(90.0)
    assert hit.dominant_factor == "entity" and hit.weakest_factor == "sim"
    assert "importance" in hit.explain() and "admitted by" in hit.explain()


def test_floors_hold_for_extreme_memories(rng):
    params = DEFAULT_PARAMS.replace(valence_weight=1.0)
    store = MemoryStore(dim=DIM, params=params)
    q = unit(rng, 1)[0]
    memory_id = store.add("ancient", -q, importance=0.0, valence=1.0, created_at=NOW - 10_000 * DAY)
    hit = store.recall("ancient", q, 1, mode="keyword", at_time=NOW, cue_valence=-1.0, reinforce=False)[0]
    assert hit.id == memory_id
    f = hit.factors
    assert f.cosine == pytest.approx(-1.0, abs=1e-6) and f.sim == params.sim_floor
    assert f.retrieval_strength == RETRIEVAL_STRENGTH_MIN
    assert f.valence == VALENCE_ALIGNMENT_MIN
    assert f.importance_norm == params.importance_floor
    assert f.graph >= 1.0 and f.storage_strength >= 1.0
    assert f.score == pytest.approx(f.relevance + (f.importance - 1) + (f.valence - 1) + (f.tag - 1) + (f.graph - 1))
    assert hit.weakest_factor == "sim"


def test_dominant_and_weakest_factor_rules():
    from fieldrank.memory import ScoreFactors

    def factors(sim, importance, valence, tag, graph):
        return ScoreFactors(sim, importance, valence, tag, graph, sim, 1, 1, 1, 1, 0, 0,
                            sim * importance * valence * tag * graph)

    assert factors(0.5, 1.0, 1.0, 1.0, 1.0).dominant == "sim"
    assert factors(0.5, 1.2, 1.0, 1.3, 1.1).dominant == "tag"
    assert factors(0.9, 1.0, 0.3, 1.0, 1.0).weakest == "valence"
    assert factors(0.5, 1.5, 1.0, 1.5, 1.0).dominant == "importance"  # tie -> earlier name


def test_ties_go_to_the_lower_id(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    ids = store.add_many(["same", "same", "same"], np.stack([q, q, q]), created_at=NOW)
    assert store.recall("same", q, 3, at_time=NOW, reinforce=False).ids.tolist() == ids.tolist()


# ---------------------------------------------------------------------------- modes


@pytest.mark.parametrize("operator", ["cfsr", "cfs"])
def test_rerank_mode_reranks_the_fused_union(rng, operator):
    store = MemoryStore(dim=DIM, params=DEFAULT_PARAMS.replace(rerank_operator=operator))
    q = unit(rng, 1)[0]
    store.add_many([f"memo {i}" for i in range(40)], np.stack([near(q, c, rng) for c in np.linspace(0.1, 0.9, 40)]))
    result = store.recall("memo", q, 10, mode="rerank", reinforce=False)
    assert len(result) == 10
    assert all(hit.rerank_score is not None and hit.score == hit.rerank_score for hit in result)
    assert [hit.score for hit in result] == sorted((hit.score for hit in result), reverse=True)
    assert set(result.admitted) == set(GENERATORS)
    full = store.recall("memo", q, 10, mode="full", reinforce=False)
    assert all(hit.rerank_score is None for hit in full)
    assert set(result.candidate_ids.tolist()) == set(full.candidate_ids.tolist())


# ---------------------------------------------------------------------------- why_not


def test_why_not_covers_every_reason(rng):
    params = DEFAULT_PARAMS.replace(relevance_quota=3, dense_quota=3, bm25_quota=3)
    store = MemoryStore(dim=DIM, params=params)
    q = unit(rng, 1)[0]
    cosines = np.linspace(0.95, 0.3, 10)
    ids = store.add_many([f"memo {i}" for i in range(10)], np.stack([near(q, c, rng) for c in cosines]),
                         tenants="a", created_at=NOW)
    stranger = store.add("memo elsewhere", q, tenant="b")
    gone = int(ids[1])
    store.forget(gone)
    seen = {}
    seen["returned"] = store.why_not(int(ids[0]), "zzz", q, 2, tenant="a", mode="vector", at_time=NOW)
    seen["outranked"] = store.why_not(int(ids[3]), "zzz", q, 2, tenant="a", mode="vector", at_time=NOW)
    seen["not_admitted"] = store.why_not(int(ids[9]), "zzz", q, 2, tenant="a", mode="hybrid", at_time=NOW)
    seen["tombstoned"] = store.why_not(gone, "zzz", q, 2, tenant="a")
    seen["other_tenant"] = store.why_not(stranger, "zzz", q, 2, tenant="a")
    seen["not_found"] = store.why_not(12345, "zzz", q, 2, tenant="a")
    seen["gated"] = store.why_not(int(ids[0]), "zzz", q, 2, tenant="a", min_importance=0.9)
    assert {reason: answer.reason for reason, answer in seen.items()} == {r: r for r in seen}
    assert set(seen) == set(WHY_NOT_REASONS)
    returned = seen["returned"]
    assert returned.rank == 1 and returned.hit is not None and returned.hit.id == ids[0]
    outranked = seen["outranked"]
    assert outranked.rank == 3 and outranked.margin > 0 and outranked.cutoff_score > outranked.score
    assert "short by" in outranked.detail
    not_admitted = seen["not_admitted"]
    # issue 24: the default mode runs the relevance core (the default scorer), dense, BM25 and the protected tier
    assert not_admitted.generator_ranks["relevance"] == 9  # ids[1] is forgotten: 8 rows rank higher
    assert not_admitted.generator_ranks["dense"] == 9
    assert not_admitted.generator_ranks["bm25"] is None  # no term overlap with "zzz"
    assert not_admitted.generator_ranks["importance"] is None  # not durable: outside the protected tier
    assert not_admitted.quotas == {"relevance": 3, "dense": 3, "bm25": 3, "importance": DEFAULT_PARAMS.importance_quota}
    assert "rank 9 > quota 3" in not_admitted.detail
    in_vector = store.why_not(int(ids[9]), "zzz", q, 2, tenant="a", mode="vector", at_time=NOW)
    assert in_vector.reason == "not_admitted" and in_vector.generator_ranks["dense"] == 9
    in_keyword = store.why_not(int(ids[9]), "zzz", q, 2, tenant="a", mode="keyword", at_time=NOW)
    assert in_keyword.generator_ranks["bm25"] is None  # no term overlap with "zzz"
    # why_not has no side effects
    assert store.get(int(ids[0])).recall_count == 0


def test_why_not_agrees_with_recall(rng):
    store = MemoryStore(dim=DIM, params=DEFAULT_PARAMS.replace(dense_quota=4, bm25_quota=4))
    q = unit(rng, 1)[0]
    ids = store.add_many([f"memo {i} river" for i in range(30)], unit(rng, 30), created_at=NOW)
    for mode in MODES:
        result = store.recall("river memo 3", q, 5, mode=mode, at_time=NOW, reinforce=False)
        returned = set(result.ids.tolist())
        for memory_id in ids.tolist():
            answer = store.why_not(memory_id, "river memo 3", q, 5, mode=mode, at_time=NOW)
            assert (answer.reason == "returned") == (memory_id in returned), (mode, memory_id, answer.detail)
            if answer.reason == "returned":
                assert result.ids[answer.rank - 1] == memory_id


# ---------------------------------------------------------------------------- recall dynamics


def test_recall_reinforces_returned_memories(rng):
    params = DEFAULT_PARAMS
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    old = store.add("old rule", near(q, 0.9, rng), created_at=NOW - 60 * DAY)
    other = store.add("other", near(q, 0.8, rng), created_at=NOW - 60 * DAY)
    store.add("unrelated", -q, created_at=NOW - 60 * DAY)
    before = store.get(old)
    d_before = 2 ** (-60 / params.retrieval_half_life_days)
    result = store.recall("rule", q, 2, mode="vector", at_time=NOW, reinforce=False)
    assert store.get(old) == before
    assert store.get(old).recall_count == 0
    result = store.recall("rule", q, 2, mode="vector", at_time=NOW)
    assert set(result.ids.tolist()) == {old, other}
    after = store.get(old)
    assert after.recall_count == 1 and after.last_access == NOW
    assert after.storage_strength == pytest.approx(1 + params.storage_gain * (1 - d_before))
    again = store.recall("rule", q, 2, mode="vector", at_time=NOW)
    hit = next(h for h in again if h.id == old)
    assert hit.factors.retrieval_strength == pytest.approx(1.0) and hit.recall_count == 1
    assert store.get(old).storage_strength == pytest.approx(after.storage_strength)  # D was 1: no gain
    # co-recall links: the two returned memories are now linked (graph activation between them)
    assert hit.factors.graph_activation > 0


def test_update_keeps_id_and_reindexes_text(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    memory_id = store.add("bananas are yellow", q, importance=0.4, storage_strength=2.0)
    store.add("apples are red", -q)
    updated = store.update(memory_id, text="cherries are dark", importance=0.7, tags=["fruit"])
    assert updated.id == memory_id and updated.text == "cherries are dark" and updated.tags == ("fruit",)
    assert updated.storage_strength == 2.0 and len(store) == 2
    assert store.recall("bananas", q, 5, mode="keyword", reinforce=False).ids.size == 0
    assert store.recall("cherries", q, 5, mode="keyword", reinforce=False).ids.tolist() == [memory_id]
    with pytest.raises(ValueError, match="may not decrease"):
        store.update(memory_id, storage_strength=1.0)
    vector_hits = store.recall(None, q, 5, mode="vector", reinforce=False)
    assert vector_hits.ids.tolist().count(memory_id) == 1


def test_forget_and_compact(small_store):
    store, E, ids = small_store
    target = int(ids[3])
    assert store.forget(target) is True and store.forget(target) is False
    with pytest.raises(KeyError):
        store.forget(999)
    assert len(store) == 11
    for mode in MODES:
        assert target not in store.recall("note 3 gardens", E[3], 10, tenant="a", mode=mode, reinforce=False).ids
    assert store.compact() == 1
    assert len(store) == 11 and store.get(int(ids[4])).text == "note 4 about gardens and rivers"
    for mode in MODES:
        result = store.recall("note 3 gardens", E[3], 10, tenant="a", mode=mode, reinforce=False)
        assert target not in result.ids and len(result) == min(9, len(result))
    assert store.why_not(target, "x", E[3], tenant="a").reason == "tombstoned"


def test_tenant_scoped_get_update_forget(small_store):
    store, _, ids = small_store
    mine, theirs = int(ids[0]), int(ids[10])
    assert store.get(mine, tenant="a").tenant == "a"
    for call in (lambda: store.get(theirs, tenant="a"), lambda: store.update(theirs, importance=0.1, tenant="a"),
                 lambda: store.forget(theirs, tenant="a")):
        with pytest.raises(KeyError, match="for tenant 'a'"):
            call()
    assert store.get(theirs).importance == 0.5 and theirs in store
    assert store.forget(mine, tenant="a") is True
    with pytest.raises(KeyError, match="for tenant 'a'"):
        store.get(mine, tenant="a")


# ---------------------------------------------------------------------------- updates (issue 17)


def test_a_superseded_memory_ranks_below_its_replacement(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    store.add_many([f"filler {i}" for i in range(30)], unit(rng, 30), created_at=NOW)
    stale = store.add("Orion uses MySQL 5.7", near(q, 0.95, rng), entities=["Orion"], created_at=NOW - 300 * DAY)
    fresh = store.add("Orion moved to Postgres", near(q, 0.2, rng), entities=["Orion"], supersedes=stale,
                      created_at=NOW - 20 * DAY)
    assert store.get(stale).superseded_by == fresh and store.get(fresh).supersedes == stale
    for mode in ("hybrid", "vector", "keyword", "full"):
        result = store.recall("Orion MySQL", q, 5, mode=mode, at_time=NOW, reinforce=False)
        order = result.ids.tolist()
        assert fresh in order, mode  # brought into the union by the stale candidate it replaces
        assert stale not in order or order.index(stale) > order.index(fresh), mode
        hits = {hit.id: hit for hit in result}
        if stale in hits:
            assert hits[stale].superseded_by == fresh
            assert hits[stale].score <= hits[fresh].score - DEFAULT_PARAMS.superseded_margin + 1e-9


def test_supersede_chains_rank_newest_first_and_bad_targets_are_refused(rng):
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    first = store.add("v1 of the fact", near(q, 0.9, rng), created_at=NOW - 3 * DAY)
    second = store.add("v2 of the fact", near(q, 0.6, rng), supersedes=first, created_at=NOW - 2 * DAY)
    third = store.add("v3 of the fact", near(q, 0.3, rng), supersedes=second, created_at=NOW - DAY)
    order = store.recall("fact", q, 3, at_time=NOW, reinforce=False).ids.tolist()
    assert order == [third, second, first]
    other = store.add("elsewhere", q, tenant="other")
    with pytest.raises(ValueError, match="own tenant"):
        store.add("cross-tenant replacement", q, supersedes=other)
    with pytest.raises(KeyError, match="no live memory"):
        store.add("replaces nothing", q, supersedes=12345)
    with pytest.raises(TypeError):
        store.add_many(["a"], q[None, :], supersedes=7)


def test_an_unmarked_update_changes_nothing_in_the_ranking(rng):
    """Without ``supersedes`` the store does not guess: a newer near-duplicate is just another memory."""
    store = MemoryStore(dim=DIM)
    q = unit(rng, 1)[0]
    stale = store.add("Orion uses MySQL 5.7", near(q, 0.95, rng), created_at=NOW - 300 * DAY)
    fresh = store.add("Orion moved to Postgres", near(q, 0.2, rng), created_at=NOW - 20 * DAY)
    result = store.recall("Orion MySQL", q, 2, at_time=NOW, reinforce=False)
    assert result.ids.tolist()[0] == stale and all(hit.superseded_by is None for hit in result)
    assert store.get(fresh).supersedes is None


def test_compaction_and_reopening_keep_sessions_and_supersession(rng, tmp_path):
    path = str(tmp_path / "keep.sqlite")
    store = MemoryStore(path, dim=DIM)
    q = unit(rng, 1)[0]
    stale = store.add("old fact", near(q, 0.9, rng), session="s1")
    fresh = store.add("new fact", near(q, 0.5, rng), session="s1", supersedes=stale)
    store.forget(store.add("gone", q))
    store.compact()
    for view in (store, MemoryStore(path)):
        assert view.get(stale).superseded_by == fresh and view.get(fresh).supersedes == stale
        assert view.get(fresh).session == "s1"
        assert view.recall("fact", q, 2, reinforce=False).ids.tolist() == [fresh, stale]


def test_relevance_core_is_the_default_preset(rng):
    """issue 17: with every boost off, the store ranks exactly like HybridRetriever ``default``
    (same temporal_batch scorer, same BM25 parameters, sessions as neighbours, created-at days as dates)."""
    from fieldrank import HybridRetriever
    from fieldrank.config import resolve_config
    from fieldrank.temporal import Timeline, session_keys, time_cues

    words = ("deploy", "friday", "garden", "coffee", "budget", "meeting", "yesterday", "server", "kids", "may")
    n = 240
    texts = [" ".join(rng.choice(words, size=int(rng.integers(2, 7)))) for _ in range(n)]
    E = unit(rng, n)
    session = np.repeat(np.arange(n // 8), 8)
    days = np.datetime64("2023-05-01") + (session * 9).astype("timedelta64[D]")
    created = days.astype("datetime64[s]").astype(np.int64).astype(np.float64) + 3600.0
    params = DEFAULT_PARAMS.replace(importance_boost=0.0, graph_boost=0.0, relevance_quota=n)
    store = MemoryStore(dim=DIM, params=params)
    store.add_many(texts, E, created_at=created, sessions=[f"s{s}" for s in session])
    config = resolve_config("default")  # neighbour-text expansion included (context_window 2)
    assert config.bm25.context_window > 0
    retriever = HybridRetriever(texts, E, config,
                                timeline=Timeline(session=session_keys(session), time=days, cue=time_cues(texts)))
    for question in ("when was the budget meeting in May 2023?", "deploy the server", "kids garden yesterday"):
        q = unit(rng, 1)[0]
        expected = retriever.search(question, q, 10).ids.tolist()
        got = store.recall(question, q, 10, at_time=float(created.max()), reinforce=False).ids.tolist()
        assert got == expected, question


def test_a_float64_embedder_zero_row_is_the_stores_value_error():
    """Issue #37: a framework embedder returning float64 rows of zeros (an item with no text to
    embed) raised numpy's TypeError from the row check instead of the intended ValueError."""
    from fieldrank.integrations._common import FrameworkEmbedder

    embedder = FrameworkEmbedder(lambda texts: [[0.0] * 4 for _ in texts], lambda text: [1.0, 0.0, 0.0, 0.0], dim=4)
    store = MemoryStore(embedder=embedder)
    with pytest.raises(ValueError, match="non-zero, finite norm"):
        store.add("")
    with pytest.raises(ValueError, match="non-zero, finite norm"):
        store.add_many(["", "also empty"])
    assert len(store) == 0
