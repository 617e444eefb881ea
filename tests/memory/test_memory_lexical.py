"""The store's BM25 leg: bm25s main index + brute-force delta of recent additions."""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank.bm25 import BM25Index
from fieldrank.memory import DEFAULT_PARAMS, MemoryStore
from fieldrank.memory.lexical import LexicalLeg

SEED = 7
WORDS = (
    "river", "rivers", "garden", "gardening", "deploy", "deployed", "build", "builds", "friday", "fridays",
    "peanut", "allergy", "the", "a", "of", "to", "and", "is", "budget", "kitchen", "cabinet", "cabinets",
)
QUERIES = ("river garden", "deploy the build", "fridays", "peanut allergy kitchen", "cabinets cabinets budget",
           "of the and", "zyzzyva")


def random_texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(1, 9)))) for _ in range(n)]


def leg_scores(leg: LexicalLeg, texts: list[str], query: str) -> np.ndarray:
    return leg.scores_of_rows(texts, query, np.ones(len(texts), dtype=bool))


def test_delta_scores_equal_bm25s_scores():
    """With every row in the delta, the brute-force Lucene scores equal bm25s's to float32 rounding."""
    texts = random_texts(np.random.default_rng(SEED), 97)
    leg = LexicalLeg(DEFAULT_PARAMS.replace(bm25_delta_min_docs=10_000))
    reference = BM25Index(texts, DEFAULT_PARAMS.bm25_params)  # the store uses the default preset's BM25
    for query in QUERIES:
        expected = reference.scores(query)
        got = leg_scores(leg, texts, query)
        assert leg.main_rows == 0 and leg.delta_rows == len(texts)
        overlap = np.zeros(len(texts), dtype=bool)
        ids, _ = reference.top(query, len(texts))
        overlap[ids] = True
        np.testing.assert_allclose(got[overlap], expected[overlap], rtol=1e-5)
        assert not got[~overlap].any()


def test_rebuild_after_the_delta_outgrows_its_limit():
    rng = np.random.default_rng(SEED)
    texts = random_texts(rng, 50)
    leg = LexicalLeg(DEFAULT_PARAMS.replace(bm25_delta_min_docs=8, bm25_delta_fraction=0.25))
    leg_scores(leg, texts, "river")
    assert leg.rebuilds == 1 and leg.main_rows == 50 and leg.delta_rows == 0
    texts += random_texts(rng, 8)  # within max(8, 0.25 * 50) = 12: stays in the delta
    leg_scores(leg, texts, "river")
    # the 8 new rows, and the last context_window main rows, whose context documents gained them
    window = DEFAULT_PARAMS.bm25_params.context_window
    assert leg.rebuilds == 1 and leg.delta_rows == 8 + window
    texts += random_texts(rng, 5)  # 8 + window + 5 > 12: rebuild
    leg_scores(leg, texts, "river")
    assert leg.rebuilds == 2 and leg.main_rows == 63 and leg.delta_rows == 0


def test_main_plus_delta_ranks_like_one_index():
    """Rows in the delta are ranked on the main index's scale (global df and avgdl)."""
    rng = np.random.default_rng(SEED + 1)
    texts = random_texts(rng, 200)
    leg = LexicalLeg(DEFAULT_PARAMS.replace(bm25_delta_min_docs=30, bm25_delta_fraction=0.05))
    leg_scores(leg, texts, "river")  # builds the main index over 200 rows
    texts += random_texts(rng, 20)
    reference = BM25Index(texts, DEFAULT_PARAMS.bm25_params)  # the store uses the default preset's BM25
    for query in QUERIES[:5]:
        got = leg_scores(leg, texts, query)
        window = DEFAULT_PARAMS.bm25_params.context_window
        assert leg.delta_rows == 20 + window and leg.main_rows == 200
        expected = reference.scores(query)
        # the delta (new rows and the re-expanded ones before them) is exact: current statistics
        np.testing.assert_array_equal(got[200 - window:], expected[200 - window:])
        matched = got > 0
        # main rows keep the statistics of their build (200 rows), delta rows use all 220. With
        # this 10-word vocabulary nearly every context document (a row and 4 neighbours) holds
        # every word, so the context idf is small and a 10 % growth moves it by up to ~20 %.
        np.testing.assert_allclose(got[matched], expected[matched], rtol=0.25)
        top_got = set(np.argsort(-got, kind="stable")[:5].tolist())
        top_expected = set(np.argsort(-expected, kind="stable")[:5].tolist())
        assert len(top_got & top_expected) >= 4


def test_store_keyword_mode_sees_additions_immediately_and_never_forgotten_rows():
    rng = np.random.default_rng(SEED)
    dim = 8
    vectors = rng.standard_normal((2000, dim)).astype(np.float32)
    params = DEFAULT_PARAMS.replace(bm25_delta_min_docs=64, bm25_delta_fraction=0.1)
    store = MemoryStore(dim=dim, params=params)
    store.add_many(random_texts(rng, 1500), vectors[:1500])
    q = vectors[0] / np.linalg.norm(vectors[0])
    store.recall("river", q, 5, mode="keyword", reinforce=False)  # builds main over 1500 rows
    new = store.add("quetzal sighting by the river", vectors[1500])
    assert store.recall("quetzal", q, 5, mode="keyword", reinforce=False).ids.tolist() == [new]
    store.forget(new)
    assert store.recall("quetzal", q, 5, mode="keyword", reinforce=False).ids.size == 0
    again = store.add("quetzal again", vectors[1501])
    assert store.recall("quetzal", q, 5, mode="keyword", reinforce=False).ids.tolist() == [again]


def test_stopword_only_corpus_is_not_an_error():
    store = MemoryStore(dim=4)
    store.add_many(["the of and", "a to is"], np.eye(4, dtype=np.float32)[:2])
    assert store.recall("the", np.ones(4, np.float32), mode="keyword").ids.size == 0
    memory_id = store.add("zebra", np.eye(4, dtype=np.float32)[2])
    assert store.recall("zebra", np.ones(4, np.float32), mode="keyword", reinforce=False).ids.tolist() == [memory_id]


@pytest.mark.parametrize("n_rows", [1, 3])
def test_small_stores(n_rows):
    store = MemoryStore(dim=4)
    store.add_many(["river"] * n_rows, np.eye(4, dtype=np.float32)[:n_rows])
    assert store.recall("river", np.ones(4, np.float32), mode="keyword", reinforce=False).ids.size == n_rows
