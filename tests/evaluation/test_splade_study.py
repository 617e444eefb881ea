"""The SPLADE fusion study (fieldrank.evaluation._splade_study): with no SPLADE weight its score is the
temporal leg's reference formula; SPLADE's context vectors are the elementwise max over same-session
neighbours; the cross-validation never scores a conversation with a point fitted on it."""

from __future__ import annotations

import numpy as np

import fieldrank.reference as ref
from fieldrank.evaluation import _splade_study as study
from fieldrank.splade import SparseRows, context_rows
from fieldrank.temporal import TemporalParams, Timeline

from tests.helpers import SEED


def _parts(rng, conv, rows, n_questions, timeline):
    n = rows.size
    parts = study.ConversationParts(
        conv_index=conv, rows=rows, questions=np.arange(n_questions),
        gold=[rng.choice(rows, size=int(rng.integers(1, 3)), replace=False) for _ in range(n_questions)],
        dense=rng.normal(size=(n_questions, n)), lex=rng.gamma(1.0, size=(n_questions, n)),
        bm25_plain=rng.gamma(1.0, size=(n_questions, n)), spl_self=rng.gamma(1.0, size=(n_questions, n)),
        spl_ctx={1: rng.gamma(1.0, size=(n_questions, n))},
        intent=rng.random(n_questions) < 0.5,
        windows=[[(np.datetime64("2023-05-01"), np.datetime64("2023-05-31"))] if b % 3 == 0 else []
                 for b in range(n_questions)])
    return parts


def _timeline(rng, n):
    session = np.repeat(np.arange(n // 5 + 1), 5)[:n]
    time = np.datetime64("2023-04-20") + session.astype("timedelta64[D]") * 4
    return Timeline(session=session, time=time, cue=rng.random(n) < 0.3)


def test_without_splade_it_is_the_reference_temporal_score():
    rng = np.random.default_rng(SEED)
    timeline = _timeline(rng, 40)
    rows = np.arange(5, 33)
    parts = _parts(rng, 0, rows, 7, timeline)
    params = TemporalParams(alpha=0.5, gamma=0.3, radius=2, decay=0.5, tau=1.0, delta=1.5, before_days=7,
                            after_days=14)
    expected = ref.temporal_scores(parts.dense, parts.lex, rows, timeline, params, intent=parts.intent,
                                   windows=parts.windows)
    got = study.fused_scores(parts, study.FusionPoint(w_lex=0.5, w_spl=0.0), timeline, params)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
    # A SPLADE weight changes the scores.
    assert not np.allclose(study.fused_scores(parts, study.FusionPoint(0.5, 0.5, 1, 1.0), timeline, params), expected)


def test_context_rows_are_the_max_over_same_session_neighbours():
    # Rows 0-2 in session 0, rows 3-4 in session 1; 4 terms.
    dense = np.array([[1, 0, 0, 0], [0, 2, 0, 0], [3, 0, 0, 1], [0, 0, 5, 0], [0, 1, 0, 0]], np.float32)
    indptr = np.concatenate([[0], np.cumsum((dense != 0).sum(1))]).astype(np.int64)
    indices = np.concatenate([np.flatnonzero(r) for r in dense]).astype(np.int32)
    rows = SparseRows(indptr, indices, dense[dense != 0], 4)
    session = np.array([0, 0, 0, 1, 1])
    got = context_rows(rows, session, 1).to_scipy().toarray()
    expected = np.array([[1, 2, 0, 0], [3, 2, 0, 1], [3, 2, 0, 1], [0, 1, 5, 0], [0, 1, 5, 0]], np.float32)
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(context_rows(rows, session, 2).to_scipy().toarray()[0], [3, 2, 0, 1])


def test_cross_validation_holds_each_conversation_out():
    rng = np.random.default_rng(SEED + 1)
    timeline = _timeline(rng, 200)
    parts = [_parts(rng, c, np.arange(20 * c, 20 * c + 20), 6, timeline) for c in range(10)]
    points = [study.BASELINE, study.FusionPoint(0.5, 0.5, 1, 1.0), study.FusionPoint(0.0, 1.0)]
    for contiguous, first in ((False, (0, 5)), (True, (0, 1))):
        res = study.cross_validate({"a": parts}, {"a": timeline}, points, study.BASELINE, contiguous=contiguous)
        assert tuple(res["folds"][0][0]) == first
        assert sorted(c for fold, *_ in res["folds"] for c in fold) == list(range(10))
        for fold, best, objective, _ in res["folds"]:
            train = [i for i in range(10) if i not in fold]
            means = {pt: np.concatenate([res["table"]["a"][pt][i] for i in train]).mean() for pt in points}
            assert objective == max(means.values()) and means[best] == objective
        assert res["held"]["a"].shape == res["baseline"]["a"].shape == (60,)
        np.testing.assert_array_equal(res["baseline"]["a"], np.concatenate(res["table"]["a"][study.BASELINE]))


def test_grid_points_drop_meaningless_combinations():
    points = study.grid_points()
    assert study.BASELINE in points and len(points) == len(set(points))
    assert all(p.window == 0 and p.context_weight == 0 for p in points if p.w_spl == 0)
