"""Thin adapters to the frameworks and engines agents are built with (each an optional extra).

Import the module of the framework you use; none is imported by ``import fieldrank``:

========================  ==================================================  =====================
module                    what                                                needs
========================  ==================================================  =====================
``.langchain``            ``FieldrankRetriever`` (BaseRetriever),             ``langchain-core``
                          ``FieldrankCompressor`` (BaseDocumentCompressor)
``.llama_index``          ``FieldrankLlamaRetriever`` (BaseRetriever),        ``llama-index-core``
                          ``FieldrankNodePostprocessor``
``.haystack``             ``FieldrankRetriever``, ``FieldrankRanker``         ``haystack-ai``
                          (``@component``)
``.vectordb``             candidates from Qdrant / LanceDB as pool arrays     ``qdrant-client`` /
                                                                              ``lancedb``
``.ray``                  ``SearchActor`` and ``search_dataset`` for          ``ray[data]``
                          Ray Data ``map_batches``
========================  ==================================================  =====================

Every document, node or row these return keeps fieldrank's provenance under the metadata key
:data:`PROVENANCE_KEY` (``"fieldrank"``): the hit's id, rank, fused score, configuration and,
per leg, its rank, raw score and RRF share (and the CFS-R coefficient).
"""

from ._common import PROVENANCE_KEY, hit_provenance, rerank_candidates

__all__ = ["PROVENANCE_KEY", "hit_provenance", "rerank_candidates"]
