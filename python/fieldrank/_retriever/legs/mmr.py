"""The MMR leg (docs/spec.md §4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ... import _kernels
from .base import DEFAULT_WEIGHT, register_leg
from .rerank import PooledLeg

__all__ = ["MMRLeg"]

_D = _kernels.DEFAULTS


@register_leg
@dataclass(frozen=True)
class MMRLeg(PooledLeg):
    """MMR leg (docs/spec.md §4) over the prefilter top-``p``; ``mu`` defaults to ``DEFAULTS["mu"]``."""

    kind: ClassVar[str] = "mmr"
    depth: int = _D["mmr_k"]
    weight: float = DEFAULT_WEIGHT
    p: int = _D["p"]
    mu: float = _D["mu"]
    name: str = "mmr"
