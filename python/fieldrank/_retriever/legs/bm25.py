"""The BM25 leg (docs/spec.md §7): the lexical top-``depth``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ... import _kernels
from ..context import LegOutput, QueryContext
from .base import DEFAULT_WEIGHT, Leg, register_leg


__all__ = ["BM25Leg"]


@register_leg
@dataclass(frozen=True)
class BM25Leg(Leg):
    """Lexical leg: BM25 top-``depth`` (tokenizer and k1/b live in ``RetrieverConfig.bm25``).

    Only documents sharing a term with the query are ranked, so the leg may return fewer
    than ``depth`` ids (see :mod:`fieldrank.bm25`).
    """

    kind: ClassVar[str] = "bm25"
    needs_vector: ClassVar[bool] = False
    needs_text: ClassVar[bool] = True
    depth: int = _kernels.DEFAULTS["k"]
    weight: float = DEFAULT_WEIGHT
    name: str = "bm25"

    def lexical_depth(self) -> int:
        return self.depth

    def coverage(self) -> int:
        return 0  # BM25 returns only documents sharing a term with the query: it guarantees none

    def run(self, ctx: QueryContext) -> list[LegOutput]:
        return ctx.lexical_tops(self.depth)
