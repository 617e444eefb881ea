"""LangChain adapters: a retriever over a :class:`~fieldrank.HybridRetriever` and a reranker.

Needs ``langchain-core`` (``pip install "fieldrank[integrations]"``).

* :class:`FieldrankRetriever` is a ``BaseRetriever``: ``invoke("text")`` runs the retriever's
  stack (its embedder embeds the query) and returns ``Document``s.
* :class:`FieldrankCompressor` is a ``BaseDocumentCompressor``: it reranks the documents
  another retriever returned (use it in a ``ContextualCompressionRetriever``).
* :class:`LangChainEmbedder` turns any LangChain ``Embeddings`` into a fieldrank
  :class:`~fieldrank.embed.Embedder`.

Every returned ``Document`` carries the provenance under ``metadata["fieldrank"]`` (see
:func:`fieldrank.integrations.hit_provenance`); the compressor also records the document's
position in its input as ``input_rank``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..embed import Embedder
from ..hybrid import HybridRetriever
from ._common import DEFAULT_RERANK_CONFIG, PROVENANCE_KEY, hit_provenance, missing_extra, rerank_candidates, unit_rows

try:
    from langchain_core.callbacks import CallbackManagerForRetrieverRun, Callbacks
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("langchain", "langchain-core", exc) from exc

__all__ = ["FieldrankCompressor", "FieldrankRetriever", "LangChainEmbedder"]


class LangChainEmbedder:
    """A fieldrank :class:`~fieldrank.embed.Embedder` over a LangChain ``Embeddings``.

    Rows are L2-normalised here (LangChain embeddings need not be); ``dim`` is probed once.
    """

    def __init__(self, embeddings: Embeddings, dim: Optional[int] = None) -> None:
        if not isinstance(embeddings, Embeddings):
            msg = f"embeddings must be a langchain_core Embeddings, got {type(embeddings).__name__}"
            raise TypeError(msg)
        self.embeddings = embeddings
        self._dim = int(dim) if dim is not None else len(embeddings.embed_query("dimension probe"))

    @property
    def dim(self) -> int:
        return self._dim

    def __repr__(self) -> str:
        return f"LangChainEmbedder({type(self.embeddings).__name__}, dim={self._dim})"

    @staticmethod
    def _unit(rows: list[list[float]]) -> np.ndarray:
        return unit_rows(np.asarray(rows, dtype=np.float64).reshape(len(rows), -1))

    def embed_documents(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                        progress: Optional[bool] = None) -> np.ndarray:
        return self._unit(self.embeddings.embed_documents(list(texts)))

    def embed_queries(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                      progress: Optional[bool] = None) -> np.ndarray:
        return self._unit([self.embeddings.embed_query(t) for t in texts])


def _as_embedder(embedder: Any) -> Optional[Embedder]:
    return LangChainEmbedder(embedder) if isinstance(embedder, Embeddings) else embedder


class FieldrankRetriever(BaseRetriever):
    """A LangChain retriever running a :class:`~fieldrank.HybridRetriever`'s stack.

    Parameters
    ----------
    retriever : HybridRetriever
        With an ``embedder`` when its configuration has dense legs (queries arrive as text).
    k : int, optional
        Documents per query (default: the configuration's k).
    subset : ids or boolean mask, optional
        Restrict every query to these documents (a tenant, a conversation).

    ``Document.id`` is the fieldrank document id as a string.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    retriever: HybridRetriever
    k: Optional[int] = None
    subset: Optional[Any] = None

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        result = self.retriever.search(query, k=self.k, subset=self.subset)
        return [Document(page_content=text, id=str(prov["id"]), metadata={PROVENANCE_KEY: prov})
                for text, prov in zip(result.texts, hit_provenance(result))]


class FieldrankCompressor(BaseDocumentCompressor):
    """Reranks another retriever's documents with a fieldrank stack (default ``rrf_cfsr``).

    Parameters
    ----------
    embedder : fieldrank Embedder or LangChain Embeddings
        Embeds the documents and the query (same model on both sides).
    config : default ``"rrf_cfsr"``
        Any configuration :class:`~fieldrank.HybridRetriever` takes; see
        :func:`fieldrank.integrations.rerank_candidates` for how the pool becomes a corpus.
    top_n : int, optional
        Documents to keep (default: the configuration's k).

    The documents' own metadata is kept; ``metadata["fieldrank"]`` is added (with
    ``input_rank``, the 1-based position the first-stage retriever gave it).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    embedder: Any
    config: Any = DEFAULT_RERANK_CONFIG
    top_n: Optional[int] = None
    _embedder: Optional[Embedder] = PrivateAttr(default=None)

    def model_post_init(self, context: Any) -> None:
        # A LangChain Embeddings is wrapped once (its dimension probed once), not per call.
        self._embedder = _as_embedder(self.embedder)

    def compress_documents(self, documents: Sequence[Document], query: str,
                           callbacks: Optional[Callbacks] = None) -> Sequence[Document]:
        docs = list(documents)
        if not docs:
            return []
        result = rerank_candidates(query, [d.page_content for d in docs], embedder=self._embedder,
                                   config=self.config, k=self.top_n)
        out = []
        for prov in hit_provenance(result):
            doc = docs[prov["id"]]
            prov = {**prov, "input_rank": prov["id"] + 1}
            del prov["id"]
            out.append(Document(page_content=doc.page_content, id=doc.id,
                                metadata={**doc.metadata, PROVENANCE_KEY: prov}))
        return out
