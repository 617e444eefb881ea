"""The committed adversarial scenario suite (real all-MiniLM-L6-v2 embeddings) and the
truncation-trap invariant at 1k, 10k and 100k memories.

The suite's embeddings are committed (``fieldrank/data/memory_scenarios.npy``); nothing here
needs the embedding model.
"""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.memory import DEFAULT_PARAMS, MODES, MemoryStore
from fieldrank.evaluation._memory_scenarios import (
    SUITE_K,
    build_store,
    evaluate,
    load_suite,
    memory_columns,
    recall_cue,
    suite_params,
    synthetic_filler,
)

SEED = 20260116
#: The a1 cue's lexical field: the crowd's texts use these words, the rule shares none of them.
CROWD_WORDS = ("ship", "latest", "build", "live", "servers")
CROWD_SIZE = 200


@pytest.fixture(scope="module")
def suite():
    return load_suite()


@pytest.fixture(scope="module")
def scenario(suite):
    store, key_to_id = build_store(suite, suite_params())
    return store, key_to_id


def cue_by_key(suite, key):
    return next(c for c in suite.cues if c["key"] == key)


def ranked_keys(result, key_to_id):
    id_to_key = {v: k for k, v in key_to_id.items()}
    return [id_to_key[i] for i in result.ids.tolist()]


def test_suite_files_are_consistent(suite):
    manifest = suite.manifest
    assert manifest["model"] == "sentence-transformers/all-MiniLM-L6-v2" and suite.dim == 384
    norms = np.linalg.norm(suite.embeddings.astype(np.float64), axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)
    assert {c["case"] for c in suite.cues} == set(manifest["cases"]) == set("abcde")
    keys = {m["key"] for m in suite.memories}
    for c in suite.cues:
        assert set(c["relevant"]) | set(c["distractors"]) | set(c["forbidden"]) <= keys
        assert set(c["protected"]) <= set(c["relevant"])


# ---------------------------------------------------------------------------- case (a)


@pytest.mark.parametrize("cue_key", ["a1", "a2", "a3"])
def test_a_protected_constraint_survives_candidate_generation(suite, scenario, cue_key):
    """Old, important, lexically distant: lost by dense/BM25 at this budget, kept by the full union."""
    store, key_to_id = scenario
    cue = cue_by_key(suite, cue_key)
    (protected,) = [key_to_id[k] for k in cue["protected"]]
    words = set(cue["text"].lower().strip(".?!").split())
    memory = store.get(protected)
    assert not words & set(memory.text.lower().strip(".?!").split()) - {"the", "a", "to", "for", "some"}
    for mode in ("vector", "keyword"):
        result = recall_cue(store, suite, cue, mode, SUITE_K)
        assert protected not in set(result.candidate_ids.tolist()), mode  # the truncation trap
    # issue 17: the default mode (hybrid) protects too: the protected tier is scanned with the cue.
    for mode in ("hybrid", "full", "rerank"):
        result = recall_cue(store, suite, cue, mode, SUITE_K)
        assert protected in set(result.candidate_ids.tolist()), mode
        assert protected in set(result.admitted["importance"].tolist())
        why = store.why_not(protected, cue["text"], suite.cue_vector(cue), SUITE_K, tenant=cue["tenant"], mode=mode,
                            at_time=suite.reference_time)
        assert why.reason in ("returned", "outranked")
        assert why.hit.admitted_by.get("importance") is not None
    why = store.why_not(protected, cue["text"], suite.cue_vector(cue), SUITE_K, tenant=cue["tenant"], mode="vector",
                        at_time=suite.reference_time)
    assert why.reason == "not_admitted" and why.generator_ranks["dense"] > SUITE_K


@pytest.mark.parametrize("mode", ["hybrid", "full"])
def test_a_friday_rule_takes_a_reserved_slot(suite, mode):
    """issue 17: the rule is the protected tier's first memory for the cue; the cue's cosine to it is
    2.7 sd above the rule's cosines to the tenant's other memories (memory-side z, above the
    default slot threshold of 2), so it takes the reserved slot of k = 5 with default parameters."""
    store, key_to_id = build_store(suite, suite_params(DEFAULT_PARAMS))
    cue = cue_by_key(suite, "a1")
    result = recall_cue(store, suite, cue, mode, SUITE_K)
    assert result.admitted["importance"][0] == key_to_id["a1_rule"]
    hit = next(h for h in result if h.id == key_to_id["a1_rule"])
    assert hit.reserved_slot and hit.rank == SUITE_K and hit.admitted_by == {"importance": 1}
    assert hit.factors.durable and hit.dominant_factor == "importance"
    assert hit.age_days == pytest.approx(95.0)
    why = store.why_not(result.ids[0], cue["text"], suite.cue_vector(cue), SUITE_K, tenant=cue["tenant"], mode=mode,
                        at_time=suite.reference_time)
    assert why.reason == "returned"


# ---------------------------------------------------------------------------- cases (b)-(e)


@pytest.mark.parametrize("cue_key", ["c1", "c2", "d1", "d2", "e1", "e2"])
@pytest.mark.parametrize("mode", ["hybrid", "vector", "full", "rerank"])
def test_relevant_memory_outranks_every_distractor(suite, scenario, cue_key, mode):
    """(c) wrong entity, (d) graph-near but stale, (e) emotionally salient."""
    store, key_to_id = scenario
    cue = cue_by_key(suite, cue_key)
    keys = ranked_keys(recall_cue(store, suite, cue, mode, SUITE_K), key_to_id)
    (relevant,) = cue["relevant"]
    assert keys[0] == relevant, keys
    for distractor in cue["distractors"]:
        assert distractor not in keys or keys.index(distractor) > keys.index(relevant)


@pytest.mark.parametrize("mode", MODES)
def test_c_other_tenant_is_never_returned(suite, scenario, mode):
    store, key_to_id = scenario
    globex = {key_to_id[m["key"]] for m in suite.memories if m["tenant"] != suite.manifest["main_tenant"]}
    for cue in suite.cues:
        result = recall_cue(store, suite, cue, mode, 50)
        assert not globex & set(result.ids.tolist())
        assert not globex & set(result.candidate_ids.tolist())
        assert all(hit.tenant == cue["tenant"] for hit in result)


@pytest.mark.parametrize("cue_key", ["b1", "b2"])
@pytest.mark.parametrize("mode", ["hybrid", "full", "rerank"])
def test_b_durable_rule_is_returned_next_to_closer_chatter(suite, scenario, cue_key, mode):
    """(b) issue 17: the rule is no longer forced above chatter that is closer on both signals (the
    old product let importance bury clear relevance); it is protected, so it is returned."""
    store, key_to_id = scenario
    cue = cue_by_key(suite, cue_key)
    keys = ranked_keys(recall_cue(store, suite, cue, mode, SUITE_K), key_to_id)
    (relevant,) = cue["relevant"]
    assert relevant in keys, keys


def test_b_rule_is_boosted_by_importance(suite, scenario):
    store, key_to_id = scenario
    result = recall_cue(store, suite, cue_by_key(suite, "b1"), "hybrid", SUITE_K)
    rule = next(hit for hit in result if hit.id == key_to_id["b1_rule"])
    # issue 24: the cue names the rule's entity (inferred cue entities), so the entity term lifts it too
    assert rule.id == key_to_id["b1_rule"] and rule.dominant_factor in ("importance", "entity")
    assert rule.factors.importance > 0
    chatter = next(h for h in result if h.id == key_to_id["b1_c2"])
    assert chatter.factors.sim > rule.factors.sim  # chatter is closer; the rule wins on the boost


def test_e_salient_memory_is_held_down_by_valence(suite, scenario):
    store, key_to_id = scenario
    cue = cue_by_key(suite, "e1")
    why = store.why_not(key_to_id["e1_salient_lexical"], cue["text"], suite.cue_vector(cue), SUITE_K,
                        tenant=cue["tenant"], mode="full", at_time=suite.reference_time, cue_valence=0.0)
    assert why.hit is not None and why.hit.factors.valence < 0.8
    assert why.hit.weakest_factor in ("sim", "valence")


def test_metrics_per_mode(suite):
    store, key_to_id = build_store(suite, suite_params(DEFAULT_PARAMS))
    metrics = evaluate(store, key_to_id, suite, repeats=1)
    assert set(metrics) == set(MODES)
    for mode in ("vector", "keyword"):
        assert metrics[mode]["protected_memory_recall@budget"] == 0.0
    for mode in ("hybrid", "full", "rerank"):
        assert metrics[mode]["protected_memory_recall@budget"] == 1.0
        assert metrics[mode]["rescued_by_non_dense_signal"] >= 1, mode
    assert metrics["vector"]["rescued_by_non_dense_signal"] == 0
    assert metrics["vector"]["signal_contribution_rate"] == {"dense": 1.0}
    for mode in MODES:
        assert metrics[mode]["forbidden_returned"] == 0
        assert 0.0 <= metrics[mode]["false_rescue_rate"] <= 1.0
        assert metrics[mode]["latency_p95_ms"] >= metrics[mode]["latency_p50_ms"] > 0
    # issue 17: only case (b) may lose triples: chatter closer on both signals can rank above the
    # (returned, protected) rule; the suite has 2 (b) cues with 3 chatter memories each.
    assert metrics["full"]["distractor_wins"] <= 6


# ---------------------------------------------------------------------------- the invariant at scale


@pytest.fixture(scope="module", params=[1_000, 10_000, 100_000], ids=["1k", "10k", "100k"])
def scaled(request, suite):
    """The a1 memories among n synthetic memories, 200 of which crowd the cue (dense and BM25)."""
    n = request.param
    cue = cue_by_key(suite, "a1")
    rng = np.random.default_rng(SEED + n)
    filler = synthetic_filler(rng, n, suite.dim, tenant=cue["tenant"], reference_time=suite.reference_time,
                              near_vector=suite.cue_vector(cue), near_count=CROWD_SIZE, near_words=CROWD_WORDS)
    store = MemoryStore(dim=suite.dim)
    store.add_many(filler.pop("texts"), filler.pop("embeddings"), **filler)
    records = [m for m in suite.memories if m["key"].startswith("a1_") and m["tenant"] == cue["tenant"]]
    ids = store.add_many([m["text"] for m in records], suite.embeddings[[m["row"] for m in records]],
                         **memory_columns(suite, records))
    key_to_id = {m["key"]: int(i) for m, i in zip(records, ids)}
    return store, key_to_id, cue


def test_invariant_protected_constraint_survives_at_scale(suite, scaled):
    """docs/spec.md §8: at every corpus size the old, important, lexically distant constraint survives
    candidate generation against recent, semantically close distractors (default quotas)."""
    store, key_to_id, cue = scaled
    rule = key_to_id["a1_rule"]
    vector = suite.cue_vector(cue)
    trap = store.recall(cue["text"], vector, 10, tenant=cue["tenant"], mode="vector", at_time=suite.reference_time,
                        reinforce=False)
    assert rule not in set(trap.candidate_ids.tolist())  # dense top-50 is full of the crowd
    for mode in ("hybrid", "full", "rerank"):
        result = store.recall(cue["text"], vector, 10, tenant=cue["tenant"], mode=mode, at_time=suite.reference_time,
                              reinforce=False)
        assert rule in set(result.candidate_ids.tolist()), mode
        assert rule in set(result.admitted["importance"].tolist())
        others = [result.admitted[g] for g in ("dense", "bm25", "relevance") if g in result.admitted]
        assert rule not in set(np.concatenate(others).tolist())  # admitted by the protected tier only
