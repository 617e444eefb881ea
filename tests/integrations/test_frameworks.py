"""The memory store in each framework, in the framework's idiom, and one test per adapter finding
of issue #28. Each test importorskips its framework (CI installs the extras)."""

from __future__ import annotations

import asyncio
import pickle

import numpy as np
import pytest

from fieldrank import HybridRetriever, MemoryStore
from fieldrank.integrations import PROVENANCE_KEY

from tests.retriever.test_embed import HashEmbedder

CORPUS = [
    "We decided to spend around $40k on the kitchen.",
    "Cabinets are going to eat half the budget.",
    "The dog is due for his rabies shot.",
    "The vet said the dog needs a rabies booster in March.",
]
METADATAS = [{"source": "chat-1", "n": 0}, {"source": "chat-1", "n": 1}, {"source": "chat-2", "n": 2},
             {"source": "chat-2", "n": 3}]
RULE = "Never deploy to production on Fridays."
#: Haystack deserializes only classes of trusted modules; a pipeline names fieldrank's.
TRUSTED = ["fieldrank.integrations.haystack"]


@pytest.fixture
def lexical_store(tmp_path):
    with MemoryStore(tmp_path / "memory.db", 1) as store:
        yield store


@pytest.fixture
def embedded_store():
    return MemoryStore(embedder=HashEmbedder(dim=48))


@pytest.fixture
def retriever():
    return HybridRetriever(CORPUS, config="rrf_cfsr", embedder=HashEmbedder(dim=48))


# ---------------------------------------------------------------- LangChain
def test_langchain_memory_retriever_in_an_lcel_chain(embedded_store):
    pytest.importorskip("langchain_core", reason="needs the integrations extra")
    from langchain_core.documents import Document
    from langchain_core.language_models.fake import FakeListLLM
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import PromptTemplate
    from langchain_core.runnables import RunnableLambda, RunnablePassthrough

    from fieldrank.integrations.langchain import FieldrankMemoryRetriever

    alice = FieldrankMemoryRetriever(store=embedded_store, tenant="alice", k=2)
    bob = FieldrankMemoryRetriever(store=embedded_store, tenant="bob", k=2)
    ids = alice.add_documents([Document(page_content=RULE, metadata={"tier": "core", "importance": 1.0,
                                                                     "tags": ["ops"]})])
    alice.add_texts(CORPUS)  # incremental writes as the chat grows
    bob.add_texts(["Bob's kitchen is finished."])

    prompt = PromptTemplate.from_template("Context:\n{context}\n\nQuestion: {question}")
    seen = []

    def record(text):
        seen.append(text.to_string())
        return text

    chain = ({"context": alice | RunnableLambda(lambda docs: "\n".join(d.page_content for d in docs)),
              "question": RunnablePassthrough()} | prompt | RunnableLambda(record)
             | FakeListLLM(responses=["No."]) | StrOutputParser())
    assert chain.invoke("can we deploy to production on Friday?") == "No."
    assert RULE in seen[0]

    docs = alice.invoke("deploy to production on Friday", k=1)
    assert [d.id for d in docs] == ids
    assert docs[0].metadata["tier"] == "core" and docs[0].metadata["tags"] == ["ops"]
    assert docs[0].metadata["created_at"] and docs[0].metadata[PROVENANCE_KEY]["admitted_by"]
    # Gates as LangChain's filter; a client of one tenant never sees another's memories.
    gated = alice.invoke("deploy to production on Friday", filter={"tiers": ["episodic"]})
    assert ids[0] not in [d.id for d in gated]
    assert all("Bob" not in d.page_content for d in alice.invoke("kitchen finished", k=5))
    assert [d.page_content for d in bob.invoke("kitchen", k=5)] == ["Bob's kitchen is finished."]
    with pytest.raises(ValueError, match="unknown key"):
        alice.invoke("x", filter={"source": "chat-1"})
    with pytest.raises(ValueError, match="cannot be stored"):
        alice.add_documents([Document(page_content="x", metadata={"source": "chat-1"})])
    alice.delete(ids)
    assert ids[0] not in [d.id for d in alice.invoke("deploy to production on Friday", k=5)]
    # Async (ainvoke) runs too.
    assert asyncio.run(alice.ainvoke("rabies booster", k=1))[0].page_content == CORPUS[3]


def test_langchain_retriever_honours_k_filter_metadata_and_refuses_the_rest(retriever):
    pytest.importorskip("langchain_core", reason="needs the integrations extra")
    from langchain_core.documents import Document

    from fieldrank.integrations.langchain import FieldrankRetriever

    lc = FieldrankRetriever(retriever=retriever, metadatas=METADATAS)
    assert len(lc.invoke("dog rabies", k=1)) == 1  # invoke(q, k=) honoured
    docs = lc.invoke("dog rabies", filter={"source": "chat-1"})
    assert docs and {d.metadata["source"] for d in docs} == {"chat-1"}  # filter on metadata
    assert docs[0].metadata["n"] == int(docs[0].id)  # the user's metadata is on the Document
    assert {d.metadata["n"] for d in lc.invoke("dog", filter={"n": [2, 3]})} <= {2, 3}
    with pytest.raises(ValueError, match="metadatas"):
        FieldrankRetriever(retriever=retriever).invoke("dog", filter={"source": "chat-1"})
    with pytest.raises(Exception, match="top_k"):
        FieldrankRetriever(retriever=retriever, top_k=3)
    with pytest.raises(Exception, match="search_kwargs"):
        FieldrankRetriever(retriever=retriever, search_kwargs={"k": 3})
    with pytest.raises(TypeError, match="score_threshold"):
        lc.invoke("dog", score_threshold=0.5)
    with pytest.raises(NotImplementedError, match="FieldrankMemoryRetriever"):
        lc.add_documents([Document(page_content="new")])
    copy = pickle.loads(pickle.dumps(lc))
    assert [d.id for d in copy.invoke("kitchen budget")] == [d.id for d in lc.invoke("kitchen budget")]


def test_langchain_compressor_in_contextual_compression_retriever(retriever):
    pytest.importorskip("langchain_classic", reason="needs langchain-classic (in the integrations extra)")
    from langchain_classic.retrievers import ContextualCompressionRetriever

    from fieldrank.integrations.langchain import FieldrankCompressor, FieldrankRetriever

    base = FieldrankRetriever(retriever=retriever, metadatas=METADATAS, k=4)
    ccr = ContextualCompressionRetriever(base_compressor=FieldrankCompressor(embedder=HashEmbedder(dim=48), top_n=2),
                                         base_retriever=base)
    docs = ccr.invoke("dog vaccination")
    assert len(docs) == 2 and all("input_rank" in d.metadata[PROVENANCE_KEY] for d in docs)
    with pytest.raises(Exception, match="top_k"):
        FieldrankCompressor(embedder=HashEmbedder(dim=48), top_k=2)


# ---------------------------------------------------------------- LlamaIndex
def test_llama_index_memory_retriever_in_a_query_engine_and_memory_block(lexical_store, monkeypatch):
    pytest.importorskip("llama_index.core", reason="needs the integrations extra")
    from llama_index.core import Settings
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.llms.mock import MockLLM
    from llama_index.core.query_engine import RetrieverQueryEngine
    from llama_index.core.schema import MetadataMode, TextNode

    from fieldrank.integrations.llama_index import FieldrankMemoryBlock, FieldrankMemoryRetriever

    monkeypatch.setattr(Settings, "_llm", MockLLM())  # no LLM: the engine only retrieves
    retriever = FieldrankMemoryRetriever(lexical_store, tenant="alice", similarity_top_k=2)
    rule_id = retriever.insert([TextNode(text=RULE, metadata={"tier": "core", "importance": 1.0})])[0]
    retriever.insert_texts(CORPUS)
    FieldrankMemoryRetriever(lexical_store, tenant="bob").insert_texts(["Bob deploys on Fridays."])
    engine = RetrieverQueryEngine.from_args(retriever, response_mode="no_text")
    response = engine.query("deploy to production on Friday")
    assert response.source_nodes[0].node.node_id == rule_id
    assert all("Bob" not in n.node.get_content() for n in response.source_nodes)
    node = response.source_nodes[0].node
    assert node.metadata["tier"] == "core" and PROVENANCE_KEY in node.metadata
    assert PROVENANCE_KEY not in node.get_content(metadata_mode=MetadataMode.LLM)
    gated = FieldrankMemoryRetriever(lexical_store, tenant="alice", filters={"tiers": ["episodic"]})
    assert rule_id not in [n.node.node_id for n in gated.retrieve("deploy to production on Friday")]

    block = FieldrankMemoryBlock(store=lexical_store, tenant="carol")
    asyncio.run(block.aput([ChatMessage(role="user", content="My cat is called Tom.")]))
    text = asyncio.run(block.aget([ChatMessage(role="user", content="what is my cat called?")]))
    assert "Tom" in text


def test_llama_index_retriever_top_k_filters_and_llm_metadata(retriever):
    pytest.importorskip("llama_index.core", reason="needs the integrations extra")
    from llama_index.core.schema import MetadataMode
    from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

    from fieldrank.integrations.llama_index import FieldrankLlamaRetriever

    nodes = FieldrankLlamaRetriever(retriever, similarity_top_k=1).retrieve("dog rabies")
    assert len(nodes) == 1
    assert PROVENANCE_KEY not in nodes[0].node.get_content(metadata_mode=MetadataMode.LLM)
    assert PROVENANCE_KEY not in nodes[0].node.get_content(metadata_mode=MetadataMode.EMBED)
    filters = MetadataFilters(filters=[MetadataFilter(key="source", value="chat-2"),
                                       MetadataFilter(key="n", value=3, operator=FilterOperator.GTE)])
    nodes = FieldrankLlamaRetriever(retriever, metadatas=METADATAS, filters=filters).retrieve("dog kitchen")
    assert [n.node.metadata["n"] for n in nodes] == [3]
    with pytest.raises(ValueError, match="metadatas"):
        FieldrankLlamaRetriever(retriever, filters=filters)
    # every operator LlamaIndex's own filter function knows (the one its SimpleVectorStore applies)
    text_match = MetadataFilters(filters=[MetadataFilter(key="source", value="-1", operator=FilterOperator.TEXT_MATCH)])
    nodes = FieldrankLlamaRetriever(retriever, metadatas=METADATAS, filters=text_match).retrieve("dog kitchen")
    assert {n.node.metadata["source"] for n in nodes} == {"chat-1"}


def test_llama_index_postprocessor_takes_an_embed_model_and_says_what_is_missing():
    pytest.importorskip("llama_index.core", reason="needs the integrations extra")
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import MetadataMode, NodeWithScore, TextNode

    from fieldrank.integrations.llama_index import FieldrankNodePostprocessor

    nodes = [NodeWithScore(node=TextNode(text=t, id_=f"n{i}"), score=1.0) for i, t in enumerate(CORPUS)]
    out = FieldrankNodePostprocessor(embedder=MockEmbedding(embed_dim=8), top_n=2).postprocess_nodes(
        nodes, query_str="dog rabies")
    assert len(out) == 2 and out[0].node.node_id in {"n2", "n3"}  # BM25 decides: the mock vectors are all equal
    assert PROVENANCE_KEY not in out[0].node.get_content(metadata_mode=MetadataMode.LLM)
    with pytest.raises(ValueError, match="embedder="):
        FieldrankNodePostprocessor(top_n=2).postprocess_nodes(nodes, query_str="dog")


# ---------------------------------------------------------------- Haystack
def test_haystack_memory_pipeline_round_trips_through_to_dict(tmp_path):
    pytest.importorskip("haystack", reason="needs the integrations extra")
    from haystack import Document, Pipeline

    from fieldrank.integrations.haystack import FieldrankMemoryRetriever, FieldrankMemoryWriter

    path = str(tmp_path / "memory.db")
    writer = Pipeline()
    writer.add_component("write", FieldrankMemoryWriter(store_path=path, tenant="alice"))
    written = writer.run({"write": {"documents": [Document(content=RULE, meta={"tier": "core"}),
                                                  *[Document(content=t) for t in CORPUS]]}})
    assert written["write"]["documents_written"] == 5
    writer = Pipeline.loads(writer.dumps(), allowed_modules=TRUSTED)  # serialized and rebuilt: the same store, the same tenant
    writer.run({"write": {"documents": [Document(content="The vet closes early on Fridays.")]}})

    pipeline = Pipeline()
    pipeline.add_component("memory", FieldrankMemoryRetriever(store_path=path, tenant="alice", top_k=2))
    rebuilt = Pipeline.from_dict(pipeline.to_dict(), allowed_modules=TRUSTED)
    for p in (pipeline, rebuilt):
        docs = p.run({"memory": {"query": "deploy to production on Friday"}})["memory"]["documents"]
        assert docs[0].content == RULE and docs[0].meta["tier"] == "core"
        assert docs[0].meta[PROVENANCE_KEY]["admitted_by"]
        gated = p.run({"memory": {"query": "deploy to production on Friday",
                                  "filters": {"tiers": ["episodic"]}}})["memory"]["documents"]
        assert RULE not in [d.content for d in gated]
    other = FieldrankMemoryRetriever(store_path=path, tenant="bob").run("deploy on Friday")["documents"]
    assert other == []
    with pytest.raises(ValueError, match="cannot be stored"):
        FieldrankMemoryWriter(store_path=path).run([Document(content="x", meta={"source": "y"})])


def test_haystack_retriever_filters_ids_and_serialization(retriever, tmp_path):
    pytest.importorskip("haystack", reason="needs the integrations extra")
    from haystack import Document, Pipeline
    from haystack.components.joiners import DocumentJoiner
    from haystack.components.retrievers.in_memory import InMemoryBM25Retriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    from fieldrank.integrations.haystack import FieldrankRetriever

    index = HybridRetriever(CORPUS, HashEmbedder(dim=48)._rows(CORPUS), "bm25")
    index.save(tmp_path / "index")
    component = FieldrankRetriever(index_dir=str(tmp_path / "index"), top_k=2, metadatas=METADATAS)
    docs = component.run("dog rabies kitchen budget", filters={"field": "meta.source", "operator": "==", "value": "chat-1"})
    assert {d.meta["source"] for d in docs["documents"]} == {"chat-1"}
    from haystack.errors import FilterError

    with pytest.raises(FilterError, match="operator"):  # Haystack's own error, as its document stores raise
        component.run("dog", filters={"field": "meta.source", "operator": "~", "value": "x"})
    with pytest.raises(TypeError, match="index_dir="):
        FieldrankRetriever(retriever).to_dict()

    # Same texts and meta in a Haystack store: the joiner sees one document, not two.
    store = InMemoryDocumentStore()
    store.write_documents([Document(content=t, meta=m) for t, m in zip(CORPUS, METADATAS)])
    pipeline = Pipeline()
    pipeline.add_component("bm25", InMemoryBM25Retriever(document_store=store, top_k=2))
    pipeline.add_component("fieldrank", component)
    pipeline.add_component("join", DocumentJoiner())
    pipeline.connect("bm25.documents", "join.documents")
    pipeline.connect("fieldrank.documents", "join.documents")
    rebuilt = Pipeline.loads(pipeline.dumps(), allowed_modules=TRUSTED)
    for p in (pipeline, rebuilt):
        joined = p.run({"bm25": {"query": "dog rabies"}, "fieldrank": {"query": "dog rabies"}})["join"]["documents"]
        assert len({d.content for d in joined}) == len(joined)


def test_haystack_ranker_keeps_fields_thresholds_and_names_return_embedding():
    pytest.importorskip("haystack", reason="needs the integrations extra")
    from haystack import Document, Pipeline
    from haystack.dataclasses import ByteStream, SparseEmbedding

    from fieldrank.integrations.haystack import FieldrankRanker

    embedder = HashEmbedder(dim=48)
    sparse = SparseEmbedding(indices=[1, 5], values=[0.5, 0.25])
    documents = [Document(content=t, embedding=embedder._rows([t])[0].tolist(), sparse_embedding=sparse,
                          blob=ByteStream(data=b"raw"), meta={"n": i}) for i, t in enumerate(CORPUS)]
    query_embedding = embedder._rows(["dog rabies"])[0].tolist()
    out = FieldrankRanker().run("dog rabies", documents, query_embedding=query_embedding)["documents"]
    assert all(d.sparse_embedding == sparse and d.blob.data == b"raw" for d in out)
    scaled = FieldrankRanker(scale_score=True, score_threshold=0.9).run(
        "dog rabies", documents, query_embedding=query_embedding)["documents"]
    assert scaled[0].score == 1.0 and all(d.score >= 0.9 for d in scaled) and len(scaled) < len(out)
    with pytest.raises(ValueError, match="return_embedding=True"):
        FieldrankRanker().run("dog", [Document(content=t) for t in CORPUS])
    pipeline = Pipeline()
    pipeline.add_component("rank", FieldrankRanker(top_k=2, scale_score=True))
    assert Pipeline.loads(pipeline.dumps(), allowed_modules=TRUSTED).get_component("rank").scale_score is True
