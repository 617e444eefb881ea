"""Haystack components: retrievers over a saved index or a memory store, a memory writer and a ranker.

Needs ``haystack-ai`` (``pip install ".[integrations]"`` in a fieldrank checkout).

* :class:`FieldrankRetriever`: ``run(query, filters=None, top_k=None, query_embedding=None)``
  -> ``{"documents": [...]}`` over a :class:`~fieldrank.HybridRetriever` (saved with ``save``
  and opened from ``index_dir`` so that the pipeline serializes).
* :class:`FieldrankMemoryRetriever` / :class:`FieldrankMemoryWriter`: recall from / write to a
  :class:`~fieldrank.MemoryStore` file for one tenant.
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
from ._common import (
    DEFAULT_RERANK_CONFIG,
    LEXICAL_DIM,
    PROVENANCE_KEY,
    check_retriever,
    hit_provenance,
    memory_add,
    memory_gates,
    memory_recall,
    missing_extra,
    rerank_candidates,
    unit_vector,
)

try:
    from haystack import Document, component, default_from_dict, default_to_dict
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("haystack", "haystack-ai", exc) from exc

__all__ = ["FieldrankMemoryRetriever", "FieldrankMemoryWriter", "FieldrankRanker", "FieldrankRetriever"]

#: Haystack filter operators understood over a retriever's ``metadatas``.
_COMPARISONS = {
    "==": lambda v, x: v == x, "!=": lambda v, x: v != x, "in": lambda v, x: v in x,
    "not in": lambda v, x: v not in x, ">": lambda v, x: v is not None and v > x,
    ">=": lambda v, x: v is not None and v >= x, "<": lambda v, x: v is not None and v < x,
    "<=": lambda v, x: v is not None and v <= x,
}


def _passes(meta: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Haystack 2 filter syntax (``{"field": "meta.x", "operator": "==", "value": ...}`` and
    ``{"operator": "AND"|"OR"|"NOT", "conditions": [...]}``) on one document's meta."""
    operator = node.get("operator")
    if "conditions" in node:
        results = [_passes(meta, child) for child in node["conditions"]]
        if operator == "AND":
            return all(results)
        if operator == "OR":
            return any(results)
        if operator == "NOT":
            return not all(results)
        msg = f"filters: logical operator {operator!r} is not one of AND, OR, NOT"
        raise ValueError(msg)
    if operator not in _COMPARISONS:
        msg = f"filters: operator {operator!r} is not one of {sorted(_COMPARISONS)}"
        raise ValueError(msg)
    field = node.get("field", "")
    if not field.startswith("meta."):
        msg = f"filters: field {field!r} must name a meta field (\"meta.<key>\")"
        raise ValueError(msg)
    return _COMPARISONS[operator](meta.get(field[len("meta."):]), node.get("value"))


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
        if retriever is None:
            retriever = HybridRetriever.load(self.index_dir, embedder=self.embedder)
        self.retriever = check_retriever(retriever)
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
        if not filters:
            return self.subset
        if self.metadatas is None:
            msg = "filters need metadata: build the FieldrankRetriever with metadatas=[...] (one dict per document)"
            raise ValueError(msg)
        mask = np.array([_passes(m, filters) for m in self.metadatas], dtype=bool)
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
            vector = unit_vector(query_embedding, "query_embedding")
        subset = self._subset(filters)
        if isinstance(subset, np.ndarray) and subset.dtype == bool and not subset.any():
            return {"documents": []}
        result = self.retriever.search(query, vector, top_k if top_k is not None else self.top_k, subset=subset)
        documents = []
        for text, prov in zip(result.texts, hit_provenance(result)):
            meta = dict(self.metadatas[prov["id"]]) if self.metadatas else {}
            documents.append(Document(id=_content_id(text, meta), content=text, score=prov["score"],
                                      meta={**meta, PROVENANCE_KEY: prov}))
        return {"documents": documents}


def _open_store(path: str, embedder: Optional[Embedder]) -> MemoryStore:
    if embedder is not None:
        return MemoryStore(path, embedder=embedder)
    return MemoryStore(path, None if os.path.exists(path) else LEXICAL_DIM)


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
        memory_gates(filters, "filters")
        records = memory_recall(self.store, query, tenant=self.tenant, k=top_k if top_k is not None else self.top_k,
                                mode=self.mode, filters=filters)
        documents = []
        for record in records:
            meta = {key: value for key, value in record.items()
                    if key not in ("text", "provenance", "id", "rank", "score")}
            provenance = {"id": record["id"], "rank": record["rank"], "score": record["score"], **record["provenance"]}
            documents.append(Document(id=str(record["id"]), content=record["text"], score=record["score"],
                                      meta={**meta, PROVENANCE_KEY: provenance}))
        return {"documents": documents}


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
        ids = [memory_add(self.store, d.content or "", d.meta, tenant=self.tenant, where=f"document {d.id}")
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

    def __init__(self, embedder: Optional[Embedder] = None, config: Any = DEFAULT_RERANK_CONFIG,
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
        result = rerank_candidates(query, texts, vectors,
                                   query_vector=query_embedding if self.embedder is None else None,
                                   embedder=self.embedder, config=self.config,
                                   k=top_k if top_k is not None else self.top_k)
        provenance = hit_provenance(result)
        best = provenance[0]["score"] if provenance else 1.0
        out = []
        for prov in provenance:
            position = prov.pop("id")
            score = prov["score"] / best if self.scale_score and best > 0 else prov["score"]
            if self.score_threshold is not None and score < self.score_threshold:
                continue
            doc = documents[position]
            out.append(dataclasses.replace(doc, score=score,
                                           meta={**doc.meta, PROVENANCE_KEY: {**prov, "input_rank": position + 1}}))
        return {"documents": out}
