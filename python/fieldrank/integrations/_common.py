"""What every adapter shares: provenance dicts and reranking a caller's candidates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
                      query_vector: Optional[np.ndarray] = None, embedder: Optional[Embedder] = None,
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
    query_vector : (d,) array, optional
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
