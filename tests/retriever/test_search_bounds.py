"""Issue 25: what a search costs is bounded by the corpus, not by ``k``; loaders fail cleanly.

Before, ``k = 10**9`` allocated 7.45 GiB whatever the corpus, and a plan was cached per distinct
``k`` for the retriever's life. Now ``k`` is clamped to the corpus before anything is allocated,
the plan cache holds a few plans, and the rankings are bit-identical to the unclamped plan's.
"""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from fieldrank.bm25 import BM25FormatError, BM25Index
from fieldrank.config import PRESET_NAMES, BM25Leg, CFSRLeg, CosineLeg, RetrieverConfig, RingLeg, preset
from fieldrank._retriever.corpus import build_corpus
from fieldrank._retriever.plan import PLAN_CACHE_SIZE
from fieldrank.hybrid import HybridRetriever, LegPlan

from tests.helpers import unit_rows

SEED = 2025
N_DOCS = 61
DIM = 12
WORDS = ("kitchen", "budget", "cabinets", "quartz", "dog", "flight", "piano", "garden", "camp", "oil")

DEEP_CONFIG = RetrieverConfig(  # one leg deeper than the corpus, one shallow: N < k <= coverage is its own case
    legs=(CosineLeg(depth=100), BM25Leg(depth=5), CFSRLeg(depth=10, p=20), RingLeg(depth=4)), name="deep_leg")
CONFIGS = [preset(name) for name in PRESET_NAMES] + [DEEP_CONFIG]


def texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 6)))) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(SEED)
    return texts(rng, N_DOCS), unit_rows(rng, N_DOCS, DIM), texts(rng, 4), unit_rows(rng, 4, DIM)


def unclamped(retriever: HybridRetriever, text: str, q: np.ndarray, k: int, subset=None):
    """The plan as it was built before the clamp (``LegPlan(config, k)``), run as search runs it."""
    plan = LegPlan(retriever.config, k)
    corpus = build_corpus(retriever.texts, retriever.embeddings, False, retriever.config.bm25,
                          bm25_index=retriever.bm25)
    sub = None if subset is None else corpus.subset_ids(subset)
    outputs = plan.run(corpus, [text] if retriever.config.needs_text else None,
                       corpus.query_vector(q) if retriever.config.needs_vector else None, 1, sub, 1)[0]
    return plan.fuse_one(outputs), outputs


@pytest.mark.parametrize("config", CONFIGS, ids=[c.name for c in CONFIGS])
def test_rankings_past_the_corpus_are_the_unclamped_ones_bit_for_bit(corpus, config):
    docs, E, query_texts, Q = corpus
    retriever = HybridRetriever(docs, E, config)
    subset = np.arange(3, N_DOCS, 2)
    for text, q in zip(query_texts, Q):
        for k in (N_DOCS - 1, N_DOCS, N_DOCS + 1, 80, 2 * N_DOCS + 3, 150, 5 * N_DOCS):
            for sub in (None, subset):
                result = retriever.search(text, q, k, subset=sub)
                (ids, scores), outputs = unclamped(retriever, text, q, k, sub)
                assert result.ids.tobytes() == ids.tobytes(), (config.name, k)
                assert result.scores.tobytes() == scores.tobytes(), (config.name, k)
                for leg, reference in zip(result.legs, outputs):
                    assert leg.ids.tobytes() == reference.ids.tobytes()
                    assert leg.scores.tobytes() == reference.scores.tobytes()
        huge = retriever.search(text, q, 10**9)
        reference = retriever.search(text, q, 5 * N_DOCS)
        assert huge.ids.tobytes() == reference.ids.tobytes() and huge.scores.tobytes() == reference.scores.tobytes()
        batch = retriever.search_batch([text], q[None, :], 2**62)[0]
        assert batch.ids.tobytes() == reference.ids.tobytes()


def test_a_huge_k_costs_what_the_corpus_does(corpus):
    docs, E, query_texts, Q = corpus
    retriever = HybridRetriever(docs, E, "rrf_cfsr")
    retriever.search(query_texts[0], Q[0], 5)  # warm: imports, the BM25 leg's caches
    tracemalloc.start()
    try:
        for k in (10**9, 2**62, 2**63 - 1):
            result = retriever.search(query_texts[0], Q[0], k)
            assert len(result.ids) <= N_DOCS
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * 2**20, peak  # before: 7.45 GiB for k = 10**9
    assert all(plan.k <= N_DOCS for plan in retriever._plans)


def test_the_plan_cache_is_bounded(corpus):
    docs, E, query_texts, Q = corpus
    retriever = HybridRetriever(docs, E, "rrf_cfsr")
    first = {k: retriever.search(query_texts[0], Q[0], k) for k in range(1, 40)}
    for k in range(10**5, 10**5 + 200):  # past the corpus: every one of these is one plan
        retriever.search(query_texts[0], Q[0], k)
    assert len(retriever._plans) <= PLAN_CACHE_SIZE
    for k, result in first.items():  # evicted plans are rebuilt equal
        again = retriever.search(query_texts[0], Q[0], k)
        assert again.ids.tobytes() == result.ids.tobytes() and again.scores.tobytes() == result.scores.tobytes()
    assert len(retriever._plans) <= PLAN_CACHE_SIZE


@pytest.mark.parametrize("name", ["fieldrank_bm25.json", "params.index.json", "vocab.index.json"])
def test_bm25_load_of_deeply_nested_json_is_a_value_error_naming_the_file(tmp_path, name):
    index = BM25Index(["kitchen budget quartz", "budget piano dog", "garden camp oil"])
    index.save(tmp_path / "bm25")
    (tmp_path / "bm25" / name).write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ValueError, match="nested too deeply|cannot be parsed") as caught:
        BM25Index.load(tmp_path / "bm25")
    assert isinstance(caught.value, BM25FormatError)
    assert str(tmp_path / "bm25") in str(caught.value)
    if name != "vocab.index.json":  # read by bm25s: the message names the index directory
        assert name in str(caught.value)
