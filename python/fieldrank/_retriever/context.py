"""``QueryContext``: everything a leg may read for a group of queries sharing a subset.

The query texts (checked) and vectors (checked, (n, d) float32 unit rows), the corpus
(:class:`~fieldrank._retriever.corpus.Corpus`: texts, rows, BM25 index, timeline), the subset
(sorted unique ids, None: every document), the plan's ``k`` and the thread count; and the inputs
the legs share, each computed once per group by :meth:`QueryContext.share` before any leg runs:
one cosine prefilter at the largest depth a leg takes (its order is total, so a prefix of the
top-P is the top-p), one BM25 top list per query at the largest lexical depth, every document's
BM25 scores when a leg blends them, and the question features of the timeline.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, NamedTuple, Optional, TypeVar

import numpy as np

from .. import _kernels
from .. import _lexical
from .. import temporal as _temporal
from .corpus import Corpus

__all__ = ["LegOutput", "QueryContext"]

T = TypeVar("T")


class LegOutput(NamedTuple):
    """One leg's ranking for one query: ids best first, raw scores, CFS-R coefficients (or None)."""

    ids: np.ndarray
    scores: np.ndarray
    coef: Optional[np.ndarray]


class QueryContext:
    """What the legs of one plan read for ``n`` queries sharing ``subset`` (see the module notes).

    Attributes
    ----------
    corpus : Corpus
    texts : list of str or None
        The query texts (None when the plan needs none).
    Q : np.ndarray or None
        (n, d) float32 unit query vectors (None when the plan needs none).
    n : int
        Queries in the group (a single search is a group of one).
    subset : np.ndarray or None
        Sorted unique int64 ids the queries may see (None: every document).
    n_threads : int
        Worker threads (``<= 0``: all cores); results do not depend on it.
    k : int
        Hits the plan returns per query.
    """

    def __init__(self, corpus: Corpus, texts: Optional[list[str]], Q: Optional[np.ndarray], n: int,
                 subset: Optional[np.ndarray], n_threads: int, k: int) -> None:
        self.corpus = corpus
        self.texts = texts
        self.Q = Q
        self.n = n
        self.subset = subset
        self.n_threads = n_threads
        self.k = k
        self._dense: Any = None          # shared cosine prefilter: one LegOutput (1-D arrays) per query
        self._dense_depth = 0            # the depth it was computed at
        self._lexical: Any = None        # shared BM25 top lists, one LegOutput per query
        self._lexical_depth = 0
        self._lexical_scores: Optional[np.ndarray] = None  # (n, N) BM25 scores of every document
        self._lexical_begin: Optional[int] = None  # the scores cover documents lexical_begin.. only (None: all)
        self._features: Any = None       # (intent, windows) of the query texts

    # ---------------------------------------------------------------- the shared inputs
    def share(self, dense_depth: int, lexical_depth: int, lexical_scores: bool,
              given_scores: Optional[np.ndarray] = None) -> None:
        """Compute the shared inputs the plan's legs take (once per group; see the module notes).

        ``given_scores`` (n, N): every document's BM25 scores computed already (calibration).
        """
        if dense_depth:
            self._share_dense(dense_depth)
        if lexical_depth or (lexical_scores and given_scores is None):
            self._share_lexical(lexical_depth, lexical_scores and given_scores is None)
        if given_scores is not None:
            self._lexical_scores = given_scores

    def _share_dense(self, depth: int) -> None:
        corpus, Q, sub = self.corpus, self.Q, self.subset
        if self.n == 1:  # the single-query scan; its 1-D arrays are the group's one row
            pre = _kernels.prefilter(corpus.E, Q[0], depth, sub)
            self._dense = [LegOutput(pre.ids, pre.scores, None)]
        else:
            pre = _kernels.prefilter_batch_trusted(corpus.E, Q, depth, sub, self.n_threads)
            self._dense = [LegOutput(ids, scores, None) for ids, scores in zip(pre.ids, pre.scores)]
        self._dense_depth = depth

    def _share_lexical(self, depth: int, all_scores: bool) -> None:
        bm25, sub = self.corpus.bm25, self.subset
        token_ids = [_lexical.token_ids(bm25, tokens) for tokens in _lexical.tokenize(bm25, self.texts)]
        # Every document's scores of all queries in one native call when a leg blends them; the
        # BM25 top lists then rank those rows instead of scoring again.
        if all_scores:
            # Without a BM25 top list, only the block of documents the subset spans is scored
            # (a conversation of a long log): the temporal leg reads no other column.
            docs = None if sub is None or depth or not sub.size else (int(sub[0]), int(sub[-1]) + 1)
            self._lexical_scores = _lexical.scores_matrix(bm25, token_ids, self.n_threads, docs)
            self._lexical_begin = None if docs is None else docs[0]
        if depth:
            mask = None
            if sub is not None:
                mask = np.zeros(len(bm25), dtype=bool)
                mask[sub] = True
            self._lexical_depth = depth
            if self._lexical_scores is None:
                self._lexical = [LegOutput(*_lexical.rank(bm25, ids, depth, mask), None) for ids in token_ids]
            else:
                self._lexical = [LegOutput(*_lexical.rank(bm25, ids, depth, mask, row), None)
                                 for ids, row in zip(token_ids, self._lexical_scores)]

    # ---------------------------------------------------------------- what legs read
    def dense_tops(self, depth: int) -> list[LegOutput]:
        """Each query's cosine top-``depth`` (a prefix of the shared prefilter; ``depth`` at most
        the largest :meth:`~fieldrank._retriever.legs.Leg.dense_depth` of the plan)."""
        if depth >= self._dense_depth:  # the whole shared prefilter (its rows are no longer than that)
            return self._dense
        return [LegOutput(ids[:depth], scores[:depth], None) for ids, scores, _ in self._dense]

    def lexical_tops(self, depth: int) -> list[LegOutput]:
        """Each query's BM25 top-``depth`` over the subset (documents sharing a term with it)."""
        if depth >= self._lexical_depth:  # the whole shared BM25 top list
            return self._lexical
        return [LegOutput(ids[:depth], scores[:depth], None) for ids, scores, _ in self._lexical]

    def lexical_scores(self) -> tuple[np.ndarray, Optional[int]]:
        """``(scores, begin)``: every query's BM25 scores of documents ``begin ..`` (None: of all N)."""
        return self._lexical_scores, self._lexical_begin

    def question_features(self) -> tuple[Any, Any]:
        """:func:`fieldrank.temporal.question_features` of the query texts over the subset, once."""
        if self._features is None:
            corpus = self.corpus
            years = corpus.years if self.subset is None else None
            self._features = _temporal.question_features(self.texts, corpus.timeline, self.subset, years=years)
        return self._features

    def map_queries(self, one: Callable[[int], T]) -> list[T]:
        """``[one(b) for b in range(n)]``, on up to ``n_threads`` threads (the order kept)."""
        workers = self.n_threads if self.n_threads > 0 else (os.cpu_count() or 1)
        if workers <= 1 or self.n <= 1:
            return [one(b) for b in range(self.n)]
        with ThreadPoolExecutor(max_workers=min(workers, self.n)) as pool:
            return list(pool.map(one, range(self.n)))
