"""Tests for the LoCoMo harness (runner, report, Ring experiment, command) on a miniature dataset.

A LoCoMo-shaped folder is written under ``tmp_path``: 10 conversations (so the tune and
holdout splits both exist), a few turns each with words and unit-norm embeddings, and
questions whose vectors and words lean towards their gold turns. Everything runs through
the shipped presets and the native core.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from fieldrank.config import BM25Leg, CFSRLeg, CosineLeg, RetrieverConfig
from fieldrank.evaluation import _command as command
from fieldrank.evaluation import _report as report
from fieldrank.evaluation import _ring_experiment as ring_experiment
from fieldrank.evaluation import _runner as runner
from fieldrank.evaluation import locomo

SEED = 20261130
N_CONVERSATIONS = 10
TURNS_PER_CONVERSATION = 24
QUESTIONS_PER_CONVERSATION = 5
DIM = 16
QUESTION_NOISE = 0.6
TOY_SET = "toy"
OTHER_SET = "toy-b"
RESAMPLES = 2000
K = 10
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
WORDS = (
    "garden paint sunset lake counselor adoption race charity camping guitar pottery "
    "beach museum concert bakery hiking soccer violin yoga library festival puppy kitten "
    "mountain river novel poem marathon"
).split()
CATEGORIES = (1, 2, 3, 4, 5)
WHEN = "1:56 pm on 8 May, 2023"
FITTED_MU, FITTED_ALPHA, FITTED_LAPS = 0.9, 0.2, 2
CUSTOM_W = 0.8
SHORT = 3


# ---------------------------------------------------------------- the miniature dataset
def _unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=-1, keepdims=True)).astype(np.float32)


def write_toy_locomo(root: Path, sets: tuple[str, ...] = (TOY_SET,), *, duplicate_top: bool = False) -> Path:
    """Write a miniature LoCoMo folder (turns.jsonl, questions.jsonl, emb/<set>/ + manifest).

    With ``duplicate_top``, conversation 0's first two turns are identical (text and vector)
    and its first question points at them, so their cosines tie exactly.
    """
    rng = np.random.default_rng(SEED)
    root.mkdir(parents=True, exist_ok=True)
    turns, questions = [], []
    turn_vectors, question_vectors = [], []
    for conv in range(N_CONVERSATIONS):
        base = len(turns)
        vectors = _unit(rng.standard_normal((TURNS_PER_CONVERSATION, DIM)))
        if duplicate_top:
            vectors[1] = vectors[0]
        for position in range(TURNS_PER_CONVERSATION):
            session = 1 + position // (TURNS_PER_CONVERSATION // 2)
            words = rng.choice(WORDS, size=4, replace=False)
            if duplicate_top and position == 1:
                text = turns[base]["text"]
            else:
                text = " ".join(words)
            speaker = "Ann" if position % 2 == 0 else "Bob"
            turns.append({
                "conv_index": conv, "sample_id": f"conv-{conv}", "dia_id": f"D{session}:{position + 1}",
                "session": session, "session_date_time": WHEN, "speaker": speaker, "text": text,
                "embed_text": f"{speaker}: {text}",
            })
        turn_vectors.append(vectors)
        for qid in range(QUESTIONS_PER_CONVERSATION):
            n_gold = 1 + qid % 2
            gold = [0] if duplicate_top and qid == 0 else rng.choice(TURNS_PER_CONVERSATION, n_gold, replace=False)
            target = vectors[list(gold)].mean(axis=0) + QUESTION_NOISE * rng.standard_normal(DIM) / np.sqrt(DIM)
            question_vectors.append(_unit(target))
            evidence = [turns[base + int(g)]["dia_id"] for g in gold]
            words = turns[base + int(gold[0])]["text"].split()[:2]
            questions.append({
                "conv_index": conv, "sample_id": f"conv-{conv}", "qid": qid,
                "question": f"What about the {' and '.join(words)}?", "answer": "a",
                "category": CATEGORIES[(conv + qid) % len(CATEGORIES)],
                "evidence": evidence, "evidence_resolved": evidence,
            })
    (root / "locomo10.json").write_text("[]", encoding="utf-8")
    for name, records in (("turns.jsonl", turns), ("questions.jsonl", questions)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    for index, name in enumerate(sets):
        set_dir = root / "emb" / name
        set_dir.mkdir(parents=True, exist_ok=True)
        matrices = {
            "turns.npy": np.concatenate(turn_vectors),
            "questions.npy": np.stack(question_vectors),
        }
        if index:  # a second set: the same data, slightly rotated, so its figures differ
            rotation = np.linalg.qr(np.eye(DIM) + 0.1 * rng.standard_normal((DIM, DIM)))[0]
            matrices = {key: _unit(value @ rotation.astype(np.float32)) for key, value in matrices.items()}
        files = {}
        for file_name, matrix in matrices.items():
            np.save(set_dir / file_name, np.ascontiguousarray(matrix, dtype=np.float32))
            files[file_name] = {"sha256": hashlib.sha256((set_dir / file_name).read_bytes()).hexdigest()}
        manifest = {"model": f"toy model {name}", "package": "none", "dim": DIM, "files": files}
        (set_dir / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def toy_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_toy_locomo(tmp_path_factory.mktemp("locomo"), (TOY_SET, OTHER_SET))


@pytest.fixture(scope="module")
def toy_data(toy_root: Path) -> locomo.LocomoData:
    return locomo.load_locomo(toy_root, TOY_SET)


@pytest.fixture(scope="module")
def toy_corpus(toy_data: locomo.LocomoData) -> runner.Corpus:
    return runner.Corpus(toy_data)


# ------------------------------------------------------------------------- the runner
def test_evaluate_ranks_each_question_in_its_own_conversation(toy_corpus: runner.Corpus) -> None:
    methods = {"cosine": "cosine", "bm25": "bm25", "rrf_cfsr": "rrf_cfsr"}
    run = runner.evaluate(methods, toy_corpus, "all", n_threads=2)
    data = toy_corpus.data
    assert run.methods == tuple(methods)
    assert run.question_rows.tolist() == data.split_question_indices("all").tolist()
    for name in methods:
        assert len(run.rankings[name]) == len(run.question_rows)
        for row, ranking in zip(run.question_rows.tolist(), run.rankings[name]):
            start, stop = data.conv_ranges[int(data.questions.conv_index[row])]
            assert len(ranking) <= K
            assert ((ranking >= start) & (ranking < stop)).all()
        assert set(run.scores[name]) == set(runner.metric_names())
    # cosine equals a brute-force per-conversation top-k, and the metrics equal metrics.py's
    E, Q = data.turn_embeddings, data.question_embeddings
    for position, row in enumerate(run.question_rows.tolist()):
        start, stop = data.conv_ranges[int(data.questions.conv_index[row])]
        scores = E[start:stop] @ Q[row]
        expected = start + np.argsort(-scores.astype(np.float64), kind="stable")[:K]
        np.testing.assert_array_equal(run.rankings["cosine"][position], expected)
    gold = [data.questions.gold_positions_absolute[row] for row in run.question_rows.tolist()]
    from fieldrank.evaluation import metrics

    np.testing.assert_allclose(
        run.scores["cosine"]["ndcg@10"], metrics.per_question(run.rankings["cosine"], gold, K, "ndcg")
    )
    np.testing.assert_allclose(
        run.scores["cosine"]["ndcg@5"], metrics.per_question(run.rankings["cosine"], gold, 5, "ndcg")
    )
    assert all(seconds >= 0 for seconds in run.search_seconds.values())


def test_presets_are_the_shipped_ones_with_fitted_values() -> None:
    from fieldrank import config

    methods = runner.preset_methods(mmr_mu=FITTED_MU, ring_alpha=FITTED_ALPHA, ring_laps=FITTED_LAPS)
    for name in config.PRESET_NAMES:
        assert name in methods
        if name not in runner.FITTED_PRESETS:
            assert methods[name] == config.preset(name)
    assert methods["rrf_mmr"].legs[-1].mu == FITTED_MU
    assert (methods["rrf_ring"].legs[-1].alpha, methods["rrf_ring"].legs[-1].laps) == (FITTED_ALPHA, FITTED_LAPS)
    assert methods["rrf_mmr"].legs[:-1] == config.preset("rrf_mmr").legs[:-1]
    assert methods["mmr"].legs[0].mu == FITTED_MU and methods["ring"].legs[0].laps == FITTED_LAPS
    kept, aliases = runner.deduplicate(methods)
    assert aliases["rrf_cfsr_locked"] == "rrf_cfsr"
    assert set(kept) | set(aliases) == set(methods)


def test_adding_a_method_is_one_line(toy_corpus: runner.Corpus) -> None:
    methods = {"cosine": "cosine"}
    methods["mine"] = RetrieverConfig(legs=(CosineLeg(), BM25Leg(), CFSRLeg(w=CUSTOM_W, weight=2.0)))
    methods["callable"] = lambda corpus, batch: [batch.subset[:SHORT] for _ in range(len(batch))]
    run = runner.evaluate(methods, toy_corpus, "holdout")
    assert set(run.rankings) == {"cosine", "mine", "callable"}
    assert all(len(r) == SHORT for r in run.rankings["callable"])
    assert run.descriptions["mine"]["legs"][-1]["w"] == CUSTOM_W


def test_equal_k_is_asserted(toy_corpus: runner.Corpus) -> None:
    def too_many(corpus: runner.Corpus, batch: runner.QueryBatch) -> list[np.ndarray]:
        return [batch.subset[: batch.k + 1] for _ in range(len(batch))]

    with pytest.raises(runner.EqualKError, match="equal k violated"):
        runner.evaluate({"too_many": too_many}, toy_corpus, "tune")
    assert issubclass(runner.EqualKError, AssertionError)


def test_other_conversations_and_repeats_are_rejected(toy_corpus: runner.Corpus) -> None:
    n_turns = len(toy_corpus.data.turns)

    def leaks(corpus: runner.Corpus, batch: runner.QueryBatch) -> list[np.ndarray]:
        outside = (batch.subset[-1] + 1) % n_turns
        return [np.array([batch.subset[0], outside]) for _ in range(len(batch))]

    def repeats(corpus: runner.Corpus, batch: runner.QueryBatch) -> list[np.ndarray]:
        return [np.array([batch.subset[0], batch.subset[0]]) for _ in range(len(batch))]

    with pytest.raises(runner.ConversationLeakError, match="outside the conversation"):
        runner.evaluate({"leaks": leaks}, toy_corpus, "all")
    with pytest.raises(runner.ConversationLeakError, match="repeats"):
        runner.evaluate({"repeats": repeats}, toy_corpus, "all")


def test_splits_are_disjoint_and_fitting_uses_tune_only(toy_corpus: runner.Corpus) -> None:
    data = toy_corpus.data
    tune = runner.evaluate({"cosine": "cosine"}, toy_corpus, "tune").question_rows
    held_out_run = runner.evaluate({"cosine": "cosine"}, toy_corpus, "holdout")
    holdout = held_out_run.question_rows
    restricted = runner.evaluate({"cosine": "cosine"}, toy_corpus, "all").restrict(holdout, "holdout")
    np.testing.assert_array_equal(restricted.question_rows, holdout)
    np.testing.assert_array_equal(restricted.scores["cosine"]["ndcg@10"], held_out_run.scores["cosine"]["ndcg@10"])
    with pytest.raises(ValueError, match="not in this run"):
        held_out_run.restrict(tune, "tune")
    assert np.intersect1d(tune, holdout).size == 0
    assert np.union1d(tune, holdout).tolist() == data.split_question_indices("all").tolist()
    assert set(data.questions.conv_index[tune].tolist()) == set(locomo.SPLITS["tune"])
    assert set(data.questions.conv_index[holdout].tolist()) == set(locomo.SPLITS["holdout"])

    fit = runner.fit_mmr_mu(toy_corpus, grid=(0.5, 0.9))
    assert fit.split == "tune" and fit.n_questions == tune.size
    assert fit.best["mu"] in (0.5, 0.9) and [p["mu"] for p in fit.grid] == [0.5, 0.9]
    with pytest.raises(runner.HarnessCheckError, match="tune"):
        runner.fit_mmr_mu(toy_corpus, grid=(0.5,), split="holdout")
    with pytest.raises(runner.HarnessCheckError, match="holdout"):
        runner.assert_fit_rows_held_out(data, holdout[:3])


# ----------------------------------------------------------------------- the report
def test_summarize_intervals_and_paired_tests(toy_corpus: runner.Corpus) -> None:
    run = runner.evaluate({"cosine": "cosine", "rrf2": "rrf2", "same": "cosine"}, toy_corpus, "all")
    summary = report.summarize(run, toy_corpus.data, comparisons=[("rrf2", "cosine")], n_resamples=RESAMPLES)
    assert summary["subsets"]["overall"] == len(run.question_rows)
    for name in run.methods:
        for subset, figures in summary["methods"][name].items():
            for metric, entry in figures.items():
                assert entry["lo"] <= entry["mean"] <= entry["hi"], (name, subset, metric)
    assert "cosine" not in summary["paired"]["cosine"]
    same = summary["paired"]["cosine"]["same"]["overall"]["ndcg@10"]
    assert same == {"diff": 0.0, "lo": 0.0, "hi": 0.0, "p": 1.0}
    assert summary["mcnemar"]["cosine"]["same"]["overall"]["b"] == 0
    comparison = summary["comparisons"][0]["subsets"]["overall"]
    assert comparison["ndcg@10"] == summary["paired"]["cosine"]["rrf2"]["overall"]["ndcg@10"]
    with pytest.raises(ValueError, match="2000"):
        report.summarize(run, toy_corpus.data, n_resamples=RESAMPLES - 1)


@pytest.mark.parametrize(
    ("entry", "verdict"),
    [
        ({"diff": 0.02, "lo": 0.01, "hi": 0.03}, report.VERDICT_HOLDS),
        ({"diff": 0.01, "lo": -0.01, "hi": 0.03}, report.VERDICT_POINT_ONLY),
        ({"diff": -0.01, "lo": -0.03, "hi": 0.01}, report.VERDICT_REVERSED_NS),
        ({"diff": -0.02, "lo": -0.03, "hi": -0.01}, report.VERDICT_REVERSED),
    ],
)
def test_verdicts(entry: dict, verdict: str) -> None:
    assert report.verdict_for(entry) == verdict


# -------------------------------------------------------------------- Ring ablation
def test_ablation_check_passes_and_stops_on_a_difference(toy_corpus: runner.Corpus) -> None:
    result = ring_experiment.check_ablation(toy_corpus, seeds=(0, 1))
    assert result["identical"] == result["questions"] == len(toy_corpus.data.split_question_indices("all"))
    assert result["tie_only"] == []

    def reversed_cosine(corpus: runner.Corpus, batch: runner.QueryBatch) -> list[np.ndarray]:
        return [ranking[::-1].copy() for ranking in runner.as_method("cosine")(corpus, batch)]

    with pytest.raises(ring_experiment.AblationMismatchError, match="fix the harness"):
        ring_experiment.check_ablation(toy_corpus, seeds=(0,), ablation={0: reversed_cosine})


def test_ablation_tolerates_only_exact_cosine_ties(tmp_path: Path) -> None:
    data = locomo.load_locomo(write_toy_locomo(tmp_path, duplicate_top=True), TOY_SET)
    corpus = runner.Corpus(data)
    first = int(data.split_question_indices("all")[0])

    def swap_first(corpus: runner.Corpus, batch: runner.QueryBatch) -> list[np.ndarray]:
        rankings = [ranking.copy() for ranking in runner.as_method("cosine")(corpus, batch)]
        for row, ranking in zip(batch.question_rows.tolist(), rankings):
            if row == first:
                ranking[[0, 1]] = ranking[[1, 0]]
        return rankings

    result = ring_experiment.check_ablation(corpus, seeds=(0,), ablation={0: swap_first})
    assert len(result["tie_only"]) == 1 and result["identical"] == result["questions"] - 1
    with pytest.raises(ring_experiment.AblationMismatchError):
        ring_experiment.check_ablation(corpus, seeds=(0,), ablation={0: swap_first}, strict=True)


# ------------------------------------------------------------------ the whole command
def test_command_writes_json_markdown_and_png_for_two_sets(
    toy_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "results"
    base = ["locomo", "--data", str(toy_root), "--out", str(out), "--no-progress", "--threads", "2"]
    assert command.main([*base, "--embeddings", TOY_SET]) == command.EXIT_OK
    printed = capsys.readouterr().out
    assert "rrf_cfsr" in printed and "Ring hypothesis" in printed

    document = json.loads((out / f"locomo_{TOY_SET}_all.json").read_text(encoding="utf-8"))
    meta = document["meta"]
    assert meta["embedding_set"] == TOY_SET and meta["model"] == f"toy model {TOY_SET}"
    assert meta["checksums"]["locomo10.json"] == hashlib.sha256(b"[]").hexdigest()
    assert meta["fitted"]["MMR μ"]["split"] == "tune"
    assert meta["timing"]["search_seconds"] > 0
    summary = document["summary"]
    assert {"cosine", "rrf2", "rrf_mmr", "rrf_cfs", "rrf_cfsr", "rrf_ring", "cfsr", "cfs", "mmr", "ring"} <= set(
        summary["methods"]
    )
    assert set(summary["paired"]) == {"cosine", "rrf2"}
    assert summary["bootstrap"]["n_resamples"] == RESAMPLES
    assert document["summary_holdout"]["n_questions"] == len(locomo.split_question_indices(
        locomo.load_locomo(toy_root, TOY_SET, checksums=False), "holdout"))
    ring = document["ring_experiment"]
    assert ring["split"] == "holdout" and ring["fit"]["split"] == "tune"
    assert ring["seeds"] == list(ring_experiment.SEEDS)
    assert isinstance(ring["hypothesis_held"], bool)
    assert (out / f"locomo_{TOY_SET}_all.png").read_bytes()[: len(PNG_SIGNATURE)] == PNG_SIGNATURE

    markdown = (out / report.MARKDOWN_FILE).read_text(encoding="utf-8")
    assert "fieldrank eval locomo" in markdown
    assert meta["checksums"]["emb/toy/turns.npy"] in markdown
    assert f"## {TOY_SET} — split `all`" in markdown
    assert "### Ring experiment" in markdown and "### The write-ups' ordering" in markdown
    assert "### Holdout only" in markdown

    # A second set adds its own section; running the first again replaces, not duplicates.
    assert command.main([*base, "--embeddings", OTHER_SET, "--no-plot"]) == command.EXIT_OK
    assert command.main([*base, "--embeddings", TOY_SET, "--no-plot"]) == command.EXIT_OK
    markdown = (out / report.MARKDOWN_FILE).read_text(encoding="utf-8")
    assert markdown.count(report.SECTION_BEGIN.format(key=report.section_key(TOY_SET, "all"))) == 1
    assert markdown.count(report.SECTION_BEGIN.format(key=report.section_key(OTHER_SET, "all"))) == 1
    assert markdown.index(f"## {TOY_SET} ") < markdown.index(f"## {OTHER_SET} ")
    assert markdown.count(report.MARKDOWN_TITLE) == 1

    # Another split is another section, and says which split its figures come from.
    assert command.main([*base, "--embeddings", TOY_SET, "--no-plot", "--split", "holdout"]) == command.EXIT_OK
    held_out = json.loads((out / f"locomo_{TOY_SET}_holdout.json").read_text(encoding="utf-8"))
    assert held_out["summary"]["split"] == "holdout" and held_out["summary_holdout"] is None
    markdown = (out / report.MARKDOWN_FILE).read_text(encoding="utf-8")
    assert f"## {TOY_SET} — split `holdout`" in markdown and "Figures from split `holdout`" in markdown


def test_fieldrank_cli_registers_eval(toy_root: Path, tmp_path: Path) -> None:
    from fieldrank import cli

    parser = cli.build_parser()
    args = parser.parse_args(["eval", "locomo", "--data", str(toy_root), "--out", str(tmp_path)])
    assert args.eval_target == "locomo" and args.split == "all"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["--data", "{missing}"], "LoCoMo data folder not found"),
        (["--data", "{root}", "--embeddings", "no-such-set"], "embedding set 'no-such-set' not found"),
    ],
)
def test_missing_data_is_one_clear_line(
    arguments: list[str], expected: str, toy_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    filled = [a.format(missing=tmp_path / "nowhere", root=toy_root) for a in arguments]
    status = command.main(["locomo", *filled, "--out", str(tmp_path / "out"), "--no-progress"])
    captured = capsys.readouterr()
    assert status == command.EXIT_USER_ERROR != 0
    assert expected in captured.err and "Traceback" not in captured.err
    assert captured.err.startswith("fieldrank eval: error:")
    assert not (tmp_path / "out").exists()


def test_missing_data_from_a_fresh_process(tmp_path: Path) -> None:
    """``python -m fieldrank.evaluation`` in a new interpreter: one line, non-zero, no traceback."""
    import subprocess
    import sys

    result = subprocess.run(
        [sys.executable, "-m", "fieldrank.evaluation", "locomo", "--data", str(tmp_path / "nowhere"),
         "--out", str(tmp_path / "out")],
        capture_output=True, text=True, check=False, cwd=tmp_path,
    )
    assert result.returncode == command.EXIT_USER_ERROR
    assert "LoCoMo data folder not found" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_too_few_resamples_is_refused(toy_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status = command.main(["locomo", "--data", str(toy_root), "--resamples", "100", "--out", str(tmp_path)])
    assert status != 0 and "at least 2000" in capsys.readouterr().err


def test_a_broken_ablation_stops_the_command(
    toy_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    original = ring_experiment.ring_method

    def broken(*args: object, ablation: bool = False, **kwargs: object) -> object:
        # "ablation" that actually re-scores against neighbours: differs from cosine
        return original(alpha=0.9, laps=3) if ablation else original(*args, **kwargs)

    monkeypatch.setattr(ring_experiment, "ring_method", broken)
    out = tmp_path / "out"
    status = command.main(["locomo", "--data", str(toy_root), "--embeddings", TOY_SET, "--out", str(out),
                           "--no-progress"])
    captured = capsys.readouterr()
    assert status == command.EXIT_HARNESS_CHECK
    assert "harness check failed" in captured.err and "ablation" in captured.err
    assert not out.exists()
