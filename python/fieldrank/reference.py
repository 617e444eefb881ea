"""Pure-numpy reference of every operator: the readable spec and the test oracle.

Each function has the name, signature and return type of its native twin in :mod:`fieldrank`,
so ``import fieldrank.reference as fr`` can replace ``import fieldrank as fr`` in user code.
Inputs are validated by the same ``_validation`` module; arithmetic is float64. This module is
never used as a silent fallback for the native one.
"""

from __future__ import annotations

from typing import List, Optional, Sequence

import numpy as np

from . import _kernels
from . import _validation as _v
from . import quantized as _q
from ._results import OPERATOR_NAMES, Ranking, Reconstruction
from .quantized import QuantizedCorpus
from .temporal import DAY as _DAY
from .temporal import TemporalParams, Timeline, check_leg_call, question_features

# The native operators' names, then the reference's own: tie_key and the time-aware leg.
__all__ = [*OPERATOR_NAMES, "tie_key", "temporal", "temporal_batch", "temporal_scores", "neighbour_support",
           "sparse_scores_batch"]

_D = _kernels.DEFAULTS
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)
_FLOAT32_MAX = _v.FLOAT32_MAX


# --------------------------------------------------------------------------- helpers

def _dots(X: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``X @ v`` summed in an order that depends only on ``d``, never on a row's position.

    BLAS kernels (gemv/gemm) sum a row differently depending on where it sits in the matrix, so
    two identical rows could score a few ulps apart and the tie rule would order them by noise
    instead of by id. numpy's einsum loops sum every row the same way.
    """
    return np.einsum("ij,j->i", X, v)


def _gram(C: np.ndarray) -> np.ndarray:
    """``C @ C.T`` with the fixed summation order of :func:`_dots` (identical rows give identical rows/columns)."""
    return np.einsum("ik,jk->ij", C, C)


def _order(scores: np.ndarray, ids: np.ndarray, limit: int) -> np.ndarray:
    """Positions sorted by the tie rule: higher score first, equal scores -> lower id first."""
    return np.lexsort((ids, -scores))[:limit]


def _corpus_pool(E: np.ndarray, q: np.ndarray, p: int, subset: Optional[np.ndarray]):
    """The prefilter's top-p: (ids, float64 vectors, float64 cosines)."""
    rows = np.arange(E.shape[0], dtype=np.int64) if subset is None else subset
    vectors = E[rows].astype(np.float64)
    sims = _dots(vectors, q.astype(np.float64))
    top = _order(sims, rows, p)
    return rows[top], vectors[top], sims[top]


def _caller_pool(ids, C, q, sims):
    ids, C, q, sims = _v.pool(ids, C, q, sims)
    vectors = C.astype(np.float64)
    cosines = _dots(vectors, q.astype(np.float64)) if sims is None else sims.astype(np.float64)
    return ids, vectors, cosines


def _batch(single, Q: np.ndarray, width: int, with_coef: bool = False):
    ids = np.full((Q.shape[0], width), -1, dtype=np.int64)
    scores = np.zeros((Q.shape[0], width), dtype=np.float64)
    coef = np.zeros((Q.shape[0], width), dtype=np.float64)
    for b in range(Q.shape[0]):
        result = single(Q[b])
        ids[b], scores[b] = result.ids, result.scores
        if with_coef:
            coef[b] = result.coef
    if with_coef:
        return Reconstruction(ids, scores, coef)
    return Ranking(ids, scores)


def _candidates(E: np.ndarray, subset: Optional[np.ndarray]) -> int:
    return E.shape[0] if subset is None else subset.shape[0]


# --------------------------------------------------------------------------- prefilter

def prefilter(E: np.ndarray, q: np.ndarray, p: int = _D["p"], *, subset: Optional[np.ndarray] = None) -> Ranking:
    """Cosine top-``p`` of the rows of ``E`` for ``q`` (docs/spec.md §1)."""
    E, q, subset = _v.corpus_call(E, q, subset)
    p = _v.prefilter_params(p)
    _v.check_unit_rows(E, rows=subset)
    ids, _, sims = _corpus_pool(E, q, p, subset)
    return Ranking(ids, sims)


def prefilter_batch(E: np.ndarray, Q: np.ndarray, p: int = _D["p"], *, subset: Optional[np.ndarray] = None,
                    n_threads: int = 0) -> Ranking:
    """:func:`prefilter` for every row of ``Q``."""
    E, Q, subset, _ = _v.batch_call(E, Q, subset, n_threads)
    p = _v.prefilter_params(p)
    # Rows of E are checked per query (as the native batch does), so an empty batch reads none.
    return _batch(lambda q: prefilter(E, q, p, subset=subset), Q, min(p, _candidates(E, subset)))


def prefilter_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, p: int = _D["p"]) -> Ranking:
    """Cosine top-``p`` of a caller's pool."""
    ids, vectors, sims = _caller_pool(ids, C, q, None)
    top = _order(sims, ids, _v.prefilter_params(p))
    return Ranking(ids[top], sims[top])


# --------------------------------------------------------------------------- reduced precision

def quantize(E: np.ndarray, kind: str = "int8") -> QuantizedCorpus:
    """numpy twin of :func:`fieldrank.quantize`: bit-identical bf16 or int8 codes."""
    kind = _q.check_kind(kind)
    E = _v.corpus(E)
    if kind == "int8":
        _q.check_int8_dim(E.shape[1])
    _v.check_unit_rows(E)
    if kind == "bf16":
        return QuantizedCorpus("bf16", _q.bf16_codes(E))
    return QuantizedCorpus("int8", *_q.int8_codes(E))


def _quantized_scores(QC: QuantizedCorpus, rows: np.ndarray, q: np.ndarray) -> np.ndarray:
    """The scan's approximate scores: bf16 rows · q, or the exact integer dot of the int8 codes, scaled."""
    if QC.kind == "bf16":
        values = (QC.codes[rows].astype(np.uint32) << np.uint32(16)).view(np.float32)
        return _dots(values.astype(np.float64), q.astype(np.float64))
    q8, q_scale, _ = _q.int8_codes(q[None, :])
    dots = QC.codes[rows].astype(np.int64) @ q8[0].astype(np.int64)
    return dots * QC.scale[rows].astype(np.float64) * float(q_scale[0])


def prefilter_quantized(QC: QuantizedCorpus, E: np.ndarray, q: np.ndarray, p: int = _D["p"], *,
                        rescore_factor: int = _D["quantized_rescore_factor"],
                        subset: Optional[np.ndarray] = None) -> Ranking:
    """Top ``rescore_factor · p`` rows by the reduced-precision score, rescored exactly; the best ``p``."""
    QC = _q.check_corpus(QC)
    E, q, subset = _v.corpus_call(E, q, subset)
    _q.check_matches(QC, E)
    p, factor = _v.prefilter_params(p), _q.check_factor(rescore_factor)
    rows = np.arange(E.shape[0], dtype=np.int64) if subset is None else subset
    candidates = rows[_order(_quantized_scores(QC, rows, q), rows, factor * p)]
    _v.check_unit_rows(E, rows=candidates)
    sims = _dots(E[candidates].astype(np.float64), q.astype(np.float64))
    top = _order(sims, candidates, p)
    return Ranking(candidates[top], sims[top])


def prefilter_quantized_batch(QC: QuantizedCorpus, E: np.ndarray, Q: np.ndarray, p: int = _D["p"], *,
                              rescore_factor: int = _D["quantized_rescore_factor"],
                              subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Ranking:
    """:func:`prefilter_quantized` for every row of ``Q``."""
    QC = _q.check_corpus(QC)
    E, Q, subset, _ = _v.batch_call(E, Q, subset, n_threads)
    _q.check_matches(QC, E)  # in the native order, and even for an empty batch
    p, _factor = _v.prefilter_params(p), _q.check_factor(rescore_factor)
    return _batch(lambda q: prefilter_quantized(QC, E, q, p, rescore_factor=rescore_factor, subset=subset), Q,
                  min(p, _candidates(E, subset)))


# --------------------------------------------------------------------------- CFS-R

def _lambda_max(G: np.ndarray) -> float:
    return float(np.linalg.eigvalsh(G)[-1])


def _cfsr_on_pool(ids, C, r, k, w, lam, iters, tol, fista) -> Reconstruction:
    """Projected gradient on ½‖q − Cᵀa‖² + ½λ‖a‖², a ≥ 0, in Gram form (docs/spec.md §2)."""
    G = _gram(C)
    step = 1.0 / (_lambda_max(G) + lam)
    a = np.zeros(len(ids))
    momentum = a.copy()
    t_current = 1.0
    for _ in range(iters):
        point = momentum if fista else a
        gradient = _dots(G, point) + lam * point - r
        if tol > 0.0:
            projected = np.where(point > 0.0, gradient, np.minimum(gradient, 0.0))
            if np.linalg.norm(projected) <= tol:
                break
        if fista:
            previous = a
            a = np.maximum(0.0, point - step * gradient)
            t_next = (1.0 + np.sqrt(1.0 + 4.0 * t_current * t_current)) / 2.0
            momentum = a + ((t_current - 1.0) / t_next) * (a - previous)
            t_current = t_next
        else:
            a = np.maximum(0.0, a - step * gradient)
    a_max = a.max()
    a_norm = a / a_max if a_max > 0 else np.zeros_like(a)
    span = r.max() - r.min()
    r_norm = (r - r.min()) / span if span > 0 else np.ones_like(r)
    score = w * a_norm + (1.0 - w) * r_norm
    top = _order(score, ids, k)
    if top.size and a[top].max() > _FLOAT32_MAX:
        msg = ("cfsr: a reconstruction coefficient is past the float32 range (rows and query of very different "
               "norms); L2-normalise E and q")
        raise ValueError(msg)
    return Reconstruction(ids[top], score[top], a[top])


def cfsr(E: np.ndarray, q: np.ndarray, k: int = _D["cfsr_k"], *, p: int = _D["p"], w: float = _D["w"],
         lam: float = _D["lam"], iters: int = _D["iters"], tol: float = _D["tol"], fista: bool = False,
         subset: Optional[np.ndarray] = None) -> Reconstruction:
    """CFS-R (docs/spec.md §2) with the exact λ_max of the Gram matrix."""
    E, q, subset = _v.corpus_call(E, q, subset)
    k, w, lam, iters, tol, fista = _v.family("cfsr", k, w, lam, iters, tol, fista)
    p = _v.prefilter_params(p)
    _v.check_unit_rows(E, rows=subset)
    ids, C, r = _corpus_pool(E, q, p, subset)
    return _cfsr_on_pool(ids, C, r, k, w, lam, iters, tol, fista)


def cfsr_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["cfsr_k"], *, p: int = _D["p"], w: float = _D["w"],
               lam: float = _D["lam"], iters: int = _D["iters"], tol: float = _D["tol"], fista: bool = False,
               subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Reconstruction:
    """:func:`cfsr` for every row of ``Q``."""
    E, Q, subset, _ = _v.batch_call(E, Q, subset, n_threads)
    k, w, lam, iters, tol, fista = _v.family("cfsr", k, w, lam, iters, tol, fista)
    p = _v.prefilter_params(p)
    width = min(k, p, _candidates(E, subset))
    return _batch(lambda q: cfsr(E, q, k, p=p, w=w, lam=lam, iters=iters, tol=tol, fista=fista, subset=subset),
                  Q, width, with_coef=True)


def cfsr_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["cfsr_k"], *, w: float = _D["w"],
              lam: float = _D["lam"], iters: int = _D["iters"], tol: float = _D["tol"], fista: bool = False,
              sims: Optional[np.ndarray] = None) -> Reconstruction:
    """CFS-R over a caller's pool."""
    ids, vectors, cosines = _caller_pool(ids, C, q, sims)
    return _cfsr_on_pool(ids, vectors, cosines, *_v.family("cfsr", k, w, lam, iters, tol, fista))


# --------------------------------------------------------------------------- greedy pickers

def _best_unpicked(value: np.ndarray, picked: np.ndarray, ids: np.ndarray) -> int:
    candidates = np.flatnonzero(~picked)
    return int(candidates[_order(value[candidates], ids[candidates], 1)[0]])


def _cfs_on_pool(ids, C, f, k, sigma, beta, eps) -> Ranking:
    """Greedy argmax of log(max(f, ε)) − β Σ_s K_σ(c, s), the field kept as a running sum (docs/spec.md §3)."""
    m = min(k, len(ids))
    base = np.log(np.maximum(f, eps))
    field = np.zeros(len(ids))
    value = base.copy()
    picked = np.zeros(len(ids), dtype=bool)
    out_ids, out_scores = np.empty(m, dtype=np.int64), np.empty(m)
    # As in the kernels: sigma -> 0 past float32 (an inverse of inf would give 0·inf = NaN at
    # distance 0), and values saturate at -FLT_MAX (float32 scores), where ties go to the lower id.
    inv_two_sigma_sq = min(1.0 / (2.0 * sigma * sigma), _FLOAT32_MAX)
    for t in range(m):
        pick = _best_unpicked(value, picked, ids)
        picked[pick] = True
        out_ids[t], out_scores[t] = ids[pick], value[pick]
        distance_sq = np.maximum(0.0, 2.0 - 2.0 * _dots(C, C[pick]))
        field += np.exp(-distance_sq * inv_two_sigma_sq)
        value = np.maximum(base - beta * field, -_FLOAT32_MAX)
    return Ranking(out_ids, out_scores)


def cfs(E: np.ndarray, q: np.ndarray, k: int = _D["cfs_k"], *, p: int = _D["p"], sigma: float = _D["sigma"],
        beta: float = _D["beta"], eps: float = _D["eps"], subset: Optional[np.ndarray] = None) -> Ranking:
    """CFS (docs/spec.md §3) over the prefilter top-``p``."""
    E, q, subset = _v.corpus_call(E, q, subset)
    k, sigma, beta, eps = _v.family("cfs", k, sigma, beta, eps)
    p = _v.prefilter_params(p)
    _v.check_unit_rows(E, rows=subset)
    ids, C, f = _corpus_pool(E, q, p, subset)
    return _cfs_on_pool(ids, C, f, k, sigma, beta, eps)


def cfs_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["cfs_k"], *, p: int = _D["p"], sigma: float = _D["sigma"],
              beta: float = _D["beta"], eps: float = _D["eps"], subset: Optional[np.ndarray] = None,
              n_threads: int = 0) -> Ranking:
    """:func:`cfs` for every row of ``Q``."""
    E, Q, subset, _ = _v.batch_call(E, Q, subset, n_threads)
    k, sigma, beta, eps = _v.family("cfs", k, sigma, beta, eps)
    p = _v.prefilter_params(p)
    width = min(k, p, _candidates(E, subset))
    return _batch(lambda q: cfs(E, q, k, p=p, sigma=sigma, beta=beta, eps=eps, subset=subset), Q, width)


def cfs_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["cfs_k"], *, sigma: float = _D["sigma"],
             beta: float = _D["beta"], eps: float = _D["eps"], sims: Optional[np.ndarray] = None) -> Ranking:
    """CFS over a caller's pool."""
    ids, vectors, cosines = _caller_pool(ids, C, q, sims)
    return _cfs_on_pool(ids, vectors, cosines, *_v.family("cfs", k, sigma, beta, eps))


def _mmr_on_pool(ids, C, sims, k, mu) -> Ranking:
    """Greedy argmax of μ·cos(q, c) − (1 − μ)·max_s cos(c, s); the max term is 0 while S is empty."""
    m = min(k, len(ids))
    max_sim = np.zeros(len(ids))
    value = mu * sims
    picked = np.zeros(len(ids), dtype=bool)
    out_ids, out_scores = np.empty(m, dtype=np.int64), np.empty(m)
    for t in range(m):
        pick = _best_unpicked(value, picked, ids)
        picked[pick] = True
        out_ids[t], out_scores[t] = ids[pick], value[pick]
        column = _dots(C, C[pick])
        max_sim = column if t == 0 else np.maximum(max_sim, column)
        value = mu * sims - (1.0 - mu) * max_sim
    return Ranking(out_ids, out_scores)


def mmr(E: np.ndarray, q: np.ndarray, k: int = _D["mmr_k"], *, p: int = _D["p"], mu: float = _D["mu"],
        subset: Optional[np.ndarray] = None) -> Ranking:
    """MMR (docs/spec.md §4) over the prefilter top-``p``."""
    E, q, subset = _v.corpus_call(E, q, subset)
    k, mu = _v.family("mmr", k, mu)
    p = _v.prefilter_params(p)
    _v.check_unit_rows(E, rows=subset)
    ids, C, sims = _corpus_pool(E, q, p, subset)
    return _mmr_on_pool(ids, C, sims, k, mu)


def mmr_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["mmr_k"], *, p: int = _D["p"], mu: float = _D["mu"],
              subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Ranking:
    """:func:`mmr` for every row of ``Q``."""
    E, Q, subset, _ = _v.batch_call(E, Q, subset, n_threads)
    k, mu = _v.family("mmr", k, mu)
    p = _v.prefilter_params(p)
    width = min(k, p, _candidates(E, subset))
    return _batch(lambda q: mmr(E, q, k, p=p, mu=mu, subset=subset), Q, width)


def mmr_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["mmr_k"], *, mu: float = _D["mu"],
             sims: Optional[np.ndarray] = None) -> Ranking:
    """MMR over a caller's pool."""
    ids, vectors, cosines = _caller_pool(ids, C, q, sims)
    return _mmr_on_pool(ids, vectors, cosines, *_v.family("mmr", k, mu))


# --------------------------------------------------------------------------- Ring

def _splitmix64(x: np.ndarray) -> np.ndarray:
    x = (x + np.uint64(0x9E3779B97F4A7C15)) & _MASK64
    x = ((x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)) & _MASK64
    x = ((x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)) & _MASK64
    return x ^ (x >> np.uint64(31))


def tie_key(seed: int, lap: int, ids: np.ndarray) -> np.ndarray:
    """Ring's seeded tie draw, identical to the native ``tie_key`` (splitmix64 of seed, lap, id).

    ``seed`` and ``lap`` are checked like Ring's seed: ints in [0, 2**64), as in the native module.
    """
    seed, lap = _v.tie_key_args(seed, lap)
    with np.errstate(over="ignore"):
        seeded = _splitmix64(np.array([seed], dtype=np.uint64))
        lapped = _splitmix64(seeded ^ np.uint64(lap))
        return _splitmix64(lapped ^ _v.tie_key_ids(ids))


def _ring_on_pool(ids, C, sims, k, alpha, laps, seed, ablation) -> Ranking:
    """Survival laps (docs/spec.md §5): re-score, drop the lowest ceil((n − k)/(L − ℓ)), until k remain."""
    keep = min(k, len(ids))
    cosines = _gram(C)
    live = np.arange(len(ids))
    bump = _D["ring_ablation_bump"]
    score = np.zeros(len(ids))
    key = np.zeros(len(ids), dtype=np.uint64)
    for lap in range(laps):
        alive = len(live)
        if ablation:
            score[live] = sims[live] + bump * (lap + 1)
        else:
            block = cosines[np.ix_(live, live)]
            neighbour_sum = block.sum(axis=1) - np.diag(block)
            neighbour_mean = neighbour_sum / (alive - 1) if alive > 1 else np.zeros(alive)
            score[live] = (1.0 - alpha) * sims[live] + alpha * neighbour_mean
        key[live] = tie_key(seed, lap, ids[live])
        live = live[np.lexsort((key[live], -score[live]))]
        remaining_laps = laps - lap
        drop = -(-(alive - keep) // remaining_laps)
        live = live[: alive - drop]
    assert len(live) == keep  # an internal invariant, not input validation
    return Ranking(ids[live], score[live])


def ring(E: np.ndarray, q: np.ndarray, k: int = _D["ring_k"], *, alpha: float = _D["alpha"], laps: int = _D["laps"],
         seed: int = _D["seed"], ablation: bool = False, subset: Optional[np.ndarray] = None) -> Ranking:
    """Ring survival laps (docs/spec.md §5) over the prefilter top-(2k)."""
    E, q, subset = _v.corpus_call(E, q, subset)
    k, alpha, laps, seed, ablation = _v.family("ring", k, alpha, laps, seed, ablation)
    _v.check_unit_rows(E, rows=subset)
    ids, C, sims = _corpus_pool(E, q, k * _D["ring_pool_factor"], subset)
    return _ring_on_pool(ids, C, sims, k, alpha, laps, seed, ablation)


def ring_batch(E: np.ndarray, Q: np.ndarray, k: int = _D["ring_k"], *, alpha: float = _D["alpha"],
               laps: int = _D["laps"], seed: int = _D["seed"], ablation: bool = False,
               subset: Optional[np.ndarray] = None, n_threads: int = 0) -> Ranking:
    """:func:`ring` for every row of ``Q``."""
    E, Q, subset, _ = _v.batch_call(E, Q, subset, n_threads)
    k, alpha, laps, seed, ablation = _v.family("ring", k, alpha, laps, seed, ablation)
    width = min(k, _candidates(E, subset))
    return _batch(lambda q: ring(E, q, k, alpha=alpha, laps=laps, seed=seed, ablation=ablation, subset=subset),
                  Q, width)


def ring_pool(ids: np.ndarray, C: np.ndarray, q: np.ndarray, k: int = _D["ring_k"], *, alpha: float = _D["alpha"],
              laps: int = _D["laps"], seed: int = _D["seed"], ablation: bool = False,
              sims: Optional[np.ndarray] = None) -> Ranking:
    """Ring over a caller's whole pool."""
    ids, vectors, cosines = _caller_pool(ids, C, q, sims)
    return _ring_on_pool(ids, vectors, cosines, *_v.family("ring", k, alpha, laps, seed, ablation))


# --------------------------------------------------------------------------- RRF

def _rrf(legs, weight_values, k, k0) -> Ranking:
    fused: dict = {}
    for leg, ranking in enumerate(legs):
        for rank, doc in enumerate(ranking.tolist(), start=1):
            fused[doc] = fused.get(doc, 0.0) + weight_values[leg] / (k0 + float(rank))
    ids = np.fromiter(fused.keys(), dtype=np.int64, count=len(fused))
    scores = np.fromiter(fused.values(), dtype=np.float64, count=len(fused))
    top = _order(scores, ids, k)
    return Ranking(ids[top], scores[top])


def rrf(rankings: Sequence[np.ndarray], weights: Optional[Sequence[float]] = None, k: int = _D["k"], *,
        k0: float = _D["k0"]) -> Ranking:
    """Weighted reciprocal rank fusion (docs/spec.md §6)."""
    return _rrf(*_v.rrf_args(rankings, weights, k, k0))


def rrf_batch(rankings: Sequence[Sequence[np.ndarray]], weights: Optional[Sequence[float]] = None,
              k: int = _D["k"], *, k0: float = _D["k0"]) -> List[Ranking]:
    """:func:`rrf` for every query."""
    if isinstance(rankings, np.ndarray) or not isinstance(rankings, Sequence):
        msg = f"rankings must be a list (one entry per query) of lists of id arrays, got {type(rankings).__name__}"
        raise TypeError(msg)
    return [rrf(legs, weights, k, k0=k0) for legs in rankings]


# --------------------------------------------------------------------------- temporal leg
def _znorm(S: np.ndarray) -> np.ndarray:
    mu = S.mean(axis=1, keepdims=True)
    sd = S.std(axis=1, keepdims=True)
    sd[sd == 0] = 1.0
    return (S - mu) / sd


def neighbour_support(base: np.ndarray, rows: np.ndarray, session: np.ndarray, radius: int,
                      decay: float) -> np.ndarray:
    """``max_{1<=|d|<=radius} decay^(|d|-1) · max(base[:, j(i+d)], 0)`` over same-session rows in ``rows``.

    ``base`` is ``(B, n)`` over the sorted corpus rows ``rows`` (n,); ``session`` is the full
    ``(N,)`` key array. Rows without a neighbour get 0.
    """
    support = np.zeros_like(base)
    n = rows.shape[0]
    positive = np.maximum(base, 0.0)
    for distance in range(1, radius + 1):
        factor = decay ** (distance - 1)
        if factor == 0.0:
            break
        for d in (distance, -distance):
            target = rows + d
            j = np.searchsorted(rows, target)
            ok = j < n
            ok[ok] &= rows[j[ok]] == target[ok]
            ok[ok] &= session[target[ok]] == session[rows[ok]]
            if ok.any():
                cols = np.flatnonzero(ok)
                support[:, cols] = np.maximum(support[:, cols], factor * positive[:, j[cols]])
    return support


def temporal_scores(dense: np.ndarray, lexical: Optional[np.ndarray], rows: np.ndarray, timeline: Timeline,
                    params: TemporalParams = TemporalParams(), *, intent: Optional[np.ndarray] = None,
                    windows: Optional[Sequence[Sequence[tuple]]] = None) -> np.ndarray:
    """Leg scores ``(B, n)`` (float64) over the sorted corpus rows ``rows`` (n,): the formula of
    :mod:`fieldrank.temporal`.

    ``dense`` and ``lexical`` are ``(B, n)`` scores of those rows (``lexical`` may be None only
    when ``alpha == 0``); ``intent`` (B,) bool and ``windows`` (one list of day periods per query)
    switch on the two priors.
    """
    # C order: every row is then reduced (mean, std) by the same loop whatever B is.
    dense = np.ascontiguousarray(dense, dtype=np.float64)
    base = (1.0 - params.alpha) * _znorm(dense) if params.alpha < 1.0 else np.zeros_like(dense)
    if params.alpha > 0.0:
        if lexical is None:
            msg = "lexical scores are required when alpha > 0"
            raise ValueError(msg)
        base = base + params.alpha * _znorm(np.ascontiguousarray(lexical, dtype=np.float64))
    score = base
    if params.gamma > 0.0:
        score = score + params.gamma * neighbour_support(base, rows, timeline.session, params.radius, params.decay)
    if params.tau > 0.0 and intent is not None and timeline.cue is not None:
        score = score + params.tau * (np.asarray(intent, bool)[:, None] & timeline.cue[rows][None, :])
    if params.delta > 0.0 and windows is not None and timeline.time is not None:
        t = timeline.time[rows]
        for b, periods in enumerate(windows):
            if not periods:
                continue
            hit = np.zeros(rows.shape[0], dtype=bool)
            for start, end in periods:
                hit |= (t >= start - params.before_days * _DAY) & (t <= end + params.after_days * _DAY)
            score[b] += params.delta * hit
    return score


def temporal_batch(E: np.ndarray, Q: np.ndarray, lexical: Optional[np.ndarray], k: int = 50, *,
                   timeline: Timeline, questions: Optional[Sequence[str]] = None,
                   params: TemporalParams = TemporalParams(), subset: Optional[np.ndarray] = None,
                   n_threads: int = 0) -> Ranking:
    """numpy twin of :func:`fieldrank.temporal.temporal_batch` (same checks, float64 einsum)."""
    E, Q, lexical, rows, _ = check_leg_call(E, Q, lexical, k, timeline, questions, params, subset, n_threads)
    if rows is None:
        rows = np.arange(E.shape[0], dtype=np.int64)
    if lexical is not None:
        lexical = lexical[:, rows]
        if not np.isfinite(lexical).all():
            msg = "lexical must be finite"
            raise ValueError(msg)
    _v.check_unit_rows(E, "E", rows)
    if Q.shape[0] == 0:
        empty = np.empty((0, min(k, rows.shape[0])))
        return Ranking(empty.astype(np.int64), empty)
    # float64 and einsum's own loop (no BLAS): each score is summed in the same order whatever
    # the batch size, so a batch equals its queries one by one exactly.
    dense = np.einsum("bd,nd->bn", Q.astype(np.float64), E[rows].astype(np.float64), optimize=False)
    intent, windows = question_features(questions, timeline, rows)
    scores = temporal_scores(dense, lexical, rows, timeline, params, intent=intent, windows=windows)
    order = np.argsort(-scores, axis=1, kind="stable")[:, : min(k, rows.shape[0])]
    return Ranking(rows[order], np.take_along_axis(scores, order, 1))


def temporal(E: np.ndarray, q: np.ndarray, lexical: Optional[np.ndarray], k: int = 50, *, timeline: Timeline,
             question: Optional[str] = None, params: TemporalParams = TemporalParams(),
             subset: Optional[np.ndarray] = None) -> Ranking:
    """numpy twin of :func:`fieldrank.temporal.temporal`."""
    q = _v.float32_array(q, "q", 1)
    lex = None if lexical is None else np.asarray(lexical)[None, :]
    res = temporal_batch(E, q[None, :], lex, k, timeline=timeline,
                         questions=None if question is None else [question], params=params, subset=subset)
    return Ranking(res.ids[0], res.scores[0])


def sparse_scores_batch(index, query_indptr, query_indices, query_data, *, doc_begin: int = 0,
                        doc_end: Optional[int] = None, n_threads: int = 0) -> np.ndarray:
    """numpy twin of :func:`fieldrank.sparse.sparse_scores_batch` (same checks).

    Unlike the other twins it adds in float32, in the kernel's order (each query's terms as given,
    a term's documents in stored order, one rounding per product and per addition), so that it
    equals the native scores bit for bit rather than to a tolerance: the order is the spec.
    """
    from .sparse import check_scores_call

    index, q_ptr, q_terms, q_weights, begin, end, _ = check_scores_call(
        index, query_indptr, query_indices, query_data, doc_begin, doc_end, n_threads)
    out = np.zeros((q_ptr.shape[0] - 1, end - begin), dtype=np.float32)
    for b in range(out.shape[0]):
        row = out[b]
        for j in range(int(q_ptr[b]), int(q_ptr[b + 1])):
            term = int(q_terms[j])
            lo, hi = int(index.indptr[term]), int(index.indptr[term + 1])
            docs = index.indices[lo:hi].astype(np.int64)
            inside = (docs >= begin) & (docs < end)
            # np.add.at adds one posting at a time, in order: a document listed twice is added twice.
            np.add.at(row, docs[inside] - begin, q_weights[j] * index.data[lo:hi][inside])
    return out

