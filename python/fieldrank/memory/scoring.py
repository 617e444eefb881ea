"""The fused score (SPEC §8 step 3) and the strength dynamics of recall.

For a candidate T and a cue C at time ``at_time``::

    s(T|C) = sim · (1 + B · In · D · Sb) · V · (1 + τ · tag) · G

==========  ===================================================================================
factor      definition (parameters in :class:`~fieldrank.memory.MemoryParams`)
==========  ===================================================================================
sim         ``max(cos(q, T), sim_floor)``: the cosine is always computed from the two vectors,
            whichever generator admitted T (a BM25-only or importance-only candidate gets its
            true similarity); the small positive floor keeps a candidate with cos <= 0 ordered
            by its other factors instead of erasing it
In          ``clip(importance, importance_floor, 1)``, in (0, 1]
D           retrieval strength ``clip(2^(−Δ / (h · S)), 0.10, 1.0)``, Δ = days since last
            access, h = ``retrieval_half_life_days``: decays with disuse, slower when S is high,
            back to 1 when recalled
S, Sb       storage strength S >= 1 (never decreases); bounded form ``Sb = 2 − 1/S`` in [1, 2)
V           ``clip(1 − valence_weight · |v_T − v_C| / 2, 0.01, 1.0)`` when the cue has a
            valence, else 1
tag         cue-tag containment ``|tags(C) ∩ tags(T)| / |tags(C)|`` in [0, 1] (0 without cue tags)
G           ``1 + γ · a / (1 + a)`` >= 1, a = graph activation (see :mod:`.generators`)
==========  ===================================================================================

Recall dynamics (applied to every *returned* memory when ``reinforce=True``): with D the
retrieval strength just before the recall, ``S ← S + storage_gain · (1 − D)`` (a hard recall
strengthens storage more: the spacing effect), ``last_access ← at_time`` (so D returns to 1),
``recall_count += 1``; for every pair returned together, ``w ← w + hebbian_rate · (1 − w)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .columns import Snapshot
from .generators import Cue
from .params import (
    GRAPH_BOOST_MIN,
    RETRIEVAL_STRENGTH_MAX,
    RETRIEVAL_STRENGTH_MIN,
    STORAGE_STRENGTH_MIN,
    VALENCE_ALIGNMENT_MAX,
    VALENCE_ALIGNMENT_MIN,
    MemoryParams,
)
from .schema import SECONDS_PER_DAY

__all__ = ["FactorArrays", "fuse", "retrieval_strength", "storage_bounded"]


def retrieval_strength(
    last_access: np.ndarray, storage_strength: np.ndarray, at_time: float, params: MemoryParams
) -> np.ndarray:
    """D = clip(2^(−Δ/(h·S)), 0.10, 1.0) with Δ the days since last access (never negative)."""
    # At the edges of the accepted ranges (at_time −1e308 against last_access 1e308, S = 1e308)
    # Δ or Δ/h overflows to inf, which is the right limit (D clipped to its floor); dividing by h
    # and then by S, instead of by h·S, keeps inf/inf = NaN out.
    with np.errstate(over="ignore"):
        idle_days = np.maximum(at_time - np.asarray(last_access, dtype=np.float64), 0.0) / SECONDS_PER_DAY
        strength = np.maximum(np.asarray(storage_strength, dtype=np.float64), STORAGE_STRENGTH_MIN)
        decay = np.exp2(-(idle_days / params.retrieval_half_life_days) / strength)
    return np.clip(decay, RETRIEVAL_STRENGTH_MIN, RETRIEVAL_STRENGTH_MAX)


def storage_bounded(storage_strength: np.ndarray) -> np.ndarray:
    """Sb = 2 − 1/S for S >= 1: 1 for a fresh memory, approaching 2 for a well-rehearsed one."""
    return 2.0 - 1.0 / np.maximum(np.asarray(storage_strength, dtype=np.float64), STORAGE_STRENGTH_MIN)


@dataclass(frozen=True)
class FactorArrays:
    """Every factor of the fused score, one float64 entry per candidate row."""

    rows: np.ndarray
    cosine: np.ndarray
    sim: np.ndarray
    importance_norm: np.ndarray
    retrieval_strength: np.ndarray
    storage_strength: np.ndarray
    storage_bounded: np.ndarray
    importance_term: np.ndarray
    valence: np.ndarray
    tag_containment: np.ndarray
    tag_term: np.ndarray
    graph_activation: np.ndarray
    graph: np.ndarray
    score: np.ndarray


def tag_containment(snapshot: Snapshot, rows: np.ndarray, cue_tags: frozenset[str]) -> np.ndarray:
    """|cue ∩ tags(T)| / |cue| per row (a loop over the small candidate set)."""
    if not cue_tags or rows.size == 0:
        return np.zeros(rows.size)
    tags = snapshot.generation.tags
    shared = np.fromiter((len(cue_tags.intersection(tags[r])) for r in rows.tolist()), dtype=np.float64,
                         count=rows.size)
    return shared / len(cue_tags)


def fuse(snapshot: Snapshot, rows: np.ndarray, cue: Cue, activation: np.ndarray, params: MemoryParams) -> FactorArrays:
    """Compute every factor and the fused score for the candidate ``rows`` (vectorised)."""
    cosine = (snapshot.embeddings[rows] @ cue.vector).astype(np.float64)
    sim = np.maximum(cosine, params.sim_floor)
    importance_norm = np.clip(snapshot.importance[rows], params.importance_floor, 1.0)
    storage = np.maximum(snapshot.storage_strength[rows], STORAGE_STRENGTH_MIN)
    strength = retrieval_strength(snapshot.last_access[rows], storage, cue.at_time, params)
    bounded = storage_bounded(storage)
    importance_term = 1.0 + params.importance_boost * importance_norm * strength * bounded
    if cue.valence is None:
        valence = np.ones(rows.size)
    else:
        distance = np.abs(snapshot.valence[rows] - cue.valence)
        valence = np.clip(1.0 - params.valence_weight * distance / 2.0, VALENCE_ALIGNMENT_MIN, VALENCE_ALIGNMENT_MAX)
    containment = tag_containment(snapshot, rows, cue.tags)
    tag_term = 1.0 + params.tag_boost * containment
    graph = np.maximum(1.0 + params.graph_boost * activation / (1.0 + activation), GRAPH_BOOST_MIN)
    score = sim * importance_term * valence * tag_term * graph
    return FactorArrays(
        rows=rows,
        cosine=cosine,
        sim=sim,
        importance_norm=importance_norm,
        retrieval_strength=strength,
        storage_strength=storage,
        storage_bounded=bounded,
        importance_term=importance_term,
        valence=valence,
        tag_containment=containment,
        tag_term=tag_term,
        graph_activation=activation,
        graph=graph,
        score=score,
    )
