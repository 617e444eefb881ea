"""What a new user meets first: result objects, messages that name the argument, one subset
policy, keyword recall on text alone, wrapped SQLite errors, short reprs (issue 14)."""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

import fieldrank
from fieldrank import HybridRetriever, MemoryStore
from fieldrank.memory import DEFAULT_IMPORTANCE, ScoreFactors
from fieldrank.temporal import Timeline

from tests.helpers import unit_rows

TEXTS = ["the kitchen budget is forty thousand", "cabinets will eat half of the budget",
         "the dog needs a rabies shot", "quartz countertops came in over quote",
         "we booked the campsite for the long weekend", "the installer charged rush fees"]


def embed(text: str, dim: int = 16) -> np.ndarray:
    vector = np.random.default_rng(zlib.crc32(text.encode())).standard_normal(dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


@pytest.fixture
def retriever(rng) -> HybridRetriever:
    return HybridRetriever(TEXTS, unit_rows(rng, len(TEXTS), 16), "rrf2")


# --------------------------------------------------------------------------- SearchResult

def test_search_result_iterates_and_indexes_like_recall_result(retriever, rng):
    result = retriever.search("kitchen budget", unit_rows(rng, 1, 16)[0], k=4)
    hits = list(result)
    assert [h.id for h in hits] == result.ids.tolist()
    assert [h.score for h in hits] == result.scores.tolist()
    assert [h.text for h in hits] == result.texts
    assert [h.rank for h in hits] == list(range(1, len(result) + 1))
    assert result[0] == hits[0] and result[-1] == hits[-1] and result[1:3] == hits[1:3]
    doc_id, score = result[0].id, result[0].score
    assert isinstance(doc_id, int) and isinstance(score, float)
    with pytest.raises(IndexError, match=f"hit index {len(result)} out of range"):
        result[len(result)]
    with pytest.raises(TypeError, match="integers or slices"):
        result["0"]


# --------------------------------------------------------------------------- subsets

@pytest.mark.parametrize("empty", [[], np.array([]), np.zeros(len(TEXTS), dtype=bool)],
                         ids=["list", "float-array", "all-false-mask"])
def test_empty_subset_is_refused_clearly_by_the_retriever_and_the_operators(retriever, rng, empty):
    q = unit_rows(rng, 1, 16)[0]
    with pytest.raises(ValueError, match="subset .*(at least one id|selects no rows)"):
        retriever.search("kitchen", q, subset=empty)
    with pytest.raises(ValueError, match="subset .*(at least one id|selects no rows)"):
        fieldrank.prefilter(unit_rows(rng, len(TEXTS), 16), q, 3, subset=empty)


def test_boolean_mask_means_the_same_in_retriever_and_operators(retriever, rng):
    q = unit_rows(rng, 1, 16)[0]
    mask = np.array([True, False, True, True, False, True])
    assert retriever.search("budget", q, subset=mask).ids.tolist() == \
        retriever.search("budget", q, subset=np.flatnonzero(mask)).ids.tolist()
    E = unit_rows(rng, len(TEXTS), 16)
    assert fieldrank.prefilter(E, q, 3, subset=mask).ids.tolist() == \
        fieldrank.prefilter(E, q, 3, subset=np.flatnonzero(mask)).ids.tolist()


# --------------------------------------------------------------------------- memory store

def test_keyword_recall_needs_no_vector():
    store = MemoryStore(dim=16)
    ids = store.add_many(TEXTS, np.stack([embed(t) for t in TEXTS]))
    result = store.recall("kitchen budget", k=3, mode="keyword", reinforce=False)
    assert result.ids[0] == ids[0]
    assert all(0.0 <= h.factors.cosine <= 1.0 for h in result)  # BM25 relative to the best
    assert result[0].factors.cosine == 1.0
    assert store.why_not(int(ids[2]), "kitchen budget", mode="keyword").reason == "not_admitted"
    with pytest.raises(ValueError, match="cue_vector is required in mode 'hybrid'"):
        store.recall("kitchen budget", k=3)
    with pytest.raises(ValueError, match="needs a non-empty cue_text"):
        store.recall(None, mode="keyword")


def test_memory_repr_is_short():
    store = MemoryStore(dim=384)
    memory = store.get(store.add("x" * 500, embed("x", 384), tags=["policy"]))
    text = repr(memory)
    assert len(text) < 250 and "embedding=<float32 (384,)>" in text and "tags=('policy',)" in text


def test_sqlite_errors_name_the_path(tmp_path: Path):
    not_a_db = tmp_path / "notes.py"
    not_a_db.write_text("print('hello')\n" * 20)
    with pytest.raises(ValueError, match=r"notes\.py' is not a fieldrank.memory store: file is not a database"):
        MemoryStore(not_a_db, dim=8)
    missing = tmp_path / "no" / "such" / "dir" / "store.sqlite"
    with pytest.raises(OSError, match=r"cannot open the memory store .*store\.sqlite"):
        MemoryStore(missing, dim=8)


def test_shape_errors_name_the_argument_the_user_passed():
    store = MemoryStore(dim=8)
    with pytest.raises(ValueError, match=r"^embedding must have shape \(8,\) \(the store's dim\), got \(5,\)$"):
        store.add("a", np.ones(5))
    with pytest.raises(ValueError, match=r"^embedding must have a non-zero norm"):
        store.add("a", np.zeros(8))
    with pytest.raises(ValueError, match=r"^cue_vector must have shape \(8,\)"):
        store.recall("a", np.ones(5))
    memory_id = store.add("a", np.ones(8))
    with pytest.raises(ValueError, match=r"^embedding must have shape \(8,\)"):
        store.update(memory_id, embedding=np.ones(3))


def test_forget_of_an_unknown_id_is_a_key_error_naming_it():
    store = MemoryStore(dim=4)
    with pytest.raises(KeyError, match="no memory with id 7"):
        store.forget(7)


def test_importance_is_not_dominant_at_the_default_importance():
    def factors(importance_norm, importance, tag):
        return ScoreFactors(0.5, importance, 1.0, tag, 1.0, 0.5, importance_norm, 1, 1, 1, 0, 0, 0.5)

    assert factors(DEFAULT_IMPORTANCE, 1.5, 1.0).dominant == "sim"
    assert factors(DEFAULT_IMPORTANCE, 1.5, 1.2).dominant == "tag"
    assert factors(0.9, 1.5, 1.2).dominant == "importance"
    store = MemoryStore(dim=16)
    store.add_many(TEXTS, np.stack([embed(t) for t in TEXTS]))
    hits = store.recall("kitchen budget", embed("kitchen budget"), k=4, reinforce=False)
    assert all(hit.dominant_factor != "importance" for hit in hits)


# --------------------------------------------------------------------------- Timeline

def test_timeline_takes_iso_strings_and_dates():
    expected = np.array(["2024-03-02", "2024-03-02", "2024-03-16"], dtype="datetime64[D]")
    by_string = Timeline(session=np.array([0, 0, 1]), time=["2024-03-02", "2024-03-02T18:30", "2024-03-16"])
    by_date = Timeline(session=np.array([0, 0, 1]), time=[datetime.date(2024, 3, 2),
                                                          datetime.datetime(2024, 3, 2, 18, 30),
                                                          datetime.date(2024, 3, 16)])
    np.testing.assert_array_equal(by_string.time, expected)
    np.testing.assert_array_equal(by_date.time, expected)
    with pytest.raises(ValueError, match=r"ISO 8601 dates .* got '8 May, 2023'"):
        Timeline(session=np.array([0, 1]), time=["2023-05-01", "8 May, 2023"])


# --------------------------------------------------------------------------- CLI

def test_search_with_a_vector_and_no_text_runs_the_dense_legs(tmp_path: Path, rng):
    E = unit_rows(rng, len(TEXTS), 16)
    (tmp_path / "m.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TEXTS), encoding="utf-8")
    np.save(tmp_path / "E.npy", E)
    np.save(tmp_path / "q.npy", E[2])

    def run(*args):
        return subprocess.run([sys.executable, "-m", "fieldrank.cli", *args], capture_output=True, text=True,
                              cwd=tmp_path, check=False)

    assert run("index", "--texts", "m.jsonl", "--embeddings", "E.npy", "--out", "idx", "--preset", "rrf2").returncode == 0
    proc = run("search", "--index", "idx", "--vector-file", "q.npy", "--k", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    assert "dense legs only" in proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["id"] == 2
    refused = run("search", "--index", "idx", "--vector-file", "q.npy", "--preset", "bm25")
    assert refused.returncode != 0 and "needs --text" in refused.stderr


# --------------------------------------------------------------------------- outputs

def test_eval_and_bench_do_not_default_to_the_committed_results(monkeypatch, capsys):
    from fieldrank.evaluation import bench
    from fieldrank.evaluation import _command as command

    args = command.build_parser().parse_args(["locomo"])
    assert args.out == Path("fieldrank-results") and args.json is False
    assert command.build_parser().parse_args(["locomo", "--json"]).json is True
    assert bench.DEFAULT_OUT_DIR == "fieldrank-results"
    monkeypatch.setattr(command, "missing_dependencies", lambda plot: ["scipy"])
    assert command.run(args) == command.EXIT_USER_ERROR
    assert 'pip install ".[eval]"' in capsys.readouterr().err
