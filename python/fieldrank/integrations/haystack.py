"""Haystack components: retrievers over a saved index or a memory store, a memory writer and a ranker.

Needs ``haystack-ai`` (``pip install ".[integrations]"`` in a fieldrank checkout).

* :class:`FieldrankRetriever`: ``run(query, filters=None, top_k=None, query_embedding=None)``
  -> ``{"documents": [...]}`` over a :class:`~fieldrank.HybridRetriever` (saved with ``save``
  and opened from ``index_dir`` so that the pipeline serializes).
* :class:`FieldrankMemoryRetriever` / :class:`FieldrankMemoryWriter`: recall from / write to a
  :class:`~fieldrank.MemoryStore` file for one tenant.
* :class:`FieldrankDocumentStore`: Haystack's ``DocumentStore`` over a :class:`~fieldrank.MemoryStore`
  (write with duplicate policies, filter with Haystack's own filter semantics, count, delete),
  searched by :class:`FieldrankEmbeddingRetriever` (``run(query_embedding, filters, top_k,
  query=None)``: the store's fused recall, dense, or hybrid when the query text is given too).
* :class:`FieldrankRanker`: ``run(query, documents, top_k=None, query_embedding=None)``
  reranks documents from any retriever (their ``embedding`` when every document has one, else
  the ranker's embedder); ``score_threshold`` and ``scale_score`` as Haystack's rankers.

Every component round-trips through ``to_dict``/``from_dict`` (embedders by model name), so
pipelines holding them ``dumps()`` and ``loads()`` (Haystack deserializes only trusted modules:
``Pipeline.loads(text, allowed_modules=["fieldrank.integrations.haystack"])``). Documents carry the provenance under
``meta["fieldrank"]`` and the fused score as ``score``; a retriever's document ids are
Haystack's own content ids (so ``DocumentJoiner`` merges the same text found by two retrievers).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, Optional

import numpy as np

from ..embed import Embedder, check_embedder
from ..hybrid import HybridRetriever
from ..memory import DEFAULT_TENANT, MemoryStore
from . import _common

try:
    from haystack import Document, component, default_from_dict, default_to_dict
    from haystack.document_stores.errors import DuplicateDocumentError
    from haystack.document_stores.types import DuplicatePolicy
    from haystack.utils.filters import document_matches_filter
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise _common.missing_extra("haystack", "haystack-ai", exc) from exc

__all__ = ["FieldrankDocumentStore", "FieldrankEmbeddingRetriever", "FieldrankMemoryRetriever", "FieldrankMemoryWriter",
           "FieldrankRanker", "FieldrankRetriever"]

def _check_filters(filters: Optional[dict[str, Any]]) -> Optional[dict[str, Any]]:
    """Haystack's filter syntax, checked as its InMemoryDocumentStore checks it (the conditions
    themselves are Haystack's: :func:`haystack.utils.filters.document_matches_filter`)."""
    if filters and "operator" not in filters and "conditions" not in filters:
        msg = "Invalid filter syntax. See https://docs.haystack.deepset.ai/docs/metadata-filtering for details."
        raise ValueError(msg)
    return filters or None


def _embedder_to_dict(embedder: Optional[Embedder]) -> Optional[str]:
    if embedder is None:
        return None
    name = getattr(embedder, "model_name", None)
    if not isinstance(name, str):
        msg = (f"cannot serialize the embedder {type(embedder).__name__}: to_dict records a "
               "SentenceTransformerEmbedder by its model name; other embedders cannot be written to YAML")
        raise TypeError(msg)
    return name


def _embedder_from_dict(name: Optional[str]) -> Optional[Embedder]:
    if name is None:
        return None
    from ..embed import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(name)


def _content_id(content: str, meta: Mapping[str, Any]) -> str:
    """Haystack's own id of a document with this content and meta (what a document store holds)."""
    return Document(content=content, meta=dict(meta)).id


@component
class FieldrankRetriever:
    """Runs a :class:`~fieldrank.HybridRetriever`'s stack (its embedder, or ``query_embedding``).

    Parameters
    ----------
    retriever : HybridRetriever, optional
        An open retriever; or
    index_dir : path, optional
        a directory written by ``HybridRetriever.save`` (what ``to_dict`` records: a pipeline
        with this component serializes only when it was built from ``index_dir``).
    embedder : Embedder, optional
        Embeds text queries (with ``index_dir``; a ``retriever`` brings its own).
    top_k : int, optional
    metadatas : list of dict, optional
        One meta dict per document: copied onto the returned documents and matched by
        ``filters`` (Haystack's filter syntax on ``meta.<key>``).

    ``Document.id`` is Haystack's content id of (text, meta); ``meta["fieldrank"]["id"]`` the
    fieldrank document id.
    """

    def __init__(self, retriever: Optional[HybridRetriever] = None, top_k: Optional[int] = None,
                 subset: Any = None, *, index_dir: Optional[str] = None, embedder: Optional[Embedder] = None,
                 metadatas: Optional[list[dict[str, Any]]] = None) -> None:
        if (retriever is None) == (index_dir is None):
            msg = "pass retriever= (an open HybridRetriever) or index_dir= (a saved one), exactly one"
            raise ValueError(msg)
        self.index_dir = None if index_dir is None else os.fspath(index_dir)
        self.embedder = check_embedder(embedder)
        if retriever is None and index_dir is not None:
            retriever = HybridRetriever.load(index_dir, embedder=self.embedder)
        self.retriever = _common.check_retriever(retriever)
        self.top_k = top_k
        self.subset = subset
        if metadatas is not None and len(metadatas) != len(self.retriever.texts):
            msg = f"metadatas must have one dict per document ({len(self.retriever.texts)}), got {len(metadatas)}"
            raise ValueError(msg)
        self.metadatas = metadatas

    def to_dict(self) -> dict[str, Any]:
        if self.index_dir is None:
            msg = ("FieldrankRetriever built from an open retriever cannot be serialized: save it "
                   "(retriever.save(directory)) and build the component with index_dir=directory")
            raise TypeError(msg)
        if self.subset is not None:
            msg = "FieldrankRetriever with subset= cannot be serialized: use metadatas and filters"
            raise TypeError(msg)
        return default_to_dict(self, index_dir=self.index_dir, top_k=self.top_k,
                               embedder=_embedder_to_dict(self.embedder), metadatas=self.metadatas)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FieldrankRetriever:
        params = data.get("init_parameters", {})
        params["embedder"] = _embedder_from_dict(params.get("embedder"))
        return default_from_dict(cls, data)

    def _subset(self, filters: Optional[dict[str, Any]]) -> Any:
        filters = _check_filters(filters)
        if filters is None:
            return self.subset
        if self.metadatas is None:
            msg = "filters need metadata: build the FieldrankRetriever with metadatas=[...] (one dict per document)"
            raise ValueError(msg)
        mask = np.array([document_matches_filter(filters, Document(content=text, meta=meta))
                         for text, meta in zip(self.retriever.texts, self.metadatas)], dtype=bool)
        if self.subset is not None:
            base = np.zeros(len(mask), dtype=bool)
            base[np.asarray(self.subset)] = True
            mask &= base
        return mask

    @component.output_types(documents=list[Document])
    def run(self, query: str, filters: Optional[dict[str, Any]] = None, top_k: Optional[int] = None,
            query_embedding: Optional[list[float]] = None) -> dict[str, list[Document]]:
        vector = None
        if query_embedding is not None and self.retriever.config.needs_vector:
            vector = _common.unit_vector(query_embedding, "query_embedding")
        subset = self._subset(filters)
        if isinstance(subset, np.ndarray) and subset.dtype == bool and not subset.any():
            return {"documents": []}
        result = self.retriever.search(query, vector, top_k if top_k is not None else self.top_k, subset=subset)
        documents = []
        for text, prov in zip(result.texts, _common.hit_provenance(result)):
            meta = dict(self.metadatas[prov["id"]]) if self.metadatas else {}
            documents.append(Document(id=_content_id(text, meta), content=text, score=prov["score"],
                                      meta={**meta, _common.PROVENANCE_KEY: prov}))
        return {"documents": documents}


def _open_store(path: str, embedder: Optional[Embedder]) -> MemoryStore:
    if embedder is not None:
        return MemoryStore(path, embedder=embedder)
    return MemoryStore(path, None if os.path.exists(path) else _common.LEXICAL_DIM)


class _MemoryComponent:
    """What the memory components share: one store file, one tenant, serializable by path."""

    def __init__(self, store_path: str, tenant: str, embedder: Optional[Embedder]) -> None:
        self.store_path = os.fspath(store_path)
        self.tenant = tenant
        self.embedder = check_embedder(embedder)
        self.store = _open_store(self.store_path, self.embedder)

    def _params(self) -> dict[str, Any]:
        return {"store_path": self.store_path, "tenant": self.tenant, "embedder": _embedder_to_dict(self.embedder)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        params = data.get("init_parameters", {})
        params["embedder"] = _embedder_from_dict(params.get("embedder"))
        return default_from_dict(cls, data)


@component
class FieldrankMemoryRetriever(_MemoryComponent):
    """Recalls memories of one tenant from a :class:`~fieldrank.MemoryStore` file.

    Parameters
    ----------
    store_path : path
        The SQLite store (created if missing; lexical when there is no embedder).
    tenant : str, default "default"
    embedder : Embedder, optional
        The store's embedder (a SentenceTransformerEmbedder serializes by model name).
    top_k : int, default 5
    mode : str, optional
        Recall mode (default ``hybrid``; ``keyword`` for a lexical store).

    ``run(query, filters=None, top_k=None)``: ``filters`` are the store's gates
    ``{"tiers": [...], "required_tags": [...], "min_importance": x}``. Documents carry the
    memory's fields in ``meta`` (dates, tier, tags, ...) and the provenance under
    ``meta["fieldrank"]``; ``Document.id`` is the memory id.
    """

    def __init__(self, store_path: str, tenant: str = DEFAULT_TENANT, embedder: Optional[Embedder] = None,
                 top_k: int = 5, mode: Optional[str] = None) -> None:
        _MemoryComponent.__init__(self, store_path, tenant, embedder)
        self.top_k = top_k
        self.mode = mode

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, **self._params(), top_k=self.top_k, mode=self.mode)

    @component.output_types(documents=list[Document])
    def run(self, query: str, filters: Optional[dict[str, Any]] = None,
            top_k: Optional[int] = None) -> dict[str, list[Document]]:
        records = _common.memory_recall(self.store, query, tenant=self.tenant,
                                        k=top_k if top_k is not None else self.top_k, mode=self.mode, filters=filters)
        return {"documents": [Document(id=str(record["id"]), content=record["text"], score=record["score"],
                                       meta=_common.memory_metadata(record)) for record in records]}


@component
class FieldrankMemoryWriter(_MemoryComponent):
    """Writes documents as memories of one tenant into a :class:`~fieldrank.MemoryStore` file.

    Meta keys ``importance``, ``tier``, ``tags``, ``entities``, ``supersedes``, ``session`` and
    ``valence`` are stored; any other meta key is refused (a ValueError naming it).
    ``run(documents)`` -> ``{"documents_written": n, "ids": [...]}``.
    """

    def __init__(self, store_path: str, tenant: str = DEFAULT_TENANT, embedder: Optional[Embedder] = None) -> None:
        _MemoryComponent.__init__(self, store_path, tenant, embedder)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, **self._params())

    @component.output_types(documents_written=int, ids=list[int])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        ids = [_common.memory_add(self.store, d.content or "", d.meta, tenant=self.tenant, where=f"document {d.id}")
               for d in documents]
        return {"documents_written": len(ids), "ids": ids}


@component
class FieldrankRanker:
    """Reranks documents with a fieldrank stack (default ``rrf_cfsr``); keeps everything else of
    each document (meta, embedding, sparse_embedding, blob).

    Parameters
    ----------
    embedder : Embedder, optional
        Embeds the documents (unless every one has an ``embedding``) and the query.
    config : default ``"rrf_cfsr"``
    top_k : int, optional
    score_threshold : float, optional
        Drop documents scoring below it (after scaling, when ``scale_score``).
    scale_score : bool, default False
        Scale the fused scores into (0, 1]: each divided by the best one's.

    ``meta["fieldrank"]["input_rank"]`` is the document's 1-based position in the input.
    """

    def __init__(self, embedder: Optional[Embedder] = None, config: Any = _common.DEFAULT_RERANK_CONFIG,
                 top_k: Optional[int] = None, score_threshold: Optional[float] = None,
                 scale_score: bool = False) -> None:
        self.embedder = check_embedder(embedder)
        self.config = config
        self.top_k = top_k
        self.score_threshold = score_threshold
        self.scale_score = scale_score

    def to_dict(self) -> dict[str, Any]:
        if not isinstance(self.config, str):
            msg = "FieldrankRanker with a custom configuration object cannot be serialized: use a preset name"
            raise TypeError(msg)
        return default_to_dict(self, embedder=_embedder_to_dict(self.embedder), config=self.config,
                               top_k=self.top_k, score_threshold=self.score_threshold, scale_score=self.scale_score)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FieldrankRanker:
        params = data.get("init_parameters", {})
        params["embedder"] = _embedder_from_dict(params.get("embedder"))
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query: str, documents: list[Document], top_k: Optional[int] = None,
            query_embedding: Optional[list[float]] = None) -> dict[str, list[Document]]:
        if not documents:
            return {"documents": []}
        texts = [d.content or "" for d in documents]
        embeddings = [d.embedding for d in documents]
        vectors = np.asarray(embeddings, dtype=np.float32) if all(e is not None for e in embeddings) else None
        if vectors is None and self.embedder is None:
            missing = sum(e is None for e in embeddings)
            msg = (f"FieldrankRanker: {missing} of {len(documents)} documents have no embedding and the ranker has "
                   "no embedder: give the ranker embedder=, or have the retriever return them "
                   "(e.g. InMemoryEmbeddingRetriever(..., return_embedding=True))")
            raise ValueError(msg)
        result = _common.rerank_candidates(query, texts, vectors,
                                   query_vector=query_embedding if self.embedder is None else None,
                                   embedder=self.embedder, config=self.config,
                                   k=top_k if top_k is not None else self.top_k)
        provenance = _common.hit_provenance(result)
        best = provenance[0]["score"] if provenance else 1.0
        out = []
        for prov in provenance:
            position = prov.pop("id")
            score = prov["score"] / best if self.scale_score and best > 0 else prov["score"]
            if self.score_threshold is not None and score < self.score_threshold:
                continue
            doc = documents[position]
            out.append(dataclasses.replace(doc, score=score,
                                           meta={**doc.meta, _common.PROVENANCE_KEY: {**prov, "input_rank": position + 1}}))
        return {"documents": out}



class FieldrankDocumentStore:
    """Haystack's ``DocumentStore`` over a :class:`~fieldrank.MemoryStore` (one tenant).

    Parameters
    ----------
    store : MemoryStore, optional
        An open store; or
    store_path : path, optional
        a SQLite store file (created with ``dim`` if missing; what ``to_dict`` records).
    dim : int, optional
        The embedding dimension of a new store file (default: the embedder's, else lexical).
    tenant : str, default "default"
    embedder : Embedder, optional
        Embeds documents written without an ``embedding`` (a SentenceTransformerEmbedder
        serializes by model name).

    A document is one memory: its id, meta and content round-trip as written; its embedding is
    kept as the store keeps every vector (float32, unit norm), so it returns normalised. A
    document without an embedding (and no embedder) is stored, counted and filtered, and never
    retrieved by :class:`FieldrankEmbeddingRetriever`. ``filters`` are Haystack's own
    (``haystack.utils.filters``): the same operators, ``content`` and ``meta.*`` fields, dates and
    ``FilterError``s. ``blob`` and ``sparse_embedding`` are not stored (refused, saying so).
    """

    def __init__(self, store: Optional[MemoryStore] = None, *, store_path: Optional[str] = None,
                 dim: Optional[int] = None, tenant: str = DEFAULT_TENANT, embedder: Optional[Embedder] = None) -> None:
        if (store is None) == (store_path is None):
            msg = "pass store= (an open MemoryStore) or store_path= (a store file), exactly one"
            raise ValueError(msg)
        self.embedder = check_embedder(embedder)
        if store is None:
            path = os.fspath(store_path)  # type: ignore[arg-type] # exactly one of store, store_path
            if self.embedder is not None:
                store = MemoryStore(path, dim, embedder=self.embedder)
            else:
                store = MemoryStore(path, dim if dim is not None or os.path.exists(path) else _common.LEXICAL_DIM)
        self._collection = _common.DocumentCollection(store, tenant=tenant, prefix="hs:")

    @property
    def store(self) -> MemoryStore:
        """The wrapped :class:`~fieldrank.MemoryStore`."""
        return self._collection.store

    def to_dict(self) -> dict[str, Any]:
        if self.store.path is None:
            msg = "a FieldrankDocumentStore over an in-memory MemoryStore cannot be serialized: give it a store file"
            raise TypeError(msg)
        return default_to_dict(self, store_path=self.store.path, dim=self.store.dim, tenant=self._collection.tenant,
                               embedder=_embedder_to_dict(self.embedder))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FieldrankDocumentStore:
        params = data.get("init_parameters", {})
        params["embedder"] = _embedder_from_dict(params.get("embedder"))
        return default_from_dict(cls, data)

    def count_documents(self) -> int:
        return len(self._collection)

    def _document(self, doc: _common.StoredDocument, score: Optional[float] = None) -> Document:
        stored = doc.metadata
        return Document(id=doc.id, content=None if stored.get("content_is_none") else doc.text,
                        meta=stored.get("meta", {}), score=score,
                        embedding=None if doc.embedding is None else doc.embedding.tolist())

    def _keep(self, filters: Optional[dict[str, Any]]) -> Any:
        filters = _check_filters(filters)
        if filters is None:
            return None
        return lambda doc: document_matches_filter(filters, self._document(doc))

    def filter_documents(self, filters: Optional[dict[str, Any]] = None) -> list[Document]:
        """Every document passing ``filters`` (Haystack's syntax), in the order first written."""
        filters = _check_filters(filters)
        documents = [self._document(doc) for doc in self._collection.documents()]
        return documents if filters is None else [d for d in documents if document_matches_filter(filters, d)]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write documents; ``NONE`` is ``FAIL`` (as Haystack's in-memory store). With ``FAIL`` every
        id is checked before any document is written. Returns how many were written."""
        if isinstance(documents, str) or not isinstance(documents, (list, tuple)) or \
                not all(isinstance(doc, Document) for doc in documents):
            msg = "Please provide a list of Documents."
            raise ValueError(msg)
        for doc in documents:
            if doc.blob is not None or doc.sparse_embedding is not None:
                msg = f"document {doc.id}: blob and sparse_embedding are not stored by FieldrankDocumentStore"
                raise ValueError(msg)
        policy = DuplicatePolicy.FAIL if policy == DuplicatePolicy.NONE else policy
        if policy == DuplicatePolicy.FAIL:
            existing = [doc.id for doc in documents if doc.id in self._collection]
            if existing:
                msg = f"ID(s) {existing} already exist; nothing was written"
                raise DuplicateDocumentError(msg)
        written = 0
        for doc in documents:
            if policy == DuplicatePolicy.SKIP and doc.id in self._collection:
                continue
            stored = {"meta": doc.meta, **({"content_is_none": True} if doc.content is None else {})}
            self._collection.put(doc.id, doc.content or "", stored, doc.embedding)
            written += 1
        return written

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete these documents (ids it does not hold are skipped, as Haystack's stores do)."""
        self._collection.delete(document_ids)

    def embedding_retrieval(self, query_embedding: list[float], filters: Optional[dict[str, Any]] = None,
                            top_k: int = 10, query: Optional[str] = None) -> list[Document]:
        """The ``top_k`` documents for the embedding (and the query text, when given: hybrid), by
        the store's fused recall; each with its fused score."""
        hits = self._collection.search(query, query_embedding, top_k, keep=self._keep(filters))
        return [self._document(doc, float(hit.score)) for doc, hit in hits]


@component
class FieldrankEmbeddingRetriever:
    """Retrieves documents from a :class:`FieldrankDocumentStore` by embedding (and by text too
    when ``query`` is given: the store's hybrid recall).

    Parameters
    ----------
    document_store : FieldrankDocumentStore
    filters : dict, optional
        Haystack filters applied to every run (a run's own ``filters`` replace them).
    top_k : int, default 10
    """

    def __init__(self, document_store: FieldrankDocumentStore, filters: Optional[dict[str, Any]] = None,
                 top_k: int = 10) -> None:
        if not isinstance(document_store, FieldrankDocumentStore):
            msg = f"document_store must be a FieldrankDocumentStore, got {type(document_store).__name__}"
            raise TypeError(msg)
        self.document_store = document_store
        self.filters = _check_filters(filters)
        self.top_k = top_k

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict(), filters=self.filters,
                               top_k=self.top_k)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FieldrankEmbeddingRetriever:
        params = data.get("init_parameters", {})
        params["document_store"] = FieldrankDocumentStore.from_dict(params["document_store"])
        return default_from_dict(cls, data)

    @component.output_types(documents=list[Document])
    def run(self, query_embedding: list[float], filters: Optional[dict[str, Any]] = None, top_k: Optional[int] = None,
            query: Optional[str] = None) -> dict[str, list[Document]]:
        return {"documents": self.document_store.embedding_retrieval(
            query_embedding, filters if filters is not None else self.filters,
            top_k if top_k is not None else self.top_k, query)}
