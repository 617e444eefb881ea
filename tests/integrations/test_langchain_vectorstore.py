"""What LangChain's standard suite does not reach in :class:`FieldrankVectorStore` (scores, search by
vector, MMR through fieldrank's operator, filters, reopening a file), and #34 item 5: a batch
delete on the memory retriever is all-or-nothing."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("langchain_core", reason="needs langchain-core (in the test extra)")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402

from fieldrank import MemoryStore  # noqa: E402
from fieldrank.integrations.langchain import FieldrankMemoryRetriever, FieldrankVectorStore  # noqa: E402
from fieldrank.operators import mmr_pool  # noqa: E402

from tests.retriever.test_embed import HashEmbedder  # noqa: E402

TEXTS = ["kitchen budget is 40k", "kitchen budget is about 40k", "cabinets eat half the budget",
         "the dog needs a rabies shot", "rabies booster in March"]
DIM = 24


@pytest.fixture
def vectorstore():
    store = FieldrankVectorStore(MemoryStore(dim=DIM), DeterministicFakeEmbedding(size=DIM))
    store.add_texts(TEXTS, [{"n": i, "topic": "home" if i < 3 else "dog"} for i in range(len(TEXTS))],
                    ids=[f"t{i}" for i in range(len(TEXTS))])
    return store


def test_scores_vectors_and_filters(vectorstore):
    scored = vectorstore.similarity_search_with_score("rabies booster in March", k=3)
    assert scored[0][0].id == "t4" and [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)
    relevance = vectorstore.similarity_search_with_relevance_scores("rabies booster in March", k=2)
    assert all(0.0 <= score <= 1.0 for _, score in relevance)
    vector = DeterministicFakeEmbedding(size=DIM).embed_query("cabinets eat half the budget")
    assert vectorstore.similarity_search_by_vector(vector, k=1)[0].id == "t2"
    dogs = vectorstore.similarity_search("kitchen budget", k=5, filter={"topic": "dog"})
    assert {d.id for d in dogs} == {"t3", "t4"}
    assert [d.id for d in vectorstore.similarity_search("budget", k=5, filter={"n": [0, 2]})] != []
    assert {d.metadata["n"] for d in vectorstore.similarity_search("budget", k=5, filter={"n": [0, 2]})} <= {0, 2}
    assert vectorstore.similarity_search("budget", k=5, filter=lambda d: d.metadata["n"] == 4)[0].id == "t4"
    with pytest.raises(TypeError, match="unknown search keyword"):
        vectorstore.similarity_search("budget", k=2, score_threshold=0.5)


def test_mmr_is_fieldrank_mmr_over_the_fetched_pool(vectorstore):
    embedding = DeterministicFakeEmbedding(size=DIM)
    query = embedding.embed_query("kitchen budget is 40k")
    got = [d.id for d in vectorstore.max_marginal_relevance_search_by_vector(query, k=3, fetch_k=5, lambda_mult=0.3)]
    # the same operator on the same pool (every document: fetch_k covers them all)
    pool = np.stack([vectorstore.store.get(i).embedding for i in range(len(TEXTS))])
    q = np.asarray(query, dtype=np.float64)
    want = mmr_pool(np.arange(len(TEXTS)), pool, (q / np.linalg.norm(q)).astype(np.float32), 3, mu=0.3)
    assert got == [f"t{int(i)}" for i in want.ids]
    assert [d.id for d in vectorstore.max_marginal_relevance_search("kitchen budget is 40k", k=3, fetch_k=5,
                                                                   lambda_mult=0.3)] == got


def test_from_texts_on_a_file_reopens_with_ids_and_metadata(tmp_path):
    embedding = DeterministicFakeEmbedding(size=DIM)
    path = str(tmp_path / "lc.db")
    FieldrankVectorStore.from_texts(TEXTS[:2], embedding, [{"a": 1}, {"b": [1, 2]}], ids=["x", "y"], path=path)
    reopened = FieldrankVectorStore(MemoryStore(path), embedding)
    assert reopened.get_by_ids(["y", "x", "missing"]) == [Document(page_content=TEXTS[1], metadata={"b": [1, 2]}, id="y"),
                                                          Document(page_content=TEXTS[0], metadata={"a": 1}, id="x")]
    reopened.add_documents([Document(page_content="new text", id="x")])
    assert [d.page_content for d in reopened.get_by_ids(["x"])] == ["new text"] and len(reopened.store) == 2


def test_a_delete_checks_every_id_first(vectorstore):
    with pytest.raises(TypeError, match="list of str"):
        vectorstore.delete(["t0", 3])
    assert len(vectorstore.get_by_ids(["t0"])) == 1  # nothing was deleted
    vectorstore.delete(["t0", "absent"])  # an absent id is skipped (LangChain's contract)
    assert vectorstore.get_by_ids(["t0"]) == []


def test_memory_retriever_delete_is_all_or_nothing():
    """#34 item 5: ``delete([a, "999", b])`` forgot ``a`` and raised KeyError before ``b``."""
    retriever = FieldrankMemoryRetriever(store=MemoryStore(embedder=HashEmbedder(dim=16)), tenant="alice")
    a, b = retriever.add_texts(["first memory", "second memory"])
    with pytest.raises(KeyError, match="999"):
        retriever.delete([a, "999", b])
    assert len(retriever.store) == 2  # nothing was forgotten
    other = FieldrankMemoryRetriever(store=retriever.store, tenant="bob")
    with pytest.raises(KeyError, match="nothing was deleted"):
        other.delete([a])  # another tenant's memory is not this retriever's
    retriever.delete([a, b])
    assert len(retriever.store) == 0


def test_two_writers_on_one_file_agree_on_every_id(tmp_path):
    """Issue #34 item 4 for the document stores (shared by LangChain, LlamaIndex and Haystack):
    the id -> memory map lives in the store, so a second writer neither duplicates an id nor
    brings back one the other deleted (before: each object kept its own map)."""
    path, embedding = tmp_path / "docs.db", DeterministicFakeEmbedding(size=DIM)
    first = FieldrankVectorStore(MemoryStore(path, DIM), embedding)
    second = FieldrankVectorStore(MemoryStore(path), embedding)
    first.add_texts(["from first"], ids=["x"])
    second.add_texts(["from second"], ids=["x"])  # the same id: replaced in place
    assert len(first.store) == 1 and [d.page_content for d in first.get_by_ids(["x"])] == ["from second"]
    second.delete(["x"])
    first.add_texts(["other"], ids=["y"])
    assert first.get_by_ids(["x"]) == [] and len(second.store) == 1
    assert [d.id for d in second.similarity_search("other", k=5)] == ["y"]


def test_documents_written_before_keys_lived_in_the_store_are_rewritten_with_their_key(tmp_path):
    import sqlite3

    path, embedding = tmp_path / "old.db", DeterministicFakeEmbedding(size=DIM)
    writer = FieldrankVectorStore(MemoryStore(path, DIM), embedding)
    writer.add_texts(["old x", "old y", "old z"], ids=["x", "y", "z"])
    writer.store.close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE memories SET key = NULL")
    store = FieldrankVectorStore(MemoryStore(path), embedding)
    assert [d.page_content for d in store.get_by_ids(["x"])] == ["old x"]
    store.add_texts(["new x"], ids=["x"])
    store.delete(["y"])
    reopened = FieldrankVectorStore(MemoryStore(path), embedding)
    assert [d.page_content for d in reopened.get_by_ids(["x", "y", "z"])] == ["new x", "old z"]
    assert len(reopened.store) == 2
