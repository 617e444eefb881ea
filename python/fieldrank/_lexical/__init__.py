"""The lexical package: the one tokenizer, the one BM25 build, idf and scorer, neighbour-text expansion.

``fieldrank.bm25`` is its public face (:class:`~fieldrank.bm25.BM25Index`, :class:`~fieldrank.bm25.BM25Params`,
the saved format); the retriever, the memory store and the confidence model use the names below, and
nothing else of the package, so a change of the build or the file format stays inside it.

* :mod:`.tokenizer`: :class:`Tokenizer` (lower-case, split, stop words, stem), :data:`STOPWORD_LISTS`;
* :mod:`.params`: :class:`BM25Params`, its defaults and :data:`BM25_METHODS`;
* :mod:`.scoring`: bm25s's formulas, the score matrix (:func:`index_matrix`), the native scorer
  (:func:`matrix_scores`), the corpus :class:`Statistics` an entry depends on, top-k selection;
* :mod:`.expansion`: the context documents of neighbour-text expansion (:func:`context_token_ids`);
* :mod:`.files`: the saved index's files and their checks;
* :mod:`.index`: :class:`BM25Index` and the query steps a leg runs on one (:func:`tokenize`,
  :func:`token_ids`, :func:`scores_matrix`, :func:`rank`, :func:`native_arrays`, :func:`postings`,
  :func:`vocabulary`, :func:`check_texts`).
"""

from __future__ import annotations

from .expansion import check_sessions, context_token_ids
from .index import (BM25Index, check_texts, native_arrays, postings, rank, scores_matrix, token_ids, tokenize,
                    vocabulary)
from .params import BM25_METHODS, DEFAULT_PARAMS, BM25Params
from .scoring import IdsScores, Matrix, Statistics, idf, index_matrix, matrix_scores, select_top
from .tokenizer import STOPWORD_LISTS, TOKEN_PATTERN, Tokenizer, stopword_list

__all__ = [
    "BM25_METHODS", "DEFAULT_PARAMS", "STOPWORD_LISTS", "TOKEN_PATTERN", "BM25Index", "BM25Params", "IdsScores",
    "Matrix", "Statistics", "Tokenizer", "check_sessions", "check_texts", "context_token_ids", "idf", "index_matrix",
    "matrix_scores", "native_arrays", "postings", "rank", "scores_matrix", "select_top", "stopword_list",
    "token_ids", "tokenize", "vocabulary",
]
