"""The leg kinds: the :class:`Leg` base class, the registry, and one module per built-in kind.

Importing this package registers the built-in kinds, in docs/spec.md's order (§1–§7). A new kind
is one class in its own module, registered by ``@register_leg`` (docs/design.md, "Adding a leg
kind").
"""

from __future__ import annotations

from .base import DEFAULT_WEIGHT, LEG_REGISTRY, Leg, LegOutput, register_leg
from .cosine import CosineLeg
from .bm25 import BM25Leg
from .cfsr import CFSRLeg
from .cfs import CFSLeg
from .mmr import MMRLeg
from .ring import RingLeg
from .temporal import TemporalLeg
from .rerank import POOL_DENSE, POOL_MODES, POOL_UNION

__all__ = ["DEFAULT_WEIGHT", "LEG_REGISTRY", "POOL_DENSE", "POOL_MODES", "POOL_UNION", "BM25Leg", "CFSLeg",
           "CFSRLeg", "CosineLeg", "Leg", "LegOutput", "MMRLeg", "RingLeg", "TemporalLeg", "register_leg"]

#: The built-in leg kinds, in the order of docs/spec.md §1–§7.
BUILTIN_KINDS: tuple[str, ...] = tuple(LEG_REGISTRY)
