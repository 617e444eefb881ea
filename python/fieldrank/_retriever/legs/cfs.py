"""The CFS leg (docs/spec.md §3)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ... import _kernels
from .base import DEFAULT_WEIGHT, register_leg
from .rerank import POOL_DENSE, PooledLeg

__all__ = ["CFSLeg"]

_D = _kernels.DEFAULTS


@register_leg
@dataclass(frozen=True)
class CFSLeg(PooledLeg):
    """CFS leg (docs/spec.md §3): greedy coverage-field picks from ``p`` candidates ("CFS-long": 50).

    ``sigma``, ``beta``, ``eps`` default to ``DEFAULTS``; ``pool``/``union_p`` as in :class:`CFSRLeg`.
    """

    kind: ClassVar[str] = "cfs"
    depth: int = _D["cfs_k"]
    weight: float = DEFAULT_WEIGHT
    p: int = _D["p"]
    sigma: float = _D["sigma"]
    beta: float = _D["beta"]
    eps: float = _D["eps"]
    pool: str = POOL_DENSE
    union_p: Optional[int] = None
    name: str = "cfs"
