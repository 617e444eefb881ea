"""The time-aware leg (fieldrank.temporal): text rules, the scoring formula, batching and subsets."""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank import reference
from fieldrank import temporal as tl
from tests.helpers import unit_rows

D = np.datetime64


# ----------------------------------------------------------------------------- text rules
@pytest.mark.parametrize("text", [
    "I went to a support group yesterday.",
    "Last week I got to go to this yoga retreat.",
    "I started surfing five years ago.",
    "Next month, I'm off to Ireland.",
    "On Friday, I got great news!",
    "We moved here in 2019.",
    "It has been a few weeks since then.",
])
def test_time_cues_positive(text):
    assert tl.time_cues([text]).tolist() == [True]


@pytest.mark.parametrize("text", [
    "That painting is gorgeous, I love the colours.",
    "Thanks, you are so kind!",
    "May I ask what you think?",
])
def test_time_cues_negative(text):
    assert tl.time_cues([text]).tolist() == [False]


def test_time_intent():
    questions = [
        "When did Caroline join a new activist group?",
        "How long has Nate been playing?",
        "What year did John start surfing?",
        "How many weeks did the trip last?",
        "What did Melanie paint?",
        "Who did Maria have dinner with on May 3, 2023?",
    ]
    assert tl.time_intent(questions).tolist() == [True, True, True, True, False, False]


def test_date_windows_forms():
    assert tl.date_windows("What movie did Joanna watch on 1 May, 2022?") == [(D("2022-05-01"), D("2022-05-01"))]
    assert tl.date_windows("How was John feeling on April 10, 2022?") == [(D("2022-04-10"), D("2022-04-10"))]
    assert tl.date_windows("Where did Joanna travel to in July 2022?") == [(D("2022-07-01"), D("2022-07-31"))]
    assert tl.date_windows("Which country were they visiting in 2010?") == [(D("2010-01-01"), D("2010-12-31"))]
    assert tl.date_windows("Where was John between August 11 and August 15 2023?") == [
        (D("2023-08-11"), D("2023-08-11")), (D("2023-08-15"), D("2023-08-15"))]


@pytest.mark.parametrize(("question", "day"), [
    ("What did she do on 19.01.2024?", "2024-01-19"),
    ("What happened on the 31 of December 2023?", "2023-12-31"),
    ("Where was he on 17th of January, 2024?", "2024-01-17"),
    ("Where was he on the 17th of January 2024?", "2024-01-17"),
    ("What did Mel do on 8 May, 2023?", "2023-05-08"),
    ("What did Mel do on May 8, 2023?", "2023-05-08"),
    ("What did Mel do on May 8th 2023?", "2023-05-08"),
    ("What happened on Jan. 19th 2024?", "2024-01-19"),
    ("What happened on Sept 3, 2023?", "2023-09-03"),
    ("What happened on March the 3rd, 2023?", "2023-03-03"),
    ("What happened on 2023-05-08?", "2023-05-08"),
    ("What happened on 2023/05/08?", "2023-05-08"),
    ("What did she do on 19/01/2024?", "2024-01-19"),
    ("What did she do on 01/19/2024?", "2024-01-19"),
    ("What did she do on 9.1.2024?", "2024-01-09"),
])
def test_date_windows_every_written_form_is_one_day(question, day):
    assert tl.date_windows(question) == [(D(day), D(day))]


def test_date_windows_ambiguous_numeric_date_names_both_days():
    # Slashes: 05/08/2023 is 5 August (day first) or May 8 (month first); dots are day first.
    assert tl.date_windows("on 05/08/2023") == [(D("2023-08-05"), D("2023-08-05")), (D("2023-05-08"), D("2023-05-08"))]
    assert tl.date_windows("on 05.08.2023") == [(D("2023-08-05"), D("2023-08-05"))]
    assert tl.date_windows("on 31.02.2023") == []


def test_date_windows_day_of_month_without_year():
    assert tl.date_windows("What did John do on the 3rd of March?", years=(2023,)) == [(D("2023-03-03"), D("2023-03-03"))]
    assert tl.date_windows("in Sept. 2023") == [(D("2023-09-01"), D("2023-09-30"))]


def test_date_windows_without_year_uses_given_years():
    assert tl.date_windows("When did Melanie go camping in June?", years=(2022, 2023)) == [
        (D("2022-06-01"), D("2022-06-30")), (D("2023-06-01"), D("2023-06-30"))]
    assert tl.date_windows("When did Melanie go camping in June?") == []


def test_date_windows_ignores_lower_case_may_and_impossible_days():
    assert tl.date_windows("What may she have meant?", years=(2023,)) == []
    assert tl.date_windows("on 31 February, 2023") == []
    assert tl.date_windows("What did Melanie paint?") == []


def test_session_keys_unique_per_pair():
    conv = np.array([0, 0, 0, 1, 1])
    sess = np.array([1, 1, 2, 1, 1])
    keys = tl.session_keys(conv, sess)
    assert keys[0] == keys[1] != keys[2]
    assert keys[3] == keys[4] != keys[0]


# ----------------------------------------------------------------------------- parameters
def test_params_validation_and_round_trip():
    p = tl.TemporalParams(alpha=0.3, gamma=0.2, radius=3, tau=0.0, delta=2.0)
    assert tl.TemporalParams.from_dict(p.to_dict()) == p
    with pytest.raises(ValueError, match="alpha"):
        tl.TemporalParams(alpha=1.5)
    with pytest.raises(ValueError, match="gamma"):
        tl.TemporalParams(gamma=-1)
    with pytest.raises(ValueError, match="radius"):
        tl.TemporalParams(radius=0)
    with pytest.raises(TypeError, match="radius"):
        tl.TemporalParams(radius=1.5)
    with pytest.raises(ValueError, match="unknown"):
        tl.TemporalParams.from_dict({"alpha": 0.5, "bogus": 1})


def test_timeline_validation():
    with pytest.raises(ValueError, match="session"):
        tl.Timeline(session=np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="time"):
        tl.Timeline(session=np.zeros(3, dtype=np.int64), time=np.zeros(3))
    with pytest.raises(ValueError, match="cue"):
        tl.Timeline(session=np.zeros(3, dtype=np.int64), cue=np.zeros(3, dtype=np.int64))


# ----------------------------------------------------------------------------- scoring
def _znorm(x):
    x = np.asarray(x, dtype=np.float64)
    sd = x.std()
    return (x - x.mean()) / (sd if sd > 0 else 1.0)


def reference_scores(dense, lexical, rows, session, params, cue=None, intent=False, time=None, periods=()):
    """One query, plain Python loops over candidates: the module docstring's formula."""
    base = params.alpha * _znorm(lexical) + (1 - params.alpha) * _znorm(dense)
    pos = {int(r): j for j, r in enumerate(rows)}
    out = []
    for j, r in enumerate(rows):
        support = 0.0
        for d in range(1, params.radius + 1):
            for nb in (r - d, r + d):
                if nb in pos and session[nb] == session[r]:
                    support = max(support, params.decay ** (d - 1) * max(base[pos[nb]], 0.0))
        s = base[j] + params.gamma * support
        if intent and cue is not None and cue[r]:
            s += params.tau
        if time is not None and periods:
            t = time[r]
            if any(a - np.timedelta64(params.before_days, "D") <= t <= b + np.timedelta64(params.after_days, "D")
                   for a, b in periods):
                s += params.delta
        out.append(s)
    return np.array(out)


@pytest.fixture
def small(rng):
    n, d = 40, 8
    E = unit_rows(rng, n, d)
    session = np.repeat(np.arange(8), 5).astype(np.int64)
    time = np.array([D("2023-01-01") + 10 * int(s) for s in session], dtype="datetime64[D]")
    cue = rng.random(n) < 0.3
    return E, tl.Timeline(session=session, time=time, cue=cue)


@pytest.mark.parametrize("params", [
    tl.TemporalParams(gamma=0, tau=0, delta=0),
    tl.TemporalParams(),
    tl.TemporalParams(alpha=0.0, gamma=0.7, radius=1),
    tl.TemporalParams(alpha=1.0, gamma=0.3, radius=3, decay=0.25, tau=2.0, delta=0.4),
])
def test_scores_match_reference(rng, small, params):
    E, timeline = small
    rows = np.sort(rng.choice(len(E), 30, replace=False)).astype(np.int64)
    B = 4
    dense = rng.standard_normal((B, rows.size))
    lexical = np.maximum(rng.standard_normal((B, rows.size)), 0)
    intent = np.array([True, False, True, False])
    windows = [[(D("2023-01-15"), D("2023-01-20"))], [], [(D("2023-02-10"), D("2023-02-10"))], []]
    got = reference.temporal_scores(dense, lexical, rows, timeline, params, intent=intent, windows=windows)
    for b in range(B):
        want = reference_scores(dense[b], lexical[b], rows, timeline.session, params, timeline.cue, intent[b],
                                timeline.time, windows[b])
        np.testing.assert_allclose(got[b], want, rtol=1e-12, atol=1e-12)


def test_neighbours_stop_at_session_and_subset_borders():
    rows = np.array([0, 1, 2, 4, 5], dtype=np.int64)
    session = np.array([0, 0, 1, 1, 1, 1], dtype=np.int64)
    base = np.array([[5.0, 0.0, 0.0, 0.0, 0.0]])
    support = reference.neighbour_support(base, rows, session, radius=1, decay=0.5)
    # Row 1 is row 0's neighbour (same session); row 2 is adjacent to row 1 but in another session.
    np.testing.assert_array_equal(support, [[0.0, 5.0, 0.0, 0.0, 0.0]])
    base = np.array([[0.0, 0.0, 4.0, 0.0, 0.0]])
    support = reference.neighbour_support(base, rows, session, radius=2, decay=0.5)
    # Row 3 is outside the subset: row 4 is 2 steps from row 2 (decay 0.5); row 5 is 3 steps away.
    np.testing.assert_array_equal(support, [[0.0, 0.0, 0.0, 2.0, 0.0]])
    # Negative neighbours give no support.
    support = reference.neighbour_support(-base, rows, session, radius=2, decay=0.5)
    assert not support.any()


def test_priors_only_where_they_apply(small):
    E, timeline = small
    rows = np.arange(len(E), dtype=np.int64)
    dense = np.zeros((2, len(E)))
    lexical = np.zeros((2, len(E)))
    p = tl.TemporalParams(gamma=0, tau=1.0, delta=0)
    s = reference.temporal_scores(dense, lexical, rows, timeline, p, intent=np.array([True, False]))
    np.testing.assert_array_equal(s[0], timeline.cue.astype(float))
    np.testing.assert_array_equal(s[1], 0.0)
    p = tl.TemporalParams(gamma=0, tau=0, delta=2.0, before_days=0, after_days=0)
    s = reference.temporal_scores(dense, lexical, rows, timeline, p, windows=[[(D("2023-01-11"), D("2023-01-11"))], []])
    np.testing.assert_array_equal(s[0], np.where(timeline.session == 1, 2.0, 0.0))
    np.testing.assert_array_equal(s[1], 0.0)


# ----------------------------------------------------------------------------- the leg
def _lexical(rng, B, N):
    return np.where(rng.random((B, N)) < 0.3, rng.random((B, N)) * 5, 0.0).astype(np.float32)


def test_batch_equals_single_and_respects_subset(rng, small):
    E, timeline = small
    Q = unit_rows(rng, 5, E.shape[1])
    lex = _lexical(rng, 5, len(E))
    subset = np.array([3, 17, 4, 5, 6, 20, 21, 22, 30, 31, 32, 33], dtype=np.int64)  # unsorted on purpose
    questions = ["When did it happen?", "What did she paint?", "What happened on 11 January, 2023?",
                 "How long was it?", "Who came?"]
    res = tl.temporal_batch(E, Q, lex, 8, timeline=timeline, questions=questions, subset=subset)
    assert res.ids.shape == (5, 8) and res.ids.dtype == np.int64
    assert np.isin(res.ids, subset).all()
    assert (np.diff(res.scores, axis=1) <= 0).all()
    for b in range(5):
        one = tl.temporal(E, Q[b], lex[b], 8, timeline=timeline, question=questions[b], subset=subset)
        np.testing.assert_array_equal(one.ids, res.ids[b])
        np.testing.assert_allclose(one.scores, res.scores[b])


def test_subset_scores_ignore_rows_outside(rng, small):
    """Changing the scores of rows outside the subset changes nothing inside it."""
    E, timeline = small
    Q = unit_rows(rng, 2, E.shape[1])
    lex = _lexical(rng, 2, len(E))
    subset = np.arange(10, 25, dtype=np.int64)
    a = tl.temporal_batch(E, Q, lex, 15, timeline=timeline, subset=subset)
    lex2 = lex.copy()
    lex2[:, :10] = 99.0
    b = tl.temporal_batch(E, Q, lex2, 15, timeline=timeline, subset=subset)
    np.testing.assert_array_equal(a.ids, b.ids)
    np.testing.assert_array_equal(a.scores, b.scores)


def test_tie_rule_lower_id_first():
    E = np.tile(np.array([[1.0, 0.0]], dtype=np.float32), (6, 1))
    timeline = tl.Timeline(session=np.arange(6, dtype=np.int64))
    res = tl.temporal(E, np.array([1.0, 0.0], np.float32), np.zeros(6, np.float32), 6, timeline=timeline)
    np.testing.assert_array_equal(res.ids, np.arange(6))


def test_k_larger_than_subset_and_dense_only(rng, small):
    E, timeline = small
    q = unit_rows(rng, 1, E.shape[1])[0]
    res = tl.temporal(E, q, None, 100, timeline=timeline, params=tl.TemporalParams(alpha=0.0, gamma=0.0),
                      subset=np.array([1, 2, 3], dtype=np.int64))
    assert res.ids.tolist() == [int(i) for i in np.array([1, 2, 3])[np.argsort(-(E[[1, 2, 3]] @ q), kind="stable")]]


def test_validation_errors(rng, small):
    E, timeline = small
    Q = unit_rows(rng, 2, E.shape[1])
    lex = _lexical(rng, 2, len(E))
    with pytest.raises(ValueError, match="lexical"):
        tl.temporal_batch(E, Q, None, 5, timeline=timeline)
    with pytest.raises(ValueError, match="lexical"):
        tl.temporal_batch(E, Q, lex[:, :10], 5, timeline=timeline)
    with pytest.raises(ValueError, match="lexical"):
        bad = lex.copy()
        bad[0, 0] = np.nan
        tl.temporal_batch(E, Q, bad, 5, timeline=timeline)
    with pytest.raises(ValueError, match="timeline"):
        tl.temporal_batch(E, Q, lex, 5, timeline=tl.Timeline(session=np.zeros(3, dtype=np.int64)))
    with pytest.raises(TypeError, match="float32"):
        tl.temporal_batch(E.astype(np.float64), Q, lex, 5, timeline=timeline)
    with pytest.raises(ValueError, match="subset"):
        tl.temporal_batch(E, Q, lex, 5, timeline=timeline, subset=np.array([0, 0]))
    with pytest.raises(ValueError, match="k"):
        tl.temporal_batch(E, Q, lex, 0, timeline=timeline)
    with pytest.raises(ValueError, match="questions"):
        tl.temporal_batch(E, Q, lex, 5, timeline=timeline, questions=["only one"])


def test_neighbour_support_lifts_the_partner_turn():
    """A turn that only its neighbour matches moves up: the adjacency the leg is built for."""
    E = np.eye(4, dtype=np.float32)
    timeline = tl.Timeline(session=np.array([0, 0, 1, 1], dtype=np.int64))
    q = np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32)
    lex = np.array([3.0, 0.0, 0.0, 0.2], dtype=np.float32)
    without = tl.temporal(E, q, lex, 4, timeline=timeline, params=tl.TemporalParams(gamma=0.0))
    with_nb = tl.temporal(E, q, lex, 4, timeline=timeline, params=tl.TemporalParams(gamma=0.7))
    assert without.ids.tolist()[:2] == [0, 3]
    assert with_nb.ids.tolist()[:2] == [0, 1]


# ----------------------------------------------------------------------------- as a leg kind
def _corpus(rng, n=24, d=8):
    words = ["kitchen", "budget", "yesterday", "paint", "lake", "sunset", "friday", "ireland", "tennis", "book"]
    texts = [" ".join(rng.choice(words, 4)) for _ in range(n)]
    return texts, unit_rows(rng, n, d)


def test_temporal_leg_config_round_trip_and_validation():
    from fieldrank.config import RetrieverConfig, TemporalLeg, leg_from_dict

    leg = TemporalLeg(depth=20, weight=2.0, alpha=0.4, gamma=0.3, radius=1, tau=1.0, delta=1.5)
    assert leg.params() == tl.TemporalParams(alpha=0.4, gamma=0.3, radius=1, tau=1.0, delta=1.5)
    config = RetrieverConfig(legs=(leg,), name="t")
    assert RetrieverConfig.from_toml(config.to_toml()) == config
    assert leg_from_dict({"kind": "temporal", "gamma": 0.7}).gamma == 0.7
    with pytest.raises(ValueError, match="TemporalLeg.alpha"):
        TemporalLeg(alpha=2.0)
    with pytest.raises(ValueError, match="unknown field"):
        leg_from_dict({"kind": "temporal", "sigma": 1.0})
    assert TemporalLeg().needs_text and TemporalLeg().needs_vector


def test_temporal_leg_in_hybrid_retriever(rng):
    from fieldrank.config import BM25Leg, RetrieverConfig, TemporalLeg
    from fieldrank.hybrid import HybridRetriever

    texts, E = _corpus(rng)
    session = np.repeat(np.arange(6), 4).astype(np.int64)
    time = (np.datetime64("2023-05-01") + 7 * session).astype("datetime64[D]")
    timeline = tl.Timeline.from_turns(session, time, texts)
    config = RetrieverConfig(legs=(TemporalLeg(depth=10), BM25Leg(weight=0.5)), name="t")
    retriever = HybridRetriever(texts, E, config, timeline=timeline)
    assert retriever.timeline is timeline
    queries = ["when did we paint the lake?", "kitchen budget", "what happened on 8 May, 2023?"]
    Q = unit_rows(rng, 3, E.shape[1])
    subset = np.arange(4, 20)
    batch = retriever.search_batch(queries, Q, subset=subset)
    for b, result in enumerate(batch):
        one = retriever.search(queries[b], Q[b], subset=subset)
        np.testing.assert_array_equal(one.ids, result.ids)
        assert np.isin(result.ids, subset).all()
        leg = result.leg("temporal")
        assert leg.kind == "temporal" and len(leg.ids) == 10 and np.isin(leg.ids, subset).all()
        # The leg's own ranking is the operator's, with the retriever's BM25 scores.
        direct = tl.temporal(E, Q[b], retriever.bm25.scores(queries[b]), 10, timeline=timeline,
                             question=queries[b], params=config.legs[0].params(), subset=subset)
        np.testing.assert_array_equal(leg.ids, direct.ids)
    # with_config keeps the timeline; without one, corpus order is one session.
    assert retriever.with_config("rrf2").with_config(config).timeline is timeline
    plain = HybridRetriever(texts, E, config)
    assert plain.timeline is None
    result = plain.search(queries[0], Q[0])
    direct = tl.temporal(E, Q[0], plain.bm25.scores(queries[0]), 10,
                         timeline=tl.Timeline(session=np.zeros(len(texts), dtype=np.int64), cue=tl.time_cues(texts)),
                         question=queries[0], params=config.legs[0].params())
    np.testing.assert_array_equal(result.leg("temporal").ids, direct.ids)
    with pytest.raises(ValueError, match="timeline"):
        HybridRetriever(texts, E, config, timeline=tl.Timeline(session=np.zeros(3, dtype=np.int64)))


def test_date_windows_gate_changes_nothing(monkeypatch):
    """The quick 'digit or month name' gate only skips questions no period pattern can match."""
    import re

    rng = np.random.default_rng(11)
    words = ["when", "did", "Mel", "go", "in", "May", "may", "march", "March", "Jan.", "3rd", "of", "2023", "19/01/2024",
             "2023-05-08", "the", "17th", "summer", "last", "week", "Sept", "dec", "December", "31", "on", "maybe",
             "market", "junes", "1999", "19.01.2024", "ago", "5", "Aug"]
    questions = [" ".join(rng.choice(words, size=rng.integers(1, 9))) for _ in range(600)]
    years = (2022, 2023)
    gated = [tl.date_windows(q, years) for q in questions]
    monkeypatch.setattr(tl, "_MAY_NAME_A_PERIOD", re.compile(""))
    assert gated == [tl.date_windows(q, years) for q in questions]
    assert any(gated) and not all(gated)
