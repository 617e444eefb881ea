"""LlamaIndex adapters: a retriever over a :class:`~fieldrank.HybridRetriever` and a node postprocessor.

Needs ``llama-index-core`` (``pip install "fieldrank[integrations]"``).

* :class:`FieldrankLlamaRetriever` is a ``BaseRetriever``: it uses the ``QueryBundle``'s
  embedding when there is one, else the retriever's embedder.
* :class:`FieldrankNodePostprocessor` reranks the nodes another retriever returned, using the
  nodes' own embeddings when all of them have one, else its embedder.

Returned nodes carry the provenance under ``metadata["fieldrank"]`` (the postprocessor adds
``input_rank``) and the fused score as ``NodeWithScore.score``.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

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
    from llama_index.core.bridge.pydantic import ConfigDict, Field
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("llama_index", "llama-index-core", exc) from exc

__all__ = ["FieldrankLlamaRetriever", "FieldrankNodePostprocessor"]


class FieldrankLlamaRetriever(BaseRetriever):
    """A LlamaIndex retriever running a :class:`~fieldrank.HybridRetriever`'s stack.

    Parameters
    ----------
    retriever : HybridRetriever
    k : int, optional
        Nodes per query (default: the configuration's k).
    subset : ids or boolean mask, optional
        Restrict every query to these documents.

    ``TextNode.id_`` is the fieldrank document id as a string.
    """

    def __init__(self, retriever: HybridRetriever, k: Optional[int] = None, subset: Any = None,
                 callback_manager: Optional[CallbackManager] = None) -> None:
        self._retriever = check_retriever(retriever)
        self._k = k
        self._subset = subset
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vector = None
        if query_bundle.embedding is not None and self._retriever.config.needs_vector:
            vector = unit_vector(query_bundle.embedding, "query_bundle.embedding")
        result = self._retriever.search(query_bundle.query_str, vector, self._k, subset=self._subset)
        return [NodeWithScore(node=TextNode(text=text, id_=str(prov["id"]), metadata={PROVENANCE_KEY: prov}),
                              score=prov["score"])
                for text, prov in zip(result.texts, hit_provenance(result))]


class FieldrankNodePostprocessor(BaseNodePostprocessor):
    """Reranks nodes with a fieldrank stack (default ``rrf_cfsr``).

    Parameters
    ----------
    embedder : fieldrank Embedder, optional
        Embeds the query and, unless every node has an embedding, the nodes. Without one the
        nodes' embeddings and the ``QueryBundle``'s embedding are used.
    config : default ``"rrf_cfsr"``
    top_n : int, optional
        Nodes to keep (default: the configuration's k).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    embedder: Any = Field(default=None, description="a fieldrank Embedder")
    config: Any = Field(default=DEFAULT_RERANK_CONFIG, description="a fieldrank configuration")
    top_n: Optional[int] = Field(default=None, description="nodes to keep")

    @classmethod
    def class_name(cls) -> str:
        return "FieldrankNodePostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore],
                           query_bundle: Optional[QueryBundle] = None) -> list[NodeWithScore]:
        if query_bundle is None:
            msg = "FieldrankNodePostprocessor needs the query (a QueryBundle)"
            raise ValueError(msg)
        if not nodes:
            return []
        texts = [n.node.get_content() for n in nodes]
        embeddings = [n.node.embedding for n in nodes]
        vectors = np.asarray(embeddings, dtype=np.float32) if all(e is not None for e in embeddings) else None
        query_vector = None
        if query_bundle.embedding is not None and self.embedder is None:
            query_vector = query_bundle.embedding
        result = rerank_candidates(query_bundle.query_str, texts, vectors, query_vector=query_vector,
                                   embedder=self.embedder, config=self.config, k=self.top_n)
        out = []
        for prov in hit_provenance(result):
            position = prov.pop("id")
            node = nodes[position].node.model_copy(deep=False)
            node.metadata = {**node.metadata, PROVENANCE_KEY: {**prov, "input_rank": position + 1}}
            out.append(NodeWithScore(node=node, score=prov["score"]))
        return out
