"""LangChain's own standard tests (``langchain-tests``), subclassed and pointed at fieldrank's
adapters: ``VectorStoreIntegrationTests`` on :class:`FieldrankVectorStore` (in memory and on a
SQLite file) and ``RetrieversIntegrationTests`` on the three retrievers. Nothing is skipped or
expected to fail (docs/ecosystem.md, "The frameworks' own test suites")."""

from __future__ import annotations

import pytest

pytest.importorskip("langchain_tests", reason="needs langchain-tests (in the test extra)")

from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import DeterministicFakeEmbedding  # noqa: E402
from langchain_tests.integration_tests import (  # noqa: E402
    RetrieversIntegrationTests,
    VectorStoreIntegrationTests,
)

from fieldrank import HybridRetriever, MemoryStore  # noqa: E402
from fieldrank.integrations.langchain import (  # noqa: E402
    FieldrankMemoryRetriever,
    FieldrankRetriever,
    FieldrankVectorStore,
)

from tests.retriever.test_embed import HashEmbedder  # noqa: E402

CORPUS = ["The kitchen budget is around $40k.", "Cabinets eat half the budget.", "The dog needs a rabies shot.",
          "The vet booked the rabies booster for March.", "We repaint the hallway in spring."]


#: The suites' async tests are bare ``async def`` (LangChain runs pytest-asyncio in auto mode) and the
#: suites refuse overridden tests: each class is marked for pytest-asyncio as a whole, and the
#: plugin's note that the sync tests carry the mark too is expected.
ASYNC_SUITE = [pytest.mark.asyncio, pytest.mark.filterwarnings(
    "ignore:.*is marked with '@pytest.mark.asyncio' but it is not an async function:pytest.PytestWarning")]


class TestVectorStoreInMemory(VectorStoreIntegrationTests):
    pytestmark = ASYNC_SUITE

    @pytest.fixture
    def vectorstore(self):
        embedding = self.get_embeddings()
        return FieldrankVectorStore(MemoryStore(dim=len(embedding.embed_query("x"))), embedding)


class TestVectorStoreOnFile(VectorStoreIntegrationTests):
    pytestmark = ASYNC_SUITE

    @pytest.fixture
    def vectorstore(self, tmp_path):
        embedding = self.get_embeddings()
        with MemoryStore(tmp_path / "lc.db", len(embedding.embed_query("x"))) as store:
            yield FieldrankVectorStore(store, embedding)


class TestMemoryRetriever(RetrieversIntegrationTests):
    pytestmark = ASYNC_SUITE

    @property
    def retriever_constructor(self):
        return FieldrankMemoryRetriever

    @property
    def retriever_constructor_params(self):
        store = MemoryStore(embedder=HashEmbedder(dim=32))
        for text in CORPUS:
            store.add(text)
        return {"store": store}

    @property
    def retriever_query_example(self):
        return "rabies"


class TestHybridRetriever(RetrieversIntegrationTests):
    pytestmark = ASYNC_SUITE

    @property
    def retriever_constructor(self):
        return FieldrankRetriever

    @property
    def retriever_constructor_params(self):
        return {"retriever": HybridRetriever(CORPUS, config="rrf_cfsr", embedder=HashEmbedder(dim=32))}

    @property
    def retriever_query_example(self):
        return "rabies"


class TestVectorStoreRetriever(RetrieversIntegrationTests):
    """The vector store's ``as_retriever()``: LangChain's own retriever class, so the suite's
    ``k`` constructor test is the store's ``search_kwargs``."""

    pytestmark = ASYNC_SUITE

    @property
    def retriever_constructor(self):
        def build(k: int = 4):
            embedding = DeterministicFakeEmbedding(size=16)
            vectorstore = FieldrankVectorStore(MemoryStore(dim=16), embedding)
            vectorstore.add_documents([Document(page_content=text) for text in CORPUS])
            return vectorstore.as_retriever(search_kwargs={"k": k})

        return build

    @property
    def retriever_constructor_params(self):
        return {}

    @property
    def retriever_query_example(self):
        return "rabies"
