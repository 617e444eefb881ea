"""The framework adapters, run end to end against the real langchain-core, llama-index-core and haystack-ai.

Each test importorskips its framework, so the core suite runs without them; CI installs the
``integrations`` extra and runs them all.
"""

from __future__ import annotations

import numpy as np
import pytest

from fieldrank import HybridRetriever
from fieldrank.integrations import PROVENANCE_KEY, hit_provenance, rerank_candidates

from tests.retriever.test_embed import HashEmbedder

CORPUS = [
    "We decided to spend around $40k on the kitchen.",
    "Cabinets are going to eat half the budget.",
    "The dog is due for his rabies shot.",
    "The vet said the dog needs a rabies booster in March.",
    "We picked walnut for the kitchen cabinets.",
    "The contractor quoted $12k for the countertops.",
    "My sister visits in June with her two kids.",
    "Remember to renew the car insurance before May.",
    "The kitchen budget may stretch to $45k if the floor needs work.",
    "We adopted the dog from the shelter two years ago.",
]
QUERY = "how much is the kitchen budget?"


@pytest.fixture
def embedder() -> HashEmbedder:
    return HashEmbedder(dim=48)


@pytest.fixture
def retriever(embedder) -> HybridRetriever:
    return HybridRetriever(CORPUS, config="rrf_cfsr", embedder=embedder)


def expected_rerank(embedder, texts, query, k):
    """The reranking computed directly: a retriever over the candidates in input order."""
    pool = HybridRetriever(texts, embedder._rows(texts), "rrf_cfsr")
    return pool.search(query, embedder._rows([query])[0], k)


def test_rerank_candidates_is_the_stack_on_the_pool(embedder):
    texts = CORPUS[::-1][:7]
    got = rerank_candidates(QUERY, texts, embedder=embedder, k=4)
    want = expected_rerank(embedder, texts, QUERY, 4)
    np.testing.assert_array_equal(got.ids, want.ids)
    # Unnormalised vectors are normalised (cosine is scale-free), and vectors may replace the embedder.
    scaled = rerank_candidates(QUERY, texts, embedder._rows(texts) * 3.0, query_vector=embedder._rows([QUERY])[0] * 2,
                               k=4)
    np.testing.assert_array_equal(scaled.ids, want.ids)
    provenance = hit_provenance(got)
    assert [p["id"] for p in provenance] == got.ids.tolist()
    assert {"cosine", "bm25", "cfsr"} <= set(provenance[0]["legs"])
    assert provenance[0]["config"] == got.config.name
    with pytest.raises(ValueError, match="vectors or an embedder"):
        rerank_candidates(QUERY, texts)


# ---------------------------------------------------------------- LangChain
def test_langchain_retriever_and_compressor(retriever, embedder):
    pytest.importorskip("langchain_core", reason="needs the integrations extra (langchain-core)")
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    from fieldrank.integrations.langchain import FieldrankCompressor, FieldrankRetriever, LangChainEmbedder

    docs = FieldrankRetriever(retriever=retriever, k=3).invoke(QUERY)
    want = retriever.search(QUERY, k=3)
    assert [d.id for d in docs] == [str(i) for i in want.ids.tolist()]
    assert [d.page_content for d in docs] == want.texts
    assert [d.metadata[PROVENANCE_KEY] for d in docs] == hit_provenance(want)
    tenant = FieldrankRetriever(retriever=retriever, k=3, subset=[5, 6, 7]).invoke(QUERY)
    assert {d.id for d in tenant} <= {"5", "6", "7"}

    class HashEmbeddings(Embeddings):
        def embed_documents(self, texts):
            return embedder._rows(texts).tolist()

        def embed_query(self, text):
            return embedder._rows([text])[0].tolist()

    store = InMemoryVectorStore(HashEmbeddings())
    store.add_documents([Document(page_content=t, metadata={"source": f"note-{i}"}) for i, t in enumerate(CORPUS)])
    first_stage = store.as_retriever(search_kwargs={"k": 6}).invoke(QUERY)
    for compressor_embedder in (embedder, HashEmbeddings(), LangChainEmbedder(HashEmbeddings())):
        reranked = FieldrankCompressor(embedder=compressor_embedder, top_n=3).compress_documents(first_stage, QUERY)
        want = expected_rerank(embedder, [d.page_content for d in first_stage], QUERY, 3)
        assert [d.page_content for d in reranked] == [first_stage[i].page_content for i in want.ids.tolist()]
        for doc, position in zip(reranked, want.ids.tolist()):
            assert doc.metadata["source"] == first_stage[position].metadata["source"]
            assert doc.metadata[PROVENANCE_KEY]["input_rank"] == position + 1
            assert "cfsr" in doc.metadata[PROVENANCE_KEY]["legs"]
    assert FieldrankCompressor(embedder=embedder).compress_documents([], QUERY) == []


# ---------------------------------------------------------------- LlamaIndex
def test_llama_index_retriever_and_postprocessor(retriever, embedder):
    pytest.importorskip("llama_index.core", reason="needs the integrations extra (llama-index-core)")
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    from fieldrank.integrations.llama_index import FieldrankLlamaRetriever, FieldrankNodePostprocessor

    nodes = FieldrankLlamaRetriever(retriever, k=4).retrieve(QUERY)
    want = retriever.search(QUERY, k=4)
    assert [n.node.node_id for n in nodes] == [str(i) for i in want.ids.tolist()]
    assert [n.score for n in nodes] == pytest.approx(want.scores.tolist())
    assert [n.node.metadata[PROVENANCE_KEY] for n in nodes] == hit_provenance(want)
    # A QueryBundle's own embedding is used when it has one (here: another query's vector).
    other = "rabies booster for the dog"
    bundle = QueryBundle(query_str=QUERY, embedding=(embedder._rows([other])[0] * 5).tolist())
    by_bundle = FieldrankLlamaRetriever(retriever, k=4).retrieve(bundle)
    want_bundle = retriever.search(QUERY, embedder._rows([other])[0], 4)
    assert [n.node.node_id for n in by_bundle] == [str(i) for i in want_bundle.ids.tolist()]

    texts = CORPUS[2:9]
    candidates = [NodeWithScore(node=TextNode(text=t, id_=f"n{i}", metadata={"source": i}), score=1.0 / (i + 1))
                  for i, t in enumerate(texts)]
    want = expected_rerank(embedder, texts, QUERY, 3)
    post = FieldrankNodePostprocessor(embedder=embedder, top_n=3)
    got = post.postprocess_nodes(candidates, query_str=QUERY)
    assert [n.node.node_id for n in got] == [f"n{i}" for i in want.ids.tolist()]
    assert [n.node.metadata[PROVENANCE_KEY]["input_rank"] for n in got] == [i + 1 for i in want.ids.tolist()]
    assert [n.node.metadata["source"] for n in got] == want.ids.tolist()
    assert candidates[0].node.metadata == {"source": 0}  # inputs are not modified
    # Nodes that carry embeddings, and a bundle with one, need no embedder.
    embedded = [NodeWithScore(node=TextNode(text=t, id_=f"n{i}", embedding=embedder._rows([t])[0].tolist()))
                for i, t in enumerate(texts)]
    bundle = QueryBundle(query_str=QUERY, embedding=embedder._rows([QUERY])[0].tolist())
    got = FieldrankNodePostprocessor(top_n=3).postprocess_nodes(embedded, bundle)
    assert [n.node.node_id for n in got] == [f"n{i}" for i in want.ids.tolist()]


# ---------------------------------------------------------------- Haystack
def test_haystack_components_in_a_pipeline(retriever, embedder):
    pytest.importorskip("haystack", reason="needs the integrations extra (haystack-ai)")
    from haystack import Document, Pipeline
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from fieldrank.integrations.haystack import FieldrankRanker, FieldrankRetriever

    out = FieldrankRetriever(retriever, top_k=3).run(QUERY)["documents"]
    want = retriever.search(QUERY, k=3)
    assert [d.meta[PROVENANCE_KEY]["id"] for d in out] == want.ids.tolist()
    assert [d.id for d in out] == [Document(content=d.content).id for d in out]  # Haystack's own content id
    assert [d.meta[PROVENANCE_KEY] for d in out] == hit_provenance(want)

    store = InMemoryDocumentStore()
    store.write_documents([Document(content=t, meta={"source": i}) for i, t in enumerate(CORPUS)])
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(document_store=store, top_k=6))
    pipeline.add_component("rerank", FieldrankRanker(embedder=embedder, top_k=3))
    pipeline.connect("bm25.documents", "rerank.documents")
    result = pipeline.run({"bm25": {"query": QUERY}, "rerank": {"query": QUERY}}, include_outputs_from={"bm25"})
    first_stage = result["bm25"]["documents"]
    reranked = result["rerank"]["documents"]
    want = expected_rerank(embedder, [d.content for d in first_stage], QUERY, 3)
    assert [d.id for d in reranked] == [first_stage[i].id for i in want.ids.tolist()]
    assert [d.meta["source"] for d in reranked] == [first_stage[i].meta["source"] for i in want.ids.tolist()]
    assert [d.meta[PROVENANCE_KEY]["input_rank"] for d in reranked] == [i + 1 for i in want.ids.tolist()]
    assert [d.score for d in reranked] == pytest.approx(want.scores.tolist())
    assert FieldrankRanker(embedder=embedder).run(QUERY, [])["documents"] == []
