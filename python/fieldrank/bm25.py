"""Lexical leg: eager sparse BM25 (the ``bm25s`` model, its numbers bit for bit).

The index is a term x document score matrix (CSC: one column of postings per term) holding
each (document, term) entry's BM25 score, so a query's scores are sums of its terms' columns.
This module is the public face of the lexical package :mod:`fieldrank._lexical`, which owns every
step of it: the tokenizer (``_lexical.tokenizer``: lower-casing, stop words, Snowball stemming
through PyStemmer; one for corpus, queries and the memory store), the build
(``_lexical.scoring.score_matrix``, numpy: ``bm25s``'s formulas and float32 rounding,
neighbour-text expansion and the memory store's delta included) and the scorer (native,
``bm25_scores_batch`` through :mod:`fieldrank._kernels`). ``bm25s`` (public API only) holds the arrays for its
``save``/``load`` file format and supplies the stop-word lists; the tests hold every score
to ``bm25s`` itself, bit for bit.

Ranking rules
-------------
* **Only documents sharing a query term are ranked.** A lexical leg has no evidence for a
  document without term overlap, so such documents are never returned, even when fewer
  than ``k`` documents remain. A document whose score is not positive (for ``"robertson"``
  and ``"atire"`` a term in very many documents can have idf 0) carries no evidence either
  and is also left out. For ``"bm25l"`` and ``"bm25+"`` every document receives a constant
  non-occurrence score, so :meth:`BM25Index.scores` is positive everywhere; the overlap rule
  still applies to :meth:`BM25Index.top`.
* **Ties:** higher score first; equal scores -> lower document id first (the tie rule of
  ``docs/design.md``).
* **Subsets:** ``subset`` (int64 ids or a boolean mask of length N) restricts the ranking;
  nothing outside it is returned. It is applied by numpy masking of the ``bm25s`` score
  vector, so there are no Python loops over documents.
* A query without any known token (empty, only stop words, or only out-of-vocabulary terms)
  gives empty arrays, not an error.

Neighbour-text expansion (``context_window``)
---------------------------------------------
In a conversation log the words that identify a turn are often in the turns around it (the
question a turn answers, the announcement it gives details of). With
``BM25Params(context_window=w)`` (w >= 1) every document is scored as

    score(q, i) = BM25_self(q, i) + context_weight · BM25_context(q, i)

where ``BM25_self`` is BM25 over the documents as given and ``BM25_context`` is BM25 (same
k1, b, method and tokenizer) over *context documents*: document ``i`` followed by its neighbours
``i ± 1 … i ± w`` that share its session key (``sessions=``: an int array or a
:class:`fieldrank.temporal.Timeline`; without one, corpus order is one session). The two
matrices share one vocabulary and are added term by term at index time (``_lexical.scoring.add_scaled``,
numpy), so the index is one matrix (saved and loaded as before) and a query costs one sparse pass, as without
expansion. A document's own words count in both terms, so they are weighted up against the
neighbours' (a plain join of neighbours and self, without the first term, lost 1–1.6 NDCG
points on LoCoMo; see ``docs/results/``). ``context_window = 0`` (the default) is plain BM25.

Batches
-------
:meth:`BM25Index.top_batch` tokenizes all queries in one call and
computes each query with exactly the code of :meth:`BM25Index.top` (one query per thread),
so its results are bit-identical to the single form for any ``n_threads``.
``bm25s.BM25.retrieve`` is not used for the selection: it breaks ties arbitrarily
(``argpartition`` then a reversed ``argsort``), returns zero-score documents to fill ``k``,
and refuses ``k`` larger than the corpus.

Persistence
-----------
:meth:`BM25Index.save` writes the ``bm25s`` index with ``bm25s``'s own ``save``
(``.npy`` arrays written with ``allow_pickle=False`` and JSON vocabulary/parameters) plus
``fieldrank_bm25.json`` with :class:`BM25Params`. :meth:`BM25Index.load` reads the arrays
with ``allow_pickle=False`` (nothing is unpickled) and validates the parameters.
"""


from __future__ import annotations

from ._api import public_dir
from ._lexical.files import PARAMS_FILENAME, BM25FormatError
from ._lexical.index import BM25Index
from ._lexical.params import BM25_METHODS, DEFAULT_PARAMS, BM25Params

__all__ = [
    "BM25_METHODS",
    "DEFAULT_PARAMS",
    "PARAMS_FILENAME",
    "BM25FormatError",
    "BM25Index",
    "BM25Params",
]

__dir__ = public_dir(__all__)
