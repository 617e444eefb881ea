"""The retriever's corpus: texts, the (N, d) float32 unit rows, the BM25 index and the timeline,
checked once when built; and the checks of each query against it (one pass per call).

Everything a leg reads of the documents is a public attribute of :class:`Corpus` (through
:class:`~fieldrank._retriever.context.QueryContext`): ``texts``, ``E``, ``bm25`` (its public API),
``timeline``, ``years`` and the temporal leg's corpus ``moments``.
"""

from __future__ import annotations

import threading
from typing import Optional, Sequence, Union

import numpy as np

from .. import _kernels
from .. import _validation as _v
from .. import temporal as _temporal
from .._lexical import check_texts
from ..bm25 import BM25Index, BM25Params

__all__ = ["UNIT_NORM_ATOL", "Corpus", "CorpusMoments", "SubsetLike", "build_corpus", "check_texts", "moments_apply"]

#: Largest accepted deviation of a row or query norm from 1 when ``normalize=False``
#: (float32 rounding of unit vectors, and dequantised int8 embeddings, stay well inside it).
UNIT_NORM_ATOL = _v.UNIT_NORM_ATOL
_FLOAT32_EPS = float(np.finfo(np.float32).eps)  # 2^-23
_FLOAT32 = np.dtype(np.float32)  # the native float32 dtype (an equal dtype that is another object takes the slow path)
_FLOAT32_STRIDE = (np.dtype(np.float32).itemsize,)  # a 1-D float32 array read in place

SubsetLike = Union[np.ndarray, Sequence[int], None]

#: Rows per dimension from which the temporal leg over every document uses the corpus moments.
_MOMENTS_MIN_ROWS_PER_DIM = int(_kernels.DEFAULTS["temporal_moments_min_rows_per_dim"])


def moments_apply(n_rows: int, dim: int) -> bool:
    """Whether the temporal leg over every one of ``n_rows`` rows of dimension ``dim`` takes the
    corpus moments and the fp32 screen (below the threshold the double pass is as fast)."""
    return n_rows >= _MOMENTS_MIN_ROWS_PER_DIM * dim


class CorpusMoments:
    """``temporal_moments`` of a corpus's rows, computed on first use (thread-safe) and shared by
    the corpora over the same rows; a pickle carries the rows, not the moments."""

    __slots__ = ("_E", "_lock", "_value")

    def __init__(self, E: np.ndarray) -> None:
        self._E = E
        self._lock = threading.Lock()
        self._value: Optional[_kernels.NativeTemporalMoments] = None

    @property
    def value(self) -> Optional[_kernels.NativeTemporalMoments]:
        """The moments if computed already, else None (nothing is computed)."""
        return self._value

    def get(self) -> _kernels.NativeTemporalMoments:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:  # every hardware thread: the same bits for any count
                    self._value = _kernels.temporal_moments(self._E, 0)
                value = self._value
        return value

    def __getstate__(self) -> dict:
        return {"E": self._E}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["E"])


class Corpus:
    """Validated documents: what every leg reads of them, and the checks of each query.

    ``texts`` (tuple of str), ``E`` ((N, d) float32 C-ordered unit rows), ``bm25`` (the
    :class:`~fieldrank.bm25.BM25Index` over the texts), ``normalize`` (whether query vectors are
    normalised rather than checked), ``given_timeline`` (as given; None: none) and ``timeline``
    (the given one, else corpus order as one session with time cues from the texts, made on first
    use), ``years`` (the calendar years its session dates span; None without dates) and
    ``moments`` (the temporal leg's corpus moments, computed on first use).
    """

    def __init__(self, texts: tuple[str, ...], E: np.ndarray, bm25: BM25Index, normalize: bool,
                 timeline: Optional[_temporal.Timeline] = None, moments: Optional[CorpusMoments] = None) -> None:
        self.texts = texts
        self.E = E
        self.bm25 = bm25
        self.normalize = normalize
        self.given_timeline = timeline
        self._default_timeline: Optional[_temporal.Timeline] = None
        # The years the session dates span, for questions naming a month or day without a year.
        self.years = None if timeline is None or timeline.time is None else _temporal.years_spanned(timeline, None)
        self.moments = CorpusMoments(E) if moments is None else moments
        self.moments_apply = moments_apply(*E.shape)
        # Per-query constants of the query check (query_vector), computed once here.
        self._query_shape = (int(E.shape[1]),)
        self._float32_unit_check = not normalize and E.shape[1] * _FLOAT32_EPS < UNIT_NORM_ATOL / 4

    def __len__(self) -> int:
        return len(self.texts)

    @property
    def dim(self) -> int:
        return int(self.E.shape[1])

    @property
    def timeline(self) -> _temporal.Timeline:
        """The given timeline, else corpus order as the only chronology known: one session, time
        cues from the texts (made once; a race at worst makes an equal one twice)."""
        if self.given_timeline is not None:
            return self.given_timeline
        if self._default_timeline is None:
            self._default_timeline = _temporal.Timeline(session=np.zeros(len(self.texts), dtype=np.int64),
                                                        cue=_temporal.time_cues(self.texts))
        return self._default_timeline

    def with_bm25(self, bm25: BM25Index) -> Corpus:
        """The same rows (and moments) with another BM25 index over the same texts."""
        return Corpus(self.texts, self.E, bm25, self.normalize, self.given_timeline, self.moments)

    # ---------------------------------------------------------------- query checks
    # Each query is checked once here (one float64 norm per vector serves the finite, non-zero,
    # float32-range and unit checks); the layers below trust it, as they trust the corpus.
    def query_vector(self, vector: object, name: str = "vector") -> np.ndarray:
        """One query vector as a (1, d) float32 batch of one, unit norm (or normalised)."""
        if (type(vector) is np.ndarray and vector.dtype is _FLOAT32 and vector.shape == self._query_shape
                and vector.strides == _FLOAT32_STRIDE and vector.flags.aligned):
            q = vector  # the common case: what floating_array would return as is, without its steps
        else:
            q = _v.floating_array(vector, name, 1)
            if q.shape[0] != self.dim:
                _v.query(q, self.dim, name, "embeddings")  # raises the shared message
        if self._float32_unit_check:
            # The float32 dot is within d·2^-24·|q|² of |q|² (any summation order), far inside the
            # tolerance: a squared norm within 1 ± UNIT_NORM_ATOL is a norm within 1 ± UNIT_NORM_ATOL
            # whatever the rounding. NaN, inf and every other value take the float64 check below.
            if abs(float(q.dot(q)) - 1.0) <= UNIT_NORM_ATOL:
                return q[None, :]
        return self._checked_norm(q, name)

    def _checked_norm(self, q: np.ndarray, name: str) -> np.ndarray:
        q64 = q.astype(np.float64)
        norm_sq = float(np.dot(q64, q64))  # float64: a tiny finite query must not get norm 0
        if not 0.0 < norm_sq <= _v.FLOAT32_MAX:
            _v.query(q, self.dim, name, "embeddings")  # raises: not finite, zero or too large
        norm = float(np.sqrt(norm_sq))
        if self.normalize:
            return (q64 / norm).astype(np.float32)[None, :]
        if abs(norm - 1.0) > UNIT_NORM_ATOL:
            msg = (f"{name} must be L2-normalised (norm {norm:.6g}); normalise it or build the retriever "
                   "with normalize=True")
            raise ValueError(msg)
        return q[None, :]

    def query_matrix(self, vectors: object, name: str = "vectors") -> np.ndarray:
        """(B, d) query vectors as float32, unit norm (or normalised)."""
        Q = _v.floating_array(vectors, name, 2)
        if Q.shape[1] != self.dim:
            _v.queries(Q, self.dim, name, "embeddings")  # raises the shared message
        norms_sq = np.einsum("ij,ij->i", Q, Q, dtype=np.float64)
        if not bool(np.all((norms_sq > 0.0) & (norms_sq <= _v.FLOAT32_MAX))):
            _v.queries(Q, self.dim, name, "embeddings")  # raises: not finite, zero or too large
        return _v.unit_or_normalised(Q, self.normalize, name,
                                     "normalise them or build the retriever with normalize=True",
                                     norms=np.sqrt(norms_sq))

    def subset_ids(self, subset: SubsetLike, name: str = "subset") -> Optional[np.ndarray]:
        """A subset (int ids or a boolean mask of length N) as sorted unique int64 ids, or None.

        Checked and sorted once per call: every leg then reads it as is (the operators' results do
        not depend on the order of a subset's ids).
        """
        ids = _v.subset(subset, len(self.texts), name, sort=True)
        # Every document (sorted unique ids 0 … N-1, an all-True mask) is no subset: the same path,
        # hence the same bits, as subset=None (the temporal leg's corpus moments included).
        if ids is not None and len(ids) == len(self.texts):
            return None
        return ids


def build_corpus(texts: tuple[str, ...], embeddings: object, normalize: object, bm25_params: BM25Params,
                 timeline: Optional[_temporal.Timeline] = None, bm25_index: Optional[BM25Index] = None) -> Corpus:
    """The corpus of checked ``texts``: the embeddings checked (float32 once, unit rows or normalised
    with ``normalize``), the timeline checked, the BM25 index built (or the given one checked)."""
    E = _v.corpus(_v.floating_array(embeddings, "embeddings", 2), "embeddings")
    if E.shape[0] != len(texts):
        msg = f"embeddings must have one row per text: expected {len(texts)} rows, got shape {E.shape}"
        raise ValueError(msg)
    normalize = _v.flag(normalize, "normalize")
    E = _v.unit_rows(E, normalize)
    if timeline is not None and (not isinstance(timeline, _temporal.Timeline) or len(timeline) != len(texts)):
        msg = f"timeline must be a fieldrank.temporal.Timeline with one entry per text ({len(texts)})"
        raise ValueError(msg)
    if bm25_index is None:
        # The timeline's sessions bound BM25's neighbour-text expansion (bm25_params.context_window).
        bm25_index = BM25Index(texts, bm25_params, sessions=timeline)
    else:
        _v.instance_of(bm25_index, "bm25_index", BM25Index)
        if len(bm25_index) != len(texts):
            msg = f"bm25_index must index the {len(texts)} texts, got an index of {len(bm25_index)} documents"
            raise ValueError(msg)
        if bm25_index.params != bm25_params:
            msg = f"bm25_index was built with {bm25_index.params!r}, but the config asks for {bm25_params!r}"
            raise ValueError(msg)
    return Corpus(texts, E, bm25_index, normalize, timeline)
