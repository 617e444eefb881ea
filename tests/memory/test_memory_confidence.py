"""MemoryStore hit confidence (issue 29): every hit carries it, ``min_confidence`` cuts the recall,
the ranking and the recall dynamics of what is returned are unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fieldrank import _confidence as conf
from fieldrank.config import ConfidenceParams
from fieldrank.memory import MemoryStore
from fieldrank.memory import _confidence as store_conf

DIM = 16
DAY = 86400.0
NOW = 1_800_000_000.0


def unit(rng, n, d=DIM):
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture
def store(rng):
    s = MemoryStore(dim=DIM)
    E = unit(rng, 14)
    texts = [f"note {i} about gardens and rivers" for i in range(10)] + [
        "the violin lesson is on friday", "saffron rice recipe", "other tenant secret", "other river"]
    ids = s.add_many(texts, E, tenants=["a"] * 12 + ["b"] * 2, created_at=NOW - DAY * np.arange(14))
    yield s, E, ids
    s.close()


def test_every_hit_carries_a_probability(store):
    s, E, _ = store
    result = s.recall("violin lesson", E[10], tenant="a", at_time=NOW, reinforce=False)
    c = np.array([h.confidence for h in result.hits])
    assert c.size and np.all((c >= 0) & (c <= 1))


def test_min_confidence_cuts_the_recall_and_keeps_the_order(store):
    s, E, _ = store
    full = s.recall("violin lesson", E[10], tenant="a", at_time=NOW, reinforce=False)
    for threshold in (0.0, float(np.median([h.confidence for h in full.hits])), 1.0):
        kept = s.recall("violin lesson", E[10], tenant="a", at_time=NOW, reinforce=False, min_confidence=threshold)
        want = [h for h in full.hits if h.confidence >= threshold]
        assert [h.id for h in kept.hits] == [h.id for h in want]
        assert [h.rank for h in kept.hits] == [h.rank for h in want]  # a hit's rank is its place in the recall
        assert [h.confidence for h in kept.hits] == [h.confidence for h in want]
    assert len(s.recall("violin", E[10], tenant="a", at_time=NOW, reinforce=False, min_confidence=0.0).hits) == 10


def test_only_returned_hits_are_reinforced(store):
    s, E, ids = store
    kept = s.recall("violin lesson", E[10], tenant="a", at_time=NOW, min_confidence=1.0)
    assert kept.hits == ()
    assert all(s.get(int(i)).recall_count == 0 for i in ids[:12])


@pytest.mark.parametrize("bad, exc", [(-0.5, ValueError), (2.0, ValueError), (math.nan, ValueError), ("x", TypeError)])
def test_min_confidence_is_checked(store, bad, exc):
    s, E, _ = store
    with pytest.raises(exc, match="min_confidence"):
        s.recall("violin", E[10], tenant="a", at_time=NOW, min_confidence=bad)


def test_keyword_recall_without_a_vector_has_no_confidence(store):
    s, _, _ = store
    result = s.recall("violin lesson", None, tenant="a", mode="keyword", at_time=NOW, reinforce=False)
    assert result.hits and all(math.isnan(h.confidence) for h in result.hits)
    with pytest.raises(ValueError, match="min_confidence needs the cue text and a cue vector"):
        s.recall("violin lesson", None, tenant="a", mode="keyword", at_time=NOW, min_confidence=0.5)


def test_store_features():
    f = store_conf.hit_features("violin lessons on Friday", ["the violin lesson", "friday", "nothing here"],
                                [0.9, 0.2, 0.1], [2.0, 1.5, 1.0])
    cov = f.hits[:, conf.HIT_FEATURES.index("coverage")]
    np.testing.assert_allclose(cov, [2 / 3, 1 / 3, 0])  # stemmed terms: violin, lesson, friday
    np.testing.assert_allclose(f.hits[:, conf.HIT_FEATURES.index("score_gap")], [0.5, -0.5, -1.0])
    np.testing.assert_allclose(f.memory, [0.9, 2 / 3, 1.0])


def test_annotate_uses_the_given_model(store):
    s, E, _ = store
    result = s.recall("violin lesson", E[10], tenant="a", at_time=NOW, reinforce=False)
    sure = ConfidenceParams(20.0, (0.0,) * 3, 20.0, (0.0,) * 4, (0.0, 1.0, 0.0))
    out = store_conf.annotate(result.hits, "violin lesson", True, None, sure)
    assert [h.confidence for h in out] == pytest.approx([1.0] * len(out))
    assert [h.id for h in out] == [h.id for h in result.hits]


def test_shipped_store_model_separates_locomo_memories(locomo_dir):
    """On LoCoMo (skipped without the data): the store's shipped model tells a question's own
    conversation from another's (in-sample regression guard; held-out figures in
    docs/results/confidence.md)."""
    from fieldrank.evaluation import _confidence as ec
    from fieldrank.evaluation import locomo

    data = locomo.load_locomo(locomo_dir, "minilm-l6-v2", checksums=False)
    items = ec.collect_store(data)[::4]
    params = store_conf.default_params()
    own = np.array([conf.confidence(i.own, params)[0] for i in items])
    away = np.array([conf.confidence(i.other, params)[0] for i in items])
    assert ec.auroc(np.r_[own, away], np.r_[np.ones(own.size), np.zeros(away.size)]) >= 0.85
