"""LlamaIndex ships no packaged vector-store suite: these are contract tests in our own words for
what llama-index-core's own vector store tests check (add, query top-k by embedding, delete by
source document, metadata filters with and/or and operators, node and document id restrictions,
get/delete nodes, clear, persistence), run side by side on ``SimpleVectorStore`` and
:class:`FieldrankVectorStore` with the same nodes; what differs is the score (fused, not a cosine)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("llama_index.core", reason="needs llama-index-core (in the integrations extra)")

from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode  # noqa: E402
from llama_index.core.vector_stores import SimpleVectorStore  # noqa: E402
from llama_index.core.vector_stores.types import (  # noqa: E402
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
    VectorStoreQuery,
    VectorStoreQueryMode,
)

from fieldrank import MemoryStore  # noqa: E402
from fieldrank.integrations.llama_index import FieldrankVectorStore  # noqa: E402

DIM = 12
TEXTS = ["kitchen budget is 40k", "cabinets eat half the budget", "the dog needs a rabies shot",
         "rabies booster in March", "repaint the hallway", "buy dog food"]


def _nodes():
    rng = np.random.default_rng(11)
    nodes = []
    for i, text in enumerate(TEXTS):
        node = TextNode(text=text, id_=f"n{i}", embedding=rng.standard_normal(DIM).tolist(),
                        metadata={"topic": "home" if i in (0, 1, 4) else "dog", "rank": i, "tags": ["a", "b"][: i % 3]})
        node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=f"doc{i // 2}")
        nodes.append(node)
    return nodes


@pytest.fixture(params=["simple", "fieldrank", "fieldrank-file"])
def pair(request, tmp_path):
    """The store under test and its kind (each contract runs on the reference and on ours)."""
    if request.param == "simple":
        return SimpleVectorStore()
    path = None if request.param == "fieldrank" else tmp_path / "li.db"
    return FieldrankVectorStore(MemoryStore(path, DIM))


def _ids(store, **query):
    query.setdefault("similarity_top_k", len(TEXTS))
    return store.query(VectorStoreQuery(**query)).ids


def test_add_returns_ids_and_a_node_finds_itself_first(pair):
    nodes = _nodes()
    assert pair.add(nodes) == [n.node_id for n in nodes]
    for node in nodes:
        assert _ids(pair, query_embedding=node.embedding, similarity_top_k=1) == [node.node_id]
    assert len(_ids(pair, query_embedding=nodes[0].embedding, similarity_top_k=3)) == 3


def test_delete_by_ref_doc_id_removes_every_node_of_that_document(pair):
    pair.add(_nodes())
    pair.delete("doc1")  # n2 and n3
    assert sorted(_ids(pair, query_embedding=_nodes()[2].embedding)) == ["n0", "n1", "n4", "n5"]
    pair.delete("doc-unknown")  # a no-op, as in LlamaIndex's stores
    assert len(_ids(pair, query_embedding=_nodes()[2].embedding)) == 4


FILTERS = [
    MetadataFilters(filters=[MetadataFilter(key="topic", value="dog")]),
    MetadataFilters(filters=[MetadataFilter(key="rank", value=2, operator=FilterOperator.GT)]),
    MetadataFilters(filters=[MetadataFilter(key="rank", value=[0, 5], operator=FilterOperator.IN)]),
    MetadataFilters(filters=[MetadataFilter(key="rank", value=[0, 5], operator=FilterOperator.NIN)]),
    MetadataFilters(filters=[MetadataFilter(key="topic", value="home"), MetadataFilter(key="rank", value=1)],
                    condition=FilterCondition.OR),
    MetadataFilters(filters=[MetadataFilter(key="tags", value="a", operator=FilterOperator.CONTAINS)]),
]


@pytest.mark.parametrize("filters", FILTERS, ids=range(len(FILTERS)))
def test_metadata_filters_select_what_simple_vector_store_selects(filters):
    reference, ours = SimpleVectorStore(), FieldrankVectorStore(MemoryStore(dim=DIM))
    for store in (reference, ours):
        store.add(_nodes())
    query = {"query_embedding": _nodes()[3].embedding, "filters": filters}
    assert sorted(_ids(ours, **query)) == sorted(_ids(reference, **query))
    assert _ids(ours, **query)  # every filter here selects something


def test_nested_filters_are_refused_as_simple_vector_store_refuses_them():
    nested = MetadataFilters(filters=[MetadataFilter(key="topic", value="home"), MetadataFilters(
        filters=[MetadataFilter(key="rank", value=3, operator=FilterOperator.LT)])])
    for store in (SimpleVectorStore(), FieldrankVectorStore(MemoryStore(dim=DIM))):
        store.add(_nodes())
        with pytest.raises(ValueError, match="Nested"):
            _ids(store, query_embedding=_nodes()[0].embedding, filters=nested)


def test_node_id_restriction_as_simple_vector_store():
    reference, ours = SimpleVectorStore(), FieldrankVectorStore(MemoryStore(dim=DIM))
    for store in (reference, ours):
        store.add(_nodes())
    query = {"query_embedding": _nodes()[0].embedding, "node_ids": ["n1", "n4"]}
    assert sorted(_ids(ours, **query)) == sorted(_ids(reference, **query)) == ["n1", "n4"]


def test_nodes_come_back_whole_get_delete_clear_and_reopen(tmp_path):
    store = FieldrankVectorStore(MemoryStore(tmp_path / "li.db", DIM))
    store.add(_nodes())
    result = store.query(VectorStoreQuery(query_embedding=_nodes()[2].embedding, similarity_top_k=2))
    assert result.nodes[0].get_content() == TEXTS[2] and result.nodes[0].metadata["topic"] == "dog"
    assert result.nodes[0].ref_doc_id == "doc1" and len(result.similarities) == 2
    assert [n.node_id for n in store.get_nodes(["n0", "n5"])] == ["n0", "n5"]
    assert sorted(n.node_id for n in store.get_nodes(filters=FILTERS[0])) == ["n2", "n3", "n5"]
    store.delete_nodes(["n0"])
    reopened = FieldrankVectorStore(MemoryStore(tmp_path / "li.db"))
    assert sorted(n.node_id for n in reopened.get_nodes()) == ["n1", "n2", "n3", "n4", "n5"]
    reopened.clear()
    assert reopened.get_nodes() == [] and _ids(reopened, query_embedding=_nodes()[1].embedding) == []


def test_text_hybrid_and_mmr_queries():
    store = FieldrankVectorStore(MemoryStore(dim=DIM))
    store.add(_nodes())
    assert _ids(store, query_str="rabies booster", mode=VectorStoreQueryMode.TEXT_SEARCH, similarity_top_k=1) == ["n3"]
    hybrid = _ids(store, query_str="kitchen budget", query_embedding=_nodes()[0].embedding, similarity_top_k=2)
    assert hybrid[0] == "n0"
    mmr = store.query(VectorStoreQuery(query_embedding=_nodes()[0].embedding, similarity_top_k=3,
                                       mode=VectorStoreQueryMode.MMR, mmr_threshold=0.5))
    assert mmr.ids[0] == "n0" and len(set(mmr.ids)) == 3
    with pytest.raises(ValueError, match="not supported"):
        store.query(VectorStoreQuery(query_embedding=_nodes()[0].embedding, mode=VectorStoreQueryMode.SVM))


def test_a_vector_store_index_queries_through_the_store():
    from llama_index.core import MockEmbedding, StorageContext, VectorStoreIndex
    from llama_index.core.schema import Document

    store = FieldrankVectorStore(MemoryStore(dim=8))
    index = VectorStoreIndex.from_documents([Document(text=t, id_=f"d{i}") for i, t in enumerate(TEXTS)],
                                            storage_context=StorageContext.from_defaults(vector_store=store),
                                            embed_model=MockEmbedding(embed_dim=8))
    found = index.as_retriever(similarity_top_k=2).retrieve("rabies booster")
    assert found[0].node.get_content() == "rabies booster in March"
    index.delete_ref_doc("d3")
    assert "rabies booster in March" not in [n.node.get_content() for n in index.as_retriever(similarity_top_k=6)
                                              .retrieve("rabies booster")]


def test_contradictory_filters_find_nothing_and_top_k_applies_after_filtering():
    contradictory = MetadataFilters(filters=[MetadataFilter(key="topic", value="dog"),
                                             MetadataFilter(key="topic", value="home")])
    dogs = MetadataFilters(filters=[MetadataFilter(key="topic", value="dog")])
    for store in (SimpleVectorStore(), FieldrankVectorStore(MemoryStore(dim=DIM))):
        store.add(_nodes())
        assert _ids(store, query_embedding=_nodes()[0].embedding, filters=contradictory) == []
        two = _ids(store, query_embedding=_nodes()[0].embedding, filters=dogs, similarity_top_k=2)
        assert len(two) == 2 and set(two) <= {"n2", "n3", "n5"}


# llama-index-core's own SimpleVectorStore tests, case by case, on both stores (their three nodes)
A, B, C = "node-weight-1-rank-a", "node-weight-2-rank-c", "node-weight-3-rank-c"


def _three():
    specs = [(A, [1.0, 0.0], 1.0, "a", ["medium", "high"], "6FTR78Yun"),
             (B, [0.0, 1.0], 2.0, "c", ["medium"], "6FTR78Ygl"),
             (C, [1.0, 1.0], 3.0, "c", ["low", "medium", "high"], "6FTR78Ztl")]
    return [TextNode(text="lorem ipsum", id_=node_id, embedding=vector,
                     relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=f"test-{i}")},
                     metadata={"weight": weight, "rank": rank, "quality": quality, "identifier": identifier})
            for i, (node_id, vector, weight, rank, quality, identifier) in enumerate(specs)]


def _f(key, value, operator=FilterOperator.EQ):
    return MetadataFilter(key=key, value=value, operator=operator)


UPSTREAM_CASES = [
    (None, 3, [C, A, B]),  # ties (A, B: equal cosine) in either order
    (MetadataFilters(filters=[_f("rank", "c")]), 3, [C, B]),
    (MetadataFilters(filters=[_f("rank", "c")]), 1, [C]),
    (MetadataFilters(filters=[_f("rank", "c"), _f("weight", 2.0)]), 3, [B]),
    (MetadataFilters(filters=[_f("weight", 2), _f("weight", 3)]), 3, []),
    (MetadataFilters(filters=[_f("unknown_field", "c")]), 3, []),
    (MetadataFilters(filters=[_f("rank", "c"), _f("weight", 1.0)], condition=FilterCondition.OR), 3, [C, A, B]),
    (MetadataFilters(filters=[_f("rank", "c"), _f("weight", 1.0)], condition=FilterCondition.AND), 3, []),
    (MetadataFilters(filters=[_f("rank", "a")], condition=FilterCondition.NOT), 3, [C, B]),
    (MetadataFilters(filters=[_f("weight", 1.0, FilterOperator.NE)]), 3, [C, B]),
    (MetadataFilters(filters=[_f("weight", 1.5, FilterOperator.GT)]), 3, [C, B]),
    (MetadataFilters(filters=[_f("weight", 1.0, FilterOperator.GTE)]), 3, [C, A, B]),
    (MetadataFilters(filters=[_f("weight", 1.0, FilterOperator.LTE)]), 3, [A]),
    (MetadataFilters(filters=[_f("rank", ["a", "c"], FilterOperator.IN)]), 3, [C, A, B]),
    (MetadataFilters(filters=[_f("rank", ["c"], FilterOperator.NIN)]), 3, [A]),
    (MetadataFilters(filters=[_f("quality", "high", FilterOperator.CONTAINS)]), 3, [C, A]),
    (MetadataFilters(filters=[_f("identifier", "6FTR78Y", FilterOperator.TEXT_MATCH)]), 3, [B, A]),  # a tie
    (MetadataFilters(filters=[_f("quality", ["high", "low"], FilterOperator.ANY)]), 3, [C, A]),
    (MetadataFilters(filters=[_f("quality", ["medium", "high"], FilterOperator.ALL)]), 3, [C, A]),
    (MetadataFilters(filters=[_f("not_existed_key", None, FilterOperator.IS_EMPTY)]), 3, [C, A, B]),
]


@pytest.mark.parametrize(("filters", "top_k", "expected"), UPSTREAM_CASES, ids=range(len(UPSTREAM_CASES)))
def test_simple_vector_store_cases_agree(filters, top_k, expected):
    for store in (SimpleVectorStore(), FieldrankVectorStore(MemoryStore(dim=2))):
        store.add(_three())
        ids = _ids(store, query_embedding=[1.0, 1.0], filters=filters, similarity_top_k=top_k)
        assert sorted(ids) == sorted(expected), type(store).__name__
        if C in expected:  # C is the one best match ([1, 1]); A and B tie
            assert ids[0] == C, type(store).__name__


def test_simple_vector_store_deletes_agree():
    for store in (SimpleVectorStore(), FieldrankVectorStore(MemoryStore(dim=2))):
        store.add(_three())
        store.delete("test-1")
        assert _ids(store, query_embedding=[1.0, 1.0], similarity_top_k=2) == [C, A]
        store.delete_nodes([A])
        assert _ids(store, query_embedding=[1.0, 1.0], similarity_top_k=3) == [C]
        store.clear()
        assert _ids(store, query_embedding=[1.0, 1.0], similarity_top_k=3) == []
