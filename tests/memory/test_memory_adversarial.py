"""The adversarial suite's invariants on its committed vectors (issue 17), no LoCoMo needed.

Synthetic filler (random unit vectors, texts of words no scenario uses, 2 % durable) stands in for
the LoCoMo filler of ``benchmarks/memory_adversarial.py``; the store is the default one and every
recall is in the default mode.
"""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.evaluation import _memory_suite as ms

SEED = 1701
FILLER = 1_000
WORDS = ("amber", "basalt", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "indigo", "juniper", "kelp",
         "lagoon", "marble", "nectar", "opal", "pebble", "quartz", "reef", "saffron", "tundra")


def synthetic_filler(n: int, dim: int) -> dict:
    rng = np.random.default_rng(SEED)
    X = rng.normal(size=(n, dim))
    important = rng.random(n) < ms.IMPORTANT_SHARE
    return {
        "texts": [" ".join(rng.choice(WORDS, size=6)) for _ in range(n)],
        "embeddings": (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32),
        "importances": np.where(important, 0.9, rng.uniform(0.05, 0.6, n)),
        "created_at": ms.REFERENCE_TIME - rng.uniform(0, 730, n) * ms.DAY,
        "important_count": int(important.sum()),
    }


@pytest.fixture(scope="module")
def evaluated():
    vectors = ms.load_vectors()
    suite = ms.scenarios()
    dim = next(iter(vectors.values())).shape[0]
    store, key_to_id = ms.build_store(synthetic_filler(FILLER, dim), vectors, suite)
    return ms.evaluate(store, key_to_id, vectors, suite, ("hybrid", "vector"))["hybrid"], store, key_to_id


def test_suite_is_complete_and_written_for_the_project():
    suite = ms.scenarios()
    assert {case: sum(s.case == case for s in suite) >= 40 for case in ms.CASES} == dict.fromkeys(ms.CASES, True)
    vectors = ms.load_vectors()
    assert all(text in vectors for text in ms.case_texts())
    for scenario in suite:
        if scenario.case == "a":  # the constraint shares no content word with its cue
            rule = next(m["text"] for m in scenario.memories if m["key"] == scenario.relevant)
            assert np.dot(vectors[rule], vectors[scenario.cue]) < 0.7


def test_every_case_a_constraint_reaches_fused_scoring_in_the_default_mode(evaluated):
    metrics, _, _ = evaluated
    assert metrics["a"]["protected_recall@budget"] == 1.0
    assert metrics["b"]["protected_recall@budget"] == 1.0


def test_marked_replacements_always_outrank_the_stale_fact(evaluated):
    metrics, _, _ = evaluated
    assert metrics["d"]["stale_below_current_marked"] == 1.0


def test_no_other_tenant_memory_is_returned(evaluated):
    metrics, _, _ = evaluated
    assert all(metrics[case]["forbidden_returned"] == 0 for case in ms.CASES)


def test_the_store_is_not_worse_than_its_relevance_core_on_the_protected_cases(evaluated):
    metrics, _, _ = evaluated
    for case in ("a", "b"):
        assert metrics[case]["hit@10"] >= metrics[case]["relevance_hit@10"], case


def test_a_false_rescue_in_the_seed_sense_is_a_false_rescue_over_the_relevant_memory(evaluated):
    """Seed 003: a false rescue pulls an irrelevant memory in *over a relevant one*; it is one of
    the promoted non-relevant memories (the broader count), never more, and the (e) cues, whose
    relevant memory the store always ranks first, have none."""
    metrics, _, _ = evaluated
    for case in ms.CASES:
        m = metrics[case]
        assert 0 <= m["false_rescues_over_relevant"] <= m["false_rescues"] <= m["rescues_by_layer"], case
        assert m["false_rescue_over_relevant_rate"] <= m["false_rescue_rate"], case
    if metrics["e"]["hit@1"] == 1.0:
        assert metrics["e"]["false_rescues_over_relevant"] == 0
