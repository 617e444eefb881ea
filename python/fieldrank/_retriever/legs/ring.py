"""The Ring leg (docs/spec.md §5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Optional

from ... import _kernels
from .base import DEFAULT_WEIGHT, register_leg
from .rerank import RerankLeg

__all__ = ["RingLeg"]

_D = _kernels.DEFAULTS


@register_leg
@dataclass(frozen=True)
class RingLeg(RerankLeg):
    """Ring leg (docs/spec.md §5): survival laps over the prefilter top-(``ring_pool_factor`` x ``depth``)."""

    kind: ClassVar[str] = "ring"
    depth: int = _D["ring_k"]
    weight: float = DEFAULT_WEIGHT
    alpha: float = _D["alpha"]
    laps: int = _D["laps"]
    seed: int = _D["seed"]
    ablation: bool = False
    name: str = "ring"

    @property
    def pool_depth(self) -> int:
        """Size of the prefilter pool the operator reranks."""
        return self.depth * _D["ring_pool_factor"]

    def batch_pool(self) -> Optional[int]:
        return None  # ring_batch derives its pool from k

    def coverage(self) -> int:
        return self.depth
