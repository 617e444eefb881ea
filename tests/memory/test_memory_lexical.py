"""The store's BM25 leg: main index + delta of recent changes, both held to bm25s."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from fieldrank.bm25 import BM25Index
from fieldrank.memory import DEFAULT_PARAMS, MemoryStore
from fieldrank.memory._lexical import LexicalLeg
from tests.retriever._bm25s_oracle import Bm25sOracle

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


@pytest.mark.parametrize("window", [0, 1, 2])
def test_delta_scores_equal_bm25s_scores(window):
    """With every row in the delta (its own matrix, scored natively), its scores equal bm25s's bit for bit
    (with or without expansion)."""
    texts = random_texts(np.random.default_rng(SEED), 97)
    bm25_params = dataclasses.replace(DEFAULT_PARAMS.bm25_params, context_window=window)
    leg = LexicalLeg(DEFAULT_PARAMS.replace(bm25_delta_min_docs=10_000, bm25_params=bm25_params))
    reference = BM25Index(texts, bm25_params)  # the store uses the default preset's BM25
    oracle = Bm25sOracle(texts, bm25_params)
    for query in QUERIES:
        expected = reference.scores(query)
        np.testing.assert_array_equal(expected, oracle.scores(query))
        got = leg_scores(leg, texts, query)
        assert leg.main_rows == 0 and leg.delta_rows == len(texts)
        overlap = np.zeros(len(texts), dtype=bool)
        ids, _ = reference.top(query, len(texts))
        overlap[ids] = True
        np.testing.assert_array_equal(got[overlap], expected[overlap])
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


def exact_reference(store: MemoryStore) -> tuple[np.ndarray, BM25Index]:
    """Rows of the live memories in id order, and BM25Index over them with their session keys."""
    generation = store._generation
    n = generation.n
    rows = np.flatnonzero(generation.live.buffer[:n])
    rows = rows[np.argsort(generation.ids.buffer[:n][rows], kind="stable")]
    texts = [generation.texts[r] for r in rows.tolist()]
    if not any(BM25Index(["placeholder"]).tokenize(text) for text in texts):
        return rows, None  # nothing indexable (only stop words so far): every score is 0
    return rows, BM25Index(texts, store.params.bm25_params, sessions=generation.session_keys.buffer[:n][rows])


@pytest.mark.parametrize("window", [0, 2])
def test_store_expansion_follows_adds_forgets_and_updates(window):
    """Tenants and sessions interleaved, adds one at a time, forgets, updates and rebuilds: the delta
    always scores exactly like BM25Index over the live memories in id order (its neighbours), the
    main index's rows like the index of its build, and right after a rebuild everything is exact."""
    rng = np.random.default_rng(SEED + window)
    dim = 8
    bm25_params = dataclasses.replace(DEFAULT_PARAMS.bm25_params, context_window=window)
    store = MemoryStore(dim=dim, params=DEFAULT_PARAMS.replace(bm25_params=bm25_params, bm25_delta_min_docs=24,
                                                               bm25_delta_fraction=0.2))
    leg = store._generation.lexical
    q = np.ones(dim, dtype=np.float32)
    ids: list[int] = []
    built = None  # (rows, index) of the corpus at the last rebuild
    rebuilds = 0
    for step in range(240):
        action = rng.random()
        if action < 0.75 or len(ids) < 10:
            session = f"s{int(rng.integers(0, 4))}"
            tenant = "a" if rng.random() < 0.7 else "b"
            ids.append(store.add(random_texts(rng, 1)[0], rng.standard_normal(dim), tenant=tenant,
                                 session=None if rng.random() < 0.1 else session))
        elif action < 0.9:
            store.forget(ids.pop(int(rng.integers(0, len(ids)))))
        else:
            store.update(ids[int(rng.integers(0, len(ids)))], text=random_texts(rng, 1)[0])
        query = QUERIES[step % 5]
        for tenant in ("a", "b"):
            store.recall(query, q, 5, tenant=tenant, reinforce=False)  # catches the leg up
        got = leg_scores(leg, store._generation.texts, query)
        rows, index = exact_reference(store)
        expected = np.zeros(got.size, dtype=np.float32)
        if index is not None:
            expected[rows] = index.scores(query)
        if leg.rebuilds > rebuilds:
            rebuilds, built = leg.rebuilds, (rows, index)
        by_main = np.zeros(got.size, dtype=bool)
        by_main[leg._main_rows[leg._main_fresh]] = True
        by_main &= store._generation.live.buffer[: got.size]
        if built is not None and by_main.any():
            then = np.zeros(got.size, dtype=np.float32)
            then[built[0]] = built[1].scores(query)
            expected[by_main] = then[by_main]
        live = store._generation.live.buffer[: got.size]
        np.testing.assert_array_equal(got[live], expected[live])
        assert not got[~live].any()
        assert sorted(leg.corpus_rows.tolist()) == sorted(rows.tolist())
    assert rebuilds >= 3
