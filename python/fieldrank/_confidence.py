"""Calibrated confidence of retrieval hits: evidence read beside the ranking, small logistic models.

A hit's *confidence* is the probability that it is relevant to the query. It is computed from a
few features of the hit and of the searched memory after the ranking is made, and never changes
the ranking. Two questions are asked separately and their answers multiplied:

*Does the searched memory hold what the query asks about at all?* (:data:`MEMORY_FEATURES`,
one value per query: absolute evidence)

``best_cosine``
    The largest raw cosine of the query and a returned hit.
``best_coverage``
    The largest ``coverage`` (below) of a returned hit.
``memory_coverage``
    The fraction of the query's informative terms found anywhere in the documents the query could
    see (its subset): a memory that never names what the query names rarely answers it.

*Is this hit the relevant one?* (:data:`HIT_FEATURES`, one value per hit: relative evidence)

``cosine``
    The hit's raw cosine with the query.
``coverage``
    The fraction of the query's informative terms the hit contains, each distinct term weighted by
    its BM25 idf (a term the index has never seen counts with the largest idf and is found
    nowhere). Terms are BM25's (the index's tokenizer, stop words and stemmer); with neighbour-text
    expansion a term of a neighbouring turn counts, as it does for BM25.
``score``
    The plan's fused score of the hit (for a one-leg plan such as ``default``, the leg's own score).
``score_gap``
    The hit's fused score minus the best fused score of the other returned hits (the margin of the
    first hit over the second; negative for every other hit).

The confidence is ``sigmoid(c0 + c1 * logit(g * h) + c2 * [rank == 1])`` with ``g`` and ``h`` the
two logistic models: a monotone recalibration of their product, separately for the first hit (the
one an agent acts on) and the others, so that the probabilities are calibrated (checked by the
expected calibration error on held-out conversations, ``docs/results/confidence.md``).

The coefficients are :class:`fieldrank.config.ConfidenceParams`: the package ships a fit on LoCoMo
(the ``[confidence]`` table of the default configuration); ``fieldrank calibrate --confidence``
refits them on a labelled split (:func:`fieldrank.evaluation._confidence.fit_params`). Margins and
the ``best_*`` features are taken over the returned hits, so they are defined at the ``k`` the
model was fitted at (the config's ``k``); another ``k`` gives close, not identical, values. The ``score`` coefficients are fitted
for the fitted configuration's fused score: refit the model for a configuration whose fused score
has another scale (an RRF of several legs).

Numpy only; :func:`fit_logistic` is an L2-regularised logistic regression by Newton steps.
"""

from __future__ import annotations

import functools
import math
import threading
import weakref
from typing import Hashable, NamedTuple, Optional, Protocol, Sequence, Union

import numpy as np

from . import _lexical

__all__ = ["HIT_FEATURES", "MEMORY_FEATURES", "Features", "Model", "QueryTerms", "assemble", "best_other", "calibrated", "confidence",
           "features", "fit_logistic", "product_logit", "query_terms"]

#: The per-query features of the memory model, in the order of ``ConfidenceParams.memory_weights``.
MEMORY_FEATURES = ("best_cosine", "best_coverage", "memory_coverage")
#: The per-hit features of the hit model, in the order of ``ConfidenceParams.hit_weights``.
HIT_FEATURES = ("cosine", "coverage", "score", "score_gap")


class Model(Hashable, Protocol):
    """What the model reads of its coefficients (:class:`fieldrank.config.ConfidenceParams` is one;
    this module does not import the configuration, which imports it)."""

    @property
    def memory_intercept(self) -> float: ...
    @property
    def memory_weights(self) -> tuple[float, ...]: ...
    @property
    def hit_intercept(self) -> float: ...
    @property
    def hit_weights(self) -> tuple[float, ...]: ...
    @property
    def calibration(self) -> tuple[float, ...]: ...


class QueryTerms(NamedTuple):
    """A query's distinct BM25 terms known to the index, their idf, and the idf total of all its
    distinct terms (unknown terms included, at the largest idf)."""

    ids: np.ndarray     # int64 vocabulary ids of the known distinct terms
    idf: np.ndarray     # float64, one per id
    total: float        # idf sum over every distinct term (0: the query has no term)


class Features(NamedTuple):
    """The features of one result: ``memory`` (len(MEMORY_FEATURES),), ``hits`` (k, len(HIT_FEATURES))."""

    memory: np.ndarray
    hits: np.ndarray


def query_terms(bm25, text: Optional[str]) -> QueryTerms:
    """The distinct terms of ``text`` under ``bm25``'s tokenizer (a :class:`fieldrank.bm25.BM25Index`),
    with their idf weights."""
    tokens = [] if text is None else list(dict.fromkeys(_lexical.tokenize(bm25, [text])[0]))
    if not tokens:
        return QueryTerms(np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float64), 0.0)
    vocab = _lexical.vocabulary(bm25)
    ids = np.asarray([vocab[t] for t in tokens if t in vocab], dtype=np.int64)
    n_docs = len(bm25)
    indptr, _ = _lexical.postings(bm25)
    idf = _lexical.idf((indptr[ids + 1] - indptr[ids]).astype(np.float64), n_docs)
    unknown = len(tokens) - int(ids.size)
    total = float(idf.sum()) + unknown * float(_lexical.idf(0, n_docs))
    return QueryTerms(ids, idf, total)


_KEYS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_KEYS_LOCK = threading.Lock()


def _entry_keys(bm25) -> Optional[np.ndarray]:
    """``term * N + document`` of every entry of the BM25 matrix, in storage order, when every posting
    list is sorted (then the keys are globally sorted: one binary search answers every (term, document)
    question of a query). Built once per index (int64, 8 bytes per entry); None for unsorted postings."""
    keys = _KEYS.get(bm25)
    if keys is None:
        with _KEYS_LOCK:
            keys = _KEYS.get(bm25)
            if keys is None:
                native = _lexical.native_arrays(bm25)
                if native is None or not native[3]:
                    keys = np.empty(0, dtype=np.int64)
                else:
                    indptr, indices = _lexical.postings(bm25)
                    terms = np.repeat(np.arange(indptr.size - 1, dtype=np.int64), np.diff(indptr))
                    keys = terms * len(bm25) + indices
                _KEYS[bm25] = keys
    return keys if keys.size else None


def _coverage(bm25, terms: QueryTerms, docs: np.ndarray, subset: Optional[np.ndarray]) -> tuple[np.ndarray, float]:
    """(coverage of each of ``docs``, coverage of the memory ``subset`` (sorted ids; None: all))."""
    if terms.total <= 0 or not terms.ids.size:
        return np.zeros(docs.shape[0]), 0.0
    keys = _entry_keys(bm25)
    n = len(bm25)
    if keys is not None:
        wanted = (terms.ids[:, None] * n + docs[None, :]).ravel()
        at = np.minimum(np.searchsorted(keys, wanted), keys.size - 1)
        found = (keys[at] == wanted).reshape(terms.ids.size, docs.shape[0])
        if subset is None:
            indptr, _ = _lexical.postings(bm25)
            anywhere = indptr[terms.ids + 1] > indptr[terms.ids]
        elif subset[-1] - subset[0] + 1 == subset.size:  # a block of consecutive ids (a conversation, a tenant)
            bounds = np.searchsorted(keys, (terms.ids[:, None] * n + np.array([subset[0], subset[-1] + 1])).ravel())
            anywhere = bounds[1::2] > bounds[0::2]
        else:
            anywhere = _in_subset(bm25, terms.ids, subset, found)
    else:
        indptr, indices = _lexical.postings(bm25)
        found = np.zeros((terms.ids.size, docs.shape[0]), dtype=bool)
        for j, t in enumerate(terms.ids.tolist()):
            found[j] = np.isin(docs, indices[indptr[t]: indptr[t + 1]])
        anywhere = (indptr[terms.ids + 1] > indptr[terms.ids]) if subset is None else \
            _in_subset(bm25, terms.ids, subset, found)
    return terms.idf @ found / terms.total, float(terms.idf @ anywhere) / terms.total


def _in_subset(bm25, term_ids: np.ndarray, subset: np.ndarray, found: np.ndarray) -> np.ndarray:
    """Whether some document of ``subset`` holds each term (True where a returned hit does)."""
    indptr, indices = _lexical.postings(bm25)
    anywhere = found.any(axis=1)
    for j, t in enumerate(term_ids.tolist()):
        if anywhere[j]:
            continue
        postings = indices[indptr[t]: indptr[t + 1]]
        if postings.size:
            at = np.minimum(np.searchsorted(subset, postings), subset.size - 1)
            anywhere[j] = bool(np.any(subset[at] == postings))
    return anywhere


def best_other(values: np.ndarray) -> np.ndarray:
    """For each entry, the largest of the other entries (the entry itself when it is alone)."""
    if values.shape[0] < 2:
        return values.copy()
    listed = values.tolist()  # k is small: plain Python beats numpy's per-call cost
    top = max(range(len(listed)), key=listed.__getitem__)
    best = listed[top]
    out = np.full(values.shape[0], best)
    out[top] = max(listed[:top] + listed[top + 1:])
    return out


def features(E: np.ndarray, q: np.ndarray, bm25, terms: QueryTerms, hit_ids: np.ndarray, scores: np.ndarray,
             subset: Optional[np.ndarray]) -> Features:
    """The :class:`Features` of one result: hits ``hit_ids`` (best first) with fused ``scores``, the
    (d,) unit query vector ``q``, the query's :func:`query_terms`, ``subset`` the sorted ids the
    query could see (None: every document of ``E`` / ``bm25``)."""
    if hit_ids.shape[0] == 0:
        return assemble(np.empty(0), np.empty(0), np.empty(0), 0.0)
    coverage, memory_coverage = _coverage(bm25, terms, hit_ids, subset)
    return assemble(E[hit_ids] @ q, coverage, scores, memory_coverage)


def assemble(cosines: np.ndarray, coverage: np.ndarray, scores: Union[np.ndarray, Sequence[float]],
             memory_coverage: float) -> Features:
    """The :class:`Features` of one result from its hits' cosines, coverages and fused scores (best
    first) and the memory's coverage: the one layout of the retriever's and the store's features."""
    k = int(len(scores))
    hits = np.zeros((k, len(HIT_FEATURES)), dtype=np.float64)
    memory = np.zeros(len(MEMORY_FEATURES), dtype=np.float64)
    if k == 0:
        return Features(memory, hits)
    s = np.asarray(scores, dtype=np.float64)
    hits[:, 0] = cosines
    hits[:, 1] = coverage
    hits[:, 2] = s
    hits[:, 3] = s - best_other(s)
    memory[:] = (float(cosines.max()), float(coverage.max()), memory_coverage)
    return Features(memory, hits)


@functools.lru_cache(maxsize=64)
def _arrays(params: Model) -> tuple[np.ndarray, np.ndarray]:
    """The weight vectors of a (frozen, hashable) model as float64 arrays, once."""
    return np.asarray(params.memory_weights, dtype=np.float64), np.asarray(params.hit_weights, dtype=np.float64)


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return np.log(p) - np.log1p(-p)


def product_logit(memory: np.ndarray, hits: np.ndarray, params: Model) -> np.ndarray:
    """logit(g * h) per hit; ``memory`` (n, len(MEMORY_FEATURES)) rows align with ``hits`` rows."""
    g = _sigmoid(params.memory_intercept + memory @ np.asarray(params.memory_weights))
    h = _sigmoid(params.hit_intercept + hits @ np.asarray(params.hit_weights))
    return _logit(g * h)


def calibrated(z: np.ndarray, top: np.ndarray, params: Model) -> np.ndarray:
    c0, c1, c2 = params.calibration
    return _sigmoid(c0 + c1 * z + c2 * top)


def confidence(f: Features, params: Model) -> np.ndarray:
    """float64 (k,) confidences in [0, 1] of one result's hits, best first (the same numbers as
    :func:`product_logit` and :func:`calibrated`, with the query's memory model evaluated once)."""
    k = f.hits.shape[0]
    if k == 0:
        return np.empty(0, dtype=np.float64)
    memory_weights, hit_weights = _arrays(params)
    g = 1.0 / (1.0 + math.exp(-(params.memory_intercept + float(f.memory @ memory_weights))))
    p = np.clip(g / (1.0 + np.exp(-(params.hit_intercept + f.hits @ hit_weights))), 1e-12, 1.0 - 1e-12)
    c0, c1, c2 = params.calibration
    z = c0 + c1 * (np.log(p) - np.log1p(-p))
    z[0] += c2
    return 1.0 / (1.0 + np.exp(-z))


def fit_logistic(X: np.ndarray, y: np.ndarray, *, l2: float = 1e-3,
                 iterations: int = 100) -> tuple[float, np.ndarray]:
    """L2-regularised logistic regression by Newton steps: ``(intercept, weights)``.

    ``X`` (n, f), ``y`` (n,) in {0, 1}; ``l2`` is the penalty per sample on the weights (not the
    intercept). Deterministic.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, f = X.shape
    A = np.hstack([np.ones((n, 1)), X])
    beta = np.zeros(f + 1)
    penalty = np.full(f + 1, l2 * n)
    penalty[0] = 0.0
    for _ in range(iterations):
        p = _sigmoid(A @ beta)
        grad = A.T @ (p - y) + penalty * beta
        hess = (A * (p * (1.0 - p))[:, None]).T @ A + np.diag(penalty) + 1e-9 * np.eye(f + 1)
        step = np.linalg.solve(hess, grad)
        beta -= step
        if float(np.max(np.abs(step))) < 1e-10:
            break
    return float(beta[0]), beta[1:]
