"""The one BM25 build and scorer: bm25s's formulas (idf, term-frequency component, float32 rounding),
the term x document score matrix, the neighbour-text sum and the native scorer; and the top-k selection."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple, Optional

import numpy as np

from .. import _kernels
from .params import BM25Params

__all__ = ["ID_DTYPE", "SCORE_DTYPE", "IdsScores", "Matrix", "Statistics", "add_scaled", "empty_ranking", "idf",
           "index_matrix", "matrix_scores", "postings_sorted", "score_matrix", "select_top"]

SCORE_DTYPE = np.float32
ID_DTYPE = np.int64
#: ``(ids, scores)``: int64 document ids and float32 scores, best first.
IdsScores = tuple[np.ndarray, np.ndarray]


def postings_sorted(indices: np.ndarray, indptr: np.ndarray) -> bool:
    """Whether every column of a CSC matrix lists its rows in increasing order (bm25s's builds and
    :func:`add_scaled` write them so; a loaded index is checked, not trusted)."""
    if indices.size < 2:
        return True
    increasing = np.diff(indices) > 0
    # A column's first entry may be below the previous column's last: those steps do not count.
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < indices.size)]
    increasing[starts - 1] = True
    return bool(increasing.all())


def empty_ranking() -> IdsScores:
    return np.empty(0, dtype=ID_DTYPE), np.empty(0, dtype=SCORE_DTYPE)


def select_top(ids: np.ndarray, scores: np.ndarray, k: int) -> IdsScores:
    """Top ``k`` of ``(ids, scores)``: score descending, ties by lower id.

    ``np.argpartition`` narrows to the candidates scoring at least the k-th best value (all
    of its ties kept), then ``np.lexsort`` on ``(id, -score)`` fixes the order.
    """
    if ids.size > k:
        kth_best = scores[np.argpartition(scores, ids.size - k)[ids.size - k]]
        keep = scores >= kth_best
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order].astype(ID_DTYPE, copy=False), scores[order].astype(SCORE_DTYPE, copy=False)


class Matrix(NamedTuple):
    """A BM25 score matrix, terms x documents in CSC form (column ``t``: the postings of term ``t``).

    ``data`` float32 entry scores, ``indices`` int32 documents (increasing within a column),
    ``indptr`` int64 column offsets (one per term + 1), ``nonoccurrence`` float32 per term for
    ``"bm25l"``/``"bm25+"`` (the score every document gets for a query term, added at query
    time; the entries are relative to it), else None.
    """

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    nonoccurrence: Optional[np.ndarray]


class Statistics(NamedTuple):
    """The corpus statistics a (document, term) entry depends on: document frequency per term,
    number of documents, average document length (float64, as ``bm25s`` computes it)."""

    document_frequency: np.ndarray
    n_docs: int
    average_length: np.floating


# The BM25 variants, as bm25s 0.3 computes them (bm25s/scoring.py, MIT licence), so that every
# entry equals bm25s's bit for bit (held to bm25s by tests/retriever/test_bm25.py). idf takes
# Python ints and returns a Python float (math.log: bm25s's libm, not numpy's SIMD log); the
# term-frequency component takes a float32 ``tf`` array, int64 lengths and a float64 average,
# and its dtypes follow numpy's promotion exactly as in bm25s (e.g. ``tf * (k1 + 1)`` stays float32).
def _idf_robertson(df: int, n: int) -> float:
    inner = (n - df + 0.5) / (df + 0.5)
    return math.log(max(inner, 1))  # bm25s clamps the ratio at 1 (idf >= 0)


_IDF = {
    "robertson": _idf_robertson,
    "lucene": lambda df, n: math.log(1 + (n - df + 0.5) / (df + 0.5)),
    "atire": lambda df, n: math.log(n / df),
    "bm25l": lambda df, n: math.log((n + 1) / (df + 0.5)),
    "bm25+": lambda df, n: math.log((n + 1) / df),
}


def _tfc_robertson(tf: Any, l_d: Any, l_avg: Any, k1: float, b: float, delta: float) -> Any:
    return tf / (k1 * ((1 - b) + b * l_d / l_avg) + tf)


def _tfc_atire(tf: Any, l_d: Any, l_avg: Any, k1: float, b: float, delta: float) -> Any:
    return (tf * (k1 + 1)) / (tf + k1 * (1 - b + b * l_d / l_avg))


def _tfc_bm25l(tf: Any, l_d: Any, l_avg: Any, k1: float, b: float, delta: float) -> Any:
    c = tf / (1 - b + b * l_d / l_avg)
    return ((k1 + 1) * (c + delta)) / (k1 + c + delta)


def _tfc_bm25plus(tf: Any, l_d: Any, l_avg: Any, k1: float, b: float, delta: float) -> Any:
    return ((k1 + 1) * tf) / (k1 * (1 - b + b * l_d / l_avg) + tf) + delta


_TFC = {"robertson": _tfc_robertson, "lucene": _tfc_robertson, "atire": _tfc_atire, "bm25l": _tfc_bm25l,
        "bm25+": _tfc_bm25plus}
_NONOCCURRENCE_METHODS = ("bm25l", "bm25+")


def idf(df: Any, n_docs: int) -> np.ndarray:
    """float64 Lucene idf ``log(1 + (N - df + 0.5) / (df + 0.5))`` of each document frequency in ``df``
    among ``n_docs`` documents; df 0 (a term the index has never seen) gives the largest value.

    The term weight of the confidence model (:mod:`fieldrank._confidence`), which was fitted with it:
    evaluated with ``log1p`` in float64, where the build's entries (``_IDF["lucene"]``) take bm25s's
    ``math.log(1 + x)`` and are rounded to float32. One formula, two roundings; both here.
    """
    df = np.asarray(df, dtype=np.float64)
    return np.log1p((n_docs - df + 0.5) / (df + 0.5))


def _per_term(method: str, df: np.ndarray, n_docs: int, factor: Any = None) -> np.ndarray:
    """float32 per term: idf (``factor`` None) or idf x ``factor`` (the non-occurrence score);
    0 for a term no document holds. One ``math.log`` per distinct document frequency."""
    idf_of = _IDF[method]
    values, inverse = np.unique(df, return_inverse=True)
    per_value = [0.0 if v == 0 else (idf_of(v, n_docs) if factor is None else idf_of(v, n_docs) * factor)
                 for v in values.tolist()]
    return np.asarray(per_value, dtype=SCORE_DTYPE)[inverse.reshape(-1)] if df.size else np.zeros(0, SCORE_DTYPE)


def _statistics(lengths: np.ndarray, terms: np.ndarray, n_terms: int) -> Statistics:
    """Statistics of a corpus from its document lengths and its distinct (document, term) terms."""
    n_docs = int(lengths.size)
    return Statistics(np.bincount(terms, minlength=n_terms).astype(np.int64), n_docs,
                       np.float64(int(lengths.sum())) / np.float64(n_docs))


def score_matrix(params: BM25Params, token_ids: Sequence[Sequence[int]], n_terms: int,
                  statistics: Optional[Statistics] = None) -> Matrix:
    """The BM25 matrix of the documents ``token_ids`` (term ids in ``[0, n_terms)``, repeats counted).

    ``statistics`` (document frequencies, N, average length) default to those of these documents
    (a whole index); the memory store's delta passes the corpus's. Entries are bm25s's: idf
    rounded to float32, the term-frequency component in float64, their product (minus the
    non-occurrence score for ``"bm25l"``/``"bm25+"``) rounded to float32.
    """
    lengths = np.fromiter((len(d) for d in token_ids), dtype=np.int64, count=len(token_ids))
    flat = (np.concatenate([np.asarray(d, dtype=np.int64) for d in token_ids]) if len(token_ids)
            else np.empty(0, dtype=np.int64))
    # (term, document) pairs, term-major: np.unique sorts them in CSC order and counts the repeats.
    width = np.int64(max(lengths.size, 1))
    pairs, tf = np.unique(flat * width + np.repeat(np.arange(lengths.size, dtype=np.int64), lengths),
                          return_counts=True)
    terms, docs = pairs // width, pairs % width
    stats = _statistics(lengths, terms, n_terms) if statistics is None else statistics
    df = np.asarray(stats.document_frequency[:n_terms], dtype=np.int64)
    method, k1, b, delta = params.method, params.k1, params.b, params.delta
    tfc = _TFC[method](tf.astype(SCORE_DTYPE), lengths[docs], stats.average_length, k1, b, delta)
    counts = np.bincount(terms, minlength=n_terms)
    present = np.flatnonzero(counts)  # idf of the terms these documents hold (a delta holds few)
    idf = np.zeros(n_terms, dtype=SCORE_DTYPE)
    idf[present] = _per_term(method, df[present], stats.n_docs)
    entries = idf[terms] * tfc
    nonoccurrence = None
    if method in _NONOCCURRENCE_METHODS:
        # bm25s: tfc of a term absent from a document of average length; entries are relative to it.
        absent = _TFC[method](0, stats.average_length, stats.average_length, k1, b, delta)
        nonoccurrence = _per_term(method, df, stats.n_docs, absent)
        entries = entries - nonoccurrence[terms]
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return Matrix(entries.astype(SCORE_DTYPE), docs.astype(np.int32), indptr, nonoccurrence)


def add_scaled(a: Matrix, b: Matrix, weight: float, n_docs: int) -> Matrix:
    """``a + weight x b`` over the same terms and documents (neighbour-text expansion).

    Entry by entry in float32: ``a + (weight x b)`` where both hold one, ``a`` or ``weight x b``
    where one does; entries summing to exactly 0 are left out (as a sparse sum stores them, the
    build this replaces: ``scipy.sparse``). BM25 scores are sums of these entries over query
    terms, so the sum scores as the sum of the two indexes.
    """
    scale = SCORE_DTYPE(weight)
    n_terms = a.indptr.size - 1
    width = np.int64(max(n_docs, 1))

    def keys(m: Matrix) -> np.ndarray:
        return np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(m.indptr)) * width + m.indices

    a_keys, b_keys = keys(a), keys(b)
    union, inverse = np.unique(np.concatenate([a_keys, b_keys]), return_inverse=True)
    inverse = inverse.reshape(-1)
    data = np.zeros(union.size, dtype=SCORE_DTYPE)
    data[inverse[: a_keys.size]] = a.data
    data[inverse[a_keys.size:]] += b.data * scale  # keys are unique within each matrix
    kept = data != 0
    union, data = union[kept], data[kept]
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(union // width, minlength=n_terms), out=indptr[1:])
    nonoccurrence = None
    if a.nonoccurrence is not None:
        nonoccurrence = (a.nonoccurrence + scale * b.nonoccurrence).astype(SCORE_DTYPE)
    return Matrix(data, (union % width).astype(np.int32), indptr, nonoccurrence)


def index_matrix(params: BM25Params, token_ids: Sequence[Sequence[int]], n_terms: int,
                  context_ids: Optional[Sequence[Sequence[int]]] = None,
                  statistics: Optional[tuple[Statistics, Statistics]] = None) -> Matrix:
    """The one build: BM25 of the documents, plus ``context_weight`` x BM25 of their context documents
    (``context_ids``, neighbour-text expansion) when given. ``statistics``: (own, context) corpus
    statistics to score against (the memory store's delta); None: the documents' own."""
    own_stats, context_stats = (None, None) if statistics is None else statistics
    matrix = score_matrix(params, token_ids, n_terms, own_stats)
    if context_ids is not None:
        context = score_matrix(params, context_ids, n_terms, context_stats)
        matrix = add_scaled(matrix, context, params.context_weight, len(token_ids))
    return matrix


def matrix_scores(matrix: tuple[np.ndarray, np.ndarray, np.ndarray, bool], nonoccurrence: Optional[np.ndarray],
                   n_docs: int, token_ids: Sequence[np.ndarray], begin: int = 0, end: Optional[int] = None,
                   n_threads: int = 1) -> np.ndarray:
    """The one scorer: (B, end - begin) float32 scores of documents ``begin .. end - 1`` for each
    query's term ids (``matrix``: data, indices, indptr, postings sorted).

    Native (``_core.bm25_scores_batch``: float32 sums of the query terms' entries in query order,
    repeats counted, postings read in place, GIL released, one query per thread), bit for bit
    ``bm25s.BM25.get_scores_from_ids``; a query without a known term scores 0 everywhere.
    """
    end = n_docs if end is None else end
    if len(token_ids) == 1:
        flat = token_ids[0].astype(np.int64)
        offsets = np.array([0, flat.size], dtype=np.int64)
    else:
        offsets = np.fromiter(itertools.accumulate((ids.size for ids in token_ids), initial=0), dtype=np.int64,
                              count=len(token_ids) + 1)
        flat = np.concatenate(token_ids).astype(np.int64) if token_ids else np.empty(0, dtype=np.int64)
    data, indices, indptr, ordered = matrix
    scores = _kernels.bm25_scores_batch(data, indices, indptr, n_docs, offsets, flat, begin, end, ordered, n_threads)
    if nonoccurrence is not None:
        # BM25L / BM25+: bm25s adds the query's non-occurrence constant (a float32 sum) last.
        for row, ids in enumerate(token_ids):
            if ids.size:
                scores[row] += nonoccurrence[ids].sum()
    return scores

