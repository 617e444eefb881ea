"""What every adapter shares: provenance dicts, reranking a caller's candidates, wrapping a
framework's embeddings, and keeping a framework's documents (string ids, JSON metadata) as
memories of a :class:`~fieldrank.MemoryStore` (:class:`DocumentCollection`)."""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._validation import UNIT_NORM_ATOL, check_rows_finite_nonzero
from ..config import ConfigLike
from ..embed import Embedder, check_embedder, embed_documents, embed_query
from ..hybrid import HybridRetriever, SearchResult

#: The metadata key under which every adapter stores fieldrank's provenance of a hit.
PROVENANCE_KEY = "fieldrank"
#: The configuration rerankers use unless told otherwise: cosine + BM25 + CFS-R, the stack whose
#: legs make sense on any pool (the ``default`` preset's neighbour and time priors read corpus
#: order as chronology, which a relevance-ordered pool is not).
DEFAULT_RERANK_CONFIG = "rrf_cfsr"


def missing_extra(adapter: str, requirement: str, exc: ImportError, *, extra: str = "integrations") -> ImportError:
    """The error an adapter module raises when its framework is not installed: what to install."""
    msg = f"fieldrank.integrations.{adapter} needs {requirement}: pip install \".[{extra}]\" in a fieldrank checkout ({exc})"
    return ImportError(msg)


def hit_provenance(result: SearchResult) -> list[dict[str, Any]]:
    """One JSON-ready provenance dict per hit of ``result``, best first.

    Keys: ``id`` (the document id in the searched corpus), ``rank`` (1-based), ``score`` (the
    fused score), ``config`` (the configuration's name) and ``legs`` (per leg: ``rank``,
    ``score``, ``contribution`` and, for CFS-R, ``coef``; None where the leg missed the hit).
    """
    data = result.to_dict(include_text=False)
    return [{"id": hit["id"], "rank": hit["rank"], "score": hit["score"], "config": data["config"],
             "legs": hit["legs"]} for hit in data["hits"]]


def check_retriever(retriever: object) -> HybridRetriever:
    """The retriever an adapter wraps: a :class:`~fieldrank.HybridRetriever` (one check, one message)."""
    if not isinstance(retriever, HybridRetriever):
        msg = f"retriever must be a fieldrank.HybridRetriever, got {type(retriever).__name__}"
        raise TypeError(msg)
    return retriever


def unit_rows(X: object) -> np.ndarray:
    """A framework's vectors (rows of floats, any dtype) as float32 unit rows, as the pool operators
    need: float32 rows already of unit norm (within UNIT_NORM_ATOL) are returned as they are, no
    copy; anything else is normalised in float64 (one copy)."""
    X = np.asarray(X)
    X = X.reshape(X.shape[0], -1) if X.ndim != 2 else X
    check_rows_finite_nonzero(X, "vectors")  # a NaN or zero row from the framework must not become inf/NaN here
    norms = np.sqrt(np.einsum("ij,ij->i", X, X, dtype=np.float64))
    if X.dtype == np.float32 and (not norms.size or np.abs(norms - 1.0).max() <= UNIT_NORM_ATOL):
        return X
    return (X / norms[:, None]).astype(np.float32)


def unit_vector(vector: object, name: str) -> np.ndarray:
    """A framework's query vector (a list of floats, any dtype) as a float32 unit vector."""
    q = np.asarray(vector, dtype=np.float64)
    norm = float(np.linalg.norm(q)) if q.ndim == 1 else 0.0
    if q.ndim != 1 or not np.isfinite(norm) or norm == 0.0:
        msg = f"{name} must be a finite, non-zero 1-D vector, got shape {q.shape}"
        raise ValueError(msg)
    return (q / norm).astype(np.float32)


def rerank_candidates(query: str, texts: Sequence[str], vectors: Optional[np.ndarray] = None, *,
                      query_vector: Optional[Any] = None, embedder: Optional[Embedder] = None,
                      config: ConfigLike = DEFAULT_RERANK_CONFIG, k: Optional[int] = None) -> SearchResult:
    """Rerank a caller's candidates (another retriever's output) with a fieldrank stack.

    The candidates become a small corpus: their vectors (given, or made by ``embedder``) feed
    the dense legs (cosine, CFS-R, ...), their texts a BM25 index whose statistics are the
    pool's own. ``result.ids`` are positions in ``texts``.

    Parameters
    ----------
    query : str
    texts : sequence of str
        The candidates' texts.
    vectors : (P, d) array, optional
        The candidates' embeddings (any float dtype; L2-normalised here). None: ``embedder``.
    query_vector : (d,) array or list of floats, optional
        The query's embedding. None: ``embedder`` embeds ``query``.
    embedder : Embedder, optional
    config : default ``"rrf_cfsr"``
        Any configuration :class:`~fieldrank.HybridRetriever` takes.
    k : int, optional
        Hits to keep (default: the configuration's k, at most P).
    """
    embedder = check_embedder(embedder)
    if vectors is None:
        if embedder is None:
            msg = "pass the candidates' vectors or an embedder"
            raise ValueError(msg)
        vectors = embed_documents(embedder, texts)
    if query_vector is None and embedder is not None:
        query_vector = embed_query(embedder, query)
    retriever = HybridRetriever(texts, np.asarray(vectors), config, normalize=True)
    if query_vector is not None:
        query_vector = unit_vector(query_vector, "query_vector")
    if k is None:
        k = retriever.config.k
    return retriever.search(query, query_vector, min(k, len(texts)))


# ---------------------------------------------------------------- the memory store in a framework
#: Dimension of a lexical (BM25-only) memory store: every memory gets the same one-component
#: vector and recall runs in ``keyword`` mode (``MemoryStore(path, dim=1)`` with no embedder).
LEXICAL_DIM = 1
#: The filters every memory adapter (and the MCP server) understands, as the store's gates:
#: ``tiers`` (allowed tiers), ``required_tags`` (all of them), ``min_importance``.
MEMORY_FILTER_KEYS = ("tiers", "required_tags", "min_importance")
#: Document metadata a memory adapter writes to the store (anything else is refused).
MEMORY_METADATA_KEYS = ("importance", "tier", "tags", "entities", "supersedes", "session", "valence")


def _iso(seconds: float) -> str:
    import datetime as _dt

    return _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc).isoformat(timespec="seconds")


def memory_gates(filters: Optional[Mapping[str, Any]], where: str) -> dict[str, Any]:
    """``filters`` ({tiers, required_tags, min_importance}) as :meth:`MemoryStore.recall` keywords."""
    if filters is None:
        return {}
    if not isinstance(filters, Mapping):
        msg = f"{where} must be a dict with keys from {MEMORY_FILTER_KEYS}, got {type(filters).__name__}"
        raise TypeError(msg)
    unknown = sorted(set(filters) - set(MEMORY_FILTER_KEYS))
    if unknown:
        msg = f"{where}: unknown key(s) {unknown}; a memory filter takes {MEMORY_FILTER_KEYS}"
        raise ValueError(msg)
    gates: dict[str, Any] = {}
    if filters.get("tiers") is not None:
        tiers = filters["tiers"]
        gates["tier_mask"] = [tiers] if isinstance(tiers, str) else list(tiers)
    if filters.get("required_tags") is not None:
        tags = filters["required_tags"]
        gates["required_tags"] = [tags] if isinstance(tags, str) else list(tags)
    if filters.get("min_importance") is not None:
        gates["min_importance"] = filters["min_importance"]
    return gates


def memory_add_options(metadata: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A document's metadata as :meth:`MemoryStore.add` keywords (unknown keys refused, loudly)."""
    unknown = sorted(set(metadata) - set(MEMORY_METADATA_KEYS) - {PROVENANCE_KEY})
    if unknown:
        msg = (f"{where}: metadata key(s) {unknown} cannot be stored in a MemoryStore; it keeps "
               f"{MEMORY_METADATA_KEYS} (drop the others first)")
        raise ValueError(msg)
    return {key: metadata[key] for key in MEMORY_METADATA_KEYS if metadata.get(key) is not None}


def memory_fields(store: Any, tenant: str, memory_id: int) -> dict[str, Any]:
    """A memory's dates (ISO 8601, UTC), tier, importance, tags, entities, session and
    supersedes/superseded_by; empty when it was forgotten meanwhile."""
    try:
        memory = store.get(memory_id, tenant=tenant)
    except KeyError:
        return {}
    return {"created_at": _iso(memory.created_at), "last_access": _iso(memory.last_access), "tier": memory.tier,
            "importance": memory.importance, "tags": list(memory.tags), "entities": list(memory.entities),
            "session": memory.session, "supersedes": memory.supersedes, "superseded_by": memory.superseded_by}


def memory_record(store: Any, tenant: str, hit: Any) -> dict[str, Any]:
    """One recalled memory as a JSON-ready dict: id, rank, text, score, :func:`memory_fields` and
    the provenance of its score (what the adapters put in metadata and the MCP server returns)."""
    return {"id": hit.id, "rank": hit.rank, "text": hit.text, "score": hit.score,
            **memory_fields(store, tenant, hit.id),
            "provenance": {"factors": hit.factors.as_dict(), "dominant_factor": hit.dominant_factor,
                           "weakest_factor": hit.weakest_factor, "admitted_by": dict(hit.admitted_by),
                           "reserved_slot": hit.reserved_slot, "age_days": hit.age_days,
                           "recall_count": hit.recall_count}}


def check_store(store: object) -> Any:
    """The store a memory adapter wraps: a :class:`~fieldrank.MemoryStore` with an embedder, or
    one whose recall can run lexically (``mode="keyword"``)."""
    from ..memory import MemoryStore

    if not isinstance(store, MemoryStore):
        msg = f"store must be a fieldrank.MemoryStore, got {type(store).__name__}"
        raise TypeError(msg)
    return store


def memory_recall(store: Any, query: str, *, tenant: str, k: int, mode: Optional[str],
                  filters: Optional[Mapping[str, Any]], where: str = "filters") -> list[dict[str, Any]]:
    """Recall ``k`` memories of ``tenant`` (gated by ``filters``) as :func:`memory_record` dicts.

    Without an embedder on the store the recall is lexical (``mode="keyword"``); asking for a
    dense mode then is an error."""
    mode = recall_mode(store, mode)
    result = store.recall(query, None, k, tenant=tenant, mode=mode, **memory_gates(filters, where))
    return [memory_record(store, tenant, hit) for hit in result.hits]


def recall_mode(store: Any, mode: Optional[str]) -> str:
    """The recall mode: ``mode`` (default ``hybrid``), or ``keyword`` for a store without an embedder."""
    if store.embedder is None:
        if mode not in (None, "keyword"):
            msg = f"the store has no embedder: only mode='keyword' (BM25) can run, got mode={mode!r}"
            raise ValueError(msg)
        return "keyword"
    return mode or "hybrid"


def memory_add(store: Any, text: str, metadata: Mapping[str, Any], *, tenant: str, where: str) -> int:
    """Store one text with its metadata (:func:`memory_add_options`) for ``tenant``; its id."""
    options = memory_add_options(metadata, where)
    return store.add(text, lexical_vector(store), tenant=tenant, **options)


def lexical_vector(store: Any) -> Optional[np.ndarray]:
    """None for a store with an embedder; for a lexical store (dim :data:`LEXICAL_DIM`, no
    embedder) the constant vector every memory gets; any other store without an embedder cannot
    take text alone (an error saying so)."""
    if store.embedder is not None:
        return None
    if store.dim != LEXICAL_DIM:
        msg = (f"the store has {store.dim}-dimensional embeddings and no embedder: open it with "
               "MemoryStore(..., embedder=...) to add text, or use a lexical store MemoryStore(path, dim=1)")
        raise ValueError(msg)
    return np.ones(LEXICAL_DIM, dtype=np.float32)



def memory_metadata(record: Mapping[str, Any]) -> dict[str, Any]:
    """A :func:`memory_record` as a framework document's metadata: the memory's fields, and the
    score's provenance (with the hit's id, rank and score) under :data:`PROVENANCE_KEY`."""
    metadata = {key: value for key, value in record.items() if key not in ("text", "provenance", "id", "rank", "score")}
    provenance = {"id": record["id"], "rank": record["rank"], "score": record["score"], **record["provenance"]}
    return {**metadata, PROVENANCE_KEY: provenance}


def missing_ids(missing: Sequence[str], where: str) -> KeyError:
    """The error of a batch delete that names ids the store does not hold (nothing was deleted)."""
    return KeyError(f"{where}: no document with id(s) {list(missing)}; nothing was deleted")


# ---------------------------------------------------------------- a framework's embeddings
class FrameworkEmbedder:
    """A fieldrank :class:`~fieldrank.embed.Embedder` over a framework's embedding functions
    (texts -> rows of floats, one text -> a row): rows are L2-normalised here (a framework's need
    not be) and the dimension is probed once. Subclasses name the framework's object."""

    def __init__(self, embed_texts: Callable[[list[str]], Any], embed_query: Callable[[str], Any],
                 dim: Optional[int] = None) -> None:
        self._embed_texts = embed_texts
        self._embed_query = embed_query
        self._dim = int(dim) if dim is not None else len(embed_query("dimension probe"))

    @property
    def dim(self) -> int:
        return self._dim

    @staticmethod
    def _unit(rows: Any) -> np.ndarray:
        rows = list(rows)
        return unit_rows(np.asarray(rows, dtype=np.float64).reshape(len(rows), -1))

    def embed_documents(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                        progress: Optional[bool] = None) -> np.ndarray:
        return self._unit(self._embed_texts(list(texts)))

    def embed_queries(self, texts: Sequence[str], *, batch_size: Optional[int] = None,
                      progress: Optional[bool] = None) -> np.ndarray:
        return self._unit([self._embed_query(text) for text in texts])


# ---------------------------------------------------------------- documents kept in a memory store


def json_text(value: Any, name: str) -> str:
    """``value`` as compact JSON (what a tag keeps); a TypeError naming ``name`` when it is not JSON."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        msg = f"{name} must be JSON-serialisable (str keys; str, number, bool, None, list, dict values): {exc}"
        raise TypeError(msg) from exc


def live_memories(store: Any, tenant: Optional[str] = None) -> Iterator[Any]:
    """Every live memory of ``store`` (of ``tenant``, or of all tenants), in id order: what an adapter
    reads to rebuild its index of ids from the memories' tags, and what the store's listings (MCP,
    ``fieldrank memory``) browse.

    The ids come from ``MemoryStore.ids`` (one view of the store); a memory another process
    forgets while they are read is skipped. (Reading ids in order until as many live memories as
    the store holds were seen never ended when another process added and forgot memories
    meanwhile: a memory added behind the reader was counted but never met.)"""
    for memory_id in store.ids(tenant=tenant):
        try:
            yield store.get(int(memory_id))
        except KeyError:
            continue


def placeholder_vector(store: Any) -> np.ndarray:
    """The embedding a memory gets when it has nothing to be ranked by (no text to embed, no vector
    given): a fixed unit vector, so the embedder never sees an empty text. Such memories never
    carry the adapter's ``ranked`` tag, so no recall admits them."""
    vector = np.zeros(store.dim, dtype=np.float32)
    vector[0] = 1.0
    return vector


class PicklableLock:
    """Pickling for an object that holds a ``threading.RLock`` as ``_lock`` (a lock does not
    pickle): the copy gets a fresh lock."""

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_lock", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.RLock()


@dataclass(frozen=True)
class StoredDocument:
    """One document of a :class:`DocumentCollection`: its id, text and metadata as written, and
    its embedding as the store keeps it (float32, unit norm; None when it was stored without one)."""

    id: str
    memory_id: int
    text: str
    metadata: dict[str, Any]
    embedding: Optional[np.ndarray]


class DocumentCollection(PicklableLock):
    """A framework's documents (string ids, JSON metadata, optional vectors) as memories of one
    tenant of a :class:`~fieldrank.MemoryStore`; what the LangChain, LlamaIndex and Haystack
    document stores share.

    Each document is one memory whose tags are ``<prefix>doc``, ``<prefix>id=<id>``,
    ``<prefix>meta=<metadata as JSON>`` and, when it can be ranked, ``<prefix>ranked``. A document
    is ranked by its vector (given, or the store's embedder's of its text), or by BM25 alone on a
    lexical store (``MemoryStore(path, dim=1)``); one with neither (no vector, no embedder, or an
    empty text) is stored, listed and filtered, and never recalled. Writing an id again updates the
    memory in place (same memory id). Which memory holds which id lives in the store (issue #34):
    the memory holds the store key ``<prefix><id>`` in the tenant (``MemoryStore.put``,
    ``get_by_key``, ``forget_by_key``; unique in the store's file), so several adapters, in one
    process or several, agree on every id. This object keeps the ids in order for listings and
    rebuilds them from the tags when the store's ``revision`` moved by another writer's change. A
    document written before keys existed (a tag but no store key) is forgotten and written again
    with its key when it is next written or deleted.
    """

    def __init__(self, store: Any, *, tenant: str, prefix: str) -> None:
        if not isinstance(tenant, str) or not tenant:
            msg = f"tenant must be a non-empty str, got {tenant!r}"
            raise TypeError(msg) if not isinstance(tenant, str) else ValueError(msg)
        self.store = check_store(store)
        self.tenant = tenant
        self.prefix = prefix
        self._lock = threading.RLock()
        self._ids: dict[str, int] = {}
        #: The store's ``revision`` that ``_ids`` reflects (None: rebuild at the next call).
        self._seen: Optional[int] = None
        self._catch_up()

    def _catch_up(self) -> None:
        """Rebuild the ids from the tags when the store changed other than by this object's writes."""
        with self._lock:
            revision = self.store.revision
            if revision == self._seen:
                return
            self._ids.clear()
            for memory in live_memories(self.store):
                if memory.tenant == self.tenant and self._tag("doc") in memory.tags:
                    self._ids[self._parse(memory).id] = memory.id
            self._seen = revision  # read before the rebuild: a write meanwhile moves it again

    def _wrote(self, before: Optional[int], writes: int) -> None:
        """Keep the ids after this object's own writes only if the store moved by exactly them."""
        revision = self.store.revision
        self._seen = revision if before is not None and revision == before + writes else None

    def _key(self, doc_id: str) -> str:
        return self.prefix + doc_id

    def _forget_unkeyed(self, doc_id: str) -> bool:
        """Forget the memory of a document written before keys lived in the store (its tags name
        the id but it holds no store key), so a write or delete never leaves it beside a keyed one."""
        memory_id = self._ids.get(doc_id)
        if memory_id is None:
            return False
        try:
            if self.store.get_by_key(self._key(doc_id), tenant=self.tenant).id == memory_id:
                return False
        except KeyError:
            pass
        try:
            return self.store.forget(memory_id, tenant=self.tenant)
        except KeyError:  # gone meanwhile
            return False

    def _tag(self, name: str) -> str:
        return self.prefix + name

    def _parse(self, memory: Any) -> StoredDocument:
        values = {}
        for tag in memory.tags:
            for name in ("id=", "meta="):
                if tag.startswith(self.prefix + name):
                    values[name] = tag[len(self.prefix) + len(name):]
        ranked = self._tag("ranked") in memory.tags
        return StoredDocument(values["id="], memory.id, memory.text, json.loads(values.get("meta=", "{}")),
                              memory.embedding if ranked and self.store.dim != LEXICAL_DIM else None)

    def __len__(self) -> int:
        with self._lock:
            self._catch_up()
            return len(self._ids)

    def __contains__(self, doc_id: object) -> bool:
        with self._lock:
            self._catch_up()
            return doc_id in self._ids

    def ids(self) -> list[str]:
        """Every document id, in the order the documents were first written."""
        with self._lock:
            self._catch_up()
            return list(self._ids)

    @staticmethod
    def new_id() -> str:
        return str(uuid.uuid4())

    def missing(self, doc_ids: Iterable[str]) -> list[str]:
        """The ids of ``doc_ids`` the collection does not hold, in order."""
        with self._lock:
            self._catch_up()
            return [doc_id for doc_id in doc_ids if doc_id not in self._ids]

    def put(self, doc_id: str, text: str, metadata: Mapping[str, Any], vector: Optional[Any] = None) -> int:
        """Write one document (a new memory, or the id's memory updated in place); its memory id."""
        if not isinstance(doc_id, str) or not doc_id:
            msg = f"a document id must be a non-empty str, got {doc_id!r}"
            raise TypeError(msg) if not isinstance(doc_id, str) else ValueError(msg)
        if not isinstance(metadata, Mapping):
            msg = f"metadata must be a dict, got {type(metadata).__name__}"
            raise TypeError(msg)
        tags = [self._tag("doc"), self._tag("id=") + doc_id, self._tag("meta=") + json_text(dict(metadata), "metadata")]
        if vector is not None:
            embedding, ranked = unit_vector(vector, "embedding"), True
        elif self.store.embedder is not None and text.strip():
            embedding, ranked = None, True  # the store embeds the text
        elif self.store.embedder is None and self.store.dim == LEXICAL_DIM:
            embedding, ranked = lexical_vector(self.store), bool(text.strip())
        else:
            embedding, ranked = placeholder_vector(self.store), False
        if ranked:
            tags.append(self._tag("ranked"))
        with self._lock:
            self._catch_up()
            before = self._seen
            writes = 1 + int(self._forget_unkeyed(doc_id))
            # the store keeps the id unique (another writer's put of it is replaced in place)
            memory_id = self.store.put(self._key(doc_id), text, embedding, tenant=self.tenant, tags=tags)
            self._ids[doc_id] = memory_id
            self._wrote(before, writes)
            return memory_id

    def get(self, doc_id: str) -> Optional[StoredDocument]:
        """The document with this id, or None (read from the store: what any writer last wrote)."""
        try:
            return self._parse(self.store.get_by_key(self._key(doc_id), tenant=self.tenant))
        except KeyError:
            with self._lock:  # a document written before keys existed
                memory_id = self._ids.get(doc_id)
            return None if memory_id is None else self._document(memory_id)

    def _document(self, memory_id: int) -> Optional[StoredDocument]:
        try:
            return self._parse(self.store.get(memory_id, tenant=self.tenant))
        except KeyError:
            return None

    def documents(self, doc_ids: Optional[Iterable[str]] = None) -> list[StoredDocument]:
        """The documents with these ids (every document by default), skipping absent ones."""
        with self._lock:
            self._catch_up()
            wanted = list(self._ids) if doc_ids is None else list(doc_ids)
            found = (self.get(doc_id) for doc_id in wanted)
            return [doc for doc in found if doc is not None]

    def delete(self, doc_ids: Iterable[str]) -> int:
        """Forget the documents with these ids (absent ones are skipped); how many were forgotten."""
        with self._lock:
            self._catch_up()
            before, forgotten, writes = self._seen, 0, 0
            for doc_id in dict.fromkeys(doc_ids):
                unkeyed = self._forget_unkeyed(doc_id)
                keyed = self.store.forget_by_key(self._key(doc_id), tenant=self.tenant)
                self._ids.pop(doc_id, None)
                forgotten += int(unkeyed or keyed)
                writes += int(unkeyed) + int(keyed)
            self._wrote(before, writes)
            return forgotten

    def search(self, query: Optional[str], vector: Optional[Any], k: int, *, mode: Optional[str] = None,
               keep: Optional[Callable[[StoredDocument], bool]] = None,
               reinforce: bool = False) -> list[tuple[StoredDocument, Any]]:
        """The ``k`` best ranked documents for a text and/or a vector, as (document, hit) pairs, best
        first; ``keep`` filters them (every ranked document is then scored, so that ``k`` pass).

        ``mode`` defaults to what the cue allows: ``vector`` for a vector alone, ``keyword`` for a
        text on a store without an embedder, else ``hybrid``."""
        if vector is not None:
            vector = unit_vector(vector, "query vector")
        if mode is None:
            if vector is not None and not query:
                mode = "vector"
            elif vector is None and self.store.embedder is None:
                mode = "keyword"
            else:
                mode = "hybrid"
        with self._lock:
            self._catch_up()
            size = len(self._ids)
        if size == 0 or k <= 0:
            return []
        result = self.store.recall(query or None, vector, size if keep is not None else min(k, size),
                                   tenant=self.tenant, mode=mode, reinforce=reinforce,
                                   required_tags=[self._tag("doc"), self._tag("ranked")])
        out = []
        for hit in result.hits:
            doc = self._document(hit.id)
            if doc is not None and (keep is None or keep(doc)):
                out.append((doc, hit))
                if len(out) == k:
                    break
        return out

    def mmr(self, query: Optional[str], vector: Any, k: int, fetch_k: int, lambda_mult: float, *,
            keep: Optional[Callable[[StoredDocument], bool]] = None) -> list[StoredDocument]:
        """Maximal marginal relevance with fieldrank's MMR operator (docs/spec.md §4, mu =
        ``lambda_mult``) over the ``fetch_k`` best documents for the vector (and text)."""
        from ..operators import mmr_pool  # noqa: PLC0415 - only MMR searches need it

        pool = [doc for doc, _ in self.search(query, vector, fetch_k, keep=keep) if doc.embedding is not None]
        if not pool:
            return []
        vectors = np.stack([doc.embedding for doc in pool if doc.embedding is not None])
        ranking = mmr_pool(np.arange(len(pool)), vectors,
                           unit_vector(vector, "query vector"), min(k, len(pool)), mu=lambda_mult)
        return [pool[int(i)] for i in ranking.ids]
