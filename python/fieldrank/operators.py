"""The native operators: validated once in Python, computed in C++ with the GIL released.

Every function here has a twin of the same name and signature in :mod:`fieldrank.reference`
(plain numpy, float64). Inputs must be float32; F-order or strided float32 arrays are copied
once into C order (the only copy these wrappers make). See ``docs/design.md``.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from . import _kernels as _k
from . import _validation as _v
from ._results import OPERATOR_NAMES, Ranking, Reconstruction
from .quantized import prefilter_quantized, prefilter_quantized_batch, quantize  # reduced-precision prefilter

__all__ = list(OPERATOR_NAMES)

_D = _k.DEFAULTS


_ranking = _k.ranking


def _reconstruction(native) -> Reconstruction:
    return Reconstruction(native.ids, native.scores, native.coef)


def prefilter(E: np.ndarray, q: np.ndarray, p: int = _D["p"], *, subset: Optional[np.ndarray] = None) -> Ranking:
    """Cosine top-``p`` of the rows of ``E`` for ``q`` (docs/spec.md §1).

    Parameters
    ----------
    E : (N, d) float32, unit rows (norm within ``DEFAULTS["unit_norm_atol"]`` of 1, else ValueError).
    q : (d,) float32.
    p : number of rows to keep; min(p, N) are returned.
    subset : optional int64 row ids or a boolean mask of shape (N,); only these rows are ranked
        (an empty subset is a ValueError).
    """
    E, q, subset = _v.corpus_call(E, q, subset)
    return _ranking(_k.prefilter(E, q, _v.prefilter_params(p), subset))


def prefilter_batch(E: np.ndarray, Q: np.ndarray, p: int = _D["p"], *, subset: Optional[np.ndarray] = None,
                    n_threads: int = 0) -> Ranking:
    """:func:`prefilter` for every row of ``Q`` (B, d); returns (B, min(p, n)) arrays."""
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    return _ranking(_k.prefilter_batch(E, Q, _v.prefilter_params(p), subset, n_threads))


def prefilter_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, p: int = _D["p"]) -> Ranking:
    """Cosine top-``p`` of a caller's pool: ``ids`` (P,) unique int64, ``C`` (P, d) float32."""
    ids, C, q, _ = _v.pool(ids, C, q)
    return _ranking(_k.prefilter_pool(ids, C, q, _v.prefilter_params(p)))


def cfsr(E: np.ndarray, q: np.ndarray, k: int = _D["cfsr_k"], *, p: int = _D["p"], w: float = _D["w"],
         lam: float = _D["lam"], iters: int = _D["iters"], tol: float = _D["tol"], fista: bool = False,
         subset: Optional[np.ndarray] = None) -> Reconstruction:
    """CFS-R (docs/spec.md §2): non-negative ridge reconstruction of ``q`` from its prefilter top-``p``.

    Returns the top ``k`` of the pool by ``w·ã + (1 − w)·r̃`` and each one's raw coefficient.
    ``tol > 0`` stops early once the projected-gradient norm falls under it; ``fista`` switches
    to the accelerated iteration. The defaults reproduce the write-ups' plain method.
    """
    E, q, subset = _v.corpus_call(E, q, subset)
    k, w, lam, iters, tol, fista = _v.family("cfsr", k, w, lam, iters, tol, fista)
    return _reconstruction(_k.cfsr(E, q, k, _v.prefilter_params(p), w, lam, iters, tol, fista, subset))


def cfsr_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["cfsr_k"], *, p: int = _D["p"], w: float = _D["w"],
               lam: float = _D["lam"], iters: int = _D["iters"], tol: float = _D["tol"], fista: bool = False,
               subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Reconstruction:
    """:func:`cfsr` for every row of ``Q`` (B, d); returns (B, m) arrays."""
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    k, w, lam, iters, tol, fista = _v.family("cfsr", k, w, lam, iters, tol, fista)
    return _reconstruction(_k.cfsr_batch(E, Q, k, _v.prefilter_params(p), w, lam, iters, tol, fista, subset,
                                            n_threads))


def cfsr_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["cfsr_k"], *, w: float = _D["w"],
              lam: float = _D["lam"], iters: int = _D["iters"], tol: float = _D["tol"], fista: bool = False,
              sims: Optional[np.ndarray] = None) -> Reconstruction:
    """CFS-R over a caller's pool (``ids`` (P,), ``C`` (P, d), optional cosines ``sims`` (P,))."""
    ids, C, q, sims = _v.pool(ids, C, q, sims)
    return _reconstruction(_k.cfsr_pool(ids, C, q, *_v.family("cfsr", k, w, lam, iters, tol, fista), sims))


def cfs(E: np.ndarray, q: np.ndarray, k: int = _D["cfs_k"], *, p: int = _D["p"], sigma: float = _D["sigma"],
        beta: float = _D["beta"], eps: float = _D["eps"], subset: Optional[np.ndarray] = None) -> Ranking:
    """CFS (docs/spec.md §3): greedy picks from the prefilter top-``p`` penalised by a summed Gaussian field.

    Scores are the objective ``log(max(f, eps)) − beta·field`` at each pick (non-increasing).
    """
    E, q, subset = _v.corpus_call(E, q, subset)
    k, sigma, beta, eps = _v.family("cfs", k, sigma, beta, eps)
    return _ranking(_k.cfs(E, q, k, _v.prefilter_params(p), sigma, beta, eps, subset))


def cfs_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["cfs_k"], *, p: int = _D["p"], sigma: float = _D["sigma"],
              beta: float = _D["beta"], eps: float = _D["eps"], subset: Optional[np.ndarray] = None,
              n_threads: int = 0) -> Ranking:
    """:func:`cfs` for every row of ``Q`` (B, d); returns (B, m) arrays."""
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    k, sigma, beta, eps = _v.family("cfs", k, sigma, beta, eps)
    return _ranking(_k.cfs_batch(E, Q, k, _v.prefilter_params(p), sigma, beta, eps, subset, n_threads))


def cfs_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["cfs_k"], *, sigma: float = _D["sigma"],
             beta: float = _D["beta"], eps: float = _D["eps"], sims: Optional[np.ndarray] = None) -> Ranking:
    """CFS over a caller's pool."""
    ids, C, q, sims = _v.pool(ids, C, q, sims)
    return _ranking(_k.cfs_pool(ids, C, q, *_v.family("cfs", k, sigma, beta, eps), sims))


def mmr(E: np.ndarray, q: np.ndarray, k: int = _D["mmr_k"], *, p: int = _D["p"], mu: float = _D["mu"],
        subset: Optional[np.ndarray] = None) -> Ranking:
    """MMR (docs/spec.md §4) over the prefilter top-``p``; scores are the MMR objective at each pick."""
    E, q, subset = _v.corpus_call(E, q, subset)
    k, mu = _v.family("mmr", k, mu)
    return _ranking(_k.mmr(E, q, k, _v.prefilter_params(p), mu, subset))


def mmr_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["mmr_k"], *, p: int = _D["p"], mu: float = _D["mu"],
              subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Ranking:
    """:func:`mmr` for every row of ``Q`` (B, d); returns (B, m) arrays."""
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    k, mu = _v.family("mmr", k, mu)
    return _ranking(_k.mmr_batch(E, Q, k, _v.prefilter_params(p), mu, subset, n_threads))


def mmr_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["mmr_k"], *, mu: float = _D["mu"],
             sims: Optional[np.ndarray] = None) -> Ranking:
    """MMR over a caller's pool."""
    ids, C, q, sims = _v.pool(ids, C, q, sims)
    return _ranking(_k.mmr_pool(ids, C, q, *_v.family("mmr", k, mu), sims))


def ring(E: np.ndarray, q: np.ndarray, k: int = _D["ring_k"], *, alpha: float = _D["alpha"], laps: int = _D["laps"],
         seed: int = _D["seed"], ablation: bool = False, subset: Optional[np.ndarray] = None) -> Ranking:
    """Ring survival laps (docs/spec.md §5) over the prefilter top-(2k); returns exactly min(k, n) ids.

    Exact ties are broken by a seeded draw; ``ablation=True`` applies the archived constant
    bump instead of the neighbour term and returns cosine top-k in cosine order.
    """
    E, q, subset = _v.corpus_call(E, q, subset)
    return _ranking(_k.ring(E, q, *_v.family("ring", k, alpha, laps, seed, ablation), subset))


def ring_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["ring_k"], *, alpha: float = _D["alpha"],
               laps: int = _D["laps"], seed: int = _D["seed"], ablation: bool = False,
               subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Ranking:
    """:func:`ring` for every row of ``Q`` (B, d); returns (B, min(k, n)) arrays."""
    E, Q, subset, n_threads = _v.batch_call(E, Q, subset, n_threads)
    return _ranking(_k.ring_batch(E, Q, *_v.family("ring", k, alpha, laps, seed, ablation), subset, n_threads))


def ring_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["ring_k"], *, alpha: float = _D["alpha"],
              laps: int = _D["laps"], seed: int = _D["seed"], ablation: bool = False,
              sims: Optional[np.ndarray] = None) -> Ranking:
    """Ring over a caller's whole pool (no further prefilter)."""
    ids, C, q, sims = _v.pool(ids, C, q, sims)
    return _ranking(_k.ring_pool(ids, C, q, *_v.family("ring", k, alpha, laps, seed, ablation), sims))


def rrf(rankings: Sequence[np.ndarray], weights: Optional[Sequence[float]] = None, k: int = _D["k"], *,
        k0: float = _D["k0"]) -> Ranking:
    """Weighted reciprocal rank fusion (docs/spec.md §6) of id rankings (best first).

    ``RRF(c) = Σ w_leg / (k0 + rank_leg(c))`` with 1-based ranks; ``weights=None`` weighs every
    leg 1. Returns up to ``k`` ids by fused score (float64), ties to the lower id.
    """
    legs, weight_values, k, k0 = _v.rrf_args(rankings, weights, k, k0)
    return _ranking(_k.rrf(legs, weight_values, k, k0))


def rrf_batch(rankings: Sequence[Sequence[np.ndarray]], weights: Optional[Sequence[float]] = None,
              k: int = _D["k"], *, k0: float = _D["k0"]) -> List[Ranking]:
    """:func:`rrf` for every query: ``rankings[b]`` is query b's list of legs."""
    if isinstance(rankings, np.ndarray) or not isinstance(rankings, Sequence):
        msg = f"rankings must be a list (one entry per query) of lists of id arrays, got {type(rankings).__name__}"
        raise TypeError(msg)
    per_query = [_v.rrf_args(legs, weights, k, k0) for legs in rankings]
    if not per_query:
        return []
    _, weight_values, k, k0 = per_query[0]
    return [_ranking(r) for r in _k.rrf_batch([legs for legs, *_ in per_query], weight_values, k, k0)]
