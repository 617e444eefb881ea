"""LlamaIndex adapters: a retriever over a :class:`~fieldrank.HybridRetriever` and a node postprocessor.

Needs ``llama-index-core`` (``pip install ".[integrations]"`` in a fieldrank checkout).

* :class:`FieldrankLlamaRetriever` is a ``BaseRetriever``: it uses the ``QueryBundle``'s
  embedding when there is one, else the retriever's embedder.
* :class:`FieldrankVectorStore` is a ``BasePydanticVectorStore`` over a :class:`~fieldrank.MemoryStore`
  (``add`` nodes, ``delete(ref_doc_id)``, ``delete_nodes``, ``get_nodes``, ``clear``,
  ``query(VectorStoreQuery)`` with metadata filters, node and document ids, hybrid/text/MMR modes):
  a ``VectorStoreIndex`` built on it recalls with the store's fused ranking.
* :class:`FieldrankNodePostprocessor` reranks the nodes another retriever returned, using the
  nodes' own embeddings when all of them have one, else its embedder.

Returned nodes carry the provenance under ``metadata["fieldrank"]`` (the postprocessor adds
``input_rank``) and the fused score as ``NodeWithScore.score``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from ..hybrid import HybridRetriever
from ..memory import DEFAULT_TENANT, MemoryStore
from . import _common

try:
    from llama_index.core.bridge.pydantic import BaseModel, ConfigDict, Field, PrivateAttr
    from llama_index.core.callbacks import CallbackManager
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.base.llms.types import ChatMessage
    from llama_index.core.memory import BaseMemoryBlock
    from llama_index.core.schema import BaseNode, MetadataMode, NodeWithScore, QueryBundle, TextNode
    from llama_index.core.vector_stores.types import (
        BasePydanticVectorStore,
        MetadataFilters,
        VectorStoreQuery,
        VectorStoreQueryMode,
        VectorStoreQueryResult,
    )
    from llama_index.core.vector_stores.utils import (
        build_metadata_filter_fn,
        metadata_dict_to_node,
        node_to_metadata_dict,
    )
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise _common.missing_extra("llama_index", "llama-index-core", exc) from exc

__all__ = ["FieldrankLlamaRetriever", "FieldrankMemoryBlock", "FieldrankMemoryRetriever", "FieldrankNodePostprocessor",
           "FieldrankVectorStore", "LlamaIndexEmbedder"]


class LlamaIndexEmbedder(_common.FrameworkEmbedder):
    """A fieldrank :class:`~fieldrank.embed.Embedder` over a LlamaIndex embed model
    (``BaseEmbedding``); rows are L2-normalised here, ``dim`` probed once."""

    def __init__(self, embed_model: BaseEmbedding) -> None:
        if not isinstance(embed_model, BaseEmbedding):
            msg = f"embed_model must be a llama_index BaseEmbedding, got {type(embed_model).__name__}"
            raise TypeError(msg)
        self.embed_model = embed_model
        super().__init__(embed_model.get_text_embedding_batch, embed_model.get_query_embedding)


class _WholePickle:
    """Pickling that keeps every field and private attribute: LlamaIndex's components drop, with a
    logged warning, whatever a plain ``pickle.dumps`` refuses (so a store held by an adapter would
    vanish from the copy); the adapter pickles whole or raises."""

    def __getstate__(self) -> dict[str, Any]:
        return BaseModel.__getstate__(self)  # type: ignore[arg-type]

    def __setstate__(self, state: dict[str, Any]) -> None:
        BaseModel.__setstate__(self, state)  # type: ignore[arg-type]


def _node(text: str, node_id: str, metadata: dict[str, Any]) -> TextNode:
    """A TextNode whose provenance is kept from the LLM's and the embedder's view of the metadata
    (it is a JSON of legs and scores: useful to the program, noise in a prompt)."""
    return TextNode(text=text, id_=node_id, metadata=metadata, excluded_llm_metadata_keys=[_common.PROVENANCE_KEY],
                    excluded_embed_metadata_keys=[_common.PROVENANCE_KEY])


def _metadata_mask(filters: MetadataFilters, metadatas: list[dict[str, Any]]) -> np.ndarray:
    """A boolean mask of the documents whose metadata passes LlamaIndex ``MetadataFilters``, by
    LlamaIndex's own filter function (what its SimpleVectorStore applies)."""
    if not isinstance(filters, MetadataFilters):
        msg = f"filters must be a llama_index MetadataFilters, got {type(filters).__name__}"
        raise TypeError(msg)
    passes = build_metadata_filter_fn(lambda position: metadatas[int(position)], filters)
    return np.array([passes(str(position)) for position in range(len(metadatas))], dtype=bool)


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
        self._retriever = _common.check_retriever(retriever)
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
            vector = _common.unit_vector(query_bundle.embedding, "query_bundle.embedding")
        if isinstance(self._subset, np.ndarray) and self._subset.dtype == bool and not self._subset.any():
            return []
        result = self._retriever.search(query_bundle.query_str, vector, self._k, subset=self._subset)
        return [NodeWithScore(node=_node(text, str(prov["id"]),
                                         {**(self._metadatas[prov["id"]] if self._metadatas else {}),
                                          _common.PROVENANCE_KEY: prov}),
                              score=prov["score"])
                for text, prov in zip(result.texts, _common.hit_provenance(result))]


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
        self._store = _common.check_store(store)
        self._tenant = tenant
        self._k = similarity_top_k
        self._mode = mode
        _common.memory_gates(filters, "filters")
        self._filters = filters
        super().__init__(callback_manager=callback_manager)

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        records = _common.memory_recall(self._store, query_bundle.query_str, tenant=self._tenant, k=self._k,
                                        mode=self._mode, filters=self._filters)
        return [NodeWithScore(node=_node(record["text"], str(record["id"]),
                                         {key: value for key, value in _common.memory_metadata(record).items()
                                          if value is not None}), score=record["score"])
                for record in records]

    def insert(self, nodes: list[Any]) -> list[str]:
        """Store nodes as memories (their text and metadata); their memory ids."""
        return [str(_common.memory_add(self._store, n.get_content(), {k: v for k, v in n.metadata.items()},
                               tenant=self._tenant, where="insert")) for n in nodes]

    def insert_texts(self, texts: list[str]) -> list[str]:
        return [str(_common.memory_add(self._store, t, {}, tenant=self._tenant, where="insert_texts")) for t in texts]


class FieldrankMemoryBlock(_WholePickle, BaseMemoryBlock[str]):
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
        _common.check_store(self.store)
        _common.memory_gates(self.filters, "filters")

    async def _aget(self, messages: Optional[list[ChatMessage]] = None, **block_kwargs: Any) -> str:
        query = " ".join(m.content or "" for m in (messages or [])[-3:]).strip()
        if not query:
            return ""
        records = _common.memory_recall(self.store, query, tenant=self.tenant, k=self.k, mode=None, filters=self.filters)
        return "\n".join(f"- {r['text']}" for r in records)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        for message in messages:
            if message.content:
                _common.memory_add(self.store, f"{message.role.value}: {message.content}", {}, tenant=self.tenant,
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
    config: Any = Field(default=_common.DEFAULT_RERANK_CONFIG, description="a fieldrank configuration")
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
        result = _common.rerank_candidates(query_bundle.query_str, texts, vectors, query_vector=query_vector,
                                   embedder=embedder, config=self.config, k=self.top_n)
        out = []
        key = _common.PROVENANCE_KEY
        for prov in _common.hit_provenance(result):
            position = prov.pop("id")
            node = nodes[position].node.model_copy(deep=False)
            node.metadata = {**node.metadata, key: {**prov, "input_rank": position + 1}}
            node.excluded_llm_metadata_keys = [*node.excluded_llm_metadata_keys, key]
            node.excluded_embed_metadata_keys = [*node.excluded_embed_metadata_keys, key]
            out.append(NodeWithScore(node=node, score=prov["score"]))
        return out



class FieldrankVectorStore(_WholePickle, BasePydanticVectorStore):
    """LlamaIndex's ``BasePydanticVectorStore`` over a :class:`~fieldrank.MemoryStore` (one tenant):
    ``VectorStoreIndex.from_documents(docs, storage_context=StorageContext.from_defaults(vector_store=
    FieldrankVectorStore(store)))``.

    Each node is one memory (its text, its embedding, and LlamaIndex's own metadata dict of the
    node as JSON in a tag), so the store holds the text (``stores_text``) and a file store
    persists the index. ``query`` ranks by the store's fused recall: the query embedding with the
    query text (``DEFAULT``/``HYBRID``: hybrid; the embedding alone: dense), the text alone
    (``TEXT_SEARCH``/``SPARSE``: BM25), or ``MMR`` by fieldrank's MMR operator (``mmr_threshold``
    is its mu, default 0.5). ``similarities`` are fused scores (higher is better; MMR: the
    documents' order only, no scores). ``filters``, ``node_ids`` and ``doc_ids`` restrict every
    query, ``filters`` by LlamaIndex's own filter function. Searches leave the memories' recall
    dynamics as they are unless ``reinforce=True``.
    """

    stores_text: bool = True
    is_embedding_query: bool = True
    flat_metadata: bool = False
    _collection: Any = PrivateAttr()
    _reinforce: bool = PrivateAttr(default=False)

    def __init__(self, store: MemoryStore, *, tenant: str = DEFAULT_TENANT, reinforce: bool = False) -> None:
        super().__init__(stores_text=True)
        self._collection = _common.DocumentCollection(store, tenant=tenant, prefix="li:")
        self._reinforce = bool(reinforce)

    @classmethod
    def class_name(cls) -> str:
        return "FieldrankVectorStore"

    @property
    def client(self) -> MemoryStore:
        """The wrapped :class:`~fieldrank.MemoryStore`."""
        return self._collection.store

    def add(self, nodes: Sequence[BaseNode], **add_kwargs: Any) -> list[str]:
        """Store the nodes (an existing node id is replaced); their ids."""
        for node in nodes:
            metadata = node_to_metadata_dict(node, remove_text=True, flat_metadata=self.flat_metadata)
            self._collection.put(node.node_id, node.get_content(metadata_mode=MetadataMode.NONE), metadata,
                                 node.embedding)
        return [node.node_id for node in nodes]

    def _node(self, doc: _common.StoredDocument) -> BaseNode:
        node = metadata_dict_to_node(doc.metadata, text=doc.text)
        node.embedding = None if doc.embedding is None else doc.embedding.tolist()
        return node

    def _keep(self, node_ids: Optional[list[str]] = None, doc_ids: Optional[list[str]] = None,
              filters: Optional[MetadataFilters] = None) -> Optional[Any]:
        # An empty list restricts nothing: a VectorStoreIndex over a store that keeps the text
        # passes node_ids=[] (its own node table is empty).
        if not node_ids and not doc_ids and filters is None:
            return None
        wanted_nodes = set(node_ids) if node_ids else None
        wanted_docs = set(doc_ids) if doc_ids else None
        passes = build_metadata_filter_fn(lambda _: current["metadata"], filters)
        current: dict[str, Any] = {}

        def keep(doc: _common.StoredDocument) -> bool:
            current["metadata"] = doc.metadata
            return ((wanted_nodes is None or doc.id in wanted_nodes)
                    and (wanted_docs is None or doc.metadata.get("ref_doc_id") in wanted_docs)
                    and passes(doc.id))

        return keep

    def _matching(self, node_ids: Optional[list[str]], filters: Optional[MetadataFilters]) -> list[_common.StoredDocument]:
        keep = self._keep(None, None, filters)
        docs = self._collection.documents(node_ids)
        return docs if keep is None else [doc for doc in docs if keep(doc)]

    def get_nodes(self, node_ids: Optional[list[str]] = None,
                  filters: Optional[MetadataFilters] = None) -> list[BaseNode]:
        return [self._node(doc) for doc in self._matching(node_ids, filters)]

    def delete(self, ref_doc_id: str, **delete_kwargs: Any) -> None:
        """Delete every node of this source document."""
        self._collection.delete([doc.id for doc in self._collection.documents()
                                 if doc.metadata.get("ref_doc_id") == ref_doc_id])

    def delete_nodes(self, node_ids: Optional[list[str]] = None, filters: Optional[MetadataFilters] = None,
                     **delete_kwargs: Any) -> None:
        self._collection.delete([doc.id for doc in self._matching(node_ids, filters)])

    def clear(self) -> None:
        self._collection.delete(self._collection.ids())

    def query(self, query: VectorStoreQuery, **kwargs: Any) -> VectorStoreQueryResult:
        keep = self._keep(query.node_ids, query.doc_ids, query.filters)
        text, vector, mode = query.query_str, query.query_embedding, None
        if query.mode in (VectorStoreQueryMode.TEXT_SEARCH, VectorStoreQueryMode.SPARSE):
            vector, mode = None, "keyword"
        elif query.mode == VectorStoreQueryMode.MMR:
            if vector is None:
                msg = "an MMR query needs query_embedding"
                raise ValueError(msg)
            mu = query.mmr_threshold if query.mmr_threshold is not None else kwargs.get("mmr_threshold") or 0.5
            docs = self._collection.mmr(text, vector, query.similarity_top_k, max(4 * query.similarity_top_k, 20),
                                        mu, keep=keep)
            return VectorStoreQueryResult(nodes=[self._node(doc) for doc in docs], ids=[doc.id for doc in docs])
        elif query.mode not in (VectorStoreQueryMode.DEFAULT, VectorStoreQueryMode.HYBRID):
            msg = f"query mode {query.mode.value!r} is not supported (default, hybrid, text_search, sparse, mmr)"
            raise ValueError(msg)
        if vector is None and not text:
            msg = "a query needs query_embedding or query_str"
            raise ValueError(msg)
        hits = self._collection.search(text, vector, query.similarity_top_k, mode=mode, keep=keep,
                                       reinforce=self._reinforce)
        return VectorStoreQueryResult(nodes=[self._node(doc) for doc, _ in hits],
                                      similarities=[float(hit.score) for _, hit in hits],
                                      ids=[doc.id for doc, _ in hits])
