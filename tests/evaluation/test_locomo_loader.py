"""Tests for fieldrank.evaluation.locomo, plus the BASELINES.md cosine reproduction.

Tests marked ``requires_data`` read the shared LoCoMo folder (``tests.helpers.LOCOMO_DIR``) and
are skipped when it is absent; the cosine figures they reproduce are read from its BASELINES.md.
The others build tiny synthetic folders under ``tmp_path``.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pytest

from fieldrank.evaluation import locomo, metrics
from tests.helpers import LOCOMO_DIR

requires_data = pytest.mark.skipif(
    not LOCOMO_DIR.is_dir(),
    reason=f"LoCoMo data folder not found at {LOCOMO_DIR} (shared/data/locomo beside the repo)",
)

N_TURNS = 5882
N_QUESTIONS = 1986
N_SCORED = 1982
N_CONVERSATIONS = 10
SCORED_PER_CATEGORY = {1: 282, 2: 321, 3: 92, 4: 841, 5: 446}
EMBEDDING_DIMS = {"minilm-l6-v2": 384, "minilm-l6-v2-int8": 384, "mpnet-base-v2": 768}
LOCOMO10_SHA256 = "79fa87e90f04081343b8c8debecb80a9a6842b76a7aa537dc9fdf651ea698ff4"

TOP_K = 10
BASELINE_TOLERANCE = 1e-4


def read_baselines(embedding_set: str) -> dict[str, tuple[float, float]]:
    """BASELINES.md's cosine top-10 table of one embedding set: subset -> (NDCG@10, Recall@10)."""
    text = (LOCOMO_DIR / "BASELINES.md").read_text(encoding="utf-8")
    section = text.split(f"\n## {embedding_set}\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[1].isdigit():  # subset | n | NDCG@10 | Recall@10
            rows[cells[0]] = (float(cells[2]), float(cells[3]))
    return rows


@pytest.fixture(scope="module")
def data() -> locomo.LocomoData:
    if not LOCOMO_DIR.is_dir():
        pytest.skip(f"LoCoMo data folder not found at {LOCOMO_DIR}")
    return locomo.load_locomo(LOCOMO_DIR)


# ------------------------------------------------------------------- date parsing
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("10:37 am on 27 June, 2023", datetime(2023, 6, 27, 10, 37)),
        ("12:09 am on 13 September, 2023", datetime(2023, 9, 13, 0, 9)),
        ("12:30 pm on 1 January, 2022", datetime(2022, 1, 1, 12, 30)),
        ("9:05 PM on 3 Aug 2021", datetime(2021, 8, 3, 21, 5)),
    ],
)
def test_parse_session_date_time(text: str, expected: datetime) -> None:
    assert locomo.parse_session_date_time(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "8 May 2023",
        "13:00 pm on 8 May, 2023",
        "1:56 pm on 31 February, 2023",
        "1:56 pm on 8 Mai, 2023",
    ],
)
def test_parse_session_date_time_rejects(text: str) -> None:
    with pytest.raises(locomo.LocomoFormatError):
        locomo.parse_session_date_time(text)


# --------------------------------------------------------------- synthetic folders
def write_dataset(
    root: Path,
    turns: list[dict],
    questions: list[dict],
    *,
    dim: int = 4,
    embedding_set: str = "toy",
) -> None:
    """Write a minimal LoCoMo-shaped folder (unit-norm random embeddings)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "locomo10.json").write_text("[]", encoding="utf-8")
    for name, records in (("turns.jsonl", turns), ("questions.jsonl", questions)):
        lines = "".join(json.dumps(record) + "\n" for record in records)
        (root / name).write_text(lines, encoding="utf-8")
    rng = np.random.default_rng(0)
    set_dir = root / "emb" / embedding_set
    set_dir.mkdir(parents=True)
    for name, rows in (("turns.npy", len(turns)), ("questions.npy", len(questions))):
        matrix = rng.normal(size=(rows, dim)).astype(np.float32)
        np.save(set_dir / name, matrix / np.linalg.norm(matrix, axis=1, keepdims=True))


def toy_turn(conv: int, dia_id: str, when: str = "1:56 pm on 8 May, 2023") -> dict:
    return {
        "conv_index": conv,
        "sample_id": f"conv-{conv}",
        "dia_id": dia_id,
        "session": int(dia_id[1 : dia_id.index(":")]),
        "session_date_time": when,
        "speaker": "A",
        "text": "hi",
        "embed_text": "A: hi",
    }


def toy_question(conv: int, qid: int, evidence: list[str], category: int = 4) -> dict:
    return {
        "conv_index": conv,
        "sample_id": f"conv-{conv}",
        "qid": qid,
        "question": "q?",
        "answer": "a",
        "category": category,
        "evidence": evidence,
        "evidence_resolved": evidence,
    }


TOY_TURNS = [
    toy_turn(0, "D1:1"),
    toy_turn(0, "D1:2"),
    toy_turn(1, "D1:1", "12:09 am on 13 September, 2023"),
    toy_turn(1, "D2:1", "4:04 pm on 20 January, 2024"),
    toy_turn(1, "D2:2", "4:04 pm on 20 January, 2024"),
]
TOY_QUESTIONS = [
    toy_question(0, 0, ["D1:2"]),
    toy_question(1, 0, ["D2:2", "D1:1"], category=1),
    toy_question(1, 1, [], category=3),
]


def test_toy_dataset_loads(tmp_path: Path) -> None:
    write_dataset(tmp_path, TOY_TURNS, TOY_QUESTIONS)
    loaded = locomo.load_locomo(tmp_path, "toy")
    assert dict(loaded.conv_ranges) == {0: (0, 2), 1: (2, 5)}
    assert loaded.scored_mask.tolist() == [True, True, False]
    assert [p.tolist() for p in loaded.questions.gold_positions] == [[1], [2, 0], []]
    assert [p.tolist() for p in loaded.questions.gold_positions_absolute] == [[1], [4, 2], []]
    assert loaded.turns.session_datetime[2] == np.datetime64("2023-09-13T00:09")
    assert loaded.turn_embeddings.shape == (5, 4)
    assert set(loaded.checksums) == {
        "locomo10.json",
        "turns.jsonl",
        "questions.jsonl",
        "emb/toy/turns.npy",
        "emb/toy/questions.npy",
    }
    assert locomo.available_embedding_sets(tmp_path) == ("toy",)
    without = locomo.load_locomo(tmp_path, embedding_set=None, checksums=False)
    assert without.turn_embeddings is None
    assert dict(without.checksums) == {}


def test_missing_folder_raises_data_not_found(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(locomo.DataNotFoundError, match="nowhere") as raised:
        locomo.load_locomo(missing)
    assert isinstance(raised.value, FileNotFoundError)
    assert "turns.jsonl" in str(raised.value)


def test_missing_file_and_set_raise_data_not_found(tmp_path: Path) -> None:
    write_dataset(tmp_path, TOY_TURNS, TOY_QUESTIONS)
    with pytest.raises(locomo.DataNotFoundError, match="'other'.*Available sets: toy"):
        locomo.load_locomo(tmp_path, "other")
    (tmp_path / "questions.jsonl").unlink()
    with pytest.raises(locomo.DataNotFoundError, match="questions.jsonl"):
        locomo.load_locomo(tmp_path, "toy")


def test_default_search_reports_where_it_looked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv(locomo.DATA_DIR_ENV_VAR, str(empty))
    candidates = locomo.default_data_dir_candidates()
    assert candidates[0] == empty.resolve()
    if any(candidate.is_dir() for candidate in candidates[1:]):
        assert locomo.resolve_data_dir() in candidates[1:]
    else:
        with pytest.raises(locomo.DataNotFoundError, match="Looked in"):
            locomo.resolve_data_dir()
    write_dataset(empty, TOY_TURNS, TOY_QUESTIONS)
    assert locomo.resolve_data_dir() == empty.resolve()


def test_non_contiguous_conversation_is_rejected(tmp_path: Path) -> None:
    turns = [toy_turn(0, "D1:1"), toy_turn(1, "D1:1"), toy_turn(0, "D1:2")]
    write_dataset(tmp_path, turns, [toy_question(0, 0, ["D1:1"])])
    with pytest.raises(locomo.LocomoFormatError, match="not contiguous"):
        locomo.load_locomo(tmp_path, "toy")


def test_unknown_evidence_is_rejected(tmp_path: Path) -> None:
    write_dataset(tmp_path, TOY_TURNS, [toy_question(0, 0, ["D9:9"])])
    with pytest.raises(locomo.LocomoFormatError, match="D9:9"):
        locomo.load_locomo(tmp_path, "toy")


def test_bad_date_is_rejected(tmp_path: Path) -> None:
    write_dataset(tmp_path, [toy_turn(0, "D1:1", "yesterday")], [toy_question(0, 0, ["D1:1"])])
    with pytest.raises(locomo.LocomoFormatError, match="yesterday"):
        locomo.load_locomo(tmp_path, "toy")


def test_manifest_checksum_mismatch_is_rejected(tmp_path: Path) -> None:
    write_dataset(tmp_path, TOY_TURNS, TOY_QUESTIONS)
    manifest = {"files": {"turns.npy": {"sha256": "0" * 64}}}
    (tmp_path / "emb" / "toy" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(locomo.LocomoFormatError, match="does not match"):
        locomo.load_locomo(tmp_path, "toy")
    assert locomo.load_locomo(tmp_path, "toy", checksums=False).turn_embeddings is not None


def test_split_helpers_on_toy_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_dataset(tmp_path, TOY_TURNS, TOY_QUESTIONS)
    loaded = locomo.load_locomo(tmp_path, "toy", checksums=False)
    assert locomo.split_question_indices(loaded, "tune").tolist() == [0, 1]
    assert loaded.split_question_indices("tune", scored_only=False).tolist() == [0, 1, 2]
    assert locomo.split_question_indices(loaded, "holdout").tolist() == []
    with pytest.raises(ValueError, match="valid splits: tune, holdout, all"):
        locomo.split_question_indices(loaded, "train")
    locomo.assert_splits_disjoint(loaded)
    overlapping = MappingProxyType({**locomo.SPLITS, "holdout": range(1, 10)})
    monkeypatch.setattr(locomo, "SPLITS", overlapping)
    with pytest.raises(AssertionError, match="share"):
        locomo.assert_splits_disjoint(loaded)


# ------------------------------------------------------------------ the real data
@requires_data
def test_counts(data: locomo.LocomoData) -> None:
    assert len(data.turns) == N_TURNS
    assert len(data.questions) == N_QUESTIONS
    assert int(data.scored_mask.sum()) == N_SCORED
    scored_categories = data.questions.category[data.scored_mask]
    counts = dict(zip(*np.unique(scored_categories, return_counts=True)))
    assert {int(c): int(n) for c, n in counts.items()} == SCORED_PER_CATEGORY
    assert data.n_conversations == N_CONVERSATIONS


@requires_data
def test_conversations_are_contiguous(data: locomo.LocomoData) -> None:
    ranges = sorted(data.conv_ranges.items())
    assert [conv for conv, _ in ranges] == list(range(N_CONVERSATIONS))
    assert ranges[0][1][0] == 0
    assert ranges[-1][1][1] == N_TURNS
    for (_, (_, stop)), (_, (next_start, _)) in zip(ranges, ranges[1:]):
        assert stop == next_start
    for conv, (start, stop) in ranges:
        assert np.all(data.turns.conv_index[start:stop] == conv)


@requires_data
def test_gold_positions_lie_inside_their_conversation(data: locomo.LocomoData) -> None:
    questions = data.questions
    for row in range(len(questions)):
        start, stop = data.conv_ranges[int(questions.conv_index[row])]
        relative = questions.gold_positions[row]
        absolute = questions.gold_positions_absolute[row]
        assert len(relative) == len(questions.evidence_resolved[row])
        assert (len(relative) > 0) == bool(questions.is_scored[row])
        assert np.all((relative >= 0) & (relative < stop - start))
        np.testing.assert_array_equal(absolute, relative + start)
        assert data.turns.dia_id[absolute].tolist() == list(questions.evidence_resolved[row])


@requires_data
def test_all_dates_parse(data: locomo.LocomoData) -> None:
    parsed = data.turns.session_datetime
    assert parsed.dtype == np.dtype("datetime64[m]")
    assert not np.isnat(parsed).any()
    for text in np.unique(data.turns.session_date_time.astype(str)):
        assert isinstance(locomo.parse_session_date_time(text), datetime)
    # sessions keep one timestamp each
    for conv, (start, stop) in data.conv_ranges.items():
        sessions = data.turns.session[start:stop]
        for session in np.unique(sessions):
            assert np.unique(parsed[start:stop][sessions == session]).size == 1, (conv, session)


@requires_data
def test_splits_are_disjoint_and_cover_everything(data: locomo.LocomoData) -> None:
    locomo.assert_splits_disjoint(data)
    tune = locomo.split_question_indices(data, "tune")
    holdout = locomo.split_question_indices(data, "holdout")
    everything = locomo.split_question_indices(data, "all")
    assert np.intersect1d(tune, holdout).size == 0
    np.testing.assert_array_equal(np.union1d(tune, holdout), everything)
    assert everything.size == N_SCORED
    assert set(data.questions.conv_index[tune].tolist()) == set(locomo.SPLITS["tune"])
    assert set(data.questions.conv_index[holdout].tolist()) == set(locomo.SPLITS["holdout"])


@requires_data
def test_checksums_and_read_only(data: locomo.LocomoData) -> None:
    assert data.checksums["locomo10.json"] == LOCOMO10_SHA256
    assert len(data.checksums) == 5
    assert not data.turn_embeddings.flags.writeable
    assert not data.questions.category.flags.writeable
    with pytest.raises(dataclasses.FrozenInstanceError):
        data.root = Path()  # type: ignore[misc]


@requires_data
@pytest.mark.parametrize(("embedding_set", "dim"), sorted(EMBEDDING_DIMS.items()))
def test_embedding_shapes(embedding_set: str, dim: int) -> None:
    loaded = locomo.load_locomo(LOCOMO_DIR, embedding_set, mmap=True, checksums=False)
    assert loaded.turn_embeddings.shape == (N_TURNS, dim)
    assert loaded.question_embeddings.shape == (N_QUESTIONS, dim)
    assert loaded.turn_embeddings.dtype == np.float32
    norms = np.linalg.norm(loaded.question_embeddings, axis=1)
    np.testing.assert_allclose(norms, 1.0, atol=1e-5)


# ------------------------------------------------ sanity: BASELINES.md cosine top-10
@requires_data
@pytest.mark.parametrize("embedding_set", sorted(EMBEDDING_DIMS))
def test_reproduces_cosine_baselines(embedding_set: str) -> None:
    """Plain numpy cosine top-10 inside each conversation reproduces BASELINES.md."""
    loaded = locomo.load_locomo(LOCOMO_DIR, embedding_set)
    scored = np.flatnonzero(loaded.scored_mask)
    run: list[np.ndarray] = []
    for row in scored:
        conversation = int(loaded.questions.conv_index[row])
        turns = loaded.turn_embeddings[loaded.conversation_slice(conversation)]
        scores = turns @ loaded.question_embeddings[row]
        run.append(np.argsort(-scores, kind="stable")[:TOP_K])
    metrics.check_depth(run, TOP_K)
    gold = [loaded.questions.gold_positions[row] for row in scored]
    per_question = metrics.per_question_all(run, gold, TOP_K)
    position_of = {row: i for i, row in enumerate(scored.tolist())}
    baselines = read_baselines(embedding_set)
    assert set(baselines) == set(locomo.category_subsets(loaded)), sorted(baselines)
    for subset, rows in locomo.category_subsets(loaded).items():
        picked = [position_of[row] for row in rows.tolist()]
        ndcg, recall = baselines[subset]
        assert per_question["ndcg"][picked].mean() == pytest.approx(
            ndcg, abs=BASELINE_TOLERANCE
        ), subset
        assert per_question["recall"][picked].mean() == pytest.approx(
            recall, abs=BASELINE_TOLERANCE
        ), subset
