"""The native temporal leg against its numpy reference (fieldrank.reference.temporal_batch).

Odd sizes, subsets, every prior on and off, float32 and float64 lexical scores, batches against
single queries, thread counts, and the same errors with the same messages.
"""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank.reference as ref
import fieldrank.temporal as tl

QUESTIONS = ["When did Mia go to the lake in July?", "what did she cook", "How long ago was 8 May, 2023?",
             "Which year did they move", "tell me about the dog"]


def _unit(rng, n, d):
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _data(n, d=24, B=5, seed=0):
    rng = np.random.default_rng(seed)
    E, Q = _unit(rng, n, d), _unit(rng, B, d)
    lex = (rng.random((B, n)) * (rng.random((B, n)) < 0.3) * 4).astype(np.float32)
    days = np.datetime64("2023-05-01") + (np.arange(n) // 4) * 9
    timeline = tl.Timeline(session=np.arange(n) // 4, time=days, cue=rng.random(n) < 0.3)
    return rng, E, Q, lex, timeline


def _same(a, b):
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_allclose(a.scores, b.scores, rtol=0, atol=1e-12)


@pytest.mark.parametrize("n", [1, 3, 97])
@pytest.mark.parametrize("with_subset", [False, True])
@pytest.mark.parametrize("params", [
    tl.TemporalParams(),
    tl.TemporalParams(gamma=0.0),
    tl.TemporalParams(tau=0.0),
    tl.TemporalParams(delta=0.0),
    tl.TemporalParams(gamma=0.0, tau=0.0, delta=0.0),
    tl.TemporalParams(alpha=0.0, radius=3, decay=1.0),
    tl.TemporalParams(alpha=1.0, decay=0.0),
])
def test_native_equals_reference(n, with_subset, params):
    rng, E, Q, lex, timeline = _data(n, seed=n)
    subset = np.sort(rng.permutation(n)[: max(1, (2 * n) // 3)]) if with_subset else None
    for questions in (QUESTIONS, None):
        got = tl.temporal_batch(E, Q, lex, 7, timeline=timeline, questions=questions, params=params, subset=subset)
        want = ref.temporal_batch(E, Q, lex, 7, timeline=timeline, questions=questions, params=params, subset=subset)
        _same(got, want)
        assert got.ids.shape == (Q.shape[0], min(7, n if subset is None else subset.size))


def test_timeline_without_dates_or_cues_and_float64_lexical():
    _, E, Q, lex, timeline = _data(97, seed=4)
    bare = tl.Timeline(session=timeline.session)
    for lexical in (lex, lex.astype(np.float64) / 3.0):
        _same(tl.temporal_batch(E, Q, lexical, 10, timeline=bare, questions=QUESTIONS),
              ref.temporal_batch(E, Q, lexical, 10, timeline=bare, questions=QUESTIONS))


def test_batch_equals_single_queries_and_any_thread_count():
    rng, E, Q, lex, timeline = _data(300, seed=7, B=11)
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(11)]
    subset = rng.permutation(300)[:170]
    base = tl.temporal_batch(E, Q, lex, 12, timeline=timeline, questions=questions, subset=subset, n_threads=1)
    for threads in (2, 3, 8):
        other = tl.temporal_batch(E, Q, lex, 12, timeline=timeline, questions=questions, subset=subset,
                                  n_threads=threads)
        np.testing.assert_array_equal(base.ids, other.ids)
        np.testing.assert_array_equal(base.scores, other.scores)  # bit for bit
    for b in range(11):
        one = tl.temporal(E, Q[b], lex[b], 12, timeline=timeline, question=questions[b], subset=subset)
        np.testing.assert_array_equal(one.ids, base.ids[b])
        np.testing.assert_array_equal(one.scores, base.scores[b])


def test_exact_ties_go_to_the_lower_row():
    _, E, Q, lex, timeline = _data(40, seed=2)
    E[[5, 17, 30]] = E[9]
    lex[:, [5, 17, 30]] = lex[:, [9]]
    flat = tl.Timeline(session=np.arange(40))  # no neighbours: equal rows score equally
    got = tl.temporal_batch(E, Q, lex, 40, timeline=flat)
    for b in range(Q.shape[0]):
        pos = {int(i): p for p, i in enumerate(got.ids[b])}
        assert pos[5] < pos[9] < pos[17] < pos[30]
        assert got.scores[b][pos[5]] == got.scores[b][pos[30]]
    _same(got, ref.temporal_batch(E, Q, lex, 40, timeline=flat))


@pytest.mark.parametrize("module", [tl, ref])
def test_errors_are_the_same(module):
    _, E, Q, lex, timeline = _data(20, seed=3)
    bad_rows = E.copy()
    bad_rows[6] = 0.0
    with pytest.raises(ValueError, match="row 6 has squared norm 0"):
        module.temporal_batch(bad_rows, Q, lex, 5, timeline=timeline)
    nan_rows = E.copy()
    nan_rows[4, 2] = np.nan
    with pytest.raises(ValueError, match="E must be finite, got nan at row 4, column 2"):
        module.temporal_batch(nan_rows, Q, lex, 5, timeline=timeline)
    bad_lex = lex.copy()
    bad_lex[1, 3] = np.inf
    with pytest.raises(ValueError, match="lexical must be finite"):
        module.temporal_batch(E, Q, bad_lex, 5, timeline=timeline)
    with pytest.raises(ValueError, match="lexical must be given"):
        module.temporal_batch(E, Q, None, 5, timeline=timeline)
    with pytest.raises(ValueError, match="k must be a positive integer"):
        module.temporal_batch(E, Q, lex, 0, timeline=timeline)
    empty = module.temporal_batch(E, Q[:0], lex[:0], 5, timeline=timeline)
    assert empty.ids.shape == (0, 5)


def test_every_kernel_variant_gives_the_same_bits():
    from fieldrank import _core

    _, E, Q, lex, timeline = _data(300, d=37, seed=9)  # d not a multiple of 16: the tail counts too
    before = _core.kernel_variant()
    try:
        results = {}
        for variant in _core.supported_kernel_variants():
            _core.set_kernel_variant(variant)
            results[variant] = tl.temporal_batch(E, Q, lex, 20, timeline=timeline, questions=QUESTIONS)
    finally:
        _core.set_kernel_variant(before)
    first = results["portable"]
    for variant, r in results.items():
        np.testing.assert_array_equal(r.ids, first.ids, err_msg=variant)
        np.testing.assert_array_equal(r.scores, first.scores, err_msg=variant)


def test_the_retriever_checks_its_corpus_once(monkeypatch):
    """After construction no search re-checks or re-validates E's rows (issue 16)."""
    from fieldrank import _validation
    from fieldrank.hybrid import HybridRetriever

    _, E, Q, _, timeline = _data(200, seed=12)
    texts = [f"turn {i} about the lake in July" if i % 7 == 0 else f"turn {i} about cooking" for i in range(200)]
    retriever = HybridRetriever(texts, E, "default", timeline=timeline)

    def refuse(*args, **kwargs):
        raise AssertionError("the corpus was validated again")

    monkeypatch.setattr(_validation, "check_rows_finite_nonzero", refuse)
    monkeypatch.setattr(_validation, "corpus", refuse)
    single = retriever.search(QUESTIONS[0], Q[0], subset=np.arange(0, 200, 2))
    batch = retriever.search_batch(QUESTIONS, Q, subset=np.arange(0, 200, 2))
    np.testing.assert_array_equal(single.ids, batch[0].ids)
    for preset in ("rrf2", "rrf_cfsr", "cosine"):
        other = retriever.with_config(preset)
        other.search(QUESTIONS[0], Q[0])
        other.search_batch(QUESTIONS, Q, n_threads=2)


def test_default_preset_batch_equals_search_for_any_thread_count():
    from fieldrank.hybrid import HybridRetriever

    rng, E, Q, _, timeline = _data(240, B=9, seed=21)
    texts = [f"we went to the lake in July {i}" if i % 5 == 0 else f"turn {i} about cooking" for i in range(240)]
    retriever = HybridRetriever(texts, E, "default", timeline=timeline)
    questions = [QUESTIONS[i % len(QUESTIONS)] for i in range(9)]
    subsets = [None if b % 3 == 0 else np.sort(rng.permutation(240)[:150]) for b in range(9)]
    runs = [retriever.search_batch(questions, Q, subsets=subsets, n_threads=t) for t in (1, 2, 8)]
    for b in range(9):
        one = retriever.search(questions[b], Q[b], subset=subsets[b])
        for run in runs:
            np.testing.assert_array_equal(run[b].ids, one.ids)
            np.testing.assert_array_equal(run[b].scores, one.scores)
            np.testing.assert_array_equal(run[b].legs[0].scores, one.legs[0].scores)


def test_a_corpus_beyond_the_cache_equals_the_reference():
    # 17,000 rows x 64 floats (4.4 MB) exceed the cache-resident size: rows split across threads.
    rng, E, Q, lex, timeline = _data(17_000, d=64, B=5, seed=31)
    subset = np.sort(rng.permutation(17_000)[:16_600])
    for sub in (None, subset):
        got = tl.temporal_batch(E, Q, lex, 10, timeline=timeline, questions=QUESTIONS, subset=sub, n_threads=3)
        _same(got, ref.temporal_batch(E, Q, lex, 10, timeline=timeline, questions=QUESTIONS, subset=sub))
        one = tl.temporal_batch(E, Q, lex, 10, timeline=timeline, questions=QUESTIONS, subset=sub, n_threads=1)
        np.testing.assert_array_equal(one.scores, got.scores)
    bad = E.copy()
    bad[16_999] = np.nan
    with pytest.raises(ValueError, match="E must be finite, got nan at row 16999"):
        tl.temporal_batch(bad, Q, lex, 10, timeline=timeline, n_threads=2)


@pytest.mark.parametrize("subset_kind", [None, "scattered", "contiguous"])
@pytest.mark.parametrize("n", [5, 97, 20_000])
def test_row_order_scores_are_the_ranked_scores_of_every_row(n, subset_kind):
    """``run_leg(row_order=True)`` (the memory store's path: a short top and chosen rows' scores)
    gives every row's score in the order of the rows, bit-equal to the ranking over all of them;
    also for a contiguous block of rows not starting at 0 (the kernel's shifted-view path)."""
    rng, E, Q, lex, timeline = _data(n, seed=n + 1)
    rows = {None: None, "scattered": np.sort(rng.permutation(n)[: max(1, (2 * n) // 3)]),
            "contiguous": np.arange(2, n - 1, dtype=np.int64)}[subset_kind]
    m = n if rows is None else rows.size
    intent, windows = tl.question_features(QUESTIONS, timeline, rows)
    ranked = tl.run_leg(E, Q, lex, m, timeline, intent, windows, tl.TemporalParams(), rows, False, 0)
    scored = tl.run_leg(E, Q, lex, m, timeline, intent, windows, tl.TemporalParams(), rows, False, 0,
                         row_order=True)
    assert scored.ids.shape == (Q.shape[0], 0) and scored.scores.shape == (Q.shape[0], m)
    index_of = np.full(n, -1)
    index_of[np.arange(n) if rows is None else rows] = np.arange(m)
    for b in range(Q.shape[0]):
        np.testing.assert_array_equal(scored.scores[b, index_of[ranked.ids[b]]], ranked.scores[b])


@pytest.mark.parametrize("subset_kind", ["scattered", "contiguous"])
def test_lexical_scores_of_the_subset_block_only_give_the_same_ranking(subset_kind):
    """The retriever scores BM25 only over the block of rows a subset spans (``lexical_begin``):
    the leg runs on views of that block and returns the same ids and scores, bit for bit."""
    rng, E, Q, lex, timeline = _data(400, seed=5)
    rows = (np.sort(rng.permutation(np.arange(37, 311))[:150]) if subset_kind == "scattered"
            else np.arange(37, 311, dtype=np.int64))
    intent, windows = tl.question_features(QUESTIONS, timeline, rows)
    full = tl.run_leg(E, Q, lex, 12, timeline, intent, windows, tl.TemporalParams(), rows, False, 2)
    block = np.ascontiguousarray(lex[:, rows[0]: rows[-1] + 1])
    part = tl.run_leg(E, Q, block, 12, timeline, intent, windows, tl.TemporalParams(), rows, False, 2,
                       lexical_begin=int(rows[0]))
    np.testing.assert_array_equal(part.ids, full.ids)
    np.testing.assert_array_equal(part.scores, full.scores)


@pytest.mark.parametrize("weight", [1.0, 0.37, 2.5])
def test_a_one_leg_plan_fuses_as_the_native_rrf(weight):
    """The one-leg shortcut of LegPlan.fuse (the default preset) ranks as fieldrank's native RRF
    (a config's only leg has a positive weight); its scores are the leg's own, not the rank-only
    RRF quotients (issue 29)."""
    import dataclasses

    from fieldrank import _core
    from fieldrank._retriever.corpus import build_corpus
    from fieldrank.config import preset
    from fieldrank.hybrid import LegPlan

    _, E, Q, _, timeline = _data(120, B=4, seed=8)
    texts = [f"turn {i} about the lake" if i % 3 else f"turn {i} about cooking" for i in range(120)]
    config = preset("default")
    config = dataclasses.replace(config, legs=(dataclasses.replace(config.legs[0], weight=weight),))
    corpus = build_corpus(tuple(texts), E, False, config.bm25, timeline)
    for k in (3, 10, 25):  # 25: deeper than the leg (deepened to k)
        plan = LegPlan(config, k, len(texts))
        per_query = plan.run(corpus, QUESTIONS[:4], Q, 4, None, 1)
        for fused, outputs in zip(plan.fuse(per_query, 1), per_query):
            native = _core.rrf([out.ids for out in outputs], plan.weights, plan.k, config.k0)
            np.testing.assert_array_equal(fused.ids, native.ids)
            np.testing.assert_array_equal(fused.scores, outputs[0].scores[: plan.k].astype(np.float64))
            assert fused.ids.dtype == np.int64 and fused.scores.dtype == np.float64
