"""Lexical leg: eager sparse BM25 (the ``bm25s`` model, its numbers bit for bit).

The index is a term x document score matrix (CSC: one column of postings per term) holding
each (document, term) entry's BM25 score, so a query's scores are sums of its terms' columns.
This module owns every step of it: the tokenizer (:mod:`fieldrank._tokenizer`: lower-casing,
stop words, Snowball stemming through PyStemmer; one for corpus, queries and the memory
store), the build (:func:`_score_matrix`, numpy: ``bm25s``'s formulas and float32 rounding,
neighbour-text expansion and the memory store's delta included) and the scorer (native,
``_core.bm25_scores_batch``). ``bm25s`` (public API only) holds the arrays for its
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
matrices share one vocabulary and are added term by term at index time (:func:`_add_scaled`,
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

import itertools
import json
import math
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple, Optional, Union

import bm25s
import numpy as np
import Stemmer

from . import _core
from . import _validation as _v
from ._tokenizer import STOPWORD_LISTS, Tokenizer
from ._api import public_dir

__all__ = [
    "BM25_METHODS",
    "DEFAULT_PARAMS",
    "PARAMS_FILENAME",
    "BM25FormatError",
    "BM25Index",
    "BM25Params",
]

__dir__ = public_dir(__all__)


#: Scoring variants of ``bm25s`` (``method``); the single list used for validation.
BM25_METHODS: tuple[str, ...] = ("robertson", "atire", "bm25l", "bm25+", "lucene")

# The BM25 numbers of the package live here (docs/spec.md §7), not in the native core.
DEFAULT_K1 = 1.5
DEFAULT_B = 0.75
#: Additive ``delta`` of the BM25L / BM25+ variants (ignored by the others); bm25s's default.
DEFAULT_DELTA = 0.5
DEFAULT_METHOD = "lucene"
DEFAULT_STOPWORDS = "en"
DEFAULT_STEMMER_LANGUAGE = "english"
DEFAULT_LOWERCASE = True

B_MIN = 0.0
B_MAX = 1.0
#: Neighbour-text expansion: off unless asked for (see the module notes).
DEFAULT_CONTEXT_WINDOW = 0
#: Weight of the context-document scores when ``context_window > 0``.
DEFAULT_CONTEXT_WEIGHT = 1.0

#: File written next to the bm25s files by :meth:`BM25Index.save`.
PARAMS_FILENAME = "fieldrank_bm25.json"
FORMAT_NAME = "fieldrank.bm25"
FORMAT_VERSION = 1
#: Parameters of the bm25s ``params.index.json`` checked against :class:`BM25Params` on load.
_BM25S_PARAMS_FILENAME = "params.index.json"
_BM25S_CHECKED_PARAMS = ("k1", "b", "delta", "method")
#: Every file :meth:`BM25Index.load` may read (the last one only for BM25L / BM25+).
_BM25S_ARRAY_FILENAMES = ("data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy")
_BM25S_VOCAB_FILENAME = "vocab.index.json"
_BM25S_NONOCCURRENCE_FILENAME = "nonoccurrence_array.index.npy"
_LOADED_FILENAMES = (
    PARAMS_FILENAME, _BM25S_PARAMS_FILENAME, _BM25S_VOCAB_FILENAME, *_BM25S_ARRAY_FILENAMES,
    _BM25S_NONOCCURRENCE_FILENAME,
)

_SCORE_DTYPE = np.float32
_ID_DTYPE = np.int64
#: bm25s backend: plain numpy, so scores do not depend on whether numba is installed.
_BM25S_BACKEND = "numpy"
#: Batches with fewer queries than this run on the calling thread (thread start-up costs more),
#: the operators' rule from the native defaults table.
_MIN_QUERIES_FOR_THREADS = int(_core.DEFAULTS["parallel_min_batch"])

SubsetLike = Union[np.ndarray, Sequence[int]]
#: Session keys for neighbour-text expansion: an int array (N,) or a ``fieldrank.temporal.Timeline``.
SessionsLike = Any
#: ``(ids, scores)``: int64 document ids and float32 scores, best first.
IdsScores = tuple[np.ndarray, np.ndarray]


class BM25FormatError(ValueError):
    """A saved BM25 index whose files are inconsistent, damaged or point outside its directory.

    A ``ValueError`` subclass; the message names the offending file. (It is separate from
    :class:`fieldrank.persistence.IndexFormatError`, which wraps it when a hybrid index is loaded.)
    """


def _read_json(path: Path) -> Any:
    """A JSON metadata file of a saved index; nested too deeply to parse: a BM25FormatError naming it."""
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except RecursionError:
        msg = f"{path} is nested too deeply to be a BM25 index file"
        raise BM25FormatError(msg) from None


def _check_inside(directory: Path) -> None:
    """Refuse any file :meth:`BM25Index.load` reads that resolves (symlink) outside ``directory``."""
    root = directory.resolve()
    for name in _LOADED_FILENAMES:
        path = directory / name
        if not os.path.lexists(path):
            continue
        try:
            resolved = path.resolve()
        except (RuntimeError, OSError) as exc:  # a symlink loop: RuntimeError before Python 3.13
            msg = f"{path} cannot be resolved ({exc})"
            raise BM25FormatError(msg) from None
        if resolved.parent != root:
            msg = f"{path} resolves to {resolved}, outside the index directory {root} (symlink refused)"
            raise BM25FormatError(msg)


def _check_loaded(directory: Path, retriever: Any, n_docs: int) -> None:
    """Structural checks of the arrays and vocabulary bm25s loaded (a CSC matrix, terms x docs)."""
    scores = retriever.scores
    data, indices, indptr = (np.asarray(scores.get(key)) for key in ("data", "indices", "indptr"))
    data_file, indices_file, indptr_file = (directory / name for name in _BM25S_ARRAY_FILENAMES)
    for array, path, kinds in ((data, data_file, "f"), (indices, indices_file, "iu"), (indptr, indptr_file, "iu")):
        if array.ndim != 1 or array.dtype.kind not in kinds:
            expected = "floating-point" if kinds == "f" else "integer"
            msg = f"{path} must hold a 1-D {expected} array, got dtype {array.dtype} and shape {array.shape}"
            raise BM25FormatError(msg)
    if indices.shape[0] != data.shape[0]:
        msg = f"{indices_file} holds {indices.shape[0]} entries but {data_file} holds {data.shape[0]}"
        raise BM25FormatError(msg)
    vocab = retriever.vocab_dict
    if not isinstance(vocab, dict):
        msg = f"{directory / _BM25S_VOCAB_FILENAME} must hold a JSON object (token -> id)"
        raise BM25FormatError(msg)
    # bm25s keeps the empty token in the vocabulary without a column of its own.
    n_terms = len(vocab) - ("" in vocab)
    if indptr.shape[0] != n_terms + 1:
        msg = (
            f"{indptr_file} must hold vocabulary size + 1 = {n_terms + 1} offsets "
            f"({directory / _BM25S_VOCAB_FILENAME} has {n_terms} terms), got {indptr.shape[0]}"
        )
        raise BM25FormatError(msg)
    if indptr[0] != 0 or bool(np.any(np.diff(indptr) < 0)) or int(indptr[-1]) != indices.shape[0]:
        msg = (
            f"{indptr_file} must start at 0, never decrease and end at the number of entries "
            f"({indices.shape[0]}), got offsets from {int(indptr[0])} to {int(indptr[-1])}"
        )
        raise BM25FormatError(msg)
    if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n_docs):
        msg = (
            f"{indices_file} must hold document ids in [0, {n_docs}), "
            f"got ids from {int(indices.min())} to {int(indices.max())}"
        )
        raise BM25FormatError(msg)
    if not bool(np.all(np.isfinite(data))) or bool(np.any(data < 0)):
        msg = f"{data_file} must hold finite scores >= 0"
        raise BM25FormatError(msg)
    ids = list(vocab.values())
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in ids):
        msg = f"{directory / _BM25S_VOCAB_FILENAME} must map every token to an integer id"
        raise BM25FormatError(msg)
    ids_array = np.asarray(ids, dtype=np.int64) if ids else np.empty(0, dtype=np.int64)
    # Every term id names a column in [0, n_terms); the empty token's id may be n_terms.
    term_ids = np.asarray([i for token, i in vocab.items() if token != ""], dtype=np.int64)
    empty_id = vocab.get("", 0)
    if (term_ids.size and (int(term_ids.min()) < 0 or int(term_ids.max()) >= n_terms)) or not 0 <= empty_id <= n_terms:
        msg = (
            f"{directory / _BM25S_VOCAB_FILENAME} must map tokens to ids in [0, {n_terms}), "
            f"got ids from {int(ids_array.min())} to {int(ids_array.max())}"
        )
        raise BM25FormatError(msg)
    if np.unique(ids_array).size != ids_array.size:
        msg = f"{directory / _BM25S_VOCAB_FILENAME} maps two tokens to the same id"
        raise BM25FormatError(msg)
    nonoccurrence = getattr(retriever, "nonoccurrence_array", None)
    if nonoccurrence is not None:
        nonoccurrence = np.asarray(nonoccurrence)
        if nonoccurrence.shape != (n_terms,) or nonoccurrence.dtype.kind != "f" or not bool(
                np.all(np.isfinite(nonoccurrence))):
            msg = (
                f"{directory / _BM25S_NONOCCURRENCE_FILENAME} must hold {n_terms} finite floats (one per term), "
                f"got dtype {nonoccurrence.dtype} and shape {nonoccurrence.shape}"
            )
            raise BM25FormatError(msg)


@dataclass(frozen=True)
class BM25Params:
    """Parameters of the BM25 leg (scoring variant and tokenizer).

    Parameters
    ----------
    k1 : float, default 1.5
        Term-frequency saturation, finite and > 0.
    b : float, default 0.75
        Length normalisation, in [0, 1].
    method : str, default "lucene"
        bm25s scoring variant, one of :data:`BM25_METHODS`.
    stopwords : str or None, default "en"
        Stop-word list name, one of :data:`fieldrank._tokenizer.STOPWORD_LISTS` (``"en"``,
        ``"english"``, ``"de"``, ...: bm25s's lists), or None for no stop-word removal.
    stemmer_language : str or None, default "english"
        PyStemmer (Snowball) algorithm, one of ``Stemmer.algorithms()``, or None for no
        stemming.
    lowercase : bool, default True
        Lower-case text before tokenizing (stop words are matched after this step).
    delta : float, default 0.5
        Additive constant of ``"bm25l"`` and ``"bm25+"``, finite and >= 0; ignored by the
        other methods.
    context_window : int, default 0
        Neighbour-text expansion (module notes): each document is also scored as the
        context document made of itself and its same-session neighbours ``i ± 1 …
        i ± context_window``; 0 switches it off.
    context_weight : float, default 1.0
        Weight of the context-document scores, finite and > 0; used only when
        ``context_window > 0``.

    Raises
    ------
    ValueError
        If a value is out of range; the message names the field.
    TypeError
        If a field has the wrong type.
    """

    k1: float = DEFAULT_K1
    b: float = DEFAULT_B
    method: str = DEFAULT_METHOD
    stopwords: str | None = DEFAULT_STOPWORDS
    stemmer_language: str | None = DEFAULT_STEMMER_LANGUAGE
    lowercase: bool = DEFAULT_LOWERCASE
    delta: float = DEFAULT_DELTA
    context_window: int = DEFAULT_CONTEXT_WINDOW
    context_weight: float = DEFAULT_CONTEXT_WEIGHT

    def __post_init__(self) -> None:
        k1 = _v.real(self.k1, "BM25Params.k1", low=0.0, low_open=True)
        b = _v.real(self.b, "BM25Params.b", low=B_MIN, high=B_MAX)
        delta = _v.real(self.delta, "BM25Params.delta", low=0.0)
        _v.one_of(self.method, "BM25Params.method", BM25_METHODS)
        window = _v.integer(self.context_window, "BM25Params.context_window", low=0, note=" (0: no expansion)")
        context_weight = _v.real(self.context_weight, "BM25Params.context_weight", low=0.0, low_open=True)
        object.__setattr__(self, "lowercase", _v.flag(self.lowercase, "BM25Params.lowercase"))
        self._check_stopwords()
        self._check_stemmer_language()
        # Store plain floats so that equality, hashing and JSON round trips are exact.
        object.__setattr__(self, "k1", k1)
        object.__setattr__(self, "b", b)
        object.__setattr__(self, "delta", delta)
        object.__setattr__(self, "context_window", window)
        object.__setattr__(self, "context_weight", context_weight)

    def _check_stopwords(self) -> None:
        if self.stopwords is None:
            return
        if not isinstance(self.stopwords, str):
            msg = f"BM25Params.stopwords must be a str or None, got {type(self.stopwords).__name__}"
            raise TypeError(msg)
        if self.stopwords not in STOPWORD_LISTS:
            msg = f"BM25Params.stopwords must be one of {tuple(STOPWORD_LISTS)} or None, got {self.stopwords!r}"
            raise ValueError(msg)

    def _check_stemmer_language(self) -> None:
        if self.stemmer_language is None:
            return
        if not isinstance(self.stemmer_language, str):
            msg = (
                "BM25Params.stemmer_language must be a str or None, "
                f"got {type(self.stemmer_language).__name__}"
            )
            raise TypeError(msg)
        algorithms = tuple(Stemmer.algorithms())
        if self.stemmer_language not in algorithms:
            msg = (
                f"BM25Params.stemmer_language must be one of {algorithms} or None, "
                f"got {self.stemmer_language!r}"
            )
            raise ValueError(msg)

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters as a JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BM25Params:
        """Build validated parameters from :meth:`to_dict` output.

        Raises
        ------
        ValueError
            If a key is unknown or a value is invalid.
        """
        if not isinstance(data, dict):
            msg = f"BM25 params must be a JSON object, got {type(data).__name__}"
            raise ValueError(msg)
        return _v.from_fields(cls, data)


#: The default parameters (k1 = 1.5, b = 0.75, lucene, English stop words and stemmer).
DEFAULT_PARAMS = BM25Params()


def _check_k(k: object) -> int:
    return _v.integer(k, "k", low=0, low_open=True)


def _check_query(query: object, name: str = "query") -> str:
    if not isinstance(query, str):
        msg = f"{name} must be a str, got {type(query).__name__}"
        raise TypeError(msg)
    return query


def _check_texts(texts: object, name: str) -> list[str]:
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        msg = f"{name} must be a sequence of str, got {type(texts).__name__}"
        raise TypeError(msg)
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            msg = f"{name}[{i}] must be a str, got {type(text).__name__}"
            raise TypeError(msg)
    return out


def _postings_sorted(indices: np.ndarray, indptr: np.ndarray) -> bool:
    """Whether every column of a CSC matrix lists its rows in increasing order (bm25s's builds and
    :func:`_add_scaled` write them so; a loaded index is checked, not trusted)."""
    if indices.size < 2:
        return True
    increasing = np.diff(indices) > 0
    # A column's first entry may be below the previous column's last: those steps do not count.
    starts = indptr[1:-1]
    starts = starts[(starts > 0) & (starts < indices.size)]
    increasing[starts - 1] = True
    return bool(increasing.all())


def _empty_ranking() -> IdsScores:
    return np.empty(0, dtype=_ID_DTYPE), np.empty(0, dtype=_SCORE_DTYPE)


def _select_top(ids: np.ndarray, scores: np.ndarray, k: int) -> IdsScores:
    """Top ``k`` of ``(ids, scores)``: score descending, ties by lower id.

    ``np.argpartition`` narrows to the candidates scoring at least the k-th best value (all
    of its ties kept), then ``np.lexsort`` on ``(id, -score)`` fixes the order.
    """
    if ids.size > k:
        kth_best = scores[np.argpartition(scores, ids.size - k)[ids.size - k]]
        keep = scores >= kth_best
        ids, scores = ids[keep], scores[keep]
    order = np.lexsort((ids, -scores))[:k]
    return ids[order].astype(_ID_DTYPE, copy=False), scores[order].astype(_SCORE_DTYPE, copy=False)


def _check_sessions(sessions: object, n_docs: int) -> np.ndarray:
    """Session key per document (int64, (N,)) from an array or a Timeline; None: one session."""
    if sessions is None:
        return np.zeros(n_docs, dtype=np.int64)
    keys = getattr(sessions, "session", sessions)  # a fieldrank.temporal.Timeline gives its keys
    keys = np.asarray(keys)
    if keys.shape != (n_docs,) or keys.dtype.kind not in "iu":
        msg = (
            f"sessions must be a Timeline or an integer array with one key per text ({n_docs},), "
            f"got dtype {keys.dtype} and shape {keys.shape}"
        )
        raise ValueError(msg)
    return keys.astype(np.int64, copy=False)


def _context_token_ids(token_ids: Any, sessions: Any, window: int,
                       docs: Optional[Iterable[int]] = None) -> list[list[int]]:
    """Context document of each document: its own tokens, then those of its same-session
    neighbours ``i - 1, i + 1, …, i - window, i + window``.

    ``docs`` (positions into ``token_ids``) computes the context documents of those documents
    only, in that order (the memory store re-expands the few documents an addition or a
    forget changes); None: every document. ``token_ids`` and ``sessions`` only need ``len`` and
    indexing.
    """
    n = len(token_ids)
    out = []
    for i in (range(n) if docs is None else docs):
        tokens = list(token_ids[i])
        for distance in range(1, window + 1):
            for j in (i - distance, i + distance):
                if 0 <= j < n and sessions[j] == sessions[i]:
                    tokens.extend(token_ids[j])
        out.append(tokens)
    return out


class _Matrix(NamedTuple):
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


class _Statistics(NamedTuple):
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


def _per_term(method: str, df: np.ndarray, n_docs: int, factor: Any = None) -> np.ndarray:
    """float32 per term: idf (``factor`` None) or idf x ``factor`` (the non-occurrence score);
    0 for a term no document holds. One ``math.log`` per distinct document frequency."""
    idf_of = _IDF[method]
    values, inverse = np.unique(df, return_inverse=True)
    per_value = [0.0 if v == 0 else (idf_of(v, n_docs) if factor is None else idf_of(v, n_docs) * factor)
                 for v in values.tolist()]
    return np.asarray(per_value, dtype=_SCORE_DTYPE)[inverse.reshape(-1)] if df.size else np.zeros(0, _SCORE_DTYPE)


def _statistics(lengths: np.ndarray, terms: np.ndarray, n_terms: int) -> _Statistics:
    """Statistics of a corpus from its document lengths and its distinct (document, term) terms."""
    n_docs = int(lengths.size)
    return _Statistics(np.bincount(terms, minlength=n_terms).astype(np.int64), n_docs,
                       np.float64(int(lengths.sum())) / np.float64(n_docs))


def _score_matrix(params: BM25Params, token_ids: Sequence[Sequence[int]], n_terms: int,
                  statistics: Optional[_Statistics] = None) -> _Matrix:
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
    tfc = _TFC[method](tf.astype(_SCORE_DTYPE), lengths[docs], stats.average_length, k1, b, delta)
    counts = np.bincount(terms, minlength=n_terms)
    present = np.flatnonzero(counts)  # idf of the terms these documents hold (a delta holds few)
    idf = np.zeros(n_terms, dtype=_SCORE_DTYPE)
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
    return _Matrix(entries.astype(_SCORE_DTYPE), docs.astype(np.int32), indptr, nonoccurrence)


def _add_scaled(a: _Matrix, b: _Matrix, weight: float, n_docs: int) -> _Matrix:
    """``a + weight x b`` over the same terms and documents (neighbour-text expansion).

    Entry by entry in float32: ``a + (weight x b)`` where both hold one, ``a`` or ``weight x b``
    where one does; entries summing to exactly 0 are left out (as a sparse sum stores them, the
    build this replaces: ``scipy.sparse``). BM25 scores are sums of these entries over query
    terms, so the sum scores as the sum of the two indexes.
    """
    scale = _SCORE_DTYPE(weight)
    n_terms = a.indptr.size - 1
    width = np.int64(max(n_docs, 1))

    def keys(m: _Matrix) -> np.ndarray:
        return np.repeat(np.arange(n_terms, dtype=np.int64), np.diff(m.indptr)) * width + m.indices

    a_keys, b_keys = keys(a), keys(b)
    union, inverse = np.unique(np.concatenate([a_keys, b_keys]), return_inverse=True)
    inverse = inverse.reshape(-1)
    data = np.zeros(union.size, dtype=_SCORE_DTYPE)
    data[inverse[: a_keys.size]] = a.data
    data[inverse[a_keys.size:]] += b.data * scale  # keys are unique within each matrix
    kept = data != 0
    union, data = union[kept], data[kept]
    indptr = np.zeros(n_terms + 1, dtype=np.int64)
    np.cumsum(np.bincount(union // width, minlength=n_terms), out=indptr[1:])
    nonoccurrence = None
    if a.nonoccurrence is not None:
        nonoccurrence = (a.nonoccurrence + scale * b.nonoccurrence).astype(_SCORE_DTYPE)
    return _Matrix(data, (union % width).astype(np.int32), indptr, nonoccurrence)


def _index_matrix(params: BM25Params, token_ids: Sequence[Sequence[int]], n_terms: int,
                  context_ids: Optional[Sequence[Sequence[int]]] = None,
                  statistics: Optional[tuple[_Statistics, _Statistics]] = None) -> _Matrix:
    """The one build: BM25 of the documents, plus ``context_weight`` x BM25 of their context documents
    (``context_ids``, neighbour-text expansion) when given. ``statistics``: (own, context) corpus
    statistics to score against (the memory store's delta); None: the documents' own."""
    own_stats, context_stats = (None, None) if statistics is None else statistics
    matrix = _score_matrix(params, token_ids, n_terms, own_stats)
    if context_ids is not None:
        context = _score_matrix(params, context_ids, n_terms, context_stats)
        matrix = _add_scaled(matrix, context, params.context_weight, len(token_ids))
    return matrix


def _matrix_scores(matrix: tuple[np.ndarray, np.ndarray, np.ndarray, bool], nonoccurrence: Optional[np.ndarray],
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
    scores = _core.bm25_scores_batch(data, indices, indptr, n_docs, offsets, flat, begin, end, ordered, n_threads)
    if nonoccurrence is not None:
        # BM25L / BM25+: bm25s adds the query's non-occurrence constant (a float32 sum) last.
        for row, ids in enumerate(token_ids):
            if ids.size:
                scores[row] += nonoccurrence[ids].sum()
    return scores


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

    def __init__(self, texts: Sequence[str], params: BM25Params = DEFAULT_PARAMS, *,
                 sessions: SessionsLike | None = None) -> None:
        _v.instance_of(params, "params", BM25Params)
        docs = _check_texts(texts, "texts")
        if not docs:
            msg = "texts must contain at least one document, got 0"
            raise ValueError(msg)
        session_keys = _check_sessions(sessions, len(docs))
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
            context_ids = _context_token_ids(token_ids, session_keys, params.context_window)
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
            (as :meth:`fieldrank._tokenizer.Tokenizer.ids` gives them); one document per entry.
        vocab : dict
            Token -> id; ids ``0 … len(vocab) − 1`` (it may hold tokens no document has).
        params : BM25Params
        context_token_ids : sequence of sequences of int, optional
            With ``params.context_window > 0``: each document's context document (its own
            tokens and its neighbours', as ``_context_token_ids`` builds them); required then,
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
        """The matrix of :func:`_index_matrix`, held by a ``bm25s.BM25`` (public attributes
        ``scores``, ``vocab_dict``, ``nonoccurrence_array``) for its ``save``/``load`` file format."""
        matrix = _index_matrix(params, token_ids, len(vocab), context_ids)
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
        """Tokenize queries exactly as the corpus was (:class:`fieldrank._tokenizer.Tokenizer`)."""
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
        of the documents ``begin .. end - 1`` only, (B, end - begin)); :func:`_matrix_scores`."""
        begin, end = (0, self._n_docs) if docs is None else docs
        return _matrix_scores(self._native_arrays(), self._retriever.nonoccurrence_array, self._n_docs, token_ids,
                              begin, end, n_threads)

    def _native_arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
        """(data, indices, indptr, postings sorted) of the matrix in the native scorer's dtypes
        (float32, int32, int64: those of every build; a loaded index of other dtypes is converted
        once); derived once per index (it is read-only)."""
        cached = getattr(self, "_native_arrays_cache", None)
        if cached is None:
            m = self._retriever.scores
            data = np.asarray(m["data"]).astype(_SCORE_DTYPE, copy=False)
            indices = np.asarray(m["indices"]).astype(np.int32, copy=False)
            indptr = np.asarray(m["indptr"]).astype(np.int64, copy=False)
            cached = self._native_arrays_cache = (data, indices, indptr, _postings_sorted(indices, indptr))
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
            return _empty_ranking()
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
        return _select_top(ids, scores[ids], k)

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
        return self._tokenize([_check_query(query)])[0]

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
        tokens = self._tokenize([_check_query(query)])[0]
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
        k = _check_k(k)
        mask = self._subset_mask(subset)
        tokens = self._tokenize([_check_query(query)])[0]
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
        k = _check_k(k)
        batch = _check_texts(queries, "queries")
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
        _check_inside(path)
        meta = _read_json(path / PARAMS_FILENAME)
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

        stored = _read_json(path / _BM25S_PARAMS_FILENAME)
        for name in _BM25S_CHECKED_PARAMS:
            if stored.get(name) != getattr(params, name):
                msg = (
                    f"params.{name} = {getattr(params, name)!r} in {PARAMS_FILENAME} disagrees "
                    f"with {stored.get(name)!r} in {_BM25S_PARAMS_FILENAME}"
                )
                raise ValueError(msg)
        if stored.get("num_docs") != n_docs:
            msg = (
                f"n_docs = {n_docs!r} disagrees with num_docs = "
                f"{stored.get('num_docs')!r} in {_BM25S_PARAMS_FILENAME}"
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
        _check_loaded(path, retriever, n_docs)
        obj = cls.__new__(cls)
        obj._params = params
        obj._tokenizer = Tokenizer.of(params)
        obj._retriever = retriever
        obj._n_docs = n_docs
        return obj
