"""The one door into the native core: every runtime module reaches ``fieldrank._core`` through here.

Two kinds of names, nothing else:

* **the native calls**, re-exported as they are (no wrapper: a call costs what a ``_core`` call
  costs; their types are ``_core.pyi``'s, generated from the bindings). They trust their
  arguments' Python-level checks to the caller (:mod:`fieldrank._validation` at the public
  boundary); the native side checks sizes and ids. ``DEFAULTS`` is the core's table of defaults.
* **the zero-copy check** (:func:`native_layout`: an array the bindings read in place, or one C-ordered
  copy) and **the trusted entry points** (:func:`prefilter_batch_trusted`, :func:`pool_trusted`,
  :func:`batch_trusted`, :func:`rrf_batch_trusted`): for the layers above the operators
  (the retriever, ``fieldrank._retriever``; the memory store) that validated their corpus once at construction and
  each query once per call, so a search skips the operators' Python checks and copies. Arguments
  must be what the public operators would have produced: C-ordered float32 matrices, int64 ids,
  unique subsets, parameters already checked (a config's legs check them when built).

``tests/test_layout.py`` holds this module to being the only importer of ``_core``.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

import numpy as np

# The native calls and constants, as the bindings define them (types: ``_core.pyi``): the one list.
from ._core import (
    DEFAULTS, FUSED_FACTOR_NAMES, NativeFusionParams, NativeTemporalMoments, bm25_scores_batch, build_info, cfs,
    cfs_batch, cfs_pool, cfsr, cfsr_batch, cfsr_pool, compiled_kernel_variants, cpu_features, hardware_threads,
    kernel_variant, memory_decay_exponents, memory_fuse, memory_protected_order, memory_ranks_of,
    memory_relevance_tail, memory_reserve_slots, memory_sorted_unique, mmr, mmr_batch, mmr_pool, prefilter,
    prefilter_batch, prefilter_bf16, prefilter_bf16_batch, prefilter_int8, prefilter_int8_batch, prefilter_pool,
    quantize_bf16, quantize_int8, read_probe, ring, ring_batch, ring_pool, rrf, rrf_batch, rrf_unchecked,
    set_kernel_variant, sparse_scores_batch, supported_kernel_variants, temporal_batch, temporal_moments, tie_key,
)
from ._results import Ranking


def native_layout(x: np.ndarray) -> np.ndarray:
    """``x`` itself when its strides are exactly C order's (the bindings read it in place), else a
    C-ordered copy.

    numpy calls an array C-contiguous when its only odd strides are on length-1 axes (a
    negative or zero stride there included), but the binding's layout check refuses those
    ("incompatible function arguments"); only such degenerate views, and really strided or
    F-ordered arrays, are copied.
    """
    expected = x.itemsize
    canonical = True
    for size, stride in zip(reversed(x.shape), reversed(x.strides)):
        if size > 1 and stride != expected or stride < 0:
            canonical = False
            break
        expected *= size
    if canonical and x.flags.c_contiguous and x.flags.aligned:
        return x
    return np.array(x, order="C", copy=True)


def ranking(native: Any) -> Ranking:
    """A native (batch) ranking as the operators' :class:`~fieldrank.Ranking`."""
    return Ranking(native.ids, native.scores)


_POOL_OPERATORS: dict[str, Any] = {"cfsr": cfsr_pool, "cfs": cfs_pool, "mmr": mmr_pool, "ring": ring_pool}
_BATCH_OPERATORS: dict[str, Any] = {"cfsr": cfsr_batch, "cfs": cfs_batch, "mmr": mmr_batch, "ring": ring_batch}


def prefilter_batch_trusted(E: np.ndarray, Q: np.ndarray, p: int, subset: Optional[np.ndarray],
                            n_threads: int) -> Ranking:
    """``prefilter_batch`` on a checked corpus and queries."""
    return ranking(prefilter_batch(E, Q, p, subset, n_threads))


def pool_trusted(kind: str, ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int, sims: Optional[np.ndarray],
                 params: dict):
    """``<kind>_pool`` on a checked pool; returns the native result (ids, scores[, coef])."""
    return _POOL_OPERATORS[kind](ids, C, q, k, sims=sims, **params)


def batch_trusted(kind: str, E: np.ndarray, Q: np.ndarray, k: int, p: Optional[int], subset: Optional[np.ndarray],
                  n_threads: int, params: dict):
    """``<kind>_batch`` on a checked corpus and queries; ``p`` None for Ring (its pool follows k)."""
    depth = {} if p is None else {"p": p}
    return _BATCH_OPERATORS[kind](E, Q, k, subset=subset, n_threads=n_threads, **depth, **params)


def rrf_batch_trusted(rankings: Sequence[Sequence[np.ndarray]], weights: Sequence[float], k: int,
                      k0: float, n_threads: int = 0) -> List[Ranking]:
    """``rrf_batch`` on legs' own outputs (int64 ids without repeats), weights checked once."""
    return [ranking(r) for r in rrf_batch(rankings, weights, k, k0, n_threads)]
