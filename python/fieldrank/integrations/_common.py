"""What every adapter shares: provenance dicts and reranking a caller's candidates."""

from __future__ import annotations

from collections.abc import Sequence
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
    msg = f"fieldrank.integrations.{adapter} needs {requirement}: pip install \"fieldrank[{extra}]\" ({exc})"
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
