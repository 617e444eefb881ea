"""The CFS-R leg (docs/spec.md §2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ... import _kernels
from .base import DEFAULT_WEIGHT, register_leg
from .rerank import POOL_DENSE, PooledLeg

__all__ = ["CFSRLeg"]

_D = _kernels.DEFAULTS


@register_leg
@dataclass(frozen=True)
class CFSRLeg(PooledLeg):
    """CFS-R leg (docs/spec.md §2): non-negative ridge reconstruction of the query from ``p`` candidates.

    Parameters
    ----------
    depth : int, default DEFAULTS["cfsr_k"]
        Ids contributed (the write-ups' "CFS-R top-50").
    weight : float, default 1.0
        RRF weight (the locked stack uses 3, see :data:`fieldrank.config.PRESET_WEIGHTS`).
    p : int, default DEFAULTS["p"]
        Dense pool size, >= ``depth``.
    w, lam, iters, tol, fista
        Operator parameters of :func:`fieldrank.cfsr`, defaults from ``DEFAULTS``.
    pool : {"dense", "union"}, default "dense"
        ``"union"`` adds the BM25 top-``union_p`` to the dense top-``p``.
    union_p : int or None, default None
        BM25 candidates of a union pool; None means ``p``. Only with ``pool="union"``.
    name : str, default "cfsr"
    """

    kind: ClassVar[str] = "cfsr"
    has_coef: ClassVar[bool] = True
    depth: int = _D["cfsr_k"]
    weight: float = DEFAULT_WEIGHT
    p: int = _D["p"]
    w: float = _D["w"]
    lam: float = _D["lam"]
    iters: int = _D["iters"]
    tol: float = _D["tol"]
    fista: bool = False
    pool: str = POOL_DENSE
    union_p: Optional[int] = None
    name: str = "cfsr"
