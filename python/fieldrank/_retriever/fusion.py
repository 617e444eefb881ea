"""The one weighted-RRF rule of the retriever (docs/spec.md §6): ``score(id) = Σ_legs weight /
(k0 + rank)``, ties to the lower id, run natively.

The legs' outputs are what :func:`fieldrank.rrf` checks for (int64 ids, none twice) and a plan's
weights, ``k`` and ``k0`` were checked with its configuration, so the native fusion runs
unchecked: the same sums in the same order as ``rrf`` (a parity test), the id arrays read in place.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from .. import _kernels
from .._results import Ranking

__all__ = ["weighted_rrf", "weighted_rrf_batch"]


def weighted_rrf(rankings: Sequence[np.ndarray], weights: Sequence[float], k: int, k0: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """The fused ``(ids, scores)`` of one query's rankings (int64 ids best first, none twice)."""
    fused = _kernels.rrf_unchecked(rankings, weights, k, k0)
    return fused.ids, fused.scores


def weighted_rrf_batch(rankings: Sequence[Sequence[np.ndarray]], weights: Sequence[float], k: int, k0: float,
                       n_threads: int) -> list[Ranking]:
    """:func:`weighted_rrf` of many queries (one list of rankings each), one query per thread."""
    return _kernels.rrf_batch_trusted(rankings, weights, k, k0, n_threads)
