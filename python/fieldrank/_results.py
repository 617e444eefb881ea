"""Result types shared by the native operators and the numpy reference."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["OPERATOR_NAMES", "Ranking", "Reconstruction", "SearchHit"]

#: The operators that :mod:`fieldrank.operators` (native) and :mod:`fieldrank.reference` (numpy)
#: both define with the same signatures: written once, each module's ``__all__`` starts with it.
OPERATOR_NAMES = (
    "prefilter", "prefilter_batch", "prefilter_pool",
    "cfsr", "cfsr_batch", "cfsr_pool",
    "cfs", "cfs_batch", "cfs_pool",
    "mmr", "mmr_batch", "mmr_pool",
    "ring", "ring_batch", "ring_pool",
    "rrf", "rrf_batch",
    "quantize", "prefilter_quantized", "prefilter_quantized_batch",
)


class Ranking(NamedTuple):
    """Ids best first and the scores that ordered them.

    ``ids`` is int64: row positions of ``E`` for corpus calls, the caller's ids for pool calls.
    ``scores`` is float32 from the native operators and float64 from the reference (RRF: float64
    in both). Batch calls return 2-D ``(B, m)`` arrays, one row per query.
    """

    ids: np.ndarray
    scores: np.ndarray


class Reconstruction(NamedTuple):
    """CFS-R's ranked ids, blended scores, and the raw coefficient ``a`` of each returned id."""

    ids: np.ndarray
    scores: np.ndarray
    coef: np.ndarray


class SearchHit(NamedTuple):
    """One hit of a :class:`~fieldrank.hybrid.SearchResult`: iterate or index a result to get them.

    ``id`` is the document's position in the retriever's corpus, ``score`` its fused score
    (float: the weighted RRF of the legs, or a one-leg plan's own leg score, e.g. the ``default``
    preset's temporal blend), ``text`` its text and ``rank`` its place in the result (1 = best).

    ``confidence`` is the calibrated probability (float in [0, 1]) that the hit is relevant to the
    query (:mod:`fieldrank._confidence`; ``docs/results/confidence.md`` gives how well calibrated
    on held-out data). It compares across queries and memories, unlike ``score``: an agent (or a
    framework adapter, as its score threshold) keeps hits with ``confidence >= t``, or passes
    ``min_confidence=t`` to ``search``/``search_batch``/``recall``. NaN when the query had no
    vector or no text (the evidence it reads is then missing).
    """

    rank: int
    id: int
    score: float
    text: str
    confidence: float = float("nan")
