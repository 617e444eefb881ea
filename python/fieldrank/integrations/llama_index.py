"""LlamaIndex adapters: a retriever over a :class:`~fieldrank.HybridRetriever` and a node postprocessor.

Needs ``llama-index-core`` (``pip install ".[integrations]"`` in a fieldrank checkout).

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
from ..memory import DEFAULT_TENANT
from ._common import (
    DEFAULT_RERANK_CONFIG,
    PROVENANCE_KEY,
    check_retriever,
    check_store,
    hit_provenance,
    memory_add,
    memory_gates,
    memory_recall,
    missing_extra,
    rerank_candidates,
    unit_rows,
    unit_vector,
)

try:
    from llama_index.core.bridge.pydantic import ConfigDict, Field
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import BaseMemoryBlock
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
    from llama_index.core.vector_stores.types import FilterCondition, FilterOperator, MetadataFilters
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("llama_index", "llama-index-core", exc) from exc

__all__ = ["FieldrankLlamaRetriever", "FieldrankMemoryBlock", "FieldrankMemoryRetriever", "FieldrankNodePostprocessor",
           "LlamaIndexEmbedder"]


class LlamaIndexEmbedder:
    """A fieldrank :class:`~fieldrank.embed.Embedder` over a LlamaIndex embed model
    (``BaseEmbedding``); rows are L2-normalised here, ``dim`` probed once."""

    def __init__(self, embed_model: BaseEmbedding) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            msg = f"embed_model must be a llama_index BaseEmbedding, got {type(embed_model).__name__}"
            raise TypeError(msg)
        self.embed_model = embed_model
        self._dim = len(embed_model.get_query_embedding("dimension probe"))

    @property
    def dim(self) -> int:
        return self._dim

    def embed_documents(self, texts: Any, *, batch_size: Optional[int] = None,
                        progress: Optional[bool] = None) -> np.ndarray:
        rows = self.embed_model.get_text_embedding_batch(list(texts))
        return unit_rows(np.asarray(rows, dtype=np.float64).reshape(len(rows), -1))

    def embed_queries(self, texts: Any, *, batch_size: Optional[int] = None,
                      progress: Optional[bool] = None) -> np.ndarray:
        rows = [self.embed_model.get_query_embedding(t) for t in texts]
        return unit_rows(np.asarray(rows, dtype=np.float64).reshape(len(rows), -1))


def _node(text: str, node_id: str, metadata: dict[str, Any]) -> TextNode:
    """A TextNode whose provenance is kept from the LLM's and the embedder's view of the metadata
    (it is a JSON of legs and scores: useful to the program, noise in a prompt)."""
    return TextNode(text=text, id_=node_id, metadata=metadata, excluded_llm_metadata_keys=[PROVENANCE_KEY],
                    excluded_embed_metadata_keys=[PROVENANCE_KEY])


def _metadata_mask(filters: MetadataFilters, metadatas: list[dict[str, Any]]) -> np.ndarray:
    """A boolean mask of the documents whose metadata passes LlamaIndex ``MetadataFilters``
    (operators ==, !=, in, nin, >, >=, <, <=; conditions and/or; nested filters)."""
    if not isinstance(filters, MetadataFilters):
        msg = f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}"
        raise TypeError(msg)
    tests = {FilterOperator.EQ: lambda v, x: v == x, FilterOperator.NE: lambda v, x: v != x,
             FilterOperator.IN: lambda v, x: v in x, FilterOperator.NIN: lambda v, x: v not in x,
             FilterOperator.GT: lambda v, x: v is not None and v > x,
             FilterOperator.GTE: lambda v, x: v is not None and v >= x,
             FilterOperator.LT: lambda v, x: v is not None and v < x,
             FilterOperator.LTE: lambda v, x: v is not None and v <= x}

    def passes(metadata: dict[str, Any], node: MetadataFilters) -> bool:
        results = []
        for item in node.filters:
            if isinstance(item, MetadataFilters):
                results.append(passes(metadata, item))
                continue
            if item.operator not in tests:
                msg = f"filters: operator {item.operator.value!r} is not supported (use one of {[o.value for o in tests]})"
                raise ValueError(msg)
            results.append(tests[item.operator](metadata.get(item.key), item.value))
        if node.condition == FilterCondition.OR:
            return any(results)
        if node.condition in (None, FilterCondition.AND):
            return all(results)
        msg = f"filters: condition {node.condition!r} is not supported (and, or)"
        raise ValueError(msg)

    return np.array([passes(m, filters) for m in metadatas], dtype=bool)


class FieldrankLlamaRetriever(BaseRetriever):
    """A LlamaIndex retriever running a :class:`~fieldrank.HybridRetriever`'s stack.

    Parameters
    ----------
    retriever : HybridRetriever
    similarity_top_k : int, optional
        Nodes per query (default: the configuration's k); ``k`` is the same argument.
    subset : ids or boolean mask, optional
        Restrict every query to these documents.
    metadatas : list of dict, optional
        One metadata dict per document, copied onto the nodes and matched by ``filters``.
    filters : MetadataFilters, optional
        LlamaIndex metadata filters over ``metadatas`` (==, !=, in, nin, <, <=, >, >=; and/or).

    ``TextNode.id_`` is the fieldrank document id as a string; the provenance is in
    ``metadata["fieldrank"]``, excluded from what the LLM and embedders see.
    """

    def __init__(self, retriever: HybridRetriever, similarity_top_k: Optional[int] = None, subset: Any = None,
                 callback_manager: Optional[CallbackManager] = None, *, k: Optional[int] = None,
                 metadatas: Optional[list[dict[str, Any]]] = None,
                 filters: Optional[MetadataFilters] = None) -> None:
        if k is not None and similarity_top_k is not None and k != similarity_top_k:
            msg = f"pass similarity_top_k or k, not both (got {similarity_top_k} and {k})"
            raise ValueError(msg)
        self._retriever = check_retriever(retriever)
        self._k = similarity_top_k if similarity_top_k is not None else k
        self._metadatas = metadatas
        if metadatas is not None and len(metadatas) != len(self._retriever.texts):
            msg = f"metadatas must have one dict per document ({len(self._retriever.texts)}), got {len(metadatas)}"
            raise ValueError(msg)
        self._subset = subset
        if filters is not None:
            if metadatas is None:
                msg = "filters need metadata: pass metadatas=[...] (one dict per document)"
                raise ValueError(msg)
            mask = _metadata_mask(filters, metadatas)
            if subset is not None:
                base = np.zeros(len(mask), dtype=bool)
                base[np.asarray(subset)] = True
                mask &= base
            self._subset = mask
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        vector = None
        if query_bundle.embedding is not None and self._retriever.config.needs_vector:
            vector = unit_vector(query_bundle.embedding, "query_bundle.embedding")
        if isinstance(self._subset, np.ndarray) and self._subset.dtype == bool and not self._subset.any():
            return []
        result = self._retriever.search(query_bundle.query_str, vector, self._k, subset=self._subset)
        return [NodeWithScore(node=_node(text, str(prov["id"]),
                                         {**(self._metadatas[prov["id"]] if self._metadatas else {}),
                                          PROVENANCE_KEY: prov}),
                              score=prov["score"])
                for text, prov in zip(result.texts, hit_provenance(result))]


class FieldrankMemoryRetriever(BaseRetriever):
    """A LlamaIndex retriever over a :class:`~fieldrank.MemoryStore` (one tenant).

    Parameters
    ----------
    store : MemoryStore
        With an embedder, or lexical (``MemoryStore(path, dim=1)``).
    tenant : str, default "default"
    similarity_top_k : int, default 5
    mode : str, optional
        Recall mode (default ``hybrid``; ``keyword`` for a lexical store).
    filters : dict, optional
        Gates ``{"tiers": [...], "required_tags": [...], "min_importance": x}``.

    ``insert(nodes)`` / ``insert_texts(texts)`` add memories (node metadata keys ``importance``,
    ``tier``, ``tags``, ``entities``, ``supersedes``, ``session``, ``valence``); nodes carry the
    memory's fields in metadata, the provenance under ``metadata["fieldrank"]`` (hidden from
    the LLM), and the score.
    """

    def __init__(self, store: Any, *, tenant: str = DEFAULT_TENANT, similarity_top_k: int = 5,
                 mode: Optional[str] = None, filters: Optional[dict[str, Any]] = None,
                 callback_manager: Optional[CallbackManager] = None) -> None:
        self._store = check_store(store)
        self._tenant = tenant
        self._k = similarity_top_k
        self._mode = mode
        memory_gates(filters, "filters")
        self._filters = filters
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        records = memory_recall(self._store, query_bundle.query_str, tenant=self._tenant, k=self._k,
                                mode=self._mode, filters=self._filters)
        out = []
        for record in records:
            metadata = {key: value for key, value in record.items()
                        if key not in ("text", "provenance", "id", "rank", "score") and value is not None}
            provenance = {"id": record["id"], "rank": record["rank"], "score": record["score"], **record["provenance"]}
            out.append(NodeWithScore(node=_node(record["text"], str(record["id"]),
                                                {**metadata, PROVENANCE_KEY: provenance}), score=record["score"]))
        return out

    def insert(self, nodes: list[Any]) -> list[str]:
        """Store nodes as memories (their text and metadata); their memory ids."""
        return [str(memory_add(self._store, n.get_content(), {k: v for k, v in n.metadata.items()},
                               tenant=self._tenant, where="insert")) for n in nodes]

    def insert_texts(self, texts: list[str]) -> list[str]:
        return [str(memory_add(self._store, t, {}, tenant=self._tenant, where="insert_texts")) for t in texts]


class FieldrankMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex ``Memory`` block over a :class:`~fieldrank.MemoryStore`: long-term memory for
    an agent. ``aget`` recalls the memories relevant to the latest messages (as text);
    ``aput`` stores the messages flushed from short-term memory, one memory each."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    name: str = Field(default="fieldrank_memory", description="the block's name")
    store: Any = Field(description="a fieldrank MemoryStore")
    tenant: str = Field(default=DEFAULT_TENANT, description="the tenant every call acts for")
    k: int = Field(default=5, description="memories recalled per get")
    filters: Optional[dict[str, Any]] = Field(default=None, description="recall gates")

    def model_post_init(self, context: Any) -> None:
        check_store(self.store)
        memory_gates(self.filters, "filters")

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        query = " ".join(m.content or "" for m in (messages or [])[-3:]).strip()
        if not query:
            return ""
        records = memory_recall(self.store, query, tenant=self.tenant, k=self.k, mode=None, filters=self.filters)
        return "\n".join(f"- {r['text']}" for r in records)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        for message in messages:
            if message.content:
                memory_add(self.store, f"{message.role.value}: {message.content}", {}, tenant=self.tenant,
                           where="aput")


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

    embedder: Any = Field(default=None, description="a fieldrank Embedder or a LlamaIndex embed model")
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
        embedder = self.embedder
        if isinstance(embedder, BaseEmbedding):
            embedder = LlamaIndexEmbedder(embedder)
        if vectors is None and embedder is None:
            msg = ("FieldrankNodePostprocessor: the nodes carry no embeddings (a VectorStoreIndex's retriever "
                   "returns nodes without them) and no embedder was given: pass embedder= (a fieldrank Embedder "
                   "or the index's LlamaIndex embed model, e.g. embedder=index._embed_model)")
            raise ValueError(msg)
        query_vector = None
        if query_bundle.embedding is not None and embedder is None:
            query_vector = query_bundle.embedding
        result = rerank_candidates(query_bundle.query_str, texts, vectors, query_vector=query_vector,
                                   embedder=embedder, config=self.config, k=self.top_n)
        out = []
        for prov in hit_provenance(result):
            position = prov.pop("id")
            node = nodes[position].node.model_copy(deep=False)
            node.metadata = {**node.metadata, PROVENANCE_KEY: {**prov, "input_rank": position + 1}}
            node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, PROVENANCE_KEY]
            node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, PROVENANCE_KEY]
            out.append(NodeWithScore(node=node, score=prov["score"]))
        return out
