"""Cross-check the harness's NDCG@10 and Recall@10 against ranx on real LoCoMo runs.

``tests/evaluation/test_eval_metrics.py`` already compares the metric code with ranx on random runs;
this test compares on the rankings the harness itself produces for several shipped presets
and Ring (plus cosine cut to 0..k ids, so short and empty rankings are covered), per
question, to 1e-9. Skipped when the LoCoMo data or
ranx is absent.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from fieldrank.evaluation import _runner as runner
from fieldrank.evaluation import locomo
from tests.helpers import LOCOMO_DIR

PREFERRED_SETS = ("mpnet-base-v2", "minilm-l6-v2")
PRESETS = ("cosine", "bm25", "rrf2", "rrf_cfsr")
AGREEMENT = 1e-9
K = runner.DEFAULT_K


@pytest.fixture(scope="module")
def harness_run() -> tuple[locomo.LocomoData, runner.EvaluationRun]:
    if not (LOCOMO_DIR / "turns.jsonl").is_file():
        pytest.skip(f"LoCoMo data not found at {LOCOMO_DIR} (set FIELDRANK_LOCOMO_DIR or put it at ../shared/data/locomo)")
    available = locomo.available_embedding_sets(LOCOMO_DIR)
    chosen = next((name for name in PREFERRED_SETS if name in available), None)
    if chosen is None:
        pytest.skip(f"none of the embedding sets {PREFERRED_SETS} is in {LOCOMO_DIR / 'emb'}")
    data = locomo.load_locomo(LOCOMO_DIR, chosen, checksums=False)
    methods = {name: name for name in PRESETS}
    methods["ring"] = runner.ring_method(alpha=0.3, laps=3)
    methods["truncated"] = _truncated_cosine
    return data, runner.evaluate(methods, data, "all")


def _truncated_cosine(corpus: runner.Corpus, batch: runner.QueryBatch) -> list[np.ndarray]:
    """Cosine cut to 0..k ids (by question row), so short and empty rankings are compared too."""
    rankings = runner.as_method("cosine")(corpus, batch)
    return [ranking[: row % (batch.k + 1)] for row, ranking in zip(batch.question_rows.tolist(), rankings)]


def _ranx_scores(run: runner.EvaluationRun, data: locomo.LocomoData, method: str) -> dict[str, np.ndarray]:
    ranx_metrics = pytest.importorskip("ranx.metrics")
    numba_typed = pytest.importorskip("numba.typed")
    numba_errors = pytest.importorskip("numba.core.errors")
    # ranx's low-level kernels take, per query, float64 rows [doc id, score] sorted by score
    # (descending) for the run and [doc id, relevance] for the qrels.
    ranx_run = numba_typed.List(
        [
            np.column_stack([ranking, np.arange(len(ranking), 0, -1)]).astype(np.float64).reshape(-1, 2)
            for ranking in run.rankings[method]
        ]
    )
    gold = [data.questions.gold_positions_absolute[row] for row in run.question_rows.tolist()]
    ranx_qrels = numba_typed.List(
        [np.column_stack([g, np.ones(len(g))]).astype(np.float64) for g in gold]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", numba_errors.NumbaWarning)
        return {
            "ndcg": ranx_metrics.ndcg(ranx_qrels, ranx_run, K),
            "recall": ranx_metrics.recall(ranx_qrels, ranx_run, K),
        }


@pytest.mark.parametrize("method", [*PRESETS, "ring", "truncated"])
def test_ndcg_and_recall_agree_with_ranx(
    harness_run: tuple[locomo.LocomoData, runner.EvaluationRun], method: str
) -> None:
    data, run = harness_run
    peer = _ranx_scores(run, data, method)
    ours = run.scores[method]
    np.testing.assert_allclose(ours[f"ndcg@{K}"], peer["ndcg"], rtol=0, atol=AGREEMENT)
    np.testing.assert_allclose(ours[f"recall@{K}"], peer["recall"], rtol=0, atol=AGREEMENT)
    assert abs(ours[f"ndcg@{K}"].mean() - peer["ndcg"].mean()) < AGREEMENT
    assert abs(ours[f"recall@{K}"].mean() - peer["recall"].mean()) < AGREEMENT


def test_the_runs_are_real(harness_run: tuple[locomo.LocomoData, runner.EvaluationRun]) -> None:
    """The compared runs cover every scored question; the truncated run has empty rankings."""
    data, run = harness_run
    assert len(run.question_rows) == int(data.scored_mask.sum())
    assert {len(r) for r in run.rankings["cosine"]} == {K}
    assert {len(r) for r in run.rankings["truncated"]} == set(range(K + 1))
