"""Hit confidence (issue 29): fused scores never rank-only, confidence beside the ranking,
``min_confidence``, the model's parameters, fitting and metrics, and LoCoMo figures."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fieldrank import _confidence as conf
from fieldrank.config import ConfidenceParams, RetrieverConfig, default_confidence, preset
from fieldrank.evaluation import _confidence as ec
from fieldrank.hybrid import HybridRetriever

WORDS = ("apple", "pear", "river", "mountain", "violin", "garden", "rocket", "saffron", "harbour", "lantern")


def unit_rows(rng, n, d=16):
    X = rng.standard_normal((n, d)).astype(np.float32)
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.fixture
def corpus(rng):
    texts = [" ".join(rng.choice(WORDS, size=4)) + f" note {i}" for i in range(120)]
    return texts, unit_rows(rng, len(texts))


@pytest.mark.parametrize("name", ["default", "cosine", "bm25", "rrf2"])
def test_one_leg_plans_pass_their_leg_score_through(corpus, name):
    texts, E = corpus
    r = HybridRetriever(texts, E, preset(name))
    res = r.search("apple river note", E[3])
    if len(r.config.legs) == 1:
        np.testing.assert_array_equal(res.scores, res.legs[0].hit_score)
        rank_only = r.config.legs[0].weight / (r.config.k0 + np.arange(1, len(res) + 1))
        assert not np.allclose(res.scores, rank_only)
    else:  # several legs: the weighted RRF, as before
        np.testing.assert_allclose(res.scores, sum(leg.hit_contribution for leg in res.legs), rtol=1e-12)


def test_confidence_is_a_probability_beside_an_unchanged_ranking(corpus):
    texts, E = corpus
    r = HybridRetriever(texts, E)
    res = r.search("apple river", E[5])
    leg = res.legs[0]
    np.testing.assert_array_equal(res.ids, leg.ids[: len(res)])  # the leg's own order
    c = res.confidence
    assert c.shape == (len(res),) and np.all((c >= 0) & (c <= 1))
    hits = list(res)
    assert [h.confidence for h in hits] == pytest.approx(c.tolist())
    assert res.to_dict()["hits"][0]["confidence"] == pytest.approx(c[0])


def test_search_batch_confidence_equals_search(corpus, rng):
    texts, E = corpus
    r = HybridRetriever(texts, E)
    queries = ["apple river", "violin lantern note 4", "saffron", "nothing matches"]
    Q = unit_rows(rng, len(queries))
    subsets = [None, np.arange(0, 60), np.arange(30, 90), None]
    batch = r.search_batch(queries, Q, subsets=subsets, n_threads=3)
    for b, (text, q, sub) in enumerate(zip(queries, Q, subsets)):
        one = r.search(text, q, subset=sub)
        np.testing.assert_array_equal(batch[b].ids, one.ids)
        np.testing.assert_array_equal(batch[b].confidence, one.confidence)


@pytest.mark.parametrize("threshold", [0.0, 0.2, 0.5, 1.0])
def test_min_confidence_keeps_the_hits_that_clear_it_in_rank_order(corpus, rng, threshold):
    texts, E = corpus
    r = HybridRetriever(texts, E)
    for q, text in zip(unit_rows(rng, 5), ["apple", "pear garden", "rocket note 7", "zebra", "harbour"]):
        full = r.search(text, q)
        kept = r.search(text, q, min_confidence=threshold)
        mask = full.confidence >= threshold
        np.testing.assert_array_equal(kept.ids, full.ids[mask])
        np.testing.assert_array_equal(kept.scores, full.scores[mask])
        np.testing.assert_array_equal(kept.confidence, full.confidence[mask])
        assert [h.rank for h in kept] == list(range(1, len(kept) + 1))
        batch = r.search_batch([text], q[None, :], min_confidence=threshold)[0]
        np.testing.assert_array_equal(batch.ids, kept.ids)
    assert len(r.search("apple", E[0], min_confidence=0.0)) == r.config.k  # without a bar, k means k


def test_min_confidence_can_return_nothing(corpus):
    texts, E = corpus
    r = HybridRetriever(texts, E)
    res = r.search("apple", E[0], min_confidence=1.0)
    assert len(res) == 0 and list(res) == []


@pytest.mark.parametrize("bad, exc", [(-0.1, ValueError), (1.5, ValueError), (math.nan, ValueError),
                                      ("0.5", TypeError), (True, TypeError)])
def test_min_confidence_is_checked(corpus, bad, exc):
    texts, E = corpus
    r = HybridRetriever(texts, E)
    with pytest.raises(exc, match="min_confidence"):
        r.search("apple", E[0], min_confidence=bad)
    with pytest.raises(exc, match="min_confidence"):
        r.search_batch(["apple"], E[:1], min_confidence=bad)


def test_confidence_without_the_query_text_is_nan_and_min_confidence_says_why(corpus):
    texts, E = corpus
    r = HybridRetriever(texts, E, "cosine")
    res = r.search(vector=E[0])
    assert np.isnan(res.confidence).all()
    assert not np.isnan(r.search("apple", E[0]).confidence).any()  # the text read beside a dense-only plan
    with pytest.raises(ValueError, match="min_confidence needs the query text and vector"):
        r.search(vector=E[0], min_confidence=0.5)


def test_memory_that_names_nothing_of_the_query_gets_lower_confidence(corpus):
    """The same query and vector over a memory holding its words and over one that never names them
    (a model reading memory_coverage only: the feature is computed over the query's subset)."""
    texts, E = corpus
    holds = [f"{t} saffron lantern" for t in texts[:60]]
    lacks = [t.replace("saffron", "x").replace("lantern", "y") for t in texts[60:]]
    memory_only = ConfidenceParams(-5.0, (0.0, 0.0, 10.0), 0.0, (0.0,) * 4, (0.0, 1.0, 0.0))
    r = HybridRetriever(holds + lacks, E, preset("default").replace(confidence=memory_only))
    q = E[10]
    with_words = r.search("saffron lantern", q, subset=np.arange(60)).confidence[0]
    # (neighbour-text expansion lets rows 60-61 see the words of rows 58-59: those are left out)
    without = r.search("saffron lantern", q, subset=np.arange(70, 120)).confidence[0]
    assert with_words == pytest.approx(0.5 / (1 + math.exp(-5.0)))
    assert without == pytest.approx(0.5 / (1 + math.exp(5.0)))


def test_features_coverage(corpus):
    texts = ["apple pear river", "apple", "violin", "pear pear pear"]
    E = np.eye(4, 8, dtype=np.float32)
    r = HybridRetriever(texts, E, "bm25")
    terms = conf.query_terms(r.bm25, "apple pear zzzunknown")
    assert terms.ids.size == 2 and terms.total > terms.idf.sum()  # the unknown term counts, found nowhere
    f = conf.features(E, E[0], r.bm25, terms, np.array([0, 1, 2]), np.array([3.0, 2.0, 1.0]), None)
    cov = f.hits[:, conf.HIT_FEATURES.index("coverage")]
    assert cov[0] == pytest.approx(terms.idf.sum() / terms.total)
    assert 0 < cov[1] < cov[0] and cov[2] == 0
    np.testing.assert_allclose(f.hits[:, conf.HIT_FEATURES.index("cosine")], [1, 0, 0])
    np.testing.assert_allclose(f.hits[:, conf.HIT_FEATURES.index("score_gap")], [1, -1, -2])
    mem = conf.MEMORY_FEATURES.index("memory_coverage")
    assert f.memory[mem] == pytest.approx(cov[0])
    only_violin = conf.features(E, E[0], r.bm25, terms, np.array([2]), np.array([1.0]), np.array([2]))
    assert only_violin.memory[mem] == 0


def test_confidence_params_round_trip_and_checks(tmp_path):
    params = default_confidence()
    config = preset("rrf2").replace(confidence=params)
    path = tmp_path / "c.toml"
    config.save_toml(path)
    assert RetrieverConfig.load_toml(path) == config
    assert preset("rrf2").confidence is None and preset("rrf2").confidence_model == params
    with pytest.raises(ValueError, match="hit_weights must hold 4 numbers"):
        ConfidenceParams(0.0, (0.0,) * 3, 0.0, (1.0,), (0.0, 1.0, 0.0))
    with pytest.raises(ValueError, match="memory_intercept"):
        ConfidenceParams(math.inf, (0.0,) * 3, 0.0, (0.0,) * 4)
    with pytest.raises(ValueError, match="missing key"):
        ConfidenceParams.from_dict({"memory_intercept": 0.0})


def test_a_config_confidence_model_is_used(corpus):
    texts, E = corpus
    sure = ConfidenceParams(20.0, (0.0,) * 3, 20.0, (0.0,) * 4, (0.0, 1.0, 0.0))
    r = HybridRetriever(texts, E, preset("default").replace(confidence=sure))
    assert r.search("apple", E[0]).confidence == pytest.approx(np.full(10, 1.0))


def test_write_confidence_table_keeps_the_rest_of_the_file(tmp_path):
    from fieldrank.evaluation.calibrate import write_confidence_table

    path = tmp_path / "d.toml"
    path.write_text("# header kept\n" + preset("rrf2").replace(confidence=None).to_toml(), encoding="utf-8")
    params = ConfidenceParams(-1.0, (1.0, 2.0, 3.0), -2.0, (0.5, 0.25, 0.125, 1.0), (0.1, 0.9, 0.3))
    write_confidence_table(path, params, "test")
    write_confidence_table(path, params, "test again")  # replaced, not appended twice
    text = path.read_text(encoding="utf-8")
    assert text.startswith("# header kept") and text.count("[confidence]") == 1 and "test again" in text
    assert RetrieverConfig.load_toml(path).confidence == params


def test_fit_logistic_recovers_a_known_model(rng):
    X = rng.standard_normal((20_000, 3))
    w = np.array([1.5, -2.0, 0.5])
    y = rng.random(20_000) < 1 / (1 + np.exp(-(0.3 + X @ w)))
    b, fitted = conf.fit_logistic(X, y, l2=0.0)
    assert b == pytest.approx(0.3, abs=0.1)
    np.testing.assert_allclose(fitted, w, atol=0.15)  # sampling error of 20k draws


def test_fit_params_gives_calibrated_probabilities_on_its_own_kind_of_data(rng):
    """Synthetic results whose relevance follows a known logistic law: the fitted model's
    confidence is calibrated (ECE small) and separates memories that hold nothing."""
    def result(holds: bool):
        k = 10
        hits = np.column_stack([rng.normal(0.5 if holds else 0.1, 0.1, k), rng.random(k),
                                np.sort(rng.normal(0, 1, k))[::-1], np.zeros(k)])
        hits[:, 3] = hits[:, 2] - conf.best_other(hits[:, 2])
        memory = np.array([hits[:, 0].max(), hits[:, 1].max(), rng.random() if holds else 0.1 * rng.random()])
        p = 1 / (1 + np.exp(-(-2.0 + 2.0 * hits[:, 1] + 1.0 * hits[:, 2])))
        return conf.Features(memory, hits), (rng.random(k) < p) & holds

    own = [result(True) for _ in range(600)]
    absent = [result(False)[0] for _ in range(600)]
    params = ec.fit_params(own, absent)
    test = [result(True) for _ in range(600)]
    p = np.concatenate([conf.confidence(f, params) for f, _ in test])
    y = np.concatenate([labels for _, labels in test])
    assert ec.expected_calibration_error(p, y) < 0.05
    away = np.array([conf.confidence(result(False)[0], params)[0] for _ in range(300)])
    first = np.array([conf.confidence(f, params)[0] for f, _ in test])
    assert ec.auroc(np.r_[first, away], np.r_[np.ones(first.size), np.zeros(away.size)]) > 0.9


def test_auroc_and_ece():
    assert ec.auroc(np.array([0.1, 0.2, 0.8, 0.9]), np.array([0, 0, 1, 1])) == 1.0
    assert ec.auroc(np.array([0.9, 0.8, 0.2, 0.1]), np.array([0, 0, 1, 1])) == 0.0
    assert ec.auroc(np.full(6, 0.3), np.array([0, 1, 0, 1, 0, 1])) == 0.5
    assert ec.expected_calibration_error(np.array([0.25, 0.25, 0.25, 0.25]), np.array([1, 0, 0, 0])) == 0.0
    assert ec.expected_calibration_error(np.array([0.95, 0.95]), np.array([0, 0])) == pytest.approx(0.95)


def test_shipped_model_separates_locomo_memories(locomo_dir):
    """On LoCoMo (skipped without the data): the shipped model, fitted on all of LoCoMo, tells a
    question's own conversation from another's (in-sample: a regression guard, not the held-out
    figure of docs/results/confidence.md)."""
    from fieldrank.evaluation import locomo

    data = locomo.load_locomo(locomo_dir, "minilm-l6-v2", checksums=False)
    r = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, preset("default"),
                        timeline=locomo.locomo_timeline(data))
    rows = np.flatnonzero(data.questions.is_scored)[::4]
    items = ec.collect_retriever(data, r, rows)
    params = default_confidence()
    own = np.array([conf.confidence(i.own, params)[0] for i in items])
    away = np.array([conf.confidence(i.other, params)[0] for i in items])
    assert ec.auroc(np.r_[own, away], np.r_[np.ones(own.size), np.zeros(away.size)]) >= 0.9
    relevant = np.array([i.relevant[0] for i in items])
    assert ec.expected_calibration_error(own, relevant) <= 0.06


def test_cli_min_confidence(corpus, tmp_path, capsys):
    import json

    from fieldrank import cli

    texts, E = corpus
    HybridRetriever(texts, E).save(tmp_path / "index")
    np.save(tmp_path / "q.npy", E[7])
    base = ["search", "--index", str(tmp_path / "index"), "--text", "apple river", "--vector-file",
            str(tmp_path / "q.npy")]
    assert cli.main(base + ["--json"]) == 0
    full = json.loads(capsys.readouterr().out)["hits"]
    assert len(full) == 10 and all(0 <= hit["confidence"] <= 1 for hit in full)
    threshold = sorted(hit["confidence"] for hit in full)[5]
    assert cli.main(base + ["--json", "--min-confidence", str(threshold)]) == 0
    kept = json.loads(capsys.readouterr().out)["hits"]
    assert [hit["id"] for hit in kept] == [hit["id"] for hit in full if hit["confidence"] >= threshold]
    assert cli.main(base + ["--min-confidence", "1"]) == 0
    assert "0 hits" in capsys.readouterr().out
    assert cli.main(base[:5] + ["--preset", "bm25", "--min-confidence", "0.5"]) == cli.EXIT_USER_ERROR
    assert "--min-confidence needs --text and a query vector" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(base + ["--min-confidence", "1.5"])


def test_calibrate_confidence_writes_a_config_with_the_model(locomo_dir, tmp_path):
    from fieldrank.evaluation import calibrate

    out = tmp_path / "fitted.toml"
    assert calibrate.main(["--data", str(locomo_dir), "--embeddings", "minilm-l6-v2", "--split", "tune",
                           "--confidence", "--out", str(out)]) == 0
    config = RetrieverConfig.load_toml(out)
    assert config.confidence is not None and config.legs == preset("default").legs
    assert "# confidence: fitted on" in out.read_text(encoding="utf-8")
    out.write_text("# kept\n" + out.read_text(encoding="utf-8"), encoding="utf-8")
    assert calibrate.main(["--data", str(locomo_dir), "--embeddings", "minilm-l6-v2", "--split", "tune",
                           "--confidence", "--config", str(out), "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# kept") and text.count("[confidence]") == 1  # same config: only the table replaced


def test_a_dense_only_batch_reads_the_texts_for_confidence(corpus):
    texts, E = corpus
    r = HybridRetriever(texts, E, "cosine")
    batch = r.search_batch(["apple", "river"], E[:2])
    one = [r.search(t, q) for t, q in zip(["apple", "river"], E[:2])]
    for b, o in zip(batch, one):
        np.testing.assert_array_equal(b.confidence, o.confidence)
    assert np.isnan(r.search_batch(None, E[:2])[0].confidence).all()


def test_calibrate_carries_the_package_confidence_model_over(locomo_dir, tmp_path):
    from fieldrank.evaluation import calibrate

    out = tmp_path / "cfg.toml"
    assert calibrate.main(["--data", str(locomo_dir), "--embeddings", "minilm-l6-v2", "--split", "tune", "--quick",
                           "--out", str(out)]) == 0
    assert RetrieverConfig.load_toml(out).confidence == default_confidence()
    assert "carried over from the package" in out.read_text(encoding="utf-8")


def test_confidence_properties():
    """Any coefficients, any features: probabilities in [0, 1], and among the hits after the first
    the confidence orders as the product g * h (the recalibration is monotone for c1 > 0)."""
    pytest.importorskip("hypothesis")
    from hypothesis import given, settings
    from hypothesis import strategies as st

    finite = st.floats(-5, 5, allow_nan=False)

    @settings(max_examples=60, deadline=None)
    @given(st.lists(finite, min_size=12, max_size=12), st.floats(0.05, 3), st.integers(0, 2**32 - 1))
    def check(values, scale, seed):
        params = ConfidenceParams(values[0], tuple(values[1:4]), values[4], tuple(values[5:9]),
                                  (values[9], scale, values[10]))
        r = np.random.default_rng(seed)
        f = conf.Features(r.normal(size=3), r.normal(size=(10, 4)))
        c = conf.confidence(f, params)
        assert np.all((c >= 0) & (c <= 1))
        product = conf.product_logit(np.broadcast_to(f.memory, (10, 3)), f.hits, params)
        rest = np.argsort(product[1:], kind="stable")
        assert np.all(np.diff(c[1:][rest]) >= -1e-12)

    check()
