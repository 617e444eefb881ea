"""The store's BM25 leg: an immutable BM25 index plus a small delta of recent changes.

The leg scores exactly what :class:`fieldrank.bm25.BM25Index` would score over the store's live
memories, with the ``default`` preset's parameters, neighbour-text expansion included
(``BM25Params.context_window``, ``context_weight``; see :mod:`fieldrank.bm25`).

Documents and neighbours
------------------------
The leg's corpus is the **live** memories in **memory-id order** (the order they were first
added; an update keeps its id, so it keeps its place), each memory one document. With expansion
on, a memory's context document is its own tokens plus those of the memories at positions
``i ± 1 … i ± context_window`` of that order that share its session key (same tenant and
``session``; a memory without a session has no neighbours), built by the very function
:class:`~fieldrank.bm25.BM25Index` uses (``fieldrank._lexical.context_token_ids``). A forgotten memory
leaves the corpus at once: its words leave every statistic and every neighbour's context
document. Because the order is by id and only live memories count, a store reopened from its
file, a compacted store and a store that got its memories one by one hold the same documents.

Main and delta
--------------
* a **main** ``BM25Index`` (``BM25Index.from_token_ids``, the package's one build) over the
  corpus at its last build, and
* a **delta**: every live memory whose document differs from what the main index holds: memories
  added since the build, and main memories whose context document changed since (a new memory
  among its neighbours, a neighbour forgotten). Those main entries are ignored (stale) and the
  memory is scored from the delta.

Changes are applied lazily, on the next lexical query (``catch_up``): new rows are tokenized once,
by the package's one tokenizer (:class:`fieldrank._lexical.Tokenizer`; their tokens are kept, so neither re-expansion nor a rebuild tokenizes again), the memories within
``context_window`` positions of each change are re-expanded, and the statistics of both document
sets (document frequencies, total length, N) are updated by what changed. An addition re-expands
at most ``context_window`` memories on each side of its position (appending: the ones before it).

Scores. A query scores the delta memories that share a term with it as a small BM25 matrix, made
by the main index's own build (``fieldrank._lexical.index_matrix``, expansion included) against the
current statistics of the whole corpus (an entry depends only on its document and those), and
scored by the same native scorer (``fieldrank._lexical.matrix_scores``: float32 sums over query terms
in query order): with every memory in the delta (a store below
``bm25_delta_min_docs``), or right after a rebuild, the leg's scores equal ``BM25Index.scores`` over
the live memories bit for bit (tested). The main index keeps the statistics of its last build:
its scores drift from the exact ones by at most the delta's share of the corpus
(``bm25_delta_fraction``), which is why the delta is bounded: when it outgrows
``max(bm25_delta_min_docs, bm25_delta_fraction · main)`` the main index is rebuilt from the kept
tokens and the delta emptied.

Costs. Adding is O(1) (nothing happens until the next lexical query). A query costs one
``BM25Index.scores`` plus O(delta tokens) to find the delta memories sharing a query term
and the build and native scoring of those. Catching up costs one tokenization of the
new rows and O(window) re-expansions per change (plus an O(n) insertion into the id order); a
rebuild is a full build, O(N), once per ``bm25_delta_fraction · N`` changes: O(1) amortised.

Thread-safety: one lock serialises catch-up, rebuild and query of the leg. Forgets are noted
under a second, tiny lock, so a writer never waits for a rebuild.
"""

from __future__ import annotations

import threading
from itertools import chain
from typing import Any, Optional, Sequence

import numpy as np

from .._lexical import BM25Index, Statistics, Tokenizer, context_token_ids, index_matrix, matrix_scores
from ._params import MemoryParams

__all__ = ["LexicalLeg"]

_SCORE_DTYPE = np.float32
_NO_DOC = -1
_EMPTY_TOKENS = np.empty(0, dtype=np.int64)


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


class _ByPosition:
    """``values[rows[p]]`` at position ``p``: per-row values seen in the corpus order."""

    __slots__ = ("_rows", "_values")

    def __init__(self, values: Any, rows: np.ndarray) -> None:
        self._values, self._rows = values, rows

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, position: int) -> Any:
        return self._values[self._rows[position]]


class LexicalLeg:
    """BM25 (with the preset's neighbour-text expansion) over the live rows of one generation.

    Parameters
    ----------
    params : MemoryParams
    ids, sessions, live : growing columns of the generation (``.buffer``), optional
        Memory id, session key and live flag of every row. Without them (a leg tested on its
        own) row ``i`` has id ``i``, every row is live and all rows form one session.
    """

    def __init__(self, params: MemoryParams, *, ids: Any = None, sessions: Any = None, live: Any = None) -> None:
        self._bm25_params = params.bm25_params
        self._window = self._bm25_params.context_window
        self._delta_min_docs = params.bm25_delta_min_docs
        self._delta_fraction = params.bm25_delta_fraction
        self._columns = (ids, sessions, live)
        self._tokenizer = Tokenizer.of(self._bm25_params)
        self._lock = threading.Lock()
        self._pending_lock = threading.Lock()
        self._pending_forgets: list[int] = []
        #: Tokens (global term ids, with repeats) of every row seen, kept for re-expansion and rebuilds.
        self._tokens: list[np.ndarray] = []
        self._vocabulary: dict[str, int] = {}
        self._own_df = np.zeros(0, dtype=np.int64)
        self._context_df = np.zeros(0, dtype=np.int64)
        self._own_length = 0
        self._context_length = 0
        #: The corpus: live rows in memory-id order (ids and rows side by side).
        self._order_ids = np.empty(0, dtype=np.int64)
        self._order_rows = np.empty(0, dtype=np.int64)
        self._in_corpus = np.zeros(0, dtype=bool)
        self._n_seen = 0
        self._main: Optional[BM25Index] = None
        self._main_rows = np.empty(0, dtype=np.int64)  # row of each main document
        self._main_fresh = np.empty(0, dtype=bool)  # main document still equal to the row's document
        self._main_is_prefix = False  # the main documents are rows 0, 1, ... in order (no gaps)
        #: Bumped whenever _main_fresh changes; keys _main_kept (the main rows a query reads).
        self._main_version = 0
        self._main_kept: Optional[tuple[int, int, np.ndarray, bool]] = None
        self._main_doc = np.empty(0, dtype=np.int64)  # main document of each row (_NO_DOC: none)
        #: Delta rows -> (own tokens, context tokens or None without expansion).
        self._delta: dict[int, tuple[np.ndarray, Optional[np.ndarray]]] = {}
        #: (row, term) of the delta's tokens (``_delta_postings``), made at the next query after a change.
        self._delta_tokens: Optional[tuple[np.ndarray, np.ndarray]] = None
        #: Bumped whenever the delta or the corpus statistics change (a delta entry depends on both).
        self._delta_version = 0
        #: (version, delta rows, their BM25 matrix) once a second query reads the same version, and
        #: the version the last query read: steady recalls score the delta from one held matrix.
        self._delta_matrix: Optional[tuple[int, np.ndarray, tuple]] = None
        self._delta_last_version = -1
        #: Number of main-index builds so far (for tests and diagnostics).
        self.rebuilds = 0

    # ------------------------------------------------------------------ columns
    def _ids(self, n: int) -> np.ndarray:
        column = self._columns[0]
        return np.arange(n, dtype=np.int64) if column is None else column.buffer[:n]

    def _session_keys(self, n: int) -> np.ndarray:
        column = self._columns[1]
        return np.zeros(n, dtype=np.int64) if column is None else column.buffer[:n]

    def _live(self, n: int) -> np.ndarray:
        column = self._columns[2]
        return np.ones(n, dtype=bool) if column is None else column.buffer[:n]

    def note_forgotten(self, row: int) -> None:
        """Record that ``row`` was tombstoned (called by the generation; applied at the next catch-up)."""
        with self._pending_lock:
            self._pending_forgets.append(int(row))

    # ------------------------------------------------------------------ tokens and statistics
    def _tokenize_rows(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Global term ids of each text (new terms join the vocabulary)."""
        if not texts:
            return []
        out = self._tokenizer.ids(texts, self._vocabulary)
        size = len(self._vocabulary)
        if size > self._own_df.size:
            capacity = max(size, 2 * self._own_df.size)
            for name in ("_own_df", "_context_df"):
                grown = np.zeros(capacity, dtype=np.int64)
                old = getattr(self, name)
                grown[: old.size] = old
                setattr(self, name, grown)
        return out

    def _count(self, documents: Sequence[Any], sign: int, context: bool) -> None:
        """Add (sign +1) or remove (-1) documents from the own or context statistics."""
        lengths = np.fromiter((len(d) for d in documents), dtype=np.int64, count=len(documents))
        total = int(lengths.sum())
        if total == 0:
            return
        df = self._context_df if context else self._own_df
        terms = np.fromiter(chain.from_iterable(documents), dtype=np.int64, count=total)
        width = np.int64(max(df.size, 1))
        pairs = np.repeat(np.arange(lengths.size, dtype=np.int64), lengths) * width + terms
        pairs.sort()  # a sort and a comparison: much faster than np.unique's hashing on millions of pairs
        first = np.ones(pairs.size, dtype=bool)
        first[1:] = pairs[1:] != pairs[:-1]
        df += sign * np.bincount(pairs[first] % width, minlength=df.size)  # each document counts a term once
        self._delta_version += 1
        length = sign * total
        if context:
            self._context_length += length
        else:
            self._own_length += length

    def _contexts(self, positions: Sequence[int], n_rows: int) -> list[np.ndarray]:
        """Context documents of the corpus documents at ``positions`` (bm25.py's expansion)."""
        if not positions:
            return []
        rows = self._order_rows
        sessions = _ByPosition(self._session_keys(n_rows), rows)
        tokens = _ByPosition(self._tokens, rows)
        contexts = context_token_ids(tokens, sessions, self._window, docs=positions)
        return [np.asarray(c, dtype=np.int64) for c in contexts]

    def _set_delta(self, row: int, document: Optional[tuple[np.ndarray, Optional[np.ndarray]]]) -> None:
        """Score ``row`` from the delta with ``(own tokens, context tokens)`` (None: not in the delta)."""
        if document is None:
            self._delta.pop(row, None)
        else:
            self._delta[row] = document
        self._delta_tokens = None
        self._delta_version += 1
        if row < self._main_doc.size and self._main_doc[row] != _NO_DOC:
            self._main_fresh[self._main_doc[row]] = False
            self._main_version += 1

    # ------------------------------------------------------------------ catch-up and rebuild
    def _delta_limit(self) -> int:
        return max(self._delta_min_docs, int(self._delta_fraction * self._main_rows.size))

    def _take_forgets(self) -> list[int]:
        with self._pending_lock:
            pending, self._pending_forgets = self._pending_forgets, []
        seen = self._n_seen
        return sorted({r for r in pending if r < seen and self._in_corpus[r]})

    def catch_up(self, texts: Sequence[str], n_rows: int) -> None:
        """Apply the rows up to ``n_rows`` and the forgets noted so far (caller holds the lock)."""
        forgotten = self._take_forgets()
        if n_rows <= self._n_seen and not forgotten:
            return
        added = max(n_rows - self._n_seen, 0)
        if added + len(forgotten) + len(self._delta) > self._delta_limit():
            self._rebuild(texts, max(n_rows, self._n_seen))
            return
        arriving = self._take_rows(texts, n_rows)
        ids = self._ids(self._n_seen)
        touched_rows, before = self._touched(ids, forgotten, arriving)
        self._leave(ids, forgotten, before)
        arriving = self._join(ids, arriving)
        forgotten_set = set(forgotten)
        self._reexpand(ids, [r for r in touched_rows if r not in forgotten_set], arriving.tolist(), before)

    def _take_rows(self, texts: Sequence[str], n_rows: int) -> np.ndarray:
        """Tokenize the rows ``[seen, n_rows)``; the live ones among them (the rows arriving in the corpus)."""
        start = self._n_seen
        self._tokens.extend(self._tokenize_rows(texts[start:n_rows]))
        self._n_seen = max(n_rows, start)
        if self._in_corpus.size < self._n_seen:
            grown = np.zeros(max(self._n_seen, 2 * self._in_corpus.size), dtype=bool)
            grown[: self._in_corpus.size] = self._in_corpus
            self._in_corpus = grown
        live = self._live(self._n_seen)
        arriving = np.asarray([r for r in range(start, self._n_seen) if live[r]], dtype=np.int64)
        for r in range(start, self._n_seen):
            if not live[r]:
                self._tokens[r] = _EMPTY_TOKENS  # forgotten before the leg saw it: never in the corpus
        return arriving

    def _touched(self, ids: np.ndarray, forgotten: list[int],
                 arriving: np.ndarray) -> tuple[list[int], dict[int, np.ndarray]]:
        """The rows whose context document may change (within ``window`` positions of a change, in the
        corpus order before it) and their context documents before the change."""
        window, count = self._window, self._order_rows.size
        if window == 0:
            return [], {}
        touched: set[int] = set()
        if forgotten:
            for p in np.searchsorted(self._order_ids, ids[forgotten]).tolist():
                touched.update(range(max(p - window, 0), min(p + window + 1, count)))
        if arriving.size:
            for q in np.searchsorted(self._order_ids, ids[arriving]).tolist():
                touched.update(range(max(q - window, 0), min(q + window, count)))
        positions = sorted(touched)
        rows = self._order_rows[positions].tolist() if positions else []
        return rows, dict(zip(rows, self._contexts(positions, self._n_seen)))

    def _leave(self, ids: np.ndarray, forgotten: list[int], before: dict[int, np.ndarray]) -> None:
        """Forgotten rows leave the statistics and the corpus."""
        self._count([self._tokens[r] for r in forgotten], -1, context=False)
        if self._window > 0:
            self._count([before[r] for r in forgotten], -1, context=True)
        for r in forgotten:
            self._in_corpus[r] = False
            self._set_delta(r, None)
            self._tokens[r] = _EMPTY_TOKENS  # never read again: free the memory
        if forgotten:
            positions = np.searchsorted(self._order_ids, ids[forgotten])
            self._order_ids = np.delete(self._order_ids, positions)
            self._order_rows = np.delete(self._order_rows, positions)

    def _join(self, ids: np.ndarray, arriving: np.ndarray) -> np.ndarray:
        """Arriving rows join the corpus at their id's place; returns them in id order."""
        if arriving.size:
            arriving = arriving[np.argsort(ids[arriving], kind="stable")]
            places = np.searchsorted(self._order_ids, ids[arriving])
            self._order_ids = np.insert(self._order_ids, places, ids[arriving])
            self._order_rows = np.insert(self._order_rows, places, arriving)
            self._in_corpus[arriving] = True
            self._count([self._tokens[r] for r in arriving.tolist()], +1, context=False)
        return arriving

    def _reexpand(self, ids: np.ndarray, kept: list[int], arriving: list[int], before: dict[int, np.ndarray]) -> None:
        """Re-expand the touched rows still live (those whose context changed go to the delta), expand
        the arriving ones."""
        changed = kept + arriving
        if self._window == 0 or not changed:
            for r in arriving:
                self._set_delta(r, (self._tokens[r], None))
            return
        positions = np.searchsorted(self._order_ids, ids[np.asarray(changed, dtype=np.int64)]).tolist()
        after = dict(zip(changed, self._contexts(positions, self._n_seen)))
        for r in kept:
            old, new = before[r], after[r]
            if old.size == new.size and np.array_equal(np.sort(old), np.sort(new)):
                continue  # a change next to it that is not in its session
            self._count([old], -1, context=True)
            self._count([new], +1, context=True)
            self._set_delta(r, (self._tokens[r], new))
        self._count([after[r] for r in arriving], +1, context=True)
        for r in arriving:
            self._set_delta(r, (self._tokens[r], after[r]))

    def _rebuild(self, texts: Sequence[str], n_rows: int) -> None:
        """Build the main index over the live rows of ``[0, n_rows)``; the delta empties."""
        with self._pending_lock:
            self._pending_forgets = []
        self._tokens.extend(self._tokenize_rows(texts[self._n_seen : n_rows]))
        self._n_seen = n_rows
        live = self._live(n_rows)
        rows = np.flatnonzero(live)
        ids = self._ids(n_rows)
        order = rows[np.argsort(ids[rows], kind="stable")]
        for r in np.flatnonzero(~live).tolist():
            self._tokens[r] = _EMPTY_TOKENS  # forgotten rows are never read again
        self._order_rows, self._order_ids = order, ids[order].copy()
        self._in_corpus = np.zeros(n_rows, dtype=bool)
        self._in_corpus[order] = True
        own = [self._tokens[r].tolist() for r in order.tolist()]
        contexts = None
        if self._window > 0:
            contexts = context_token_ids(own, self._session_keys(n_rows)[order], self._window)
        # The statistics of the corpus as it is now (the delta scores against them).
        self._own_df[:] = 0
        self._context_df[:] = 0
        self._own_length = self._context_length = 0
        self._count(own, +1, context=False)
        if contexts is not None:
            self._count(contexts, +1, context=True)
        self._delta, self._delta_tokens = {}, None
        self._delta_version += 1
        self._main_doc = np.full(n_rows, _NO_DOC, dtype=np.int64)
        if self._own_length == 0:
            # No live row holds an indexable token: there is nothing to index (no delta either).
            self._main, self._main_rows, self._main_fresh = None, np.empty(0, np.int64), np.empty(0, bool)
            self._main_version += 1
            self._main_is_prefix = False
            return
        self._main = BM25Index.from_token_ids(own, self._vocabulary, self._bm25_params, context_token_ids=contexts)
        self._main_rows = order
        self._main_fresh = np.ones(order.size, dtype=bool)
        self._main_version += 1
        self._main_is_prefix = bool(np.array_equal(order, np.arange(order.size)))
        self._main_doc[order] = np.arange(order.size)
        self.rebuilds += 1

    # ------------------------------------------------------------------ scoring
    def _delta_postings(self) -> tuple[np.ndarray, np.ndarray]:
        """(row, term) of every token of the delta's documents (context documents with expansion: they
        hold the own tokens too), to find the delta rows sharing a query term; made again after a change."""
        if self._delta_tokens is None:
            rows = sorted(self._delta)
            documents = [self._delta[r][1] if self._window > 0 else self._delta[r][0] for r in rows]
            sizes = np.fromiter((d.size for d in documents), dtype=np.int64, count=len(documents))
            terms = np.concatenate(documents) if documents else np.empty(0, dtype=np.int64)
            self._delta_tokens = (np.repeat(np.asarray(rows, dtype=np.int64), sizes), terms.astype(np.int64))
        return self._delta_tokens

    def _delta_scores(self, query_terms: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Scores of the delta rows below ``n`` sharing a term with the query (exact, current statistics).

        Those rows' BM25 matrix, made by the main index's build against the current statistics of the
        whole corpus (an entry depends only on its document and those statistics), scored natively.
        """
        if not self._delta or query_terms.size == 0:
            return _empty()
        version = (self._delta_version, len(self._vocabulary), int(self._order_rows.size))
        held = self._delta_matrix
        if held is None or held[0] != version:
            rows, terms = self._delta_postings()
            if self._delta_last_version != version:
                # the first query since a change: only the rows it hits (an agent often adds between recalls)
                self._delta_last_version = version
                hit = np.unique(rows[np.isin(terms, query_terms)])
                hit = hit[hit < n]
                if hit.size == 0:
                    return _empty()
                matrix = self._delta_matrix_of(hit)
                scores = matrix_scores((matrix.data, matrix.indices, matrix.indptr, True), None, hit.size,
                                        [query_terms])[0]
                keep = scores > 0
                return hit[keep], scores[keep]
            # a second query at the same version: the whole delta's matrix, held until the next change
            every = np.unique(rows)
            matrix = self._delta_matrix_of(every)
            held = self._delta_matrix = (version, every, (matrix.data, matrix.indices, matrix.indptr, True))
        _, every, matrix = held
        # an entry depends only on its document and the statistics: each row's score is the one a
        # matrix of the hit rows alone gives (the same float32 sums in query order); the native scorer
        # reads only the query terms' postings, so no pass over the delta's tokens
        scores = matrix_scores(matrix, None, every.size, [query_terms])[0]
        keep = (scores > 0) & (every < n)
        return every[keep], scores[keep]

    def _delta_matrix_of(self, delta_rows: np.ndarray):
        """The BM25 matrix of the delta's ``delta_rows`` (sorted) against the corpus statistics now, made
        by the main index's build (an entry depends only on its document and those statistics)."""
        n_terms, n_docs = len(self._vocabulary), int(self._order_rows.size)
        own = Statistics(self._own_df[:n_terms], n_docs, np.float64(self._own_length) / np.float64(n_docs))
        documents = [self._delta[r] for r in delta_rows.tolist()]
        contexts, statistics = None, (own, own)
        if self._window > 0:
            contexts = [context for _, context in documents]
            statistics = (own, Statistics(self._context_df[:n_terms], n_docs,
                                           np.float64(self._context_length) / np.float64(n_docs)))
        # The build writes each term's postings in increasing document order.
        return index_matrix(self._bm25_params, [tokens for tokens, _ in documents], n_terms, contexts, statistics)

    def _kept_main_rows(self, n: int) -> tuple[np.ndarray, bool]:
        """Which main documents a query over rows ``[0, n)`` reads (unchanged, below n), and whether
        that is every one of rows 0 … m−1 in order; derived once per (n, change of the main index)."""
        held = self._main_kept
        if held is not None and held[0] == n and held[1] == self._main_version:
            return held[2], held[3]
        keep = self._main_fresh & (self._main_rows < n)
        whole = bool(self._main_is_prefix and keep.all())
        self._main_kept = (n, self._main_version, keep, whole)
        return keep, whole

    def scores_of_rows(self, texts: Sequence[str], query: str, eligible: np.ndarray,
                       outside: Optional[np.ndarray] = None) -> np.ndarray:
        """float32 ``(n,)``: the BM25 score of every eligible row (0 elsewhere and without overlap).

        ``BM25Index.scores`` of the main index for its rows whose document is unchanged, the delta's
        exact scores for the others: the lexical input of the relevance core. ``outside``: ``~eligible``
        when the caller holds it (memoised with the eligibility).
        """
        n = eligible.size
        with self._lock:
            self.catch_up(texts, n)
            out = np.zeros(n, dtype=_SCORE_DTYPE)
            if self._main is not None:
                main = self._main.scores(query)
                keep, whole = self._kept_main_rows(n)
                if whole:
                    out[:main.size] = main  # every row of the index, in row order: no scatter
                else:
                    out[self._main_rows[keep]] = main[keep]
            delta_rows, delta_scores = _empty()
            if self._delta:
                vocabulary = self._vocabulary
                terms = [vocabulary[t] for t in self._tokenizer.tokens([query])[0] if t in vocabulary]
                delta_rows, delta_scores = self._delta_scores(np.asarray(terms, dtype=np.int64), n)
        out[delta_rows] = delta_scores
        out[~eligible if outside is None else outside] = 0.0
        return out

    def top(self, texts: Sequence[str], query: str, k: int, eligible: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The ``k`` best rows for ``query`` among ``eligible`` (a bool mask over rows ``[0, n)``).

        Returns int64 rows and float32 BM25 scores, best first (ties: lower row first). Only rows
        sharing a term with the query are returned (Lucene scores are positive exactly then).
        """
        scores = self.scores_of_rows(texts, query, eligible)
        rows = np.flatnonzero(scores > 0)
        return top_by_score(rows, scores[rows], k)

    def build_now(self, texts: Sequence[str], n_rows: int) -> None:
        """Build the main index over the live rows of ``[0, n_rows)`` eagerly (used by compaction)."""
        with self._lock:
            if n_rows > 0:
                self._rebuild(texts, n_rows)

    @property
    def main_rows(self) -> int:
        """Rows (documents) covered by the main index, stale ones included."""
        return int(self._main_rows.size)

    @property
    def delta_rows(self) -> int:
        """Rows scored by the delta (added or re-expanded since the main index was built)."""
        return len(self._delta)

    @property
    def corpus_rows(self) -> np.ndarray:
        """The leg's documents: live rows in memory-id order (the neighbour order of the expansion)."""
        with self._lock:
            return self._order_rows.copy()
