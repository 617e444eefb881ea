"""LangChain adapters: a retriever over a :class:`~fieldrank.HybridRetriever` and a reranker.

Needs ``langchain-core`` (``pip install ".[integrations]"`` in a fieldrank checkout).

* :class:`FieldrankRetriever` is a ``BaseRetriever``: ``invoke("text")`` runs the retriever's
  stack (its embedder embeds the query) and returns ``Document``s.
* :class:`FieldrankMemoryRetriever` is a ``BaseRetriever`` over a :class:`~fieldrank.MemoryStore`
  (one tenant, gates as ``filter``, ``add_documents`` as the conversation grows).
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
)

try:
    from langchain_core.callbacks import (
        AsyncCallbackManagerForRetrieverRun,
        CallbackManagerForRetrieverRun,
        Callbacks,
    )
    from langchain_core.runnables.config import run_in_executor
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise missing_extra("langchain", "langchain-core", exc) from exc

__all__ = ["FieldrankCompressor", "FieldrankMemoryRetriever", "FieldrankRetriever", "LangChainEmbedder"]


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
        Documents per query (default: the configuration's k); ``invoke(q, k=3)`` overrides it.
    subset : ids or boolean mask, optional
        Restrict every query to these documents (a tenant, a conversation).
    metadatas : list of dict, optional
        One metadata dict per corpus document: copied onto the returned ``Document``s and
        matched by ``filter`` (``invoke(q, filter={"source": "chat-1"})``: documents whose
        metadata has every given key equal to the given value, or in it when it is a list).

    Unknown constructor arguments (``top_k=``, ``search_kwargs=``) and unknown ``invoke``
    keywords are errors, never ignored. The corpus is fixed: for memories that grow with a
    conversation use :class:`FieldrankMemoryRetriever` (``add_documents``). Pickles (the
    retriever travels as its saved files).

    ``Document.id`` is the fieldrank document id as a string.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    retriever: HybridRetriever
    k: Optional[int] = None
    subset: Optional[Any] = None
    metadatas: Optional[list[dict[str, Any]]] = None

    def model_post_init(self, context: Any) -> None:
        check_retriever(self.retriever)
        if self.metadatas is not None and len(self.metadatas) != len(self.retriever.texts):
            msg = (f"metadatas must have one dict per document ({len(self.retriever.texts)}), "
                   f"got {len(self.metadatas)}")
            raise ValueError(msg)

    def _filtered_subset(self, filter: Optional[dict[str, Any]]) -> Any:  # noqa: A002 - LangChain's name
        if filter is None:
            return self.subset
        if self.metadatas is None:
            msg = "filter needs metadata: build the FieldrankRetriever with metadatas=[...] (one dict per document)"
            raise ValueError(msg)
        if not isinstance(filter, dict):
            msg = f"filter must be a dict {{key: value or [values]}}, got {type(filter).__name__}"
            raise TypeError(msg)
        mask = np.array([all(m.get(key) in value if isinstance(value, (list, tuple, set)) else m.get(key) == value
                             for key, value in filter.items()) for m in self.metadatas], dtype=bool)
        if self.subset is not None:
            base = np.zeros(len(mask), dtype=bool)
            base[np.asarray(self.subset)] = True
            mask &= base
        return mask

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: Optional[int] = None,
                                filter: Optional[dict[str, Any]] = None) -> list[Document]:  # noqa: A002
        subset = self._filtered_subset(filter)
        if subset is not None and isinstance(subset, np.ndarray) and subset.dtype == bool and not subset.any():
            return []
        result = self.retriever.search(query, k=k if k is not None else self.k, subset=subset)
        return [Document(page_content=text, id=str(prov["id"]),
                         metadata={**(self.metadatas[prov["id"]] if self.metadatas else {}), PROVENANCE_KEY: prov})
                for text, prov in zip(result.texts, hit_provenance(result))]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: Optional[int] = None,
                                       filter: Optional[dict[str, Any]] = None) -> list[Document]:  # noqa: A002
        return await run_in_executor(None, self._get_relevant_documents, query,
                                     run_manager=run_manager.get_sync(), k=k, filter=filter)

    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        msg = ("FieldrankRetriever searches a fixed HybridRetriever corpus; for documents added as a chat "
               "grows use FieldrankMemoryRetriever (a MemoryStore) and its add_documents")
        raise NotImplementedError(msg)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state = {**state, "__dict__": dict(state["__dict__"])}
        retriever = state["__dict__"].pop("retriever")
        state["__dict__"]["retriever"] = _SavedRetriever.of(retriever)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        saved = state["__dict__"]["retriever"]
        if isinstance(saved, _SavedRetriever):
            state = {**state, "__dict__": {**state["__dict__"], "retriever": saved.load()}}
        super().__setstate__(state)


class _SavedRetriever:
    """A HybridRetriever as its saved files (bytes), for pickling: the BM25 index holds a
    PyStemmer object, which does not pickle; save/load rebuild it. The embedder travels as is."""

    def __init__(self, files: dict[str, bytes], embedder: Any) -> None:
        self.files = files
        self.embedder = embedder

    @classmethod
    def of(cls, retriever: HybridRetriever) -> _SavedRetriever:
        import pathlib
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            directory = pathlib.Path(tmp) / "index"
            retriever.save(directory)
            files = {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*") if p.is_file()}
        return cls(files, retriever.embedder)

    def load(self) -> HybridRetriever:
        import pathlib
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            directory = pathlib.Path(tmp) / "index"
            for name, data in self.files.items():
                (directory / name).parent.mkdir(parents=True, exist_ok=True)
                (directory / name).write_bytes(data)
            return HybridRetriever.load(directory, embedder=self.embedder)


class FieldrankMemoryRetriever(BaseRetriever):
    """A LangChain retriever over a :class:`~fieldrank.MemoryStore`: one tenant's long-lived memory.

    Parameters
    ----------
    store : MemoryStore
        With an embedder (hybrid recall), or lexical (``MemoryStore(path, dim=1)``: BM25 only).
    tenant : str, default "default"
        Every recall and write acts for this tenant only.
    k : int, default 5
        Documents per query; ``invoke(q, k=3)`` overrides it.
    mode : str, optional
        The recall mode (default ``hybrid``; ``keyword`` for a lexical store).
    filter : dict, optional
        Gates for every query, ``{"tiers": [...], "required_tags": [...], "min_importance": x}``;
        ``invoke(q, filter={...})`` adds to them.

    ``add_documents(docs)`` / ``add_texts(texts, metadatas)`` store memories as the chat grows
    (metadata keys ``importance``, ``tier``, ``tags``, ``entities``, ``supersedes``, ``session``,
    ``valence``; others are refused) and return their ids; ``delete(ids)`` forgets them.
    Returned ``Document``s carry the memory's fields (dates, tier, tags, ...) in ``metadata``
    and the score's provenance under ``metadata["fieldrank"]``; ``Document.id`` is the memory id.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

    store: Any
    tenant: str = DEFAULT_TENANT
    k: int = 5
    mode: Optional[str] = None
    filter: Optional[dict[str, Any]] = None

    def model_post_init(self, context: Any) -> None:
        check_store(self.store)
        memory_gates(self.filter, "filter")

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: Optional[int] = None,
                                filter: Optional[dict[str, Any]] = None) -> list[Document]:  # noqa: A002
        filters = {**(self.filter or {}), **(filter or {})} if (self.filter or filter) else None
        records = memory_recall(self.store, query, tenant=self.tenant, k=k if k is not None else self.k,
                                mode=self.mode, filters=filters, where="filter")
        return [_memory_document(record) for record in records]

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: Optional[int] = None,
                                       filter: Optional[dict[str, Any]] = None) -> list[Document]:  # noqa: A002
        return await run_in_executor(None, self._get_relevant_documents, query,
                                     run_manager=run_manager.get_sync(), k=k, filter=filter)

    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        if kwargs:
            msg = f"add_documents takes no keywords here (got {sorted(kwargs)}); put them in each Document's metadata"
            raise TypeError(msg)
        return [str(memory_add(self.store, d.page_content, d.metadata, tenant=self.tenant, where="add_documents"))
                for d in documents]

    def add_texts(self, texts: Sequence[str], metadatas: Optional[Sequence[dict[str, Any]]] = None) -> list[str]:
        metadatas = [{}] * len(texts) if metadatas is None else list(metadatas)
        if len(metadatas) != len(texts):
            msg = f"metadatas must have one dict per text ({len(texts)}), got {len(metadatas)}"
            raise ValueError(msg)
        return [str(memory_add(self.store, t, m, tenant=self.tenant, where="add_texts"))
                for t, m in zip(texts, metadatas)]

    def delete(self, ids: Sequence[str]) -> None:
        for memory_id in ids:
            self.store.forget(int(memory_id), tenant=self.tenant)


def _memory_document(record: dict[str, Any]) -> Document:
    metadata = {key: value for key, value in record.items() if key not in ("text", "provenance", "id", "rank", "score")}
    provenance = {"id": record["id"], "rank": record["rank"], "score": record["score"], **record["provenance"]}
    return Document(page_content=record["text"], id=str(record["id"]), metadata={**metadata, PROVENANCE_KEY: provenance})


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

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid")

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
