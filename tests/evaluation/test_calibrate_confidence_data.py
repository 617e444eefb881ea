"""``fieldrank calibrate --confidence`` on data it cannot fit a model from (issue #34, item 7).

Each case is a small LoCoMo-shaped folder written to ``tmp_path``: the command must exit non-zero
with a message that says what is missing, and write no file. Before the fix: empty questions and
all-irrelevant labels stopped at ``need at least one array to concatenate``, one conversation at
``low >= high``, and all-relevant labels wrote a model that says about 1 for every hit (exit 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fieldrank import cli

DIM = 16
SET = "toy"
WORDS = ("apple", "river", "guitar", "planet", "coffee", "window", "garden", "rocket", "silver", "forest",
         "castle", "violin", "desert", "pepper", "harbor", "marble", "tunnel", "falcon", "candle", "meadow")


def _turn(conv: int, session: int, turn: int, text: str) -> dict:
    return {"conv_index": conv, "sample_id": f"conv-{conv}", "dia_id": f"D{session}:{turn}", "session": session,
            "session_date_time": f"1:56 pm on {session} May, 2023", "speaker": "A", "text": text,
            "embed_text": f"A: {text}"}


def _write(root: Path, turns: list[dict], questions: list[dict], turn_vectors: np.ndarray,
           question_vectors: np.ndarray) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "locomo10.json").write_text("[]", encoding="utf-8")
    for name, records in (("turns.jsonl", turns), ("questions.jsonl", questions)):
        (root / name).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    emb = root / "emb" / SET
    emb.mkdir(parents=True)
    for name, m in (("turns.npy", turn_vectors), ("questions.npy", question_vectors)):
        m = np.asarray(m, dtype=np.float32)
        np.save(emb / name, m / np.linalg.norm(m, axis=1, keepdims=True))
    return root


def _dataset(root: Path, n_conversations: int, n_turns: int, evidence: str, n_questions: int = 4) -> Path:
    """``n_conversations`` conversations of ``n_turns`` turns (two words each, seeded vectors) and
    ``n_questions`` questions per conversation, each asking about turn ``q`` (its words, its vector).
    ``evidence``: ``"asked"`` (the asked turn: a normal set), ``"far"`` (a turn no search returns:
    the question's opposite vector, no shared word), ``"all"`` (every turn of the conversation)."""
    rng = np.random.default_rng(7)
    turns, questions, tv, qv = [], [], [], []
    for c in range(n_conversations):
        vectors = rng.normal(size=(n_turns, DIM))
        asked_vectors = vectors[:n_questions] + 0.05 * rng.normal(size=(n_questions, DIM))
        for t in range(n_turns):
            words = f"{WORDS[(t + c) % len(WORDS)]} {WORDS[(3 * t + 1) % len(WORDS)]} turn{t}"
            turns.append(_turn(c, 1 + t // 5, 1 + t % 5, words))
            tv.append(vectors[t])
        first = len(turns) - n_turns
        if evidence == "far":
            # The evidence turn: a session of its own (no neighbour support), no word of any question, a
            # vector pointing away from every question's.
            turns[-1] = _turn(c, 9, 1, "zebra quartz")
            tv[-1] = -asked_vectors.sum(axis=0)
        for q in range(n_questions):
            asked = turns[first + q]
            ev = {"asked": [asked["dia_id"]], "far": [turns[-1]["dia_id"]],
                  "all": [t["dia_id"] for t in turns[first:]]}[evidence]
            questions.append({"conv_index": c, "sample_id": f"conv-{c}", "qid": q,
                              "question": f"what about {asked['text']}?", "answer": "a", "category": 4,
                              "evidence": ev, "evidence_resolved": ev})
            qv.append(asked_vectors[q])
    return _write(root, turns, questions, np.array(tv), np.array(qv))


def _run(data: Path, out: Path, split: str = "all") -> int:
    return cli.main(["calibrate", "--confidence", "--data", str(data), "--embeddings", SET, "--split", split,
                     "--out", str(out)])


def _refused(capsys, data: Path, tmp_path: Path, *needles: str, split: str = "all") -> None:
    out = tmp_path / "fitted.toml"
    status = _run(data, out, split)
    err = capsys.readouterr().err
    assert status != 0, "a degenerate set must not be fitted"
    assert not out.exists(), "no model may be written from data the model could not be fitted on"
    for needle in needles:
        assert needle in err, f"{needle!r} missing from the message: {err}"


def test_a_normal_set_is_fitted(tmp_path, capsys):
    # The checks below refuse only what cannot be fitted: a small set with both labels is.
    data = _dataset(tmp_path / "data", n_conversations=3, n_turns=12, evidence="asked")
    out = tmp_path / "fitted.toml"
    assert _run(data, out) == 0, capsys.readouterr().err
    assert "[confidence]" in out.read_text(encoding="utf-8")


def test_no_questions_in_the_split_is_refused(tmp_path, capsys):
    data = _dataset(tmp_path / "data", n_conversations=3, n_turns=12, evidence="asked")
    # holdout is conversations 5..9: this set has none of them, so no question to learn from.
    _refused(capsys, data, tmp_path, "no scored question", "holdout", split="holdout")


def test_labels_that_are_all_irrelevant_are_refused(tmp_path, capsys):
    data = _dataset(tmp_path / "data", n_conversations=3, n_turns=30, evidence="far")
    _refused(capsys, data, tmp_path, "no returned hit is labelled relevant")


def test_one_conversation_is_refused(tmp_path, capsys):
    data = _dataset(tmp_path / "data", n_conversations=1, n_turns=12, evidence="asked")
    _refused(capsys, data, tmp_path, "at least two conversations", "1")


def test_labels_that_are_all_relevant_are_refused(tmp_path, capsys):
    data = _dataset(tmp_path / "data", n_conversations=3, n_turns=6, evidence="all")
    _refused(capsys, data, tmp_path, "every returned hit is labelled relevant")


@pytest.mark.parametrize("evidence", ["far", "all"])
def test_the_fit_itself_refuses_one_class(evidence, tmp_path):
    # The library function, not only the command: one label class cannot be fitted.
    from fieldrank.evaluation.calibrate import calibrate_confidence

    data = _dataset(tmp_path / "data", n_conversations=3, n_turns=30 if evidence == "far" else 6, evidence=evidence)
    with pytest.raises(ValueError, match="labelled relevant"):
        calibrate_confidence(data, (SET,), "all")
