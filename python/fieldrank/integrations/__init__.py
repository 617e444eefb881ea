"""Thin adapters to the frameworks and engines agents are built with (each an optional extra).

Import the module of the framework you use; none is imported by ``import fieldrank``:

========================  ==================================================  =====================
module                    what                                                needs
========================  ==================================================  =====================
``.mcp_server``           the ``fieldrank mcp`` server over a MemoryStore     ``mcp``
``.langchain``            ``FieldrankVectorStore`` (VectorStore over a        ``langchain-core``
                          MemoryStore), ``FieldrankMemoryRetriever``,
                          ``FieldrankRetriever`` (BaseRetriever),
                          ``FieldrankCompressor`` (BaseDocumentCompressor)
``.langgraph``            ``FieldrankStore`` (LangGraph's ``BaseStore``     ``langgraph``
                          over a MemoryStore)
``.llama_index``          ``FieldrankVectorStore`` (a vector store over a     ``llama-index-core``
                          MemoryStore), ``FieldrankMemoryRetriever``,
                          ``FieldrankMemoryBlock`` (a MemoryStore),
                          ``FieldrankLlamaRetriever`` (BaseRetriever),
                          ``FieldrankNodePostprocessor``
``.haystack``             ``FieldrankDocumentStore`` (a MemoryStore) and      ``haystack-ai``
                          ``FieldrankEmbeddingRetriever``,
                          ``FieldrankMemoryRetriever``,
                          ``FieldrankMemoryWriter`` (a MemoryStore),
                          ``FieldrankRetriever``, ``FieldrankRanker``
                          (``@component``, serializable)
``.vectordb``             candidates from Qdrant / LanceDB as pool arrays     ``qdrant-client`` /
                                                                              ``lancedb``
``.ray``                  ``SearchActor`` and ``search_dataset`` for          ``ray[data]``
                          Ray Data ``map_batches``
========================  ==================================================  =====================

Every document, node or row the retrievers, rerankers and memory components return keeps
fieldrank's provenance under the metadata key :data:`PROVENANCE_KEY` (``"fieldrank"``): the hit's
id, rank, fused score, configuration and, per leg, its rank, raw score and RRF share (and the
CFS-R coefficient). The document stores (``FieldrankVectorStore``, ``FieldrankDocumentStore``)
return documents as they were written, as their frameworks' suites require.
"""

from ._common import PROVENANCE_KEY, hit_provenance, rerank_candidates

__all__ = ["PROVENANCE_KEY", "hit_provenance", "rerank_candidates"]
