"""``fieldrank calibrate`` (fieldrank.evaluation.calibrate) and the calibrated ``default`` preset."""

from __future__ import annotations

import numpy as np
import pytest

import fieldrank
from fieldrank.evaluation import calibrate as cal
from fieldrank.config import BM25Leg, CFSRLeg, CosineLeg, RetrieverConfig, TemporalLeg, preset
from fieldrank.evaluation import metrics

EMB = "minilm-l6-v2"


def test_search_space_is_small_and_stated():
    space = cal.DEFAULT_SPACE
    assert len(space.legs()) == 3 * 3 * 3 * 3 * 2 * 2 * 3 == 972
    assert len(space.stacks()) == 2 * 3**3 == 54
    text = space.describe()
    for needle in ("alpha", "gamma", "radius", "tau", "delta", "bm25", "context_window", "cfsr_union"):
        assert needle in text
    assert len(cal.QUICK_SPACE.legs()) == 4
    assert len(cal.QUICK_SPACE.stacks()) == 8


def test_stage_two_fuses_positions_as_the_native_rrf(rng):
    """Stage 2 fuses (-1 padded) position legs with the retriever's one weighted-RRF rule."""
    n, B = 30, 20
    legs = []
    for depth in (10, 10, 25):
        leg = np.full((B, depth), -1, dtype=np.int64)
        for b in range(B):
            m = int(rng.integers(0, depth + 1))
            leg[b, :m] = rng.choice(n, m, replace=False)
        legs.append(leg)
    weights = [1.0, 0.5, 0.25]
    got = cal._fused_positions(legs, weights)
    for b in range(B):
        want = fieldrank.rrf([leg[b][leg[b] >= 0] for leg in legs], weights, 10).ids
        assert got[b][got[b] >= 0].tolist() == want.tolist()


def test_unknown_split_and_no_sets():
    with pytest.raises(ValueError, match="split"):
        cal.calibrate(None, [EMB], "validation")
    with pytest.raises(ValueError, match="embedding set"):
        cal.calibrate(None, [], "tune")


def _score_through_retriever(locomo_dir, config, split):
    """Mean NDCG@10 of ``config`` run by HybridRetriever over one split (the product path)."""
    from fieldrank.evaluation import locomo
    from fieldrank.hybrid import HybridRetriever

    data = locomo.load_locomo(locomo_dir, EMB, checksums=False)
    retriever = HybridRetriever([str(t) for t in data.turns.embed_text], data.turn_embeddings, config,
                                timeline=cal.locomo_timeline(data))
    rows = data.split_question_indices(split)
    runs, gold = [], []
    for conv in np.unique(data.questions.conv_index[rows]).tolist():
        q = np.sort(rows[data.questions.conv_index[rows] == conv])
        start, stop = data.conv_ranges[conv]
        res = retriever.search_batch([str(t) for t in data.questions.question[q]],
                                     np.ascontiguousarray(data.question_embeddings[q]),
                                     subset=np.arange(start, stop))
        runs += [r.ids for r in res]
        gold += [data.questions.gold_positions_absolute[r] for r in q]
    return float(metrics.per_question(runs, gold, 10, "ndcg").mean())


@pytest.fixture(scope="module")
def quick_result():
    from tests.helpers import LOCOMO_DIR

    if not (LOCOMO_DIR / "turns.jsonl").exists():
        pytest.skip("LoCoMo data not found")
    return cal.calibrate(LOCOMO_DIR, [EMB], "tune", cal.QUICK_SPACE)


def test_quick_calibration_result(quick_result):
    res = quick_result
    assert isinstance(res.config, RetrieverConfig) and res.config.name == "default"
    assert isinstance(res.config.legs[0], TemporalLeg) and res.config.legs[0].weight == 1.0
    assert len(res.stage1) == 4 and len(res.stage2) == 8
    assert [s for _, s, _ in res.stage1] == sorted((s for _, s, _ in res.stage1), reverse=True)
    assert res.score == pytest.approx(res.stage2[0][1])
    assert res.per_set[EMB]["n"] == 997  # scored questions of conversations 0-4
    # The neighbour support is part of what the leg is for: the quick grid has gamma 0 and 0.5.
    best = res.stage1[0][0]
    assert "gamma=0.5" in best
    header = res.header("fieldrank calibrate --quick")
    assert header.startswith("#") and "tune" in header and "--quick" in header


def test_reported_score_is_what_the_retriever_scores(quick_result, locomo_dir):
    res = quick_result
    got = _score_through_retriever(locomo_dir, res.config, "tune")
    only_temporal = len(res.config.legs) == 1
    # The time-aware leg runs the same numpy code in both paths: equal. A CFS-R union leg's
    # pool can differ at an exact cosine tie on its boundary (native float32 prefilter).
    assert got == pytest.approx(res.per_set[EMB]["ndcg"], abs=1e-12 if only_temporal else 2e-3)


def test_written_file_round_trips(quick_result, tmp_path):
    path = tmp_path / "cfg.toml"
    path.write_text(quick_result.header("x") + "\n" + quick_result.config.to_toml(), encoding="utf-8")
    assert RetrieverConfig.load_toml(path) == quick_result.config


def test_command_line(tmp_path, locomo_dir, capsys):
    out = tmp_path / "sub" / "cfg.toml"
    assert cal.main(["--data", str(locomo_dir), "--embeddings", EMB, "--split", "tune", "--quick",
                     "--out", str(out)]) == 0
    config = RetrieverConfig.load_toml(out)
    assert isinstance(config.legs[0], TemporalLeg)
    printed = capsys.readouterr().out
    assert "stage 1" in printed and "stage 2" in printed and str(out) in printed


def test_fieldrank_cli_has_calibrate(capsys):
    from fieldrank import cli

    with pytest.raises(SystemExit) as exc:
        cli.main(["calibrate", "--help"])
    assert exc.value.code == 0
    assert "--embeddings" in capsys.readouterr().out


# ----------------------------------------------------------------------------- shipped presets
def test_default_preset_is_the_calibrated_file():
    config = preset("default")
    assert config.name == "default"
    kinds = [leg.kind for leg in config.legs]
    assert "temporal" in kinds
    from importlib import resources

    text = resources.files("fieldrank").joinpath("data", "default_config.toml").read_text(encoding="utf-8")
    assert "fieldrank calibrate" in text and "split: tune" in text
    assert RetrieverConfig.from_toml(text).replace(name="default") == config


def test_locked_stack_is_unchanged():
    locked = preset("rrf_cfsr_locked")
    assert [(leg.kind, leg.depth, leg.weight) for leg in locked.legs] == [
        ("cosine", 10, 1.0), ("bm25", 10, 1.0), ("cfsr", 50, 3.0)]
    cfsr = locked.legs[2]
    assert isinstance(cfsr, CFSRLeg) and cfsr.pool == "dense" and cfsr.p == 150
    assert (cfsr.w, cfsr.lam, cfsr.iters) == (0.9, 0.005, 80)
    assert locked.k == 10 and locked.k0 == 60.0
    assert locked.bm25 == RetrieverConfig(legs=(CosineLeg(),)).bm25
    assert isinstance(locked.legs[0], CosineLeg) and isinstance(locked.legs[1], BM25Leg)
