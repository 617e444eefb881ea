"""The temporal leg over every row with corpus moments: the fp32 screen against the full exact pass.

With ``_core.temporal_moments(E)`` the leg over all rows takes the cosines' mean and standard
deviation from the moments, screens the rows with fp32 cosines and re-scores in double only those
that can reach the top-k. The result must equal, bit for bit, the full double pass with the same
statistics (``screen=False``), on random data with adversarial near-ties, for any thread count,
kernel variant and batch; and it must match the numpy reference as the pairwise path does.
"""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank.reference as ref
import fieldrank.temporal as tl
from fieldrank import _core
from fieldrank.hybrid import HybridRetriever

QUESTIONS = ["When did Mia go to the lake in July?", "what did she cook", "How long ago was 8 May, 2023?",
             "Which year did they move", "tell me about the dog", "what happened last week"]


def _unit(rng, n, d):
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _data(n, d=24, B=6, seed=0, near_ties=True):
    rng = np.random.default_rng(seed)
    E, Q = _unit(rng, n, d), _unit(rng, B, d)
    lex = (rng.random((B, n)) * (rng.random((B, n)) < 0.3) * 4).astype(np.float32)
    if near_ties and n >= 64:
        E[10] = E[20] = E[3]                      # duplicated rows
        E[6] = E[5]
        E[6, 0] = np.nextafter(E[6, 0], np.float32(2))  # one float32 ulp apart
        # A cluster on top of query 2: copies of row 7 a few ulps apart, the same lexical scores, so
        # their fp32 order is rounding noise and only the exact re-score can rank them.
        for i in range(30, 60):
            E[i] = E[7]
            for j in rng.integers(0, d, 3):
                E[i, j] = np.nextafter(E[i, j], np.float32(2) if rng.random() < 0.5 else np.float32(-2))
            lex[:, i] = lex[:, 7]
        Q[0], Q[1], Q[2] = E[3], E[5], E[7]
        lex[:, 20] = lex[:, 10]
    days = np.datetime64("2023-05-01") + (np.arange(n) // 4) * 9
    timeline = tl.Timeline(session=np.arange(n) // 4, time=days, cue=rng.random(n) < 0.3)
    return E, Q, lex, timeline


def _leg(E, Q, lex, timeline, k, params, moments=None, screen=True, n_threads=1, questions=QUESTIONS):
    qs = None if questions is None else questions[: Q.shape[0]]
    intent, windows = tl.question_features(qs, timeline, None)
    return tl.run_leg(E, Q, lex if params.alpha > 0 else None, k, timeline, intent, windows, params, None, False,
                       n_threads, moments=moments, screen=screen)


PARAMS = [
    tl.TemporalParams(alpha=0.5, gamma=0.3),
    tl.TemporalParams(alpha=0.0, gamma=0.0, tau=0.0, delta=0.0),
    tl.TemporalParams(alpha=0.9, gamma=0.7, radius=3),
    tl.TemporalParams(alpha=0.3, decay=0.0),
    tl.TemporalParams(alpha=0.5, gamma=4.0, radius=2, decay=1.0),  # support dominating the base
]


@pytest.mark.parametrize("n", [1, 2, 65, 311, 1201])
@pytest.mark.parametrize("params", PARAMS)
def test_screen_equals_the_full_exact_pass(n, params):
    E, Q, lex, timeline = _data(n, seed=n)
    moments = _core.temporal_moments(E)
    for k in (1, 10, n, n + 4):
        oracle = _leg(E, Q, lex, timeline, k, params, moments, screen=False)
        got = _leg(E, Q, lex, timeline, k, params, moments)
        np.testing.assert_array_equal(got.ids, oracle.ids)
        np.testing.assert_array_equal(got.scores, oracle.scores)  # bit for bit
        for threads in (2, 3):
            other = _leg(E, Q, lex, timeline, k, params, moments, n_threads=threads)
            np.testing.assert_array_equal(other.ids, got.ids)
            np.testing.assert_array_equal(other.scores, got.scores)
        for b in (0, 2, Q.shape[0] - 1):
            one = _leg(E, Q[b:b + 1], lex[b:b + 1], timeline, k, params, moments, questions=QUESTIONS[b:b + 1])
            np.testing.assert_array_equal(one.ids[0], got.ids[b])
            np.testing.assert_array_equal(one.scores[0], got.scores[b])


def test_the_screen_is_taken_and_a_cluster_of_near_ties_is_ranked_exactly():
    E, Q, lex, timeline = _data(1201, seed=5)
    moments = _core.temporal_moments(E)
    params = PARAMS[0]
    intent, windows = tl.question_features(QUESTIONS, timeline, None)
    raw = _core.temporal_batch(E, Q, timeline.session, params.alpha, params.gamma, params.radius, params.decay,
                               params.tau, params.delta, params.before_days, params.after_days, 10, lexical32=lex,
                               day=timeline.time.view(np.int64), cue=timeline.cue.view(np.uint8),
                               intent=intent.view(np.uint8), check_rows=False, n_threads=1, moments=moments)
    assert raw.screened == Q.shape[0]
    # Query 2's top ten lie inside the cluster of near-copies of row 7 (rows 7, 30 … 59).
    got = _leg(E, Q, lex, timeline, 10, params, moments)
    assert set(got.ids[2]) <= {7, *range(30, 60)}


def test_every_variant_gives_the_same_bits():
    E, Q, lex, timeline = _data(700, d=40, seed=9)
    before = _core.kernel_variant()
    results = []
    try:
        for variant in _core.supported_kernel_variants():
            _core.set_kernel_variant(variant)
            moments = _core.temporal_moments(E, 2)
            results.append((variant, moments.centred, _leg(E, Q, lex, timeline, 10, PARAMS[0], moments, n_threads=2)))
    finally:
        _core.set_kernel_variant(before)
    _, centred, first = results[0]
    for variant, other_centred, other in results[1:]:
        np.testing.assert_array_equal(other_centred, centred, err_msg=variant)
        np.testing.assert_array_equal(other.ids, first.ids, err_msg=variant)
        np.testing.assert_array_equal(other.scores, first.scores, err_msg=variant)


@pytest.mark.parametrize("params", PARAMS + [tl.TemporalParams(alpha=1.0)])
def test_matches_the_numpy_reference(params):
    E, Q, lex, timeline = _data(900, seed=3, near_ties=False)
    moments = _core.temporal_moments(E)
    for questions in (QUESTIONS, None):
        got = _leg(E, Q, lex, timeline, 10, params, moments, questions=questions)
        want = ref.temporal_batch(E, Q, lex, 10, timeline=timeline, questions=questions, params=params)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_allclose(got.scores, want.scores, rtol=0, atol=1e-12)


def test_moments_are_the_plain_sums_for_any_thread_count():
    E, _, _, _ = _data(5003, d=17, seed=1, near_ties=False)
    m = _core.temporal_moments(E, 1)
    E64 = E.astype(np.float64)
    assert (m.rows, m.dim) == E.shape
    np.testing.assert_allclose(m.sum, E64.sum(axis=0), rtol=0, atol=1e-11)
    X = E64 - E64.mean(axis=0)
    np.testing.assert_allclose(m.centred, X.T @ X, rtol=0, atol=1e-11)
    assert m.max_norm_sq == pytest.approx(float(np.max(np.einsum("nd,nd->n", E64, E64))), rel=1e-14)
    for threads in (2, 3, 8):
        other = _core.temporal_moments(E, threads)
        np.testing.assert_array_equal(other.centred, m.centred)
        np.testing.assert_array_equal(other.sum, m.sum)
    # Read-only views of the moments (no copy of d² doubles per access), kept alive by them.
    view = m.centred
    assert not view.flags.writeable and np.shares_memory(view, m.centred)
    del m
    assert view.shape == (17, 17) and np.isfinite(view).all()


@pytest.mark.parametrize(("d", "pull"), [(384, 1.5), (384, 4.0), (130, 2.0)])
def test_an_anisotropic_corpus_matches_the_numpy_reference(d, pull):
    """Rows around one common direction (the spread of the cosines a small share of their mean
    square): the one-pass variance qᵀ(Σ e eᵀ)q/N − mean² would cancel digits; the centred moment
    keeps the reference's scores to 1e-12."""
    rng = np.random.default_rng(21 + d)
    n = 24 * d
    common = rng.standard_normal(d)
    X = pull * np.sqrt(d) * common / np.linalg.norm(common) + rng.standard_normal((n, d))
    E = (X / np.linalg.norm(X, axis=1, keepdims=True)).astype(np.float32)
    B = 6
    Q = np.vstack([E[:3], _unit(rng, B - 3, d)]).astype(np.float32)
    lex = (rng.random((B, n)) * (rng.random((B, n)) < 0.3) * 4).astype(np.float32)
    timeline = tl.Timeline(session=np.arange(n) // 4, time=np.datetime64("2023-05-01") + (np.arange(n) // 4) * 9,
                           cue=rng.random(n) < 0.3)
    cos = E[:3].astype(np.float64) @ E.astype(np.float64).T
    assert (cos.var(axis=1) / (cos * cos).mean(axis=1)).max() < 1e-3  # the cancelling regime
    moments = _core.temporal_moments(E)
    for params in PARAMS[:3]:
        got = _leg(E, Q, lex, timeline, 10, params, moments)
        pairwise = _leg(E, Q, lex, timeline, 10, params)
        want = ref.temporal_batch(E, Q, lex, 10, timeline=timeline, questions=QUESTIONS, params=params)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_allclose(got.scores, want.scores, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.scores, pairwise.scores, rtol=0, atol=1e-12)


def test_degenerate_corpora_keep_the_pairwise_path_and_other_moments_are_refused():
    params = PARAMS[0]
    for n in (1, 70):
        E, Q, lex, timeline = _data(n, seed=2, near_ties=False)
        E[:] = E[0]  # every row the same: the moments' variance is rounding noise (beyond its bound)
        got = _leg(E, Q, lex, timeline, 10, params, _core.temporal_moments(E))
        want = _leg(E, Q, lex, timeline, 10, params)
        np.testing.assert_array_equal(got.ids, want.ids)
        np.testing.assert_array_equal(got.scores, want.scores)
    E, Q, lex, timeline = _data(200, seed=2)
    with pytest.raises(ValueError, match="moments were computed"):
        _leg(E, Q, lex, timeline, 10, params, _core.temporal_moments(E[:50]))
    moments = _core.temporal_moments(E)
    with pytest.raises(ValueError, match="another array"):  # same shape, another array
        _leg(E.copy(), Q, lex, timeline, 10, params, moments)


def test_retriever_over_every_document_uses_the_moments_once():
    rng = np.random.default_rng(11)
    d, n = 16, 900  # >= temporal_moments_min_rows_per_dim · d rows: the moments path
    assert n >= _core.DEFAULTS["temporal_moments_min_rows_per_dim"] * d
    words = np.array(["lake", "dog", "cook", "july", "move", "year", "garden", "piano", "trip", "book"])
    texts = [" ".join(rng.choice(words, 6)) for _ in range(n)]
    E = _unit(rng, n, d)
    retriever = HybridRetriever(texts, E, "default")
    Q = _unit(rng, 5, d)
    questions = QUESTIONS[:5]
    assert retriever._corpus.moments.value is None
    batch = retriever.search_batch(questions, Q, n_threads=2)
    moments = retriever._corpus.moments.value
    assert moments is not None and moments.rows == n
    for b in range(5):
        one = retriever.search(questions[b], Q[b])
        np.testing.assert_array_equal(one.ids, batch[b].ids)
    assert retriever.with_config("rrf2")._corpus.moments is retriever._corpus.moments
    # The same ranking as the numpy reference of the leg.
    (leg,) = retriever.config.legs
    lexical = np.stack([retriever.bm25.scores(t) for t in questions])
    want = ref.temporal_batch(retriever.embeddings, Q, lexical, leg.depth, timeline=retriever._corpus.timeline,
                              questions=questions, params=leg.params())
    for b in range(5):
        np.testing.assert_array_equal(batch[b].ids, want.ids[b][: retriever.config.k])
    assert retriever._corpus.moments.value is moments  # computed once


@pytest.mark.parametrize("scale", [1e-36, 1e-12, 1e12, 1e30, 1e34])
def test_query_scales_from_float32_underflow_to_beyond_the_screen(scale):
    """Tiny queries (fp32 products underflow), huge ones (beyond temporal_screen_max_scale the
    rows are scored in double): the result is the full exact pass's, bit for bit."""
    E, Q, lex, timeline = _data(400, seed=13)
    Q = (Q.astype(np.float64) * scale).astype(np.float32)
    moments = _core.temporal_moments(E)
    for params in PARAMS[:2]:
        oracle = _leg(E, Q, lex, timeline, 10, params, moments, screen=False)
        got = _leg(E, Q, lex, timeline, 10, params, moments)
        np.testing.assert_array_equal(got.ids, oracle.ids)
        np.testing.assert_array_equal(got.scores, oracle.scores)


def test_a_subset_of_every_document_is_no_subset_and_prepare_computes_the_moments():
    rng = np.random.default_rng(12)
    d, n = 16, 700
    words = np.array(["lake", "dog", "cook", "july", "move", "year", "garden", "piano", "trip", "book"])
    texts = [" ".join(rng.choice(words, 6)) for _ in range(n)]
    retriever = HybridRetriever(texts, _unit(rng, n, d), "default")
    assert retriever._corpus.moments.value is None
    assert retriever.prepare() is retriever
    moments = retriever._corpus.moments.value
    assert moments is not None and retriever.prepare()._corpus.moments.value is moments  # once
    Q = _unit(rng, 3, d)
    for b in range(3):
        want = retriever.search(QUESTIONS[b], Q[b])
        for every in (np.arange(n), np.arange(n)[::-1].copy(), np.ones(n, dtype=bool), list(range(n))):
            got = retriever.search(QUESTIONS[b], Q[b], subset=every)
            np.testing.assert_array_equal(got.ids, want.ids)
            np.testing.assert_array_equal(got.scores, want.scores)  # bit for bit
    batch = retriever.search_batch(QUESTIONS[:3], Q, subsets=[np.ones(n, dtype=bool), None, np.arange(n)])
    for b in range(3):
        np.testing.assert_array_equal(batch[b].scores, retriever.search(QUESTIONS[b], Q[b]).scores)
    # A config without a temporal leg computes nothing.
    plain = HybridRetriever(texts, retriever.embeddings.copy(), "rrf2")
    assert plain.prepare()._corpus.moments.value is None
