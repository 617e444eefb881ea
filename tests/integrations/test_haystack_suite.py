"""Haystack's own document-store suite (``haystack.testing.document_store.DocumentStoreBaseTests``),
subclassed and pointed at :class:`FieldrankDocumentStore`, in memory and on a SQLite file; then
its embedding retriever in a pipeline. Deviations are listed in docs/ecosystem.md, "The
frameworks' own test suites": ``test_write_documents`` is the suite's own placeholder (it asks each store to state its
default policy) and embeddings are compared as the store keeps them (float32, unit norm)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("haystack", reason="needs haystack-ai (in the integrations extra)")

from haystack import Document, Pipeline  # noqa: E402
from haystack.document_stores.errors import DuplicateDocumentError  # noqa: E402
from haystack.document_stores.types import DuplicatePolicy  # noqa: E402
from haystack.errors import FilterError  # noqa: E402
from haystack.testing.document_store import DocumentStoreBaseTests  # noqa: E402

from fieldrank import HybridRetriever, MemoryStore  # noqa: E402
from tests.retriever.test_embed import HashEmbedder  # noqa: E402
from fieldrank.integrations.haystack import (  # noqa: E402
    FieldrankDocumentStore,
    FieldrankEmbeddingRetriever,
    FieldrankRetriever,
)

DIM = 768  # the suite's documents carry 768-dimensional random embeddings
TRUSTED = ["fieldrank.integrations.haystack"]


def _unit(vector):
    v = np.asarray(vector, dtype=np.float64)
    return v / np.linalg.norm(v)


class _Suite(DocumentStoreBaseTests):
    @staticmethod
    def assert_documents_are_equal(received, expected):
        """Equal but for the embedding, which the store keeps as every vector: float32, unit norm."""
        assert [(d.id, d.content, d.meta, d.score, d.embedding is None) for d in received] == \
            [(d.id, d.content, d.meta, d.score, d.embedding is None) for d in expected]
        for got, want in zip(received, expected):
            if want.embedding is not None:
                np.testing.assert_allclose(got.embedding, _unit(want.embedding), atol=1e-6)

    def test_write_documents(self, document_store):
        doc = Document(content="test doc")
        assert document_store.write_documents([doc]) == 1
        with pytest.raises(DuplicateDocumentError):  # the default policy is FAIL, as Haystack's in-memory store
            document_store.write_documents([doc])
        self.assert_documents_are_equal(document_store.filter_documents(), [doc])


class TestDocumentStoreInMemory(_Suite):
    @pytest.fixture
    def document_store(self):
        return FieldrankDocumentStore(MemoryStore(dim=DIM))


class TestDocumentStoreOnFile(_Suite):
    @pytest.fixture
    def document_store(self, tmp_path):
        return FieldrankDocumentStore(store_path=str(tmp_path / "hs.db"), dim=DIM)


def _docs(rng):
    texts = ["kitchen budget is 40k", "cabinets take half the budget", "the dog needs a rabies shot",
             "rabies booster in March", "no embedding here"]
    return [Document(id=f"d{i}", content=text, meta={"n": i, "topic": "home" if i < 2 else "dog"},
                     embedding=None if i == 4 else rng.standard_normal(16).tolist())
            for i, text in enumerate(texts)]


def test_embedding_retriever_in_a_pipeline_round_trips(tmp_path):
    rng = np.random.default_rng(7)
    store = FieldrankDocumentStore(store_path=str(tmp_path / "hs.db"), dim=16)
    docs = _docs(rng)
    store.write_documents(docs)
    pipeline = Pipeline()
    pipeline.add_component("retriever", FieldrankEmbeddingRetriever(store, top_k=3))
    out = pipeline.run({"retriever": {"query_embedding": docs[3].embedding}})["retriever"]["documents"]
    assert out[0].id == "d3" and len(out) == 3 and all(d.score is not None for d in out)
    assert "d4" not in [d.id for d in out]  # no embedding: stored, never retrieved by embedding
    filtered = store.embedding_retrieval(docs[3].embedding, {"field": "meta.topic", "operator": "==", "value": "home"})
    assert [d.id for d in filtered] and {d.meta["topic"] for d in filtered} == {"home"}
    again = Pipeline.loads(pipeline.dumps(), allowed_modules=TRUSTED)
    assert [d.id for d in again.run({"retriever": {"query_embedding": docs[3].embedding}})["retriever"]["documents"]] \
        == [d.id for d in out]
    hybrid = store.embedding_retrieval(docs[0].embedding, top_k=2, query="kitchen budget")
    assert hybrid[0].id == "d0"


def test_reopened_store_keeps_documents_and_policies(tmp_path):
    rng = np.random.default_rng(3)
    path = str(tmp_path / "hs.db")
    docs = _docs(rng)
    FieldrankDocumentStore(store_path=path, dim=16).write_documents(docs)
    store = FieldrankDocumentStore(store_path=path)
    assert store.count_documents() == 5 and [d.id for d in store.filter_documents()] == [d.id for d in docs]
    assert store.write_documents(docs[:2], policy=DuplicatePolicy.SKIP) == 0
    with pytest.raises(DuplicateDocumentError):
        store.write_documents([Document(id="new", content="x"), docs[0]])
    assert store.count_documents() == 5  # FAIL checks every id before writing any


def test_haystack_filters_as_haystack_defines_them():
    """#37: ``content`` is a filter field; ``in`` with a non-list and a str/int comparison raise
    Haystack's FilterError; on both the document store and the retriever over a saved index."""
    store = FieldrankDocumentStore(MemoryStore(dim=1))
    store.write_documents([Document(id="a", content="alpha beta", meta={"page": "100"}),
                           Document(id="b", content="gamma", meta={"page": "90"})])
    assert [d.id for d in store.filter_documents({"field": "content", "operator": "==", "value": "gamma"})] == ["b"]
    with pytest.raises(FilterError):
        store.filter_documents({"field": "meta.page", "operator": "in", "value": "100"})
    with pytest.raises(FilterError):
        store.filter_documents({"field": "meta.page", "operator": ">", "value": 5})

    retriever = FieldrankRetriever(HybridRetriever(["alpha beta", "gamma"], config="bm25", embedder=HashEmbedder(dim=8)),
                                   metadatas=[{"page": "100"}, {"page": "90"}])
    found = retriever.run("gamma alpha", filters={"field": "content", "operator": "==", "value": "gamma"})
    assert [d.content for d in found["documents"]] == ["gamma"]
    with pytest.raises(FilterError):  # was a substring match: "10" in "100"
        retriever.run("alpha", filters={"field": "meta.page", "operator": "in", "value": "10"})
    with pytest.raises(FilterError):  # was a raw TypeError
        retriever.run("alpha", filters={"field": "meta.page", "operator": ">", "value": 5})
