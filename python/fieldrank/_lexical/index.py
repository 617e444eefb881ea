"""The BM25 index (:class:`BM25Index`, public as :class:`fieldrank.bm25.BM25Index`) and the query steps the
retriever and the confidence model run on it.

The functions at the bottom (:func:`tokenize`, :func:`token_ids`, :func:`scores_matrix`, :func:`rank`,
:func:`native_arrays`, :func:`postings`, :func:`vocabulary`) are the package's door into an index for
the retriever's legs (``fieldrank._retriever``) and ``fieldrank._confidence``: the very steps :meth:`BM25Index.top` runs, so a leg
that calls them ranks bit for bit as the index does, without reading the index's attributes.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional, Union

import bm25s
import numpy as np

from .. import _kernels
from .. import _validation as _v
from .expansion import check_sessions, context_token_ids
from .files import (BM25S_CHECKED_PARAMS, BM25S_PARAMS_FILENAME, FORMAT_NAME, FORMAT_VERSION, PARAMS_FILENAME,
                    BM25FormatError, check_inside, check_loaded, read_json)
from .params import DEFAULT_PARAMS, BM25Params
from .scoring import (SCORE_DTYPE, IdsScores, empty_ranking, index_matrix, matrix_scores, postings_sorted,
                      select_top)
from .tokenizer import Tokenizer

__all__ = ["BM25Index", "SessionsLike", "SubsetLike", "check_k", "check_query", "check_texts", "native_arrays",
           "postings", "rank", "scores_matrix", "token_ids", "tokenize", "vocabulary"]

#: bm25s backend: plain numpy, so scores do not depend on whether numba is installed.
_BM25S_BACKEND = "numpy"
#: Batches with fewer queries than this run on the calling thread (thread start-up costs more),
#: the operators' rule from the native defaults table.
_MIN_QUERIES_FOR_THREADS = int(_kernels.DEFAULTS["parallel_min_batch"])

SubsetLike = Union[np.ndarray, Sequence[int]]
#: Session keys for neighbour-text expansion: an int array (N,) or a ``fieldrank.temporal.Timeline``.
SessionsLike = Any


def check_k(k: object) -> int:
    return _v.integer(k, "k", low=0, low_open=True)


def check_query(query: object, name: str = "query") -> str:
    if not isinstance(query, str):
        msg = f"{name} must be a str, got {type(query).__name__}"
        raise TypeError(msg)
    return query


#: Documents' or queries' texts: a sequence of str (the check every text-taking layer shares).
check_texts = _v.str_sequence



class BM25Index:
    """BM25 index over a fixed list of texts (document id = position in ``texts``).

    Parameters
    ----------
    texts : Sequence[str]
        The documents; at least one, and together they must contain at least one token
        that survives tokenization (otherwise there is nothing to index).
    params : BM25Params, default DEFAULT_PARAMS
        Scoring variant and tokenizer settings.
    sessions : int array (N,) or fieldrank.temporal.Timeline, optional
        Session key of each document, for neighbour-text expansion
        (``params.context_window > 0``): only documents with the same key are neighbours.
        A Timeline gives its ``session`` keys. None: the corpus in order is one session.
        Ignored without expansion. Not stored (the expanded index is).

    Raises
    ------
    TypeError
        If ``texts`` is not a sequence of str or ``params`` is not a :class:`BM25Params`.
    ValueError
        If ``texts`` is empty or has no indexable token, or ``sessions`` has the wrong shape.

    Notes
    -----
    Thread-safety: after construction the index is read-only; ``scores``/``top`` may be
    called from several threads.
    """

    #: Its public home, whichever module imported it first (help, reprs, pickles).
    __module__ = "fieldrank.bm25"

    def __init__(self, texts: Sequence[str], params: BM25Params = DEFAULT_PARAMS, *,
                 sessions: SessionsLike | None = None) -> None:
        _v.instance_of(params, "params", BM25Params)
        docs = check_texts(texts, "texts")
        if not docs:
            msg = "texts must contain at least one document, got 0"
            raise ValueError(msg)
        session_keys = check_sessions(sessions, len(docs))
        self._params = params
        self._tokenizer = Tokenizer.of(params)
        vocab: dict[str, int] = {}
        token_ids = self._tokenizer.ids(docs, vocab)
        if not vocab:
            msg = (
                f"texts ({len(docs)} documents) contain no token after tokenization "
                f"(lowercase={params.lowercase}, stopwords={params.stopwords!r}); nothing to index"
            )
            raise ValueError(msg)
        context_ids = None
        if params.context_window > 0:
            context_ids = context_token_ids(token_ids, session_keys, params.context_window)
        self._retriever = self._index(params, token_ids, vocab, context_ids)
        self._n_docs = len(docs)

    @classmethod
    def from_token_ids(cls, token_ids: Sequence[Sequence[int]], vocab: dict[str, int],
                       params: BM25Params = DEFAULT_PARAMS, *,
                       context_token_ids: Optional[Sequence[Sequence[int]]] = None) -> BM25Index:
        """An index over documents already tokenized (for a caller that keeps the tokens).

        Parameters
        ----------
        token_ids : sequence of sequences of int
            Each document's tokens as ids into ``vocab``, tokenized with ``params``'s tokenizer
            (as :meth:`fieldrank._lexical.Tokenizer.ids` gives them); one document per entry.
        vocab : dict
            Token -> id; ids ``0 … len(vocab) − 1`` (it may hold tokens no document has).
        params : BM25Params
        context_token_ids : sequence of sequences of int, optional
            With ``params.context_window > 0``: each document's context document (its own
            tokens and its neighbours', as ``context_token_ids`` builds them); required then,
            since the neighbours are the caller's (the memory store's session order).

        Scores equal ``BM25Index(texts, params, sessions=...)`` over the same documents and
        neighbours, bit for bit (the same build).
        """
        _v.instance_of(params, "params", BM25Params)
        if not token_ids or not vocab:
            msg = "token_ids and vocab must be non-empty (nothing to index)"
            raise ValueError(msg)
        if (params.context_window > 0) != (context_token_ids is not None):
            msg = "context_token_ids must be given exactly when params.context_window > 0"
            raise ValueError(msg)
        if context_token_ids is not None and len(context_token_ids) != len(token_ids):
            msg = f"context_token_ids must hold one document per document ({len(token_ids)}), got {len(context_token_ids)}"
            raise ValueError(msg)
        obj = cls.__new__(cls)
        obj._params = params
        obj._tokenizer = Tokenizer.of(params)
        obj._retriever = cls._index(params, token_ids, vocab, context_token_ids)
        obj._n_docs = len(token_ids)
        return obj

    @staticmethod
    def _index(params: BM25Params, token_ids: Sequence[Sequence[int]], vocab: dict[str, int],
               context_ids: Optional[Sequence[Sequence[int]]]) -> bm25s.BM25:
        """The matrix of :func:`index_matrix`, held by a ``bm25s.BM25`` (public attributes
        ``scores``, ``vocab_dict``, ``nonoccurrence_array``) for its ``save``/``load`` file format."""
        matrix = index_matrix(params, token_ids, len(vocab), context_ids)
        retriever = bm25s.BM25(k1=params.k1, b=params.b, delta=params.delta, method=params.method,
                               backend=_BM25S_BACKEND)
        retriever.scores = {"data": matrix.data, "indices": matrix.indices, "indptr": matrix.indptr,
                            "num_docs": len(token_ids)}
        # bm25s's vocabulary also holds the empty token, after the terms and without a column.
        retriever.vocab_dict = {**vocab, "": len(vocab)} if "" not in vocab else dict(vocab)
        retriever.unique_token_ids_set = set(retriever.vocab_dict.values())
        retriever.nonoccurrence_array = matrix.nonoccurrence
        return retriever

    # ------------------------------------------------------------------ helpers
    def _tokenize(self, queries: list[str]) -> list[list[str]]:
        """Tokenize queries exactly as the corpus was (:class:`fieldrank._lexical.Tokenizer`)."""
        return self._tokenizer.tokens(queries) if queries else []

    def _token_ids(self, tokens: list[str]) -> np.ndarray:
        """Vocabulary ids of the known tokens, in query order, repeats kept."""
        vocab = self._retriever.vocab_dict
        return np.asarray([vocab[t] for t in tokens if t in vocab], dtype=np.int32)

    def _scores_from_ids(self, token_ids: np.ndarray) -> np.ndarray:
        return self._scores_matrix([token_ids], 1)[0]

    def _scores_matrix(self, token_ids: Sequence[np.ndarray], n_threads: int = 1,
                       docs: tuple[int, int] | None = None) -> np.ndarray:
        """(B, N) float32 scores of every document for each query's token ids (``docs=(begin, end)``:
        of the documents ``begin .. end - 1`` only, (B, end - begin)); :func:`matrix_scores`."""
        begin, end = (0, self._n_docs) if docs is None else docs
        return matrix_scores(self._native_arrays(), self._retriever.nonoccurrence_array, self._n_docs, token_ids,
                              begin, end, n_threads)

    def _native_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """(data, indices, indptr, postings sorted) of the matrix in the native scorer's dtypes
        (float32, int32, int64: those of every build; a loaded index of other dtypes is converted
        once); derived once per index (it is read-only)."""
        cached = getattr(self, "_native_arrays_cache", None)
        if cached is None:
            m = self._retriever.scores
            data = np.asarray(m["data"]).astype(SCORE_DTYPE, copy=False)
            indices = np.asarray(m["indices"]).astype(np.int32, copy=False)
            indptr = np.asarray(m["indptr"]).astype(np.int64, copy=False)
            cached = self._native_arrays_cache = (data, indices, indptr, postings_sorted(indices, indptr))
        return cached

    def _overlap_mask(self, token_ids: np.ndarray) -> np.ndarray:
        """Boolean mask of documents containing at least one of ``token_ids``.

        Reads the posting lists (CSC columns) of the bm25s matrix; loops over query terms,
        not documents.
        """
        matrix = self._retriever.scores
        indptr, indices = matrix["indptr"], matrix["indices"]
        hit = np.zeros(self._n_docs, dtype=bool)
        postings = [indices[indptr[t] : indptr[t + 1]] for t in np.unique(token_ids)]
        hit[np.concatenate(postings)] = True
        return hit

    def _subset_mask(self, subset: SubsetLike | None, name: str = "subset") -> np.ndarray | None:
        """Validate ``subset`` and return it as a boolean mask of length N (None: all)."""
        return _v.subset_mask(subset, self._n_docs, name)

    def _rank(self, token_ids: np.ndarray, k: int, mask: np.ndarray | None,
              scores: np.ndarray | None = None) -> IdsScores:
        """The single-query ranking shared by :meth:`top` and :meth:`top_batch` (``scores``: the
        query's :meth:`_scores_matrix` row when the caller has it already)."""
        if token_ids.size == 0:
            return empty_ranking()
        if scores is None:
            scores = self._scores_from_ids(token_ids)
        eligible = scores > 0
        if self._retriever.nonoccurrence_array is not None:
            # bm25l / bm25+ add a constant to every document: test term overlap explicitly.
            # For the other methods a document without overlap scores exactly 0.
            eligible &= self._overlap_mask(token_ids)
        if mask is not None:
            eligible &= mask
        ids = np.flatnonzero(eligible)
        return select_top(ids, scores[ids], k)

    # ------------------------------------------------------------------ public API
    def __len__(self) -> int:
        return self._n_docs

    def __repr__(self) -> str:
        return f"BM25Index(n_docs={self._n_docs}, vocab={self.vocab_size}, params={self._params!r})"

    @property
    def params(self) -> BM25Params:
        """The :class:`BM25Params` this index was built with."""
        return self._params

    @property
    def vocab_size(self) -> int:
        """Number of distinct (stemmed) terms in the index."""
        # bm25s adds an empty-string token to its vocabulary; it is not a term.
        return len(self._retriever.vocab_dict) - ("" in self._retriever.vocab_dict)

    def tokenize(self, query: str) -> list[str]:
        """Tokens of ``query`` as the index sees them (lower-cased, stop words removed, stemmed).

        Tokens not in the vocabulary are included; they do not contribute to scores.
        """
        return self._tokenize([check_query(query)])[0]

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query``.

        Parameters
        ----------
        query : str
            Raw query text; tokenized like the corpus.

        Returns
        -------
        np.ndarray
            float32, shape (N,): ``bm25s.BM25.get_scores`` of the tokenized query. All zeros
            if no query token is in the vocabulary. For ``"bm25l"``/``"bm25+"`` documents
            without overlap get the constant non-occurrence score.
        """
        tokens = self._tokenize([check_query(query)])[0]
        return self._scores_from_ids(self._token_ids(tokens))

    def top(self, query: str, k: int, *, subset: SubsetLike | None = None) -> IdsScores:
        """Top ``k`` documents for ``query``.

        Parameters
        ----------
        query : str
            Raw query text.
        k : int
            Maximum number of documents, > 0. Fewer are returned when fewer documents share
            a term with the query (see the module notes); ``k > N`` is not an error.
        subset : np.ndarray, optional
            Allowed documents: unique int ids in [0, N) or a boolean mask of shape (N,).
            Nothing outside it is returned.

        Returns
        -------
        ids : np.ndarray
            int64, shape (m,), m <= k, sorted by score descending, ties by lower id.
        scores : np.ndarray
            float32, shape (m,), all > 0.

        Raises
        ------
        TypeError
            If ``query`` is not a str, ``k`` not an integer, or ``subset`` of another dtype.
        ValueError
            If ``k <= 0`` or ``subset`` has ids out of range, duplicated, or a mask of the
            wrong length.
        """
        k = check_k(k)
        mask = self._subset_mask(subset)
        tokens = self._tokenize([check_query(query)])[0]
        return self._rank(self._token_ids(tokens), k, mask)

    def top_batch(
        self,
        queries: Sequence[str],
        k: int,
        *,
        subset: SubsetLike | None = None,
        subsets: Sequence[SubsetLike | None] | None = None,
        n_threads: int = 0,
    ) -> list[IdsScores]:
        """Top ``k`` documents of each query; equal to ``[top(q, k, ...) for q in queries]``.

        All queries are tokenized in one call; each query is then scored and selected with the
        code of :meth:`top`, one query per thread.

        Parameters
        ----------
        queries : Sequence[str]
            Raw query texts.
        k : int
            Maximum number of documents per query, > 0.
        subset : np.ndarray, optional
            One subset (ids or mask, as in :meth:`top`) applied to every query.
        subsets : Sequence of (np.ndarray or None), optional
            One subset per query (None: no restriction for that query); same length as
            ``queries``. Mutually exclusive with ``subset``.
        n_threads : int, default 0
            Worker threads; ``<= 0`` means ``os.cpu_count()``. Results do not depend on it.

        Returns
        -------
        list of (ids, scores)
            One ``(int64 ids, float32 scores)`` pair per query, as :meth:`top` returns.

        Raises
        ------
        TypeError, ValueError
            As :meth:`top`; also ``ValueError`` if both ``subset`` and ``subsets`` are given
            or ``subsets`` has the wrong length.
        """
        k = check_k(k)
        batch = check_texts(queries, "queries")
        _v.integer(n_threads, "n_threads")
        if subset is not None and subsets is not None:
            msg = "pass either subset (shared) or subsets (one per query), not both"
            raise ValueError(msg)
        if subsets is None:
            shared = self._subset_mask(subset)
            masks: list[np.ndarray | None] = [shared] * len(batch)
        else:
            if isinstance(subsets, np.ndarray) or not isinstance(subsets, Sequence):
                msg = (
                    "subsets must be a sequence with one entry per query, "
                    f"got {type(subsets).__name__}"
                )
                raise TypeError(msg)
            if len(subsets) != len(batch):
                msg = f"subsets must have one entry per query ({len(batch)}), got {len(subsets)}"
                raise ValueError(msg)
            masks = [self._subset_mask(s, f"subsets[{i}]") for i, s in enumerate(subsets)]

        token_ids = [self._token_ids(tokens) for tokens in self._tokenize(batch)]

        def run(i: int) -> IdsScores:
            return self._rank(token_ids[i], k, masks[i])

        workers = int(n_threads) if n_threads > 0 else (os.cpu_count() or 1)
        workers = min(workers, len(batch))
        if workers <= 1 or len(batch) < _MIN_QUERIES_FOR_THREADS:
            return [run(i) for i in range(len(batch))]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(run, range(len(batch))))

    # ------------------------------------------------------------------ persistence
    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the index to ``directory`` (created if needed).

        bm25s's ``save`` writes its arrays as ``.npy`` with ``allow_pickle=False`` and its
        vocabulary and parameters as JSON; :data:`PARAMS_FILENAME` records
        :class:`BM25Params`. The texts themselves are not stored.
        """
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        self._retriever.save(path, allow_pickle=False, show_progress=False)
        meta = {
            "format": FORMAT_NAME,
            "format_version": FORMAT_VERSION,
            "n_docs": self._n_docs,
            "bm25s_version": bm25s.__version__,
            "params": self._params.to_dict(),
        }
        (path / PARAMS_FILENAME).write_text(json.dumps(meta, indent=2), encoding="utf-8")

    @classmethod
    def load(cls, directory: str | os.PathLike[str]) -> BM25Index:
        """Read an index written by :meth:`save`.

        Nothing is unpickled: the arrays are read with ``allow_pickle=False``.

        Raises
        ------
        FileNotFoundError
            If a file is missing.
        ValueError
            If the metadata is not a fieldrank BM25 index of this format version, the
            parameters are invalid, or they disagree with the bm25s files.
        BM25FormatError
            (a ``ValueError``) If a file resolves outside ``directory`` (symlink), or the arrays
            and vocabulary are not a consistent term x document matrix: ``indptr`` of length
            vocabulary + 1, starting at 0, non-decreasing, ending at ``len(indices) ==
            len(data)``; document ids in ``[0, n_docs)``; vocabulary ids in range; integer
            ``indices``/``indptr``, float ``data``, finite and >= 0.
        """
        path = Path(directory)
        check_inside(path)
        meta = read_json(path / PARAMS_FILENAME)
        if not isinstance(meta, dict) or meta.get("format") != FORMAT_NAME:
            msg = f"{path / PARAMS_FILENAME} is not a {FORMAT_NAME} file"
            raise ValueError(msg)
        if meta.get("format_version") != FORMAT_VERSION:
            msg = f"format_version must be {FORMAT_VERSION}, got {meta.get('format_version')!r}"
            raise ValueError(msg)
        params = BM25Params.from_dict(meta.get("params"))
        n_docs = meta.get("n_docs")
        if isinstance(n_docs, bool) or not isinstance(n_docs, int) or n_docs <= 0:
            msg = f"n_docs must be a positive int, got {n_docs!r}"
            raise ValueError(msg)

        stored = read_json(path / BM25S_PARAMS_FILENAME)
        for name in BM25S_CHECKED_PARAMS:
            if stored.get(name) != getattr(params, name):
                msg = (
                    f"params.{name} = {getattr(params, name)!r} in {PARAMS_FILENAME} disagrees "
                    f"with {stored.get(name)!r} in {BM25S_PARAMS_FILENAME}"
                )
                raise ValueError(msg)
        if stored.get("num_docs") != n_docs:
            msg = (
                f"n_docs = {n_docs!r} disagrees with num_docs = "
                f"{stored.get('num_docs')!r} in {BM25S_PARAMS_FILENAME}"
            )
            raise ValueError(msg)

        try:
            retriever = bm25s.BM25.load(
                path,
                allow_pickle=False,
                mmap=False,
                load_corpus=False,
                load_vocab=True,
                backend=_BM25S_BACKEND,
                show_progress=False,
            )
        except RecursionError:  # a vocabulary JSON nested too deeply for the parser
            msg = f"{path}: a JSON file of the index is nested too deeply to be a BM25 index file"
            raise BM25FormatError(msg) from None
        except json.JSONDecodeError as error:  # bm25s's parser (orjson) refuses deep nesting so
            msg = f"{path}: a JSON file of the index cannot be parsed ({error})"
            raise BM25FormatError(msg) from None
        check_loaded(path, retriever, n_docs)
        obj = cls.__new__(cls)
        obj._params = params
        obj._tokenizer = Tokenizer.of(params)
        obj._retriever = retriever
        obj._n_docs = n_docs
        return obj



# ---------------------------------------------------------------------- the retriever's door into an index
def tokenize(index: BM25Index, texts: list[str]) -> list[list[str]]:
    """Each text's tokens, by the index's tokenizer (stemmed, repeats kept)."""
    return index._tokenize(texts)


def token_ids(index: BM25Index, tokens: list[str]) -> np.ndarray:
    """int32 vocabulary ids of the known ``tokens``, in query order, repeats kept."""
    return index._token_ids(tokens)


def scores_matrix(index: BM25Index, ids: Sequence[np.ndarray], n_threads: int = 1,
                  docs: Optional[tuple[int, int]] = None) -> np.ndarray:
    """(B, N) float32 BM25 scores of every document for each query's token ids (``docs=(begin, end)``: of
    those documents only), :func:`fieldrank._lexical.scoring.matrix_scores` on the index's matrix."""
    return index._scores_matrix(ids, n_threads, docs)


def rank(index: BM25Index, ids: np.ndarray, k: int, mask: Optional[np.ndarray],
         scores: Optional[np.ndarray] = None) -> IdsScores:
    """The top ``k`` of one query's token ids, :meth:`BM25Index.top`'s own selection (``mask``: the
    allowed documents; ``scores``: the query's :func:`scores_matrix` row when the caller has it)."""
    return index._rank(ids, k, mask, scores)


def native_arrays(index: BM25Index) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """(data, indices, indptr, postings sorted) of the index's matrix in the native scorer's dtypes."""
    return index._native_arrays()


def postings(index: BM25Index) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) of the index's term x document matrix: term ``t``'s documents are
    ``indices[indptr[t]:indptr[t + 1]]``."""
    matrix = index._retriever.scores
    return matrix["indptr"], matrix["indices"]


def vocabulary(index: BM25Index) -> dict[str, int]:
    """Token -> term id of the index (read-only; it may hold the empty token, without a column)."""
    return index._retriever.vocab_dict
