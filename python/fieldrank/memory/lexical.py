"""The store's BM25 leg: an immutable bm25s index plus a small delta of recent additions.

:class:`fieldrank.bm25.BM25Index` is immutable (built once from texts). The store keeps

* a **main** ``BM25Index`` over rows ``[0, main_n)``, and
* a **delta**: rows ``[main_n, n)`` added since the main index was built, held as flat numpy
  postings ``(row, term, tf)`` and scored by brute force over those postings.

Both are brought up to date lazily, on the next lexical query (``catch_up``): new rows are
tokenized once, with the same tokenizer as the main index (``bm25s.tokenize``, lower-casing,
English stop words, Snowball stemming), and their terms counted into global document
frequencies. When the delta outgrows ``max(bm25_delta_min_docs, bm25_delta_fraction · main_n)``
the main index is rebuilt over all rows and the delta emptied.

Scores. The delta is scored with the Lucene BM25 formula of bm25s (``method="lucene"``)::

    idf(t) = ln(1 + (N − df(t) + 0.5) / (df(t) + 0.5))
    score(d) = Σ_t idf(t) · tf / (tf + k1 · (1 − b + b · |d| / avgdl))

with N, df and avgdl counted over *all* rows (main and delta), so delta scores are on the main
index's scale. The main index keeps the statistics of its last build: the two scales drift
apart by at most the delta's share of the corpus (``bm25_delta_fraction``), which is why the
delta is bounded. With every row in the delta the two agree with ``BM25Index.scores`` to float32
rounding (a test checks it).

Costs. Adding is O(1) (nothing happens until the next lexical query). A query costs one
``BM25Index.top`` plus O(delta postings) vectorised numpy work. Catching up costs one
``bm25s.tokenize`` call over the new rows; a rebuild costs a full bm25s build, O(N), which
happens after every ``bm25_delta_fraction · N`` additions, so its cost per addition is O(1)
amortised (the same argument as a doubling array). Tombstoned rows stay in the statistics until
:meth:`MemoryStore.compact` and are never returned (queries are restricted by the caller's mask).

Thread-safety: one lock serialises catch-up, rebuild and query of the leg. Queries are short
(sub-millisecond at 100k rows); a rebuild blocks lexical queries while it runs.
"""

from __future__ import annotations

import threading
from typing import Optional, Sequence

import bm25s
import numpy as np
import Stemmer

from ..bm25 import BM25Index
from .params import MemoryParams

__all__ = ["LexicalLeg"]

_SCORE_DTYPE = np.float32
_EMPTY_TOKEN = ""


def _empty() -> tuple[np.ndarray, np.ndarray]:
    return np.empty(0, dtype=np.int64), np.empty(0, dtype=_SCORE_DTYPE)


def top_by_score(rows: np.ndarray, scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Top ``k`` of ``(rows, scores)``: higher score first, equal scores -> lower row first."""
    if rows.size > k:
        kth_best = scores[np.argpartition(scores, rows.size - k)[rows.size - k]]
        keep = scores >= kth_best
        rows, scores = rows[keep], scores[keep]
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


class LexicalLeg:
    """BM25 over the rows of one generation (see the module notes)."""

    def __init__(self, params: MemoryParams) -> None:
        self._bm25_params = params.bm25_params
        self._delta_min_docs = params.bm25_delta_min_docs
        self._delta_fraction = params.bm25_delta_fraction
        stemmer_language = self._bm25_params.stemmer_language
        self._stemmer = Stemmer.Stemmer(stemmer_language) if stemmer_language else None
        self._lock = threading.Lock()
        self._main: Optional[BM25Index] = None
        self._main_n = 0
        #: Rows accounted for: [0, main_n) in bm25s, [main_n, n_seen) in the delta.
        self._n_seen = 0
        # Global statistics (vocabulary, df, total length) over rows [0, statistics_rows).
        self._reset_statistics()
        # Delta postings over rows [main_n, n_seen); lengths indexed by row - main_n.
        self._clear_delta()
        #: Number of bm25s builds so far (for tests and diagnostics).
        self.rebuilds = 0

    # ------------------------------------------------------------------ internals
    def _tokenize(self, texts: Sequence[str], return_ids: bool):
        params = self._bm25_params
        return bm25s.tokenize(
            list(texts),
            lower=params.lowercase,
            stopwords=params.stopwords,
            stemmer=self._stemmer,
            return_ids=return_ids,
            show_progress=False,
        )

    def _reset_statistics(self) -> None:
        self._vocabulary: dict[str, int] = {}
        self._document_frequency = np.zeros(0, dtype=np.int64)
        self._total_length = 0
        self._statistics_rows = 0

    def _clear_delta(self) -> None:
        self._delta_rows = np.empty(0, dtype=np.int64)
        self._delta_terms = np.empty(0, dtype=np.int64)
        self._delta_tf = np.empty(0, dtype=np.float64)
        self._delta_lengths = np.empty(0, dtype=np.float64)

    def _absorb(self, texts: Sequence[str], start: int, keep_postings: bool) -> None:
        """Count rows ``[start, start + len(texts))`` into the statistics (and the delta postings)."""
        count = len(texts)
        if count == 0:
            return
        tokenized = self._tokenize(texts, return_ids=True)
        global_of_local = np.empty(len(tokenized.vocab), dtype=np.int64)
        for token, local_id in tokenized.vocab.items():
            if token == _EMPTY_TOKEN:
                global_of_local[local_id] = -1
                continue
            global_id = self._vocabulary.get(token)
            if global_id is None:
                global_id = len(self._vocabulary)
                self._vocabulary[token] = global_id
            global_of_local[local_id] = global_id
        if len(self._vocabulary) > self._document_frequency.size:
            grown = np.zeros(max(len(self._vocabulary), 2 * self._document_frequency.size), dtype=np.int64)
            grown[: self._document_frequency.size] = self._document_frequency
            self._document_frequency = grown
        raw_lengths = np.fromiter((len(ids) for ids in tokenized.ids), dtype=np.int64, count=count)
        lengths = np.zeros(count, dtype=np.int64)
        if raw_lengths.sum():
            flat_terms = global_of_local[np.concatenate([np.asarray(ids, dtype=np.int64) for ids in tokenized.ids])]
            flat_rows = np.repeat(np.arange(start, start + count, dtype=np.int64), raw_lengths)
            real = flat_terms >= 0
            flat_terms, flat_rows = flat_terms[real], flat_rows[real]
            lengths = np.bincount(flat_rows - start, minlength=count).astype(np.int64)
            width = np.int64(max(len(self._vocabulary), 1))
            pairs, tf = np.unique(flat_rows * width + flat_terms, return_counts=True)
            pair_rows, pair_terms = pairs // width, pairs % width
            np.add.at(self._document_frequency, pair_terms, 1)
            if keep_postings:
                self._delta_rows = np.concatenate([self._delta_rows, pair_rows])
                self._delta_terms = np.concatenate([self._delta_terms, pair_terms])
                self._delta_tf = np.concatenate([self._delta_tf, tf.astype(np.float64)])
        self._total_length += int(lengths.sum())
        if keep_postings:
            self._delta_lengths = np.concatenate([self._delta_lengths, lengths.astype(np.float64)])
        self._statistics_rows = start + count
        self._n_seen = max(self._n_seen, start + count)

    def _rebuild(self, texts: Sequence[str], n_rows: int) -> None:
        """Build the main index over rows ``[0, n_rows)``; the delta empties.

        The global statistics are recounted lazily, only once a new delta needs them, so a bulk
        load followed by queries tokenizes the corpus once (inside bm25s), not twice.
        """
        self._reset_statistics()
        self._clear_delta()
        try:
            self._main = BM25Index(texts[:n_rows], self._bm25_params)
        except ValueError:
            # No row holds an indexable token, so bm25s has nothing to index: keep every row in
            # the delta (its postings are empty) with exact statistics.
            self._main, self._main_n, self._n_seen = None, 0, 0
            self._absorb(texts[:n_rows], 0, keep_postings=True)
            return
        self._main_n = self._n_seen = n_rows
        self.rebuilds += 1

    def _delta_limit(self) -> int:
        return max(self._delta_min_docs, int(self._delta_fraction * self._main_n))

    def catch_up(self, texts: Sequence[str], n_rows: int) -> None:
        """Account for rows up to ``n_rows`` (caller holds the lock); rebuild if the delta is too big."""
        if n_rows <= self._n_seen:
            return
        if n_rows - self._main_n > self._delta_limit():
            self._rebuild(texts, n_rows)
            return
        if self._statistics_rows < self._main_n:
            # The statistics of the main index's rows were dropped at its build: count them now,
            # once (no postings: bm25s scores those rows).
            self._absorb(texts[: self._main_n], 0, keep_postings=False)
        self._absorb(texts[self._n_seen : n_rows], self._n_seen, keep_postings=True)

    def _delta_scores(self, query: str, eligible: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        if self._delta_rows.size == 0:
            return _empty()
        tokens = self._tokenize([query], return_ids=False)[0]
        term_ids = [self._vocabulary[t] for t in tokens if t in self._vocabulary]
        if not term_ids:
            return _empty()
        terms, multiplicity = np.unique(np.asarray(term_ids, dtype=np.int64), return_counts=True)
        hit = np.flatnonzero(np.isin(self._delta_terms, terms))
        rows = self._delta_rows[hit]
        visible = rows < eligible.size  # an older snapshot does not see the newest rows
        hit, rows = hit[visible], rows[visible]
        allowed = eligible[rows]
        hit, rows = hit[allowed], rows[allowed]
        if rows.size == 0:
            return _empty()
        params = self._bm25_params
        entry_terms, tf = self._delta_terms[hit], self._delta_tf[hit]
        n_docs = float(self._statistics_rows)
        average_length = self._total_length / n_docs if self._total_length else 1.0
        df = self._document_frequency[entry_terms].astype(np.float64)
        idf = np.log1p((n_docs - df + 0.5) / (df + 0.5))
        lengths = self._delta_lengths[rows - self._main_n]
        saturation = tf / (tf + params.k1 * (1.0 - params.b + params.b * lengths / average_length))
        weight = multiplicity[np.searchsorted(terms, entry_terms)]
        unique_rows, inverse = np.unique(rows, return_inverse=True)
        scores = np.bincount(inverse, weights=idf * saturation * weight).astype(_SCORE_DTYPE)
        positive = scores > 0
        return top_by_score(unique_rows[positive], scores[positive], k)

    # ------------------------------------------------------------------ public
    def top(self, texts: Sequence[str], query: str, k: int, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows for ``query`` among ``eligible`` (a bool mask over rows ``[0, n)``).

        Returns int64 rows and float32 BM25 scores, best first (ties: lower row first). Only rows
        sharing a term with the query are returned.
        """
        with self._lock:
            self.catch_up(texts, eligible.size)
            main_rows, main_scores = _empty()
            if self._main is not None:
                main_mask = eligible[: self._main_n]
                if main_mask.size < self._main_n:  # an older snapshot than the main index
                    main_mask = np.concatenate([main_mask, np.zeros(self._main_n - main_mask.size, dtype=bool)])
                if main_mask.any():
                    main_rows, main_scores = self._main.top(query, k, subset=main_mask)
            delta_rows, delta_scores = self._delta_scores(query, eligible, k)
        if delta_rows.size == 0:
            return main_rows, main_scores
        return top_by_score(np.concatenate([main_rows, delta_rows]), np.concatenate([main_scores, delta_scores]), k)

    def scores_of_rows(self, texts: Sequence[str], query: str, eligible: np.ndarray) -> np.ndarray:
        """float32 ``(n,)``: the BM25 score of every eligible row (0 elsewhere and without overlap).

        One ``BM25Index.scores`` over the main index (the package's BM25, unchanged) plus the
        delta's brute-force scores: the lexical input of the relevance core.
        """
        n = eligible.size
        with self._lock:
            self.catch_up(texts, n)
            if self._main is not None and self._main_n == n:
                out = self._main.scores(query)  # a fresh float32 array of every row: no copy needed
            else:
                out = np.zeros(n, dtype=_SCORE_DTYPE)
                if self._main is not None:
                    main = self._main.scores(query)
                    width = min(self._main_n, n)
                    out[:width] = main[:width]
            delta_rows, delta_scores = self._delta_scores(query, eligible, max(n, 1))
        out[delta_rows] = delta_scores
        out[~eligible] = 0.0
        return out

    def build_now(self, texts: Sequence[str], n_rows: int) -> None:
        """Build the main index over rows ``[0, n_rows)`` eagerly (used by compaction)."""
        with self._lock:
            if n_rows > 0:
                self._rebuild(texts, n_rows)

    @property
    def main_rows(self) -> int:
        """Rows covered by the bm25s main index."""
        return self._main_n

    @property
    def delta_rows(self) -> int:
        """Rows scored by the delta."""
        return self._n_seen - self._main_n
