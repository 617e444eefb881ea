"""Haystack components: a retriever over a :class:`~fieldrank.HybridRetriever` and a ranker.

Needs ``haystack-ai`` (``pip install "fieldrank[integrations]"``).

* :class:`FieldrankRetriever`: ``run(query, top_k=None, query_embedding=None)`` ->
  ``{"documents": [...]}``.
* :class:`FieldrankRanker`: ``run(query, documents, top_k=None, query_embedding=None)``
  reranks documents from any retriever (their ``embedding`` is used when every document has
  one, else the ranker's embedder).

Documents carry the provenance under ``meta["fieldrank"]`` and the fused score as ``score``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from ..embed import Embedder, check_embedder
from ..hybrid import HybridRetriever
from ._common import (
    DEFAULT_RERANK_CONFIG,
    PROVENANCE_KEY,
    check_retriever,
    hit_provenance,
    missing_extra,
    rerank_candidates,
    unit_vector,
)

try:
    from haystack import Document, component
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("haystack", "haystack-ai", exc) from exc

__all__ = ["FieldrankRanker", "FieldrankRetriever"]


@component
class FieldrankRetriever:
    """Runs a :class:`~fieldrank.HybridRetriever`'s stack (its embedder, or ``query_embedding``).

    ``Document.id`` is the fieldrank document id as a string.
    """

    def __init__(self, retriever: HybridRetriever, top_k: Optional[int] = None, subset: Any = None) -> None:
        self.retriever = check_retriever(retriever)
        self.top_k = top_k
        self.subset = subset

    @component.output_types(documents=list[Document])
    def run(self, query: str, top_k: Optional[int] = None,
            query_embedding: Optional[list[float]] = None) -> dict[str, list[Document]]:
        vector = None
        if query_embedding is not None and self.retriever.config.needs_vector:
            vector = unit_vector(query_embedding, "query_embedding")
        result = self.retriever.search(query, vector, top_k if top_k is not None else self.top_k,
                                       subset=self.subset)
        documents = [Document(id=str(prov["id"]), content=text, score=prov["score"], meta={PROVENANCE_KEY: prov})
                     for text, prov in zip(result.texts, hit_provenance(result))]
        return {"documents": documents}


@component
class FieldrankRanker:
    """Reranks documents with a fieldrank stack (default ``rrf_cfsr``); keeps their meta.

    ``meta["fieldrank"]["input_rank"]`` is the document's 1-based position in the input.
    """

    def __init__(self, embedder: Optional[Embedder] = None, config: Any = DEFAULT_RERANK_CONFIG,
                 top_k: Optional[int] = None) -> None:
        self.embedder = check_embedder(embedder)
        self.config = config
        self.top_k = top_k

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: Optional[int] = None,
            query_embedding: Optional[list[float]] = None) -> dict[str, list[Document]]:
        if not documents:
            return {"documents": []}
        texts = [d.content or "" for d in documents]
        embeddings = [d.embedding for d in documents]
        vectors = np.asarray(embeddings, dtype=np.float32) if all(e is not None for e in embeddings) else None
        result = rerank_candidates(query, texts, vectors,
                                   query_vector=query_embedding if self.embedder is None else None,
                                   embedder=self.embedder, config=self.config,
                                   k=top_k if top_k is not None else self.top_k)
        out = []
        for prov in hit_provenance(result):
            position = prov.pop("id")
            doc = documents[position]
            out.append(Document(id=doc.id, content=doc.content, embedding=doc.embedding, score=prov["score"],
                                meta={**doc.meta, PROVENANCE_KEY: {**prov, "input_rank": position + 1}}))
        return {"documents": out}
