"""The fused score (SPEC §8 step 3): the ``default`` preset's relevance plus bounded boosts.

For a candidate T and a cue C at time ``at_time``::

    s(T|C) = rel(T|C) + (I − 1) + (tag − 1) + (G − 1) + (E − 1) + (V − 1)

==========  ===================================================================================
term        definition (parameters in :class:`~fieldrank.memory.MemoryParams`)
==========  ===================================================================================
rel         the relevance core: :func:`fieldrank.temporal.temporal_batch` with the ``default``
            preset's parameters over the recall's eligible rows (z-scored BM25 and cosine
            blended, same-session neighbour support, time-intent and session-date priors),
            i.e. the score the ``default`` HybridRetriever ranks by; z units of the tenant's rows.
            A memory with no same-session neighbour is its own (``isolated_self_support``:
            ``s + γ · max(s, 0)``, see :mod:`._generators`)
I           ``1 + B · In · D'``: In = ``clip(importance, importance_floor, 1)``; D' = 1 for a
            *durable* memory (importance >= ``durable_importance`` or tier ``core``: a rule never
            recalled for a year is still a rule), else the retrieval strength D
D           ``clip(2^(−Δ / (h · S)), 0.10, 1.0)``, Δ = days since last access, h =
            ``retrieval_half_life_days``: decays with disuse, slower when S is high
S, Sb       storage strength S >= 1 (never decreases); ``Sb = 2 − 1/S`` (reported)
tag         ``1 + τ · |tags(C) ∩ tags(T)| / |tags(C)|`` (1 without cue tags)
G           ``1 + γ · a / (1 + a)``, a = graph activation (see :mod:`._generators`)
E           ``1 + ε · |E(C) ∩ E(T)| / |E(C)|`` (the share of the cue's entities the memory is
            about), or ``1 − ε`` when the memory is about entities and none is the cue's (a
            lexical twin about another entity: "Dan's number" for "What is Dana's number?"); 1
            without cue entities or without memory entities
V           ``clip(1 − valence_weight · |v_T − v_C| / 2, 0.01, 1.0)`` when the cue has a
            valence, else 1 (so V − 1 is a bounded penalty)
sim         ``max(cos(q, T), sim_floor)``, reported (the cosine is inside ``rel``)
==========  ===================================================================================

The boosts are additive and bounded (together < B + τ + γ + ε), so a memory whose relevance leads by
more than that can never be buried by another memory's importance, tags or graph activation; a
product with floors would let the factors of unrelated memories multiply past clear relevance.

Recall dynamics (applied to every *returned* memory when ``reinforce=True``): with D the
retrieval strength just before the recall, ``S ← S + storage_gain · (1 − D)`` (a hard recall
strengthens storage more: the spacing effect), ``last_access ← at_time`` (so D returns to 1),
``recall_count += 1``; for every pair returned together, ``w ← w + hebbian_rate · (1 − w)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Optional

import numpy as np

from .. import _kernels as kernels
from ._columns import Snapshot
from ._query import Cue
from ._params import (
    GRAPH_BOOST_MIN,
    RETRIEVAL_STRENGTH_MAX,
    RETRIEVAL_STRENGTH_MIN,
    STORAGE_STRENGTH_MIN,
    VALENCE_ALIGNMENT_MAX,
    VALENCE_ALIGNMENT_MIN,
    MemoryParams,
)
from ._schema import SECONDS_PER_DAY
from ._similarity import CORE_TIER_CODE, candidate_cosine, durable_rows

__all__ = ["FactorArrays", "fuse", "fuse_reference", "hit_cosine", "native_fusion_params",
           "retrieval_strength", "storage_bounded", "with_score"]



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
    entity_containment: np.ndarray
    entity: np.ndarray
    relevance: np.ndarray
    durable: np.ndarray
    score: np.ndarray
    #: The native kernel's (FUSED_FACTORS, m) matrix whose rows the float columns above are (None
    #: from the numpy reference); :func:`with_score` keeps its score row current.
    matrix: Optional[np.ndarray] = field(default=None, compare=False, repr=False)
    #: True when ``cosine`` and ``sim`` are NaN placeholders: the fused score does not read the
    #: cosine, so it is taken for the returned hits only (:func:`hit_cosine`).
    cosine_pending: bool = False


#: FactorArrays' float columns in the row order of the native factor matrix: the names
#: memory_fusion.hpp lists next to its FusedFactor rows (``kernels.FUSED_FACTOR_NAMES``).
MATRIX_COLUMNS: tuple[str, ...] = tuple(kernels.FUSED_FACTOR_NAMES)
_MATRIX_ROW = {name: i for i, name in enumerate(MATRIX_COLUMNS)}


def with_score(factors: FactorArrays, score: np.ndarray) -> FactorArrays:
    """``factors`` with another fused score (a cap applied), its matrix (if any) changed alike."""
    if factors.matrix is None:
        return replace(factors, score=score)
    matrix = factors.matrix.copy()
    matrix[_MATRIX_ROW["score"]] = score
    return _factor_arrays(factors.rows, matrix, factors.durable, factors.cosine_pending)


def _factor_arrays(rows: np.ndarray, matrix: np.ndarray, durable: np.ndarray, cosine_pending: bool) -> FactorArrays:
    """FactorArrays over the rows of the native factor matrix, without the frozen dataclass's
    per-field ``object.__setattr__`` (20 fields, once per recall)."""
    instance = object.__new__(FactorArrays)
    values = dict(zip(MATRIX_COLUMNS, matrix))
    values.update(rows=rows, durable=durable, matrix=matrix, cosine_pending=cosine_pending)
    instance.__dict__.update(values)
    return instance


def hit_cosine(snapshot: Snapshot, cue: Cue, rows: np.ndarray, params: MemoryParams) -> tuple[np.ndarray, np.ndarray]:
    """(cosine, sim) of a few candidate ``rows`` (the returned hits) for a vector cue: the values
    :func:`fuse_reference` gives them (:func:`candidate_cosine` is row by row: the same bits for a
    subset of the candidates as for all of them)."""
    cosine = candidate_cosine(snapshot, cue, rows)
    return cosine, np.maximum(cosine, params.sim_floor)


def native_fusion_params(params: MemoryParams) -> kernels.NativeFusionParams:
    """The fused score's constants for the native kernel (:func:`fuse`): MemoryParams' fields and
    the spec's floors. The store builds them once, with its params."""
    return kernels.NativeFusionParams(
        sim_floor=params.sim_floor, importance_floor=params.importance_floor,
        durable_importance=params.durable_importance, importance_boost=params.importance_boost,
        tag_boost=params.tag_boost, graph_boost=params.graph_boost, graph_boost_min=GRAPH_BOOST_MIN,
        entity_boost=params.entity_boost, valence_weight=params.valence_weight, valence_min=VALENCE_ALIGNMENT_MIN,
        valence_max=VALENCE_ALIGNMENT_MAX, strength_min=RETRIEVAL_STRENGTH_MIN, strength_max=RETRIEVAL_STRENGTH_MAX,
        storage_min=STORAGE_STRENGTH_MIN, core_tier=CORE_TIER_CODE)


def label_containment(labels: list, rows: np.ndarray, cue_labels: frozenset[str]) -> np.ndarray:
    """|cue ∩ labels(T)| / |cue| per row (a loop over the small candidate set)."""
    if not cue_labels or rows.size == 0:
        return np.zeros(rows.size)
    shared = np.fromiter((len(cue_labels.intersection(labels[r])) for r in rows.tolist()), dtype=np.float64,
                         count=rows.size)
    return shared / len(cue_labels)


def tag_containment(snapshot: Snapshot, rows: np.ndarray, cue_tags: frozenset[str]) -> np.ndarray:
    """|cue tags ∩ tags(T)| / |cue tags| per row."""
    return label_containment(snapshot.generation.tags, rows, cue_tags)


def lexical_similarity(snapshot: Snapshot, rows: np.ndarray, text: Optional[str]) -> np.ndarray:
    """For a keyword recall without a cue vector: each candidate's BM25 score relative to the best
    candidate's (in [0, 1]; 0 without a shared term). It stands in for the cosine in ``sim``."""
    if rows.size == 0 or not text:
        return np.zeros(rows.size)
    generation = snapshot.generation
    candidates = np.zeros(snapshot.embeddings.shape[0], dtype=bool)
    candidates[rows] = True
    scores = generation.lexical.scores_of_rows(generation.texts, text, candidates)[rows].astype(np.float64)
    best = float(scores.max())
    return scores / best if best > 0 else scores


def _entity_inputs(snapshot: Snapshot, rows: np.ndarray, cue: Cue) -> tuple[np.ndarray, np.ndarray]:
    """For a cue with entities: each candidate's share of them, and whether it is about any entity."""
    labels = snapshot.generation.entities
    entity_share = label_containment(labels, rows, cue.entities)
    return entity_share, snapshot.has_entities[rows]


def fuse(snapshot: Snapshot, rows: np.ndarray, cue: Cue, activation: np.ndarray, relevance_by_row: np.ndarray,
         params: MemoryParams, native_params: Optional[kernels.NativeFusionParams] = None) -> FactorArrays:
    """Every term and the fused score of the candidate ``rows``; ``relevance_by_row`` holds every row's.

    One native pass over the candidates (``fieldrank.kernels.memory_fuse``) after exp2, which stays in
    numpy (numpy's exp2, whose last bit differs from libm's on some CPUs). With a cue vector the
    cosine (provenance only: the score does not read it) is left for the returned hits
    (``cosine_pending``, :func:`hit_cosine`); a keyword recall's stand-in, relative to the best
    candidate, is taken here. Equal, bit for bit, to :func:`fuse_reference`, the numpy formulation
    it is tested against. ``native_params``: :func:`native_fusion_params` of ``params``, held by
    the caller (the store builds them once); None builds them for this call.
    """
    if native_params is None:
        native_params = native_fusion_params(params)
    cosine = None if cue.vector is not None else lexical_similarity(snapshot, rows, cue.text)
    exponent = kernels.memory_decay_exponents(rows, snapshot.last_access, snapshot.storage_strength, cue.at_time,
                                            SECONDS_PER_DAY, params.retrieval_half_life_days, STORAGE_STRENGTH_MIN)
    decay = np.exp2(exponent)
    tags = tag_containment(snapshot, rows, cue.tags) if cue.tags else None
    entity_share, other_entity = _entity_inputs(snapshot, rows, cue) if cue.entities else (None, None)
    matrix, durable = kernels.memory_fuse(
        rows, relevance_by_row, snapshot.importance, snapshot.storage_strength, snapshot.tier_codes, snapshot.valence,
        decay, np.ascontiguousarray(activation, dtype=np.float64), native_params, cosine=cosine,
        tag_containment=tags, entity_containment=entity_share, other_entity=other_entity,
        cue_valence=cue.valence)
    return _factor_arrays(rows, matrix, durable, cosine is None)


def fuse_reference(snapshot: Snapshot, rows: np.ndarray, cue: Cue, activation: np.ndarray,
                   relevance_by_row: np.ndarray, params: MemoryParams) -> FactorArrays:
    """Every term and the fused score of the candidate ``rows`` (vectorised numpy): the reference of :func:`fuse`."""
    relevance = relevance_by_row[rows]
    if cue.vector is not None:
        cosine = candidate_cosine(snapshot, cue, rows)
    else:
        cosine = lexical_similarity(snapshot, rows, cue.text)
    sim = np.maximum(cosine, params.sim_floor)
    importance_norm = np.clip(snapshot.importance[rows], params.importance_floor, 1.0)
    storage = np.maximum(snapshot.storage_strength[rows], STORAGE_STRENGTH_MIN)
    strength = retrieval_strength(snapshot.last_access[rows], storage, cue.at_time, params)
    bounded = storage_bounded(storage)
    durable = durable_rows(snapshot, rows, params)
    importance_term = 1.0 + params.importance_boost * importance_norm * np.where(durable, 1.0, strength)
    if cue.valence is None:
        valence = np.ones(rows.size)
    else:
        distance = np.abs(snapshot.valence[rows] - cue.valence)
        valence = np.clip(1.0 - params.valence_weight * distance / 2.0, VALENCE_ALIGNMENT_MIN, VALENCE_ALIGNMENT_MAX)
    containment = tag_containment(snapshot, rows, cue.tags)
    tag_term = 1.0 + params.tag_boost * containment
    graph = np.maximum(1.0 + params.graph_boost * activation / (1.0 + activation), GRAPH_BOOST_MIN)
    entity_share = label_containment(snapshot.generation.entities, rows, cue.entities)
    entity = 1.0 + params.entity_boost * entity_share
    if cue.entities:
        other_entity = snapshot.has_entities[rows]
        entity[other_entity & (entity_share == 0)] = 1.0 - params.entity_boost
    relevance = np.asarray(relevance, dtype=np.float64)
    score = relevance + (importance_term - 1.0) + (tag_term - 1.0) + (graph - 1.0) + (entity - 1.0) + (valence - 1.0)
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
        entity_containment=entity_share,
        entity=entity,
        relevance=relevance,
        durable=durable,
        score=score,
    )
