"""The query of one recall: the cue, its gates and the quotas of its mode, checked once at the boundary.

:func:`build_query` turns the arguments :meth:`MemoryStore.recall` and :meth:`MemoryStore.why_not`
share into a :class:`Cue` (what the recall knows about its cue) and a
:class:`~._gates.GateSpec` (the hard gates); :class:`ModeQuotas` holds each mode's quotas.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Mapping, Optional

import numpy as np

from ._gates import GateSpec
from ._params import MemoryParams
from ._schema import (
    KEYWORD_MODE,
    MODE_GENERATORS,
    check_importance,
    check_labels,
    check_tenant,
    check_text,
    check_tier_mask,
    check_timestamp,
    check_valence,
    check_valence_window,
    cue_vector,
)

__all__ = ["Cue", "ModeQuotas", "build_query"]


@dataclass(frozen=True)
class Cue:
    """Everything a recall knows about its cue."""

    text: Optional[str]
    vector: Optional[np.ndarray]  # None only for a keyword recall on text alone
    tags: frozenset[str]
    entities: frozenset[str]
    valence: Optional[float]
    time: float
    at_time: float
    #: What one recall derives from the cue and reads twice (the protected tier's z-scores: the
    #: importance generator orders the tier by them, the reserved slots gate on them); a Cue lives
    #: for one recall, over one snapshot.
    derived: dict = field(default_factory=dict, compare=False, repr=False)
    #: No ``cue_entities`` were given: the entities the cue text names are used
    #: (:func:`mentioned_entities`, when ``MemoryParams.infer_cue_entities``).
    infer_entities: bool = False


class ModeQuotas:
    """Each mode's generator quotas, read-only and shared by its recalls (the params never change)."""

    def __init__(self, params: MemoryParams) -> None:
        self._params = params
        self._by_mode: dict[str, Mapping] = {}

    def of(self, mode: str) -> Mapping:
        quotas = self._by_mode.get(mode)
        if quotas is None:
            quotas = self._by_mode[mode] = MappingProxyType(
                {g: self._params.quota(g) for g in MODE_GENERATORS[mode]})
        return quotas


def _vector(cue_text: Optional[str], value: Optional[np.ndarray], mode: str, dim: int,
            embed: Optional[Callable[[str], np.ndarray]]) -> Optional[np.ndarray]:
    """The cue's vector: given, else embedded from its text (with an embedder), else None (keyword mode)."""
    if value is None and cue_text is not None and embed is not None:
        value = embed(cue_text)
    if value is not None:
        return cue_vector(value, dim)
    if mode != KEYWORD_MODE:
        msg = (f"cue_vector is required in mode {mode!r} (the dense generator and every candidate's "
               f"cosine read it); pass it, build the store with an embedder, or use "
               f"mode={KEYWORD_MODE!r} to recall on cue_text alone")
        raise ValueError(msg)
    if not cue_text:
        msg = f"a mode={KEYWORD_MODE!r} recall without cue_vector needs a non-empty cue_text"
        raise ValueError(msg)
    return None


def build_query(
    cue_text: Optional[str],
    cue_vector_value: Optional[np.ndarray],
    *,
    dim: int,
    embed: Optional[Callable[[str], np.ndarray]],
    mode: str,
    tenant: str,
    required_tags: Optional[Iterable[str]] = None,
    tier_mask: Optional[Iterable[str]] = None,
    valence_window: Optional[tuple[float, float]] = None,
    min_importance: Optional[float] = None,
    at_time: Optional[float] = None,
    cue_tags: Optional[Iterable[str]] = None,
    cue_entities: Optional[Iterable[str]] = None,
    cue_valence: Optional[float] = None,
    cue_time: Optional[float] = None,
) -> tuple[Cue, GateSpec]:
    """The checked cue and gates of a recall (arguments as :meth:`MemoryStore.recall` documents them).

    ``embed(text)`` embeds a cue text given without a vector (None: no embedder); ``mode`` has
    been checked. Every argument is checked here, the one boundary of recall and why_not.
    """
    if cue_text is not None:
        check_text(cue_text, "cue_text")
    vector = _vector(cue_text, cue_vector_value, mode, dim, embed)
    at = time.time() if at_time is None else check_timestamp(at_time, "at_time")
    required = frozenset(check_labels(required_tags, "required_tags"))
    gates = GateSpec(
        tenant=check_tenant(tenant),
        tier_mask=check_tier_mask(tier_mask),
        required_tags=required,
        valence_window=check_valence_window(valence_window),
        min_importance=None if min_importance is None else check_importance(min_importance, "min_importance"),
    )
    cue = Cue(
        text=cue_text,
        vector=vector,
        tags=frozenset(check_labels(cue_tags, "cue_tags")) | required,
        entities=frozenset(check_labels(cue_entities, "cue_entities")),
        infer_entities=cue_entities is None,
        valence=None if cue_valence is None else check_valence(cue_valence, "cue_valence"),
        time=at if cue_time is None else check_timestamp(cue_time, "cue_time"),
        at_time=at,
    )
    return cue, gates
