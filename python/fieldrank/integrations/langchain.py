"""LangChain adapters: a retriever over a :class:`~fieldrank.HybridRetriever` and a reranker.

Needs ``langchain-core`` (``pip install ".[integrations]"`` in a fieldrank checkout).

* :class:`FieldrankRetriever` is a ``BaseRetriever``: ``invoke("text")`` runs the retriever's
  stack (its embedder embeds the query) and returns ``Document``s.
* :class:`FieldrankVectorStore` is a ``VectorStore`` over a :class:`~fieldrank.MemoryStore`: documents
  with ids and metadata, deletes, ``get_by_ids``, similarity search (text or vector, with scores)
  ranked by the store's fused recall, MMR by fieldrank's MMR operator, async (LangChain's).
* :class:`FieldrankMemoryRetriever` is a ``BaseRetriever`` over a :class:`~fieldrank.MemoryStore`
  (one tenant, gates as ``filter``, ``add_documents`` as the conversation grows).
* :class:`FieldrankCompressor` is a ``BaseDocumentCompressor``: it reranks the documents
  another retriever returned (use it in a ``ContextualCompressionRetriever``).
* :class:`LangChainEmbedder` turns any LangChain ``Embeddings`` into a fieldrank
  :class:`~fieldrank.embed.Embedder`.

Every ``Document`` the retrievers and the compressor return carries the provenance under
``metadata["fieldrank"]`` (see :func:`fieldrank.integrations.hit_provenance`); the compressor also
records the document's position in its input as ``input_rank``. The vector store returns documents
as they were written (their metadata unchanged).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Optional

import numpy as np

from ..embed import Embedder
from ..hybrid import HybridRetriever
from ..memory import DEFAULT_TENANT, MemoryStore
from . import _common

try:
    from langchain_core.callbacks import AsyncCallbackManagerForRetrieverRun, CallbackManagerForRetrieverRun, Callbacks
    from langchain_core.runnables.config import run_in_executor
    from langchain_core.documents import BaseDocumentCompressor, Document
    from langchain_core.embeddings import Embeddings
    from langchain_core.retrievers import BaseRetriever
    from langchain_core.vectorstores import VectorStore
    from pydantic import ConfigDict, PrivateAttr
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise _common.missing_extra("langchain", "langchain-core", exc) from exc

__all__ = ["FieldrankCompressor", "FieldrankMemoryRetriever", "FieldrankRetriever", "FieldrankVectorStore",
           "LangChainEmbedder"]


class LangChainEmbedder(_common.FrameworkEmbedder):
    """A fieldrank :class:`~fieldrank.embed.Embedder` over a LangChain ``Embeddings``.

    Rows are L2-normalised here (LangChain embeddings need not be); ``dim`` is probed once.
    """

    def __init__(self, embeddings: Embeddings, dim: Optional[int] = None) -> None:
        if not isinstance(embeddings, Embeddings):
            msg = f"embeddings must be a langchain_core Embeddings, got {type(embeddings).__name__}"
            raise TypeError(msg)
        self.embeddings = embeddings
        super().__init__(embeddings.embed_documents, embeddings.embed_query, dim)

    def __repr__(self) -> str:
        return f"LangChainEmbedder({type(self.embeddings).__name__}, dim={self.dim})"


def _as_embedder(embedder: Any) -> Optional[Embedder]:
    return LangChainEmbedder(embedder) if isinstance(embedder, Embeddings) else embedder


class _AsyncInExecutor:
    """A retriever's async path: its sync one in LangChain's executor (the store's I/O and the
    native ranking never block the event loop)."""

    async def _aget_relevant_documents(self, query: str, *, run_manager: AsyncCallbackManagerForRetrieverRun,
                                       k: Optional[int] = None,
                                       filter: Optional[dict[str, Any]] = None) -> list[Document]:  # noqa: A002
        return await run_in_executor(None, self._get_relevant_documents, query,  # type: ignore[attr-defined]
                                     run_manager=run_manager.get_sync(), k=k, filter=filter)


class FieldrankRetriever(_AsyncInExecutor, BaseRetriever):
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
        _common.check_retriever(self.retriever)
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
                         metadata={**(self.metadatas[prov["id"]] if self.metadatas else {}), _common.PROVENANCE_KEY: prov})
                for text, prov in zip(result.texts, _common.hit_provenance(result))]

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


class FieldrankMemoryRetriever(_AsyncInExecutor, BaseRetriever):
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
        _common.check_store(self.store)
        _common.memory_gates(self.filter, "filter")

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun,
                                k: Optional[int] = None,
                                filter: Optional[dict[str, Any]] = None) -> list[Document]:  # noqa: A002
        filters = {**(self.filter or {}), **(filter or {})} if (self.filter or filter) else None
        records = _common.memory_recall(self.store, query, tenant=self.tenant, k=k if k is not None else self.k,
                                mode=self.mode, filters=filters, where="filter")
        return [_memory_document(record) for record in records]

    def add_documents(self, documents: Sequence[Document], **kwargs: Any) -> list[str]:
        if kwargs:
            msg = f"add_documents takes no keywords here (got {sorted(kwargs)}); put them in each Document's metadata"
            raise TypeError(msg)
        return [str(_common.memory_add(self.store, d.page_content, d.metadata, tenant=self.tenant, where="add_documents"))
                for d in documents]

    def add_texts(self, texts: Sequence[str], metadatas: Optional[Sequence[dict[str, Any]]] = None) -> list[str]:
        metadatas = [{}] * len(texts) if metadatas is None else list(metadatas)
        if len(metadatas) != len(texts):
            msg = f"metadatas must have one dict per text ({len(texts)}), got {len(metadatas)}"
            raise ValueError(msg)
        return [str(_common.memory_add(self.store, t, m, tenant=self.tenant, where="add_texts"))
                for t, m in zip(texts, metadatas)]

    def delete(self, ids: Sequence[str]) -> None:
        """Forget these memories, all or none: every id is checked (an integer id of a live memory
        of this tenant) before any is forgotten; a KeyError names the ones that are not."""
        memory_ids, missing = [], []
        for memory_id in ids:
            try:
                number = int(memory_id)
                self.store.get(number, tenant=self.tenant)
            except (KeyError, TypeError, ValueError):
                missing.append(memory_id)
            else:
                memory_ids.append(number)
        if missing:
            raise _common.missing_ids(missing, "delete")
        for number in memory_ids:
            self.store.forget(number, tenant=self.tenant)


def _memory_document(record: dict[str, Any]) -> Document:
    return Document(page_content=record["text"], id=str(record["id"]), metadata=_common.memory_metadata(record))


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
    config: Any = _common.DEFAULT_RERANK_CONFIG
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
        result = _common.rerank_candidates(query, [d.page_content for d in docs], embedder=self._embedder,
                                   config=self.config, k=self.top_n)
        out = []
        for prov in _common.hit_provenance(result):
            doc = docs[prov["id"]]
            prov = {**prov, "input_rank": prov["id"] + 1}
            del prov["id"]
            out.append(Document(page_content=doc.page_content, id=doc.id,
                                metadata={**doc.metadata, _common.PROVENANCE_KEY: prov}))
        return out


class FieldrankVectorStore(VectorStore):
    """A LangChain ``VectorStore`` over a :class:`~fieldrank.MemoryStore` (one tenant).

    Parameters
    ----------
    store : MemoryStore
        Where the documents live (a file store persists them): each document is one memory of
        ``tenant`` (docs/ecosystem.md, "LangChain" says which tags hold its id and metadata).
    embedding : Embeddings, optional
        Embeds the documents and the queries. None: the store's embedder does, or, on a lexical
        store (``MemoryStore(path, dim=1)``), documents are ranked by BM25 alone.
    tenant : str, default "default"
    mode : str, optional
        The recall mode of a text search (default ``hybrid``; ``keyword`` without embeddings).
    reinforce : bool, default False
        Whether a search applies the store's recall dynamics to the documents it returns (a
        document store's searches leave its documents as they are unless asked).

    Searches rank by the store's fused recall (BM25 and the dense leg, the store's priors);
    ``similarity_search_with_score`` returns the fused score (higher is better, not a cosine) and
    ``similarity_search_with_relevance_scores`` the hit's calibrated confidence in [0, 1].
    ``filter`` is a callable on a ``Document`` or a dict matched against the metadata
    (``{"key": value}``, or ``{"key": [values]}`` for any of them). Writing an existing id
    replaces the document; ``delete`` skips ids it does not hold (LangChain's contract) but refuses
    a malformed one before deleting any.
    """

    def __init__(self, store: MemoryStore, embedding: Optional[Embeddings] = None, *,
                 tenant: str = DEFAULT_TENANT, mode: Optional[str] = None, reinforce: bool = False) -> None:
        if embedding is not None and not isinstance(embedding, Embeddings):
            msg = f"embedding must be a langchain_core Embeddings, got {type(embedding).__name__}"
            raise TypeError(msg)
        self._collection = _common.DocumentCollection(store, tenant=tenant, prefix="lc:")
        self._embedding = embedding
        self._mode = mode
        self._reinforce = bool(reinforce)

    @property
    def store(self) -> MemoryStore:
        """The wrapped :class:`~fieldrank.MemoryStore`."""
        return self._collection.store

    @property
    def embeddings(self) -> Optional[Embeddings]:
        return self._embedding

    def __repr__(self) -> str:
        return f"FieldrankVectorStore({self.store!r}, tenant={self._collection.tenant!r}, documents={len(self._collection)})"

    @classmethod
    def from_texts(cls, texts: list[str], embedding: Embeddings, metadatas: Optional[list[dict]] = None, *,
                   ids: Optional[list[str]] = None, path: Optional[str] = None, **kwargs: Any) -> FieldrankVectorStore:
        """A new store (a SQLite file at ``path``, or in memory) holding ``texts``; ``kwargs`` go to
        the constructor (``tenant``, ``mode``, ``reinforce``)."""
        store = MemoryStore(path, len(embedding.embed_query("dimension probe")))
        vectorstore = cls(store, embedding, **kwargs)
        vectorstore.add_texts(texts, metadatas, ids=ids)
        return vectorstore

    # ------------------------------------------------------------------ writes and reads
    def add_texts(self, texts: Iterable[str], metadatas: Optional[list[dict]] = None, *,
                  ids: Optional[list[str]] = None, **kwargs: Any) -> list[str]:
        if kwargs:
            msg = f"add_texts takes texts, metadatas and ids (got {sorted(kwargs)})"
            raise TypeError(msg)
        texts = list(texts)
        metadatas = [{}] * len(texts) if metadatas is None else list(metadatas)
        given: list[Optional[str]] = [None] * len(texts) if ids is None else list(ids)
        if not len(metadatas) == len(given) == len(texts):
            msg = f"metadatas and ids must have one entry per text ({len(texts)}), got {len(metadatas)} and {len(given)}"
            raise ValueError(msg)
        for text in texts:
            if not isinstance(text, str):
                msg = f"texts must be str, got {type(text).__name__}"
                raise TypeError(msg)
        ids = [doc_id if doc_id is not None else self._collection.new_id() for doc_id in given]
        vectors: list[Any] = [None] * len(texts)
        if self._embedding is not None and texts:
            vectors = list(self._embedding.embed_documents(texts))
        for doc_id, text, metadata, vector in zip(ids, texts, metadatas, vectors):
            self._collection.put(doc_id, text, metadata or {}, vector)
        return ids

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        return [self._document(doc) for doc in self._collection.documents(ids)]

    def delete(self, ids: Optional[list[str]] = None, **kwargs: Any) -> Optional[bool]:
        """Delete these documents (ids it does not hold are skipped); ``ids=None`` deletes none.
        Every id is checked to be a str before any document is deleted."""
        if kwargs:
            msg = f"delete takes ids only (got {sorted(kwargs)})"
            raise TypeError(msg)
        if ids is None:
            return None
        bad = [doc_id for doc_id in ids if not isinstance(doc_id, str)]
        if bad or isinstance(ids, str):
            msg = f"ids must be a list of str, got {ids!r}"
            raise TypeError(msg)
        self._collection.delete(ids)
        return True

    @staticmethod
    def _document(doc: _common.StoredDocument) -> Document:
        return Document(page_content=doc.text, metadata=doc.metadata, id=doc.id)

    # ------------------------------------------------------------------ searches
    def _keep(self, filter: Any) -> Optional[Callable[[_common.StoredDocument], bool]]:  # noqa: A002
        if filter is None:
            return None
        if callable(filter):
            return lambda doc: bool(filter(self._document(doc)))
        if not isinstance(filter, dict):
            msg = f"filter must be a dict {{key: value or [values]}} or a callable on a Document, got {type(filter).__name__}"
            raise TypeError(msg)
        return lambda doc: all(doc.metadata.get(key) in value if isinstance(value, list) else doc.metadata.get(key) == value
                               for key, value in filter.items())

    def _hits(self, query: Optional[str], vector: Optional[Any], k: int, filter: Any,  # noqa: A002
              kwargs: dict[str, Any]) -> list[tuple[_common.StoredDocument, Any]]:
        if kwargs:
            msg = f"unknown search keyword(s) {sorted(kwargs)}; FieldrankVectorStore takes k and filter"
            raise TypeError(msg)
        if vector is None and query is not None and self._embedding is not None:
            vector = self._embedding.embed_query(query)
        mode = self._mode if query else None
        return self._collection.search(query, vector, k, mode=mode, keep=self._keep(filter), reinforce=self._reinforce)

    def similarity_search(self, query: str, k: int = 4, filter: Any = None, **kwargs: Any) -> list[Document]:  # noqa: A002
        return [self._document(doc) for doc, _ in self._hits(query, None, k, filter, kwargs)]

    def similarity_search_with_score(self, query: str, k: int = 4, filter: Any = None,  # noqa: A002
                                     **kwargs: Any) -> list[tuple[Document, float]]:
        """Documents with their fused scores (higher is better)."""
        return [(self._document(doc), float(hit.score)) for doc, hit in self._hits(query, None, k, filter, kwargs)]

    def _similarity_search_with_relevance_scores(self, query: str, k: int = 4,
                                                 **kwargs: Any) -> list[tuple[Document, float]]:
        # The fused score has no fixed range; the hit's calibrated confidence is in [0, 1].
        filter = kwargs.pop("filter", None)  # noqa: A001
        return [(self._document(doc), 0.0 if np.isnan(hit.confidence) else float(hit.confidence))
                for doc, hit in self._hits(query, None, k, filter, kwargs)]

    def similarity_search_by_vector(self, embedding: list[float], k: int = 4, filter: Any = None,  # noqa: A002
                                    **kwargs: Any) -> list[Document]:
        return [self._document(doc) for doc, _ in self._hits(None, embedding, k, filter, kwargs)]

    def max_marginal_relevance_search_by_vector(self, embedding: list[float], k: int = 4, fetch_k: int = 20,
                                                lambda_mult: float = 0.5, filter: Any = None,  # noqa: A002
                                                **kwargs: Any) -> list[Document]:
        """MMR (fieldrank's operator, mu = ``lambda_mult``) over the ``fetch_k`` best documents."""
        if kwargs:
            msg = f"unknown search keyword(s) {sorted(kwargs)}"
            raise TypeError(msg)
        docs = self._collection.mmr(None, embedding, k, fetch_k, lambda_mult, keep=self._keep(filter))
        return [self._document(doc) for doc in docs]

    def max_marginal_relevance_search(self, query: str, k: int = 4, fetch_k: int = 20, lambda_mult: float = 0.5,
                                      filter: Any = None, **kwargs: Any) -> list[Document]:  # noqa: A002
        vector = self._embedding.embed_query(query) if self._embedding is not None else None
        if vector is None and self.store.embedder is not None:
            vector = self.store.embedder.embed_queries([query])[0]
        if vector is None:
            msg = "MMR needs vectors: give the store embedding= (or a MemoryStore with an embedder)"
            raise ValueError(msg)
        return self.max_marginal_relevance_search_by_vector(vector, k, fetch_k, lambda_mult, filter, **kwargs)
