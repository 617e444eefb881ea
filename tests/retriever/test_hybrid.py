"""Tests of the hybrid retriever: fusion, provenance, subsets, batches, union pools, LoCoMo."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import fieldrank
from fieldrank.bm25 import BM25Index
from fieldrank.config import (
    PRESET_NAMES,
    BM25Leg,
    CFSLeg,
    CFSRLeg,
    CosineLeg,
    MMRLeg,
    RetrieverConfig,
    RingLeg,
    preset,
)
from fieldrank.hybrid import UNIT_NORM_ATOL, HybridRetriever, SearchResult

from tests.helpers import unit_rows

SEED = 20240917
N_DOCS = 61  # odd, and below the prefilter pool so pools are the whole (sub)corpus in places
DIM = 12
N_QUERIES = 9
WORDS = ("kitchen", "budget", "cabinets", "quartz", "dog", "flight", "piano", "garden", "camp", "oil",
         "passport", "plants", "novel", "rush", "fees", "installer", "the", "and", "we", "our")
K0 = fieldrank.DEFAULTS["k0"]

UNION_CONFIG = RetrieverConfig(
    legs=(CosineLeg(depth=8), BM25Leg(depth=8), CFSRLeg(depth=12, p=15, pool="union", union_p=10, weight=2.0),
          CFSLeg(depth=10, p=12, pool="union")),
    name="union_test",
)
WIDE_CONFIG = RetrieverConfig(
    legs=(CosineLeg(depth=7), BM25Leg(depth=9, weight=0.5), CFSRLeg(depth=20, p=30, weight=3.0),
          CFSLeg(depth=15, p=25), MMRLeg(depth=6, p=20), RingLeg(depth=5)),
    k=12, name="every_kind",
)
CONFIGS = [preset(name) for name in PRESET_NAMES] + [UNION_CONFIG, WIDE_CONFIG]
CONFIG_IDS = [c.name for c in CONFIGS]


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 7)))) for _ in range(n)]


@pytest.fixture(scope="module")
def corpus() -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(SEED)
    return _texts(rng, N_DOCS), unit_rows(rng, N_DOCS, DIM)


@pytest.fixture(scope="module")
def queries() -> tuple[list[str], np.ndarray]:
    rng = np.random.default_rng(SEED + 1)
    return _texts(rng, N_QUERIES), unit_rows(rng, N_QUERIES, DIM)


@pytest.fixture(scope="module")
def retriever(corpus) -> HybridRetriever:
    texts, E = corpus
    return HybridRetriever(texts, E, "rrf_cfsr")


def _same(a: SearchResult, b: SearchResult) -> None:
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)
    for leg_a, leg_b in zip(a.legs, b.legs):
        np.testing.assert_array_equal(leg_a.ids, leg_b.ids)
        np.testing.assert_array_equal(leg_a.scores, leg_b.scores)
        np.testing.assert_array_equal(leg_a.hit_rank, leg_b.hit_rank)


def _hand_rrf(legs: list[np.ndarray], weights: list[float], k: int, k0: float = K0) -> tuple[list[int], list[float]]:
    """Weighted RRF written out: sum w / (k0 + rank) per id, then score desc, id asc."""
    fused: dict[int, float] = {}
    for ids, weight in zip(legs, weights):
        for rank, doc in enumerate(ids.tolist(), start=1):
            fused[doc] = fused.get(doc, 0.0) + weight / (k0 + rank)
    order = sorted(fused, key=lambda doc: (-fused[doc], doc))[:k]
    return order, [fused[doc] for doc in order]


# ------------------------------------------------------------------ fusion and provenance
def test_ranking_equals_hand_computed_weighted_rrf(retriever, corpus, queries) -> None:
    texts, E = corpus
    bm25 = BM25Index(texts)
    for text, q in zip(*queries):
        result = retriever.search(text, q)
        cosine = fieldrank.prefilter(E, q, 10).ids
        lexical = bm25.top(text, 10)[0]
        cfsr = fieldrank.cfsr(E, q, 50)
        ids, scores = _hand_rrf([cosine, lexical, cfsr.ids], [1.0, 1.0, 3.0], 10)
        assert result.ids.tolist() == ids
        np.testing.assert_allclose(result.scores, scores, rtol=1e-12)

        # Provenance: ranks, raw scores, contributions and CFS-R coefficients of every hit.
        for leg, own in zip(result.legs, [cosine, lexical, cfsr.ids]):
            np.testing.assert_array_equal(leg.ids, own)
            for j, doc in enumerate(result.ids.tolist()):
                where = np.flatnonzero(own == doc)
                if where.size:
                    assert leg.hit_rank[j] == where[0] + 1
                    assert leg.hit_score[j] == leg.scores[where[0]]
                    assert leg.hit_contribution[j] == leg.weight / (K0 + where[0] + 1)
                else:
                    assert leg.hit_rank[j] == 0 and np.isnan(leg.hit_score[j]) and leg.hit_contribution[j] == 0
        cfsr_leg = result.leg("cfsr")
        for j, doc in enumerate(result.ids.tolist()):
            where = np.flatnonzero(cfsr.ids == doc)
            if where.size:
                assert cfsr_leg.hit_coef[j] == cfsr.coef[where[0]]
        total = np.sum([leg.hit_contribution for leg in result.legs], axis=0)
        np.testing.assert_allclose(total, result.scores, rtol=1e-12)


def test_top_of_all_three_legs_scores_one_sixty_first_each() -> None:
    # Document 0 is the query itself and the only one sharing its words: first in every leg.
    rng = np.random.default_rng(SEED)
    E = unit_rows(rng, 20, DIM)
    texts = ["quartz countertops"] + [f"filler {i} about dogs" for i in range(19)]
    result = HybridRetriever(texts, E, "rrf_cfsr").search("quartz countertops", E[0])
    assert result.ids[0] == 0
    assert result.scores[0] == pytest.approx(1 / 61 + 1 / 61 + 3 / 61, rel=1e-12)
    assert [int(leg.hit_rank[0]) for leg in result.legs] == [1, 1, 1]


def test_single_leg_presets_keep_the_leg_order(retriever, corpus, queries) -> None:
    texts, E = corpus
    bm25 = BM25Index(texts)
    for text, q in zip(*queries):
        cosine = retriever.with_config("cosine").search(text, q)
        assert cosine.ids.tolist() == fieldrank.prefilter(E, q, 10).ids.tolist()
        assert retriever.with_config("bm25").search(text).ids.tolist() == bm25.top(text, 10)[0].tolist()
        assert retriever.with_config("cfsr").search(text, q).ids.tolist() == fieldrank.cfsr(E, q, 10).ids.tolist()
        assert retriever.with_config("cfs").search(text, q).ids.tolist() == fieldrank.cfs(E, q, 10).ids.tolist()


@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
def test_legs_equal_the_corpus_operators(retriever, corpus, queries, config) -> None:
    """Sharing one prefilter across legs (single search) must not change any leg."""
    _, E = corpus
    r = retriever.with_config(config)
    for text, q in zip(*queries):
        result = r.search(text, q, subset=np.arange(3, N_DOCS, 2))
        sub = np.arange(3, N_DOCS, 2)
        for leg, hits in zip(config.legs, result.legs):
            if isinstance(leg, CosineLeg):
                expected = fieldrank.prefilter(E, q, leg.depth, subset=sub)
            elif isinstance(leg, CFSRLeg) and leg.pool == "dense":
                expected = fieldrank.cfsr(E, q, leg.depth, p=leg.p, subset=sub, **leg.operator_kwargs())
                np.testing.assert_array_equal(hits.coef, expected.coef)
            elif isinstance(leg, CFSLeg) and leg.pool == "dense":
                expected = fieldrank.cfs(E, q, leg.depth, p=leg.p, subset=sub, **leg.operator_kwargs())
            elif isinstance(leg, MMRLeg):
                expected = fieldrank.mmr(E, q, leg.depth, p=leg.p, subset=sub, **leg.operator_kwargs())
            elif isinstance(leg, RingLeg):
                expected = fieldrank.ring(E, q, leg.depth, subset=sub, **leg.operator_kwargs())
            else:
                continue
            np.testing.assert_array_equal(hits.ids, expected.ids)
            np.testing.assert_array_equal(hits.scores, expected.scores)


def test_union_pool_reranks_dense_and_bm25_candidates(corpus, queries) -> None:
    texts, E = corpus
    r = HybridRetriever(texts, E, UNION_CONFIG)
    bm25 = BM25Index(texts)
    leg = UNION_CONFIG.legs[2]
    for text, q in zip(*queries):
        dense = fieldrank.prefilter(E, q, leg.p).ids
        lexical = bm25.top(text, leg.union_p)[0]
        pool = np.union1d(dense, lexical)
        expected = fieldrank.cfsr_pool(pool, E[pool], q, leg.depth, **leg.operator_kwargs())
        got = r.search(text, q).leg("cfsr")
        np.testing.assert_array_equal(got.ids, expected.ids)
        np.testing.assert_array_equal(got.coef, expected.coef)
        cfs_leg = UNION_CONFIG.legs[3]
        cfs_pool = np.union1d(fieldrank.prefilter(E, q, cfs_leg.p).ids, bm25.top(text, cfs_leg.p)[0])
        expected_cfs = fieldrank.cfs_pool(cfs_pool, E[cfs_pool], q, cfs_leg.depth, **cfs_leg.operator_kwargs())
        np.testing.assert_array_equal(r.search(text, q).leg("cfs").ids, expected_cfs.ids)


def test_union_pool_admits_a_lexical_only_candidate() -> None:
    # A pile-up of near-duplicates along e1 fills the dense pool; document 0 (along e2, lower
    # cosine) is the only one with the query's word and the part of the query the pile-up
    # misses. Only a union pool gives CFS-R the chance to pick it.
    rng = np.random.default_rng(SEED)
    n = 40
    basis = np.eye(DIM, dtype=np.float32)
    E = basis[1] + 0.1 * rng.standard_normal((n, DIM)).astype(np.float32)
    E[0] = basis[2] + 0.8 * basis[3]
    E /= np.linalg.norm(E, axis=1, keepdims=True)
    q = (basis[1] + basis[2]) / np.float32(np.sqrt(2))
    texts = ["quartz countertops over quote"] + [f"kitchen budget note {i}" for i in range(1, n)]
    dense = RetrieverConfig(legs=(CFSRLeg(depth=5, p=5),))
    union = RetrieverConfig(legs=(CFSRLeg(depth=5, p=5, pool="union", union_p=1),))
    r = HybridRetriever(texts, E, dense)
    assert 0 not in fieldrank.prefilter(E, q, 5).ids
    assert 0 not in r.search("quartz", q).leg("cfsr").ids
    union_leg = r.with_config(union).search("quartz", q).leg("cfsr")
    assert 0 in union_leg.ids
    assert union_leg.coef[union_leg.ids.tolist().index(0)] > 0


# ------------------------------------------------------------------ batches
@pytest.mark.parametrize("config", CONFIGS, ids=CONFIG_IDS)
@pytest.mark.parametrize("n_threads", [1, 2])
def test_batch_equals_single(retriever, queries, config, n_threads) -> None:
    r = retriever.with_config(config)
    texts, Q = queries
    batch = r.search_batch(texts, Q, n_threads=n_threads)
    assert len(batch) == len(texts)
    for text, q, got in zip(texts, Q, batch):
        _same(got, r.search(text, q))


@pytest.mark.parametrize("config", [preset("rrf_cfsr"), preset("rrf_ring"), UNION_CONFIG, WIDE_CONFIG],
                         ids=lambda c: c.name)
def test_batch_with_subsets_equals_single(retriever, queries, config) -> None:
    r = retriever.with_config(config)
    texts, Q = queries
    rng = np.random.default_rng(SEED + 2)
    pool = [rng.choice(N_DOCS, size=size, replace=False) for size in (5, 20, 40)]
    # Repeated subsets (in another order), None, and a boolean mask.
    mask = np.zeros(N_DOCS, dtype=bool)
    mask[pool[1]] = True
    subsets = [pool[0], None, pool[1], pool[2], rng.permutation(pool[1]), mask, pool[0], None, pool[2]]
    batch = r.search_batch(texts, Q, subsets=subsets, n_threads=2)
    for text, q, sub, got in zip(texts, Q, subsets, batch):
        _same(got, r.search(text, q, subset=sub))
    shared = r.search_batch(texts, Q, subset=pool[2])
    for text, q, got in zip(texts, Q, shared):
        _same(got, r.search(text, q, subset=pool[2]))


def test_batch_without_vectors_or_texts(retriever, queries) -> None:
    texts, Q = queries
    lexical = retriever.with_config("bm25")
    for text, got in zip(texts, lexical.search_batch(texts)):
        _same(got, lexical.search(text))
    dense = retriever.with_config("cosine")
    for q, got in zip(Q, dense.search_batch(vectors=Q)):
        _same(got, dense.search(vector=q))
    assert retriever.search_batch([], np.empty((0, DIM), dtype=np.float32)) == []


def test_batch_argument_errors(retriever, queries) -> None:
    texts, Q = queries
    with pytest.raises(ValueError, match="either subset"):
        retriever.search_batch(texts, Q, subset=[1], subsets=[None] * len(texts))
    with pytest.raises(ValueError, match="one entry per query"):
        retriever.search_batch(texts, Q, subsets=[None])
    with pytest.raises(ValueError, match="same queries"):
        retriever.search_batch(texts[:2], Q)
    with pytest.raises(ValueError, match=r"subsets\[1\] ids must lie in"):
        retriever.search_batch(texts[:2], Q[:2], subsets=[None, [N_DOCS]])
    with pytest.raises(ValueError, match="rows must be L2-normalised"):
        retriever.search_batch(texts, Q * 2)


# ------------------------------------------------------------------ subsets never leak
def test_subset_never_leaks(corpus) -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = hypothesis.strategies
    texts, E = corpus
    base = HybridRetriever(texts, E, "rrf_cfsr")
    retrievers = [base.with_config(c) for c in CONFIGS]
    rng_words = list(WORDS)

    @hypothesis.settings(max_examples=60, deadline=None, derandomize=True)
    @hypothesis.given(
        which=st.integers(0, len(retrievers) - 1),
        subset=st.lists(st.integers(0, N_DOCS - 1), min_size=1, max_size=N_DOCS, unique=True),
        words=st.lists(st.sampled_from(rng_words), min_size=1, max_size=4),
        row=st.integers(0, N_DOCS - 1),
        k=st.integers(1, 30),
    )
    def check(which, subset, words, row, k) -> None:
        r = retrievers[which]
        allowed = set(subset)
        result = r.search(" ".join(words), E[row], k, subset=np.array(subset))
        assert set(result.ids.tolist()) <= allowed
        for leg in result.legs:
            assert set(leg.ids.tolist()) <= allowed
        assert len(result) <= k

    check()


def test_subset_forms_agree(retriever, queries) -> None:
    text, q = queries[0][0], queries[1][0]
    ids = np.array([40, 3, 17, 8, 59, 22])
    mask = np.zeros(N_DOCS, dtype=bool)
    mask[ids] = True
    _same(retriever.search(text, q, subset=ids), retriever.search(text, q, subset=mask))
    _same(retriever.search(text, q, subset=ids), retriever.search(text, q, subset=ids.tolist()))
    with pytest.raises(ValueError, match="at least one id"):
        retriever.search(text, q, subset=np.array([], dtype=np.int64))
    with pytest.raises(ValueError, match="unique"):
        retriever.search(text, q, subset=[1, 1])
    with pytest.raises(ValueError, match="boolean mask must have shape"):
        retriever.search(text, q, subset=np.ones(3, dtype=bool))


# ------------------------------------------------------------------ inputs
def test_missing_query_parts_are_explained(retriever, queries) -> None:
    text, q = queries[0][0], queries[1][0]
    with pytest.raises(ValueError, match="dense legs"):
        retriever.search(text)
    with pytest.raises(ValueError, match="query text"):
        retriever.search(vector=q)
    assert len(retriever.with_config("bm25").search(text)) > 0
    assert len(retriever.with_config("cosine").search(vector=q)) == 10
    with pytest.raises(TypeError, match="text must be a str"):
        retriever.search(b"bytes", q)  # type: ignore[arg-type]


def test_query_vector_checks_and_conversion(corpus, queries) -> None:
    texts, E = corpus
    text, q = queries[0][0], queries[1][0]
    r = HybridRetriever(texts, E, "rrf_cfsr")
    with pytest.raises(ValueError, match="must be L2-normalised"):
        r.search(text, q * (1 + 10 * UNIT_NORM_ATOL))
    with pytest.raises(ValueError, match="length 12"):
        r.search(text, q[:5])
    with pytest.raises(ValueError, match="finite"):
        r.search(text, np.full(DIM, np.nan, dtype=np.float32))
    _same(r.search(text, q.astype(np.float64)), r.search(text, q))
    scaled = HybridRetriever(texts, E * 3, "rrf_cfsr", normalize=True)
    normalised, plain = scaled.search(text, q * 5), r.search(text, q)
    # Normalising changes the vectors in the last float32 bit only.
    np.testing.assert_array_equal(normalised.ids, plain.ids)
    np.testing.assert_allclose(normalised.leg("cosine").scores, plain.leg("cosine").scores, rtol=1e-5)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        r.search(text, q, 0)


def test_query_vector_layouts_give_the_same_result(corpus, queries) -> None:
    """The query check's fast path (a C-ordered float32 (d,) array) and the converting path agree:
    strided, read-only, list and float64 forms of one vector return the same result."""
    texts, E = corpus
    text, q = queries[0][0], queries[1][0]
    for config in ("rrf2", "default", "rrf_cfsr"):
        r = HybridRetriever(texts, E, config)
        plain = r.search(text, q)
        strided = np.repeat(q, 2)[::2]
        assert not strided.flags.c_contiguous
        read_only = q.copy()
        read_only.flags.writeable = False
        for form in (strided, read_only, q.tolist(), q.astype(np.float64), q[None, :][0]):
            _same(r.search(text, form), plain)
        with pytest.raises(ValueError, match="length 12"):
            r.search(text, np.concatenate([q, q]))
        with pytest.raises(ValueError, match="must be a 1-D array"):
            r.search(text, q[None, :])


def test_k_is_checked_after_the_default_plan_is_cached(retriever, queries) -> None:
    """The plan for the config's k is cached for ``k=None``; any k given is still checked."""
    text, q = queries[0][0], queries[1][0]
    _same(retriever.search(text, q), retriever.search(text, q, retriever.config.k))
    for bad in (True, float(retriever.config.k), "10"):
        with pytest.raises(TypeError):
            retriever.search(text, q, bad)  # type: ignore[arg-type]


def test_construction_checks(corpus) -> None:
    texts, E = corpus
    with pytest.raises(ValueError, match="one row per text"):
        HybridRetriever(texts[:-1], E)
    with pytest.raises(ValueError, match="normalize=True"):
        HybridRetriever(texts, E * 2)
    with pytest.raises(TypeError, match="float32"):
        HybridRetriever(texts, (E * 100).astype(np.int32))
    with pytest.raises(ValueError, match="unknown preset"):
        HybridRetriever(texts, E, "rrf9")
    r64 = HybridRetriever(texts, E.astype(np.float64))
    assert r64.embeddings.dtype == np.float32
    with pytest.raises(ValueError, match="bm25_index must index"):
        HybridRetriever(texts, E, bm25_index=BM25Index(texts[:5]))


def test_with_config_shares_the_corpus(retriever) -> None:
    other = retriever.with_config("rrf_cfs")
    assert np.shares_memory(other.embeddings, retriever.embeddings)
    assert other.bm25 is retriever.bm25
    assert other.config == preset("rrf_cfs")
    from fieldrank.bm25 import BM25Params

    rebuilt = retriever.with_config(preset("bm25").replace(bm25=BM25Params(k1=1.2)))
    assert rebuilt.bm25 is not retriever.bm25 and rebuilt.bm25.params.k1 == 1.2
    assert not retriever.embeddings.flags.writeable


def test_k_and_result_views(retriever, queries) -> None:
    text, q = queries[0][0], queries[1][0]
    assert len(retriever.search(text, q, 3)) == 3
    everything = retriever.search(text, q, 10_000)
    assert len(everything) == len(set().union(*(set(leg.ids.tolist()) for leg in everything.legs)))
    result = retriever.search(text, q)
    data = json.loads(json.dumps(result.to_dict()))
    assert [hit["id"] for hit in data["hits"]] == result.ids.tolist()
    assert data["hits"][0]["text"] == retriever.texts[result.ids[0]]
    assert set(data["hits"][0]["legs"]) == {"cosine", "bm25", "cfsr"}
    assert result.texts == [retriever.texts[i] for i in result.ids]
    with pytest.raises(KeyError, match="no leg named"):
        result.leg("ring")
    assert "rrf_cfsr" in repr(result) and "HybridRetriever" in repr(retriever)


def test_lazy_export() -> None:
    assert fieldrank.HybridRetriever is HybridRetriever


# ------------------------------------------------------------------ LoCoMo
LOCOMO_EMBEDDINGS = "mpnet-base-v2"
LOCOMO_CONVERSATION = 0
LOCOMO_QUESTIONS = 100


def _bm25s_top(retriever_bm25s, tokenize, text: str, allowed: np.ndarray, k: int) -> np.ndarray:
    """BM25 top-k straight from bm25s: score every document, keep the subset's positive ones."""
    tokens = tokenize(text)
    scores = np.asarray(retriever_bm25s.get_scores(tokens), dtype=np.float32) if tokens else np.zeros(len(allowed))
    ids = np.flatnonzero(allowed & (scores > 0))
    order = np.lexsort((ids, -scores[ids]))[:k]
    return ids[order]


def test_locomo_presets_equal_direct_composition(locomo_dir: Path) -> None:
    import bm25s
    import Stemmer

    turns = [json.loads(line) for line in (locomo_dir / "turns.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = [json.loads(line) for line in (locomo_dir / "questions.jsonl").read_text(encoding="utf-8").splitlines()]
    E = np.load(locomo_dir / "emb" / LOCOMO_EMBEDDINGS / "turns.npy")
    Q = np.load(locomo_dir / "emb" / LOCOMO_EMBEDDINGS / "questions.npy")
    texts = [t["embed_text"] for t in turns]
    conversation = np.array([t["conv_index"] for t in turns])
    rows = [i for i, q in enumerate(questions) if q["conv_index"] == LOCOMO_CONVERSATION][:LOCOMO_QUESTIONS]
    assert len(rows) == LOCOMO_QUESTIONS
    subset = np.flatnonzero(conversation == LOCOMO_CONVERSATION)
    allowed = conversation == LOCOMO_CONVERSATION

    # bm25s directly, with the tokenizer docs/spec.md §7 asks for.
    stemmer = Stemmer.Stemmer("english")

    def tokenize(text):
        return bm25s.tokenize([text], lower=True, stopwords="en", stemmer=stemmer, return_ids=False,
                              show_progress=False)[0]

    direct_bm25 = bm25s.BM25(k1=1.5, b=0.75, method="lucene", backend="numpy")
    direct_bm25.index(bm25s.tokenize(texts, lower=True, stopwords="en", stemmer=stemmer, show_progress=False),
                      show_progress=False)

    base = HybridRetriever(texts, E, "rrf_cfsr")
    q_texts = [questions[i]["question"] for i in rows]
    for name in ("rrf_cfsr", "rrf2"):
        r = base.with_config(name)
        batch = r.search_batch(q_texts, Q[rows], subsets=[subset] * len(rows))
        for text, row, got in zip(q_texts, rows, batch):
            q = Q[row]
            legs = [fieldrank.prefilter(E, q, 10, subset=subset).ids,
                    _bm25s_top(direct_bm25, tokenize, text, allowed, 10)]
            weights = [1.0, 1.0]
            if name == "rrf_cfsr":
                legs.append(fieldrank.cfsr(E, q, 50, p=150, w=0.9, lam=0.005, iters=80, subset=subset).ids)
                weights.append(3.0)
            ids, scores = _hand_rrf(legs, weights, 10)
            single = r.search(text, q, subset=subset)
            assert single.ids.tolist() == ids, (name, row)
            np.testing.assert_allclose(single.scores, scores, rtol=1e-12)
            _same(got, single)
