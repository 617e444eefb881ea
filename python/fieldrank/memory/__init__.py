"""Long-lived agent memory with multi-signal fused recall (SPEC §8).

:class:`MemoryStore` keeps memories (text, embedding, importance, strengths, valence, tier,
tags, entities) per tenant, in memory or in a SQLite file, and recalls them without the
*truncation trap*: every durable memory is scanned with the cue and reaches fused scoring (a
share of k is reserved for the ones the cue is unusually close to), the relevance core is the ``default``
preset's scorer, the store's own signals are bounded additive terms on it, and every hit carries
its provenance. See ``docs/memory.md``, "Protection and ranking".

The public API is ``__all__`` below; the submodules (``_store``, ``_schema``, ``_params``, ...)
are private and may change.
"""

from __future__ import annotations

from .._api import public_dir
from ._params import DEFAULT_PARAMS, RERANK_OPERATORS, MemoryParams
from ._provenance import FACTOR_NAMES, Hit, RecallResult, ScoreFactors, WhyNot
from ._schema import (
    DEFAULT_IMPORTANCE,
    DEFAULT_MODE,
    DEFAULT_TENANT,
    GATES,
    GENERATORS,
    MODE_GENERATORS,
    MODES,
    TIERS,
    WHY_NOT_REASONS,
    Memory,
)
from ._persistence import DuplicateKeyError, StoreFormatError, StoreIOError
from ._store import MemoryStore, ReinforcementWarning

__all__ = [
    "DEFAULT_IMPORTANCE",
    "DEFAULT_MODE",
    "DEFAULT_PARAMS",
    "DEFAULT_TENANT",
    "FACTOR_NAMES",
    "GATES",
    "GENERATORS",
    "MODES",
    "MODE_GENERATORS",
    "RERANK_OPERATORS",
    "TIERS",
    "WHY_NOT_REASONS",
    "DuplicateKeyError",
    "Hit",
    "Memory",
    "MemoryParams",
    "MemoryStore",
    "RecallResult",
    "ReinforcementWarning",
    "ScoreFactors",
    "StoreFormatError",
    "StoreIOError",
    "WhyNot",
]

__dir__ = public_dir(__all__)
