"""Tests for fieldrank.evaluation.metrics and fieldrank.evaluation.stats."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from fieldrank.evaluation import metrics, stats

SEED = 20240812
EXACT = 1e-12
RANX_AGREEMENT = 1e-9
N_RANDOM_QUESTIONS = 200
N_RANDOM_IDS = 60
MAX_RANDOM_GOLD = 15
MAX_RANDOM_RANKING = 20
QUICK_RESAMPLES = 500


def log2_discount(rank: int) -> float:
    """1 / log2(rank + 1) for a 1-based rank, written out for the hand examples."""
    return 1.0 / math.log2(rank + 1)


# ----------------------------------------------------------------- hand-worked cases
class TestHandWorked:
    def test_two_gold_at_ranks_two_and_four(self) -> None:
        ranking = [5, 1, 7, 3, 9, 2, 8, 4, 6, 0]
        gold = {1, 3}
        dcg = log2_discount(2) + log2_discount(4)  # 0.63093 + 0.43068
        ideal = log2_discount(1) + log2_discount(2)  # 1 + 0.63093
        assert metrics.dcg_at_k(ranking, gold, 10) == pytest.approx(dcg, abs=EXACT)
        assert metrics.ideal_dcg_at_k(2, 10) == pytest.approx(ideal, abs=EXACT)
        assert metrics.ndcg_at_k(ranking, gold, 10) == pytest.approx(dcg / ideal, abs=EXACT)
        assert metrics.ndcg_at_k(ranking, gold, 10) == pytest.approx(0.650921, abs=1e-6)
        # Both hits lie inside the top 5, so NDCG@5 is the same.
        assert metrics.ndcg_at_k(ranking, gold, 5) == pytest.approx(dcg / ideal, abs=EXACT)
        assert metrics.recall_at_k(ranking, gold, 10) == 1.0
        assert metrics.hit_at_k(ranking, gold, 10) == 1.0

    def test_gold_beyond_cutoff_counts_only_at_larger_k(self) -> None:
        ranking = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
        gold = {"g", "zz"}  # "g" at rank 7, "zz" never retrieved
        ideal = log2_discount(1) + log2_discount(2)
        assert metrics.ndcg_at_k(ranking, gold, 10) == pytest.approx(
            log2_discount(7) / ideal, abs=EXACT
        )
        assert metrics.ndcg_at_k(ranking, gold, 10) == pytest.approx(
            (1 / 3) / (1 + 1 / math.log2(3)), abs=EXACT
        )
        assert metrics.ndcg_at_k(ranking, gold, 5) == 0.0
        assert metrics.recall_at_k(ranking, gold, 10) == 0.5
        assert metrics.recall_at_k(ranking, gold, 5) == 0.0
        assert metrics.hit_at_k(ranking, gold, 10) == 1.0
        assert metrics.hit_at_k(ranking, gold, 5) == 0.0

    def test_fewer_gold_than_k_ideal_uses_gold_count(self) -> None:
        # One gold item at rank 1 is a perfect ranking whatever k is.
        ranking = [4, 2, 9, 1]
        assert metrics.ndcg_at_k(ranking, {4}, 10) == 1.0
        assert metrics.ideal_dcg_at_k(1, 10) == 1.0
        # Same item at rank 3: DCG = 1/log2(4) = 0.5, ideal = 1.
        assert metrics.ndcg_at_k(ranking, {9}, 10) == pytest.approx(0.5, abs=EXACT)

    def test_more_gold_than_k(self) -> None:
        gold = set(range(12))
        all_hits = list(range(10))
        assert metrics.ndcg_at_k(all_hits, gold, 10) == pytest.approx(1.0, abs=EXACT)
        assert metrics.recall_at_k(all_hits, gold, 10) == pytest.approx(10 / 12, abs=EXACT)
        # Five hits on top, five misses below: ideal DCG is over min(12, 10) = 10 ranks.
        half = [0, 1, 2, 3, 4, 100, 101, 102, 103, 104]
        expected = sum(log2_discount(r) for r in range(1, 6)) / sum(
            log2_discount(r) for r in range(1, 11)
        )
        assert metrics.ndcg_at_k(half, gold, 10) == pytest.approx(expected, abs=EXACT)
        assert metrics.recall_at_k(half, gold, 10) == pytest.approx(5 / 12, abs=EXACT)

    def test_ranking_shorter_than_k(self) -> None:
        ranking = np.array([11, 22])
        gold = np.array([22, 33])
        expected = log2_discount(2) / (log2_discount(1) + log2_discount(2))
        assert metrics.ndcg_at_k(ranking, gold, 10) == pytest.approx(expected, abs=EXACT)
        assert metrics.recall_at_k(ranking, gold, 10) == 0.5
        assert metrics.hit_at_k(ranking, gold, 10) == 1.0

    def test_empty_ranking_scores_zero(self) -> None:
        for metric in (metrics.ndcg_at_k, metrics.recall_at_k, metrics.hit_at_k):
            assert metric([], {1, 2}, 10) == 0.0
        assert metrics.per_question([np.array([], dtype=np.int64)], [{1}], 10).tolist() == [0.0]

    def test_longer_ranking_is_cut_at_k(self) -> None:
        ranking = list(range(20))
        assert metrics.recall_at_k(ranking, {15}, 10) == 0.0
        assert metrics.recall_at_k(ranking, {15}, 20) == 1.0

    def test_ties_in_scores_follow_the_tie_rule(self) -> None:
        # Equal scores: lower index first (docs/spec.md §0).
        scores = np.array([0.5, 0.9, 0.5, 0.9, 0.1])
        ranking = metrics.ranking_from_scores(scores, k=10)
        assert ranking.tolist() == [1, 3, 0, 2, 4]
        assert metrics.ndcg_at_k(ranking, {2}, 10) == pytest.approx(log2_discount(4), abs=EXACT)
        # A tie straddling the cut-off keeps the lower index only.
        cut = metrics.ranking_from_scores(np.array([0.9, 0.5, 0.5]), k=2)
        assert cut.tolist() == [0, 1]
        assert metrics.hit_at_k(cut, {2}, 2) == 0.0
        # ids are carried through
        names = np.array(["x", "y", "z"])
        assert metrics.ranking_from_scores(np.array([0.1, 0.1, 0.3]), 3, names).tolist() == [
            "z",
            "x",
            "y",
        ]

    def test_duplicates_raise(self) -> None:
        with pytest.raises(ValueError, match="more than once"):
            metrics.ndcg_at_k([1, 2, 1], {1}, 10)
        # A duplicate beyond k is still a bug in the method.
        with pytest.raises(ValueError, match="more than once"):
            metrics.recall_at_k([*range(12), 3], {1}, 10)
        with pytest.raises(ValueError, match="question 1"):
            metrics.per_question([np.array([1, 2]), np.array([3, 3])], [{1}, {3}], 10)

    def test_invalid_inputs_raise(self) -> None:
        with pytest.raises(ValueError, match="empty"):
            metrics.recall_at_k([1, 2], set(), 10)
        with pytest.raises(ValueError, match="k must be >= 1"):
            metrics.ndcg_at_k([1], {1}, 0)
        with pytest.raises(TypeError):
            metrics.ndcg_at_k([1], {1}, 2.5)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="unknown metric"):
            metrics.per_question([[1]], [{1}], 10, metric="map")
        with pytest.raises(ValueError, match="same length"):
            metrics.per_question([[1], [2]], [{1}], 10)
        with pytest.raises(ValueError, match="NaN"):
            metrics.ranking_from_scores(np.array([0.1, np.nan]), 2)

    def test_check_depth(self) -> None:
        metrics.check_depth([[1, 2], list(range(10))], 10)
        with pytest.raises(ValueError, match="question 1"):
            metrics.check_depth([[1], list(range(11))], 10)


# --------------------------------------------------------------- vectorised = scalar
def random_run(
    rng: np.random.Generator, n_questions: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Random rankings (lengths 0..20, no duplicates) and gold sets (sizes 1..15)."""
    run = [
        rng.permutation(N_RANDOM_IDS)[: rng.integers(0, MAX_RANDOM_RANKING + 1)]
        for _ in range(n_questions)
    ]
    gold = [
        rng.choice(N_RANDOM_IDS, size=rng.integers(1, MAX_RANDOM_GOLD + 1), replace=False)
        for _ in range(n_questions)
    ]
    return run, gold


@pytest.mark.parametrize("k", [1, 5, 10, 25])
def test_per_question_matches_scalar_functions(k: int) -> None:
    rng = np.random.default_rng(SEED)
    run, gold = random_run(rng, N_RANDOM_QUESTIONS)
    scalar = {"ndcg": metrics.ndcg_at_k, "recall": metrics.recall_at_k, "hit": metrics.hit_at_k}
    together = metrics.per_question_all(run, gold, k)
    assert tuple(together) == metrics.METRIC_NAMES
    for name, function in scalar.items():
        expected = np.array([function(r, g, k) for r, g in zip(run, gold)])
        np.testing.assert_allclose(metrics.per_question(run, gold, k, name), expected, atol=EXACT)
        np.testing.assert_allclose(together[name], expected, atol=EXACT)
    assert np.all((together["ndcg"] >= 0) & (together["ndcg"] <= 1 + EXACT))
    np.testing.assert_array_equal(together["hit"] > 0, together["recall"] > 0)


def test_agrees_with_ranx() -> None:
    """Mean NDCG@10 and Recall@10 equal ranx's (low-level, binary qrels) to 1e-9.

    ranx's ``ndcg`` is the Järvelin–Kekäläinen form (gain = rel, discount log2(i+1),
    ideal over min(|qrels|, k)); with binary relevance it equals ``ndcg_burges``.
    """
    ranx_metrics = pytest.importorskip("ranx.metrics")
    numba_typed = pytest.importorskip("numba.typed")
    numba_errors = pytest.importorskip("numba.core.errors")
    k = metrics.DEFAULT_K
    rng = np.random.default_rng(SEED)
    run, gold = random_run(rng, N_RANDOM_QUESTIONS)
    # ranx expects, per query, float64 rows [doc id, score] sorted by score
    # (descending) for the run and [doc id, relevance] for the qrels.
    ranx_run = numba_typed.List(
        [
            np.column_stack([ranking, np.arange(len(ranking), 0, -1)]).astype(np.float64)
            for ranking in run
        ]
    )
    ranx_qrels = numba_typed.List(
        [np.column_stack([g, np.ones(len(g))]).astype(np.float64) for g in gold]
    )
    with warnings.catch_warnings():
        # numba may warn while compiling ranx's kernels on first use
        warnings.simplefilter("ignore", numba_errors.NumbaWarning)
        ranx_ndcg = ranx_metrics.ndcg(ranx_qrels, ranx_run, k)
        ranx_recall = ranx_metrics.recall(ranx_qrels, ranx_run, k)
    ours = metrics.per_question_all(run, gold, k)
    assert abs(ours["ndcg"].mean() - ranx_ndcg.mean()) < RANX_AGREEMENT
    assert abs(ours["recall"].mean() - ranx_recall.mean()) < RANX_AGREEMENT
    np.testing.assert_allclose(ours["ndcg"], ranx_ndcg, atol=RANX_AGREEMENT)
    np.testing.assert_allclose(ours["recall"], ranx_recall, atol=RANX_AGREEMENT)


def test_properties_with_hypothesis() -> None:
    hypothesis = pytest.importorskip("hypothesis")
    st = pytest.importorskip("hypothesis.strategies")

    @hypothesis.settings(max_examples=150, deadline=None, database=None)
    @hypothesis.given(
        ranking=st.lists(st.integers(0, 40), max_size=30, unique=True),
        gold=st.sets(st.integers(0, 40), min_size=1, max_size=20),
        k=st.integers(1, 30),
    )
    def check(ranking: list[int], gold: set[int], k: int) -> None:
        ndcg = metrics.ndcg_at_k(ranking, gold, k)
        recall = metrics.recall_at_k(ranking, gold, k)
        hit = metrics.hit_at_k(ranking, gold, k)
        assert 0.0 <= ndcg <= 1.0 + EXACT
        assert 0.0 <= recall <= 1.0
        assert (ndcg > 0) == (recall > 0) == (hit == 1.0)
        # NDCG is 1 exactly when the top min(|gold|, k) positions are all gold.
        ideal_prefix = ranking[: min(len(gold), k)]
        is_ideal = len(ideal_prefix) == min(len(gold), k) and set(ideal_prefix) <= gold
        assert (ndcg == pytest.approx(1.0, abs=EXACT)) == is_ideal
        # Recall never decreases with k.
        assert metrics.recall_at_k(ranking, gold, k + 1) >= recall

    check()


# ------------------------------------------------------------------------- statistics
class TestBootstrap:
    def test_contains_mean_and_is_reproducible(self) -> None:
        values = np.random.default_rng(SEED).random(300)
        mean, lo, hi = stats.bootstrap_ci(values, seed=7)
        assert mean == pytest.approx(values.mean(), abs=EXACT)
        assert lo < mean < hi
        assert stats.bootstrap_ci(values, seed=7) == (mean, lo, hi)
        assert stats.bootstrap_ci(values, seed=8) != (mean, lo, hi)

    def test_narrows_with_more_questions(self) -> None:
        rng = np.random.default_rng(SEED)
        small = stats.bootstrap_ci(rng.random(100), seed=1)
        large = stats.bootstrap_ci(rng.random(10_000), seed=1)
        width_ratio = (small.hi - small.lo) / (large.hi - large.lo)
        assert 7.0 < width_ratio < 13.0  # ~ sqrt(10000 / 100) = 10

    def test_resampled_means_have_the_right_spread(self) -> None:
        values = np.random.default_rng(SEED).normal(size=1_000)
        boot = stats.bootstrap_means(values, n_resamples=4_000, seed=3)[:, 0]
        standard_error = values.std() / math.sqrt(values.size)
        assert abs(boot.mean() - values.mean()) < 0.1 * standard_error
        assert boot.std() == pytest.approx(standard_error, rel=0.05)

    def test_agrees_with_scipy_percentile_bootstrap(self) -> None:
        scipy_stats = pytest.importorskip("scipy.stats")
        values = np.random.default_rng(SEED).exponential(size=400)
        ours = stats.bootstrap_ci(values, n_resamples=5_000, seed=2)
        theirs = scipy_stats.bootstrap(
            (values,), np.mean, n_resamples=5_000, method="percentile", random_state=2
        ).confidence_interval
        width = ours.hi - ours.lo
        assert abs(ours.lo - theirs.low) < 0.05 * width
        assert abs(ours.hi - theirs.high) < 0.05 * width

    def test_matrix_input_uses_the_same_resamples_per_column(self) -> None:
        rng = np.random.default_rng(SEED)
        table = rng.random((2_000, 4))  # several chunks of resamples
        together = stats.bootstrap_ci(table, seed=5)
        for column in range(table.shape[1]):
            alone = stats.bootstrap_ci(table[:, column], seed=5)
            assert together.mean[column] == pytest.approx(alone.mean, abs=EXACT)
            assert together.lo[column] == pytest.approx(alone.lo, abs=EXACT)
            assert together.hi[column] == pytest.approx(alone.hi, abs=EXACT)

    def test_enforces_the_protocol_minimum(self) -> None:
        values = np.ones(10)
        with pytest.raises(ValueError, match="minimum"):
            stats.bootstrap_ci(values, n_resamples=QUICK_RESAMPLES)
        quick = stats.bootstrap_ci(values, n_resamples=QUICK_RESAMPLES, enforce_minimum=False)
        assert quick == (1.0, 1.0, 1.0)
        with pytest.raises(ValueError, match="confidence"):
            stats.bootstrap_ci(values, confidence=1.5)
        with pytest.raises(ValueError, match="empty"):
            stats.bootstrap_ci(np.array([]))
        with pytest.raises(ValueError, match="NaN"):
            stats.bootstrap_ci(np.array([0.1, np.nan]))


class TestPairedBootstrap:
    def test_identical_inputs(self) -> None:
        values = np.random.default_rng(SEED).random(500)
        result = stats.paired_bootstrap(values, values.copy(), seed=0)
        assert result == (0.0, 0.0, 0.0, 1.0)

    def test_clear_difference_has_smallest_p(self) -> None:
        rng = np.random.default_rng(SEED)
        b = rng.random(500)
        a = b + 0.1 + rng.normal(scale=0.01, size=b.size)
        result = stats.paired_bootstrap(a, b, seed=0)
        assert result.mean_diff == pytest.approx(float((a - b).mean()), abs=EXACT)
        assert 0 < result.lo < result.mean_diff < result.hi
        assert result.p_value == pytest.approx(2 / (stats.MIN_BOOTSTRAP_RESAMPLES + 1))
        # swapping the methods flips the sign and keeps the p-value
        swapped = stats.paired_bootstrap(b, a, seed=0)
        assert swapped.mean_diff == pytest.approx(-result.mean_diff, abs=EXACT)
        assert swapped.p_value == result.p_value

    def test_no_difference_gives_large_p(self) -> None:
        rng = np.random.default_rng(SEED)
        a = rng.random(400)
        b = a[rng.permutation(a.size)]  # same marginal, paired noise
        result = stats.paired_bootstrap(a, b, seed=0)
        assert result.lo < 0 < result.hi
        assert result.p_value > 0.05

    def test_shapes_must_match(self) -> None:
        with pytest.raises(ValueError, match="same shape"):
            stats.paired_bootstrap(np.ones(5), np.ones(6))


class TestMcNemar:
    def test_hand_example(self) -> None:
        hit_a = np.array([1, 1, 1, 1, 1, 0, 0, 1, 0, 0])
        hit_b = np.array([1, 0, 0, 0, 0, 1, 0, 1, 0, 0])
        result = stats.mcnemar(hit_a, hit_b)
        assert (result.b, result.c) == (4, 1)
        # continuity-corrected chi-square: (|4 - 1| - 1)^2 / 5
        assert result.statistic == pytest.approx(0.8, abs=EXACT)
        # exact: 2 * P(X >= 4), X ~ Bin(5, 1/2) = 2 * (5 + 1) / 32
        assert result.p_value == pytest.approx(12 / 32, abs=EXACT)
        # chi-square(1) survival function = erfc(sqrt(x / 2))
        assert result.p_value_chi2 == pytest.approx(math.erfc(math.sqrt(0.4)), abs=1e-9)

    def test_no_discordant_pairs(self) -> None:
        hits = np.array([True, False, True])
        assert stats.mcnemar(hits, hits) == (0, 0, 0.0, 1.0, 1.0)

    def test_invalid_inputs(self) -> None:
        with pytest.raises(ValueError, match="0/1"):
            stats.mcnemar(np.array([0.5, 1.0]), np.array([0, 1]))
        with pytest.raises(ValueError, match="same shape"):
            stats.mcnemar(np.array([0, 1]), np.array([0, 1, 1]))
