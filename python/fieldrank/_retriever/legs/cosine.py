"""The cosine leg (docs/spec.md §1): the prefilter top-``depth``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ... import _kernels
from ..context import LegOutput, QueryContext
from .base import DEFAULT_WEIGHT, Leg, register_leg


__all__ = ["CosineLeg"]


@register_leg
@dataclass(frozen=True)
class CosineLeg(Leg):
    """Cosine prefilter leg: the ``depth`` rows most similar to the query vector.

    Parameters
    ----------
    depth : int, default DEFAULTS["k"]
        Ids this leg contributes to the fusion, >= 1.
    weight : float, default 1.0
        RRF weight, finite and >= 0.
    name : str, default "cosine"
        Label of the leg in results (unique within a configuration).
    """

    kind: ClassVar[str] = "cosine"
    depth: int = _kernels.DEFAULTS["k"]
    weight: float = DEFAULT_WEIGHT
    name: str = "cosine"

    def dense_depth(self, batched: bool) -> int:
        return self.depth

    def run(self, ctx: QueryContext) -> list[LegOutput]:
        return ctx.dense_tops(self.depth)
