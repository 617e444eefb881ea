"""The recall pipeline: candidates → factors → fusion → tier → hits, as one :class:`Trace`.

One recall of a :class:`~fieldrank.memory.MemoryStore`, step by step (:func:`run`):

1. **gates pushed down**: the rows of the cue's tenant that are live and pass every hard gate
   (:mod:`._gates`);
2. **relevance core**: the ``default`` preset's scorer over every eligible row
   (:func:`._generators.relevance_core`);
3. **candidates**: each generator of the mode admits up to its own quota from those rows,
   independently, and keeps the ordering it admitted by (:mod:`._generators`); the union, plus
   the replacement of every superseded candidate (:mod:`._signals._supersession`), re-gated;
4. **factors and fusion**: the fused score of every candidate, relevance plus bounded additive
   terms (:mod:`._scoring`), then the caps: memories about other entities below the best about
   the cue's (:mod:`._signals._entities`), superseded memories below their replacements; in
   ``rerank`` mode the fused union is reranked by CFS-R or CFS;
5. **tier**: a reserved share of ``k`` for the protected memories a cue-conditioned gate picks;
6. **hits** with provenance (:func:`hits`).

The :class:`Trace` holds everything those steps decided. :meth:`MemoryStore.recall` turns its top
``k`` into hits (:func:`recall_result`); :meth:`MemoryStore.why_not` runs the same :func:`run` and
explains from its trace (:func:`explain`): it ranks nothing itself, so the two never disagree, at
near-ties included.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from .. import _kernels as kernels
from ..operators import cfs_pool, cfsr_pool
from ._columns import EMPTY_ROWS, NO_MEMORY, Snapshot
from ._gates import Eligibility, GateSpec, eligible_rows, failed_gates, passes_union_gates
from ._generators import Admissions, Relevance, generate, relevance_core
from ._params import MemoryParams
from ._provenance import Hit, RecallResult, ScoreFactors, WhyNot, dominant_factor, weakest_factor
from ._query import Cue
from ._schema import MODE_GENERATORS, PROTECTING_MODES, SECONDS_PER_DAY
from ._scoring import MATRIX_COLUMNS, FactorArrays, fuse, hit_cosine
from ._signals._entities import mentioned_entities, rank_other_entities_below_the_cues
from ._signals._links import LinkIndex
from ._signals._supersession import rank_superseded_below_replacements, with_replacements
from ._similarity import by_cue_z

__all__ = ["Trace", "explain", "hits", "recall_result", "reserve_slots_reference", "run", "top_hits"]


#: The FactorArrays column of each ScoreFactors field (the same name, except two); the float64
#: columns in ScoreFactors' field order, and where its one bool field, ``durable``, goes among them.
_COLUMN_OF_FIELD = {"importance": "importance_term", "tag": "tag_term"}
_SCORE_FACTOR_FIELDS = tuple(f.name for f in fields(ScoreFactors))
_FACTOR_COLUMNS = tuple(_COLUMN_OF_FIELD.get(name, name) for name in _SCORE_FACTOR_FIELDS if name != "durable")
_DURABLE_FIELD = _SCORE_FACTOR_FIELDS.index("durable")
#: The rows of the native factor matrix (FactorArrays.matrix) in ScoreFactors' float field order.
_FACTOR_MATRIX_ROWS = np.asarray([MATRIX_COLUMNS.index(name) for name in _FACTOR_COLUMNS], dtype=np.int64)
_COSINE_COLUMN, _SIM_COLUMN = _FACTOR_COLUMNS.index("cosine"), _FACTOR_COLUMNS.index("sim")


def reserve_slots_reference(order: np.ndarray, chosen: np.ndarray, k: int) -> tuple[np.ndarray, frozenset]:
    """numpy formulation of ``kernels.memory_reserve_slots`` (its reference in the parity tests).

    Make sure every one of ``chosen`` (positions into the union) is in the top ``k`` of ``order``.

    ``chosen`` are the protected memories the cue-conditioned gate picked for the reserved share
    (at most ``protected_share · k`` of them, best first). Those already in the top ``k`` keep
    their place; each missing one takes the place of the lowest-ranked hit that is not chosen,
    and the displaced hits come next, in their order. Returns the new order and the positions that
    entered through a reserved slot. ``k`` >= 1 (the store reserves slots only then): ``k <= 0``
    is a ValueError here as in the native kernel.
    """
    if k <= 0:
        msg = f"k must be a positive integer, got {k}"
        raise ValueError(msg)
    if chosen.size == 0 or order.size <= k:
        return order, frozenset()
    top, rest = order[:k], order[k:]
    entering = chosen[~_position_table(top, order.size)[chosen]]
    if entering.size == 0:
        return order, frozenset()
    replaceable = np.flatnonzero(~_position_table(chosen, order.size)[top])
    leaving_at = replaceable[::-1][:entering.size]
    leaving = top[np.sort(leaving_at)]
    kept = np.delete(top, leaving_at)
    remaining = rest[~_position_table(entering, order.size)[rest]]
    return np.concatenate([kept, entering, leaving, remaining]), frozenset(entering.tolist())


def _position_table(positions: np.ndarray, size: int) -> np.ndarray:
    """bool ``(size,)``: True at ``positions``."""
    table = np.zeros(size, dtype=bool)
    table[positions] = True
    return table


def _held_in_sorted(sorted_rows: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """bool per one of ``rows``: held by ``sorted_rows`` (sorted, unique); ``np.isin`` without its sort."""
    if sorted_rows.size == 0:
        return np.zeros(rows.size, dtype=bool)
    position = np.minimum(np.searchsorted(sorted_rows, rows), sorted_rows.size - 1)
    return sorted_rows[position] == rows


def _frozen(cls: type, values: dict) -> Any:
    """An instance of the frozen dataclass ``cls`` with every field given in ``values``.

    What the generated ``__init__`` does (no defaults to fill, no ``__post_init__``), without its
    ``object.__setattr__`` per field: a recall builds two such objects per hit, about 30 fields.
    """
    instance = object.__new__(cls)
    instance.__dict__.update(values)
    return instance


@dataclass(frozen=True)
class Trace:
    """Everything one recall decided, in the order it decided it (see the module notes).

    ``order`` holds positions into ``factors.rows`` (the gated union, sorted rows), best first;
    ``ranking_scores`` the score per position of ``order`` (the fused score, or the reranker's);
    ``reserved`` the positions into ``factors.rows`` that hold a reserved protected slot.
    """

    snapshot: Snapshot
    cue: Cue
    gates: GateSpec
    mode: str
    k: int
    params: MemoryParams
    eligible: Eligibility
    core: Relevance
    admissions: Admissions
    factors: FactorArrays
    order: np.ndarray
    ranking_scores: np.ndarray
    rerank: bool
    reserved: frozenset


def _named_entities(snapshot: Snapshot, cue: Cue, params: MemoryParams) -> Cue:
    """The cue with the entities its text names, when it was given none (and the params infer them)."""
    if cue.infer_entities and params.infer_cue_entities and cue.text:
        named = mentioned_entities(snapshot, cue.text)
        if named:
            return replace(cue, entities=named, derived={})
    return cue


def _fused(snapshot: Snapshot, cue: Cue, gates: GateSpec, eligible: Eligibility, admissions: Admissions,
           core: Relevance, params: MemoryParams, fusion_params) -> FactorArrays:
    """Steps 3-4: the gated union (with replacements), its fused factors and the caps on them."""
    union = with_replacements(snapshot, admissions.union(), eligible.mask)
    union = union[passes_union_gates(snapshot, union, gates)]
    factors = fuse(snapshot, union, cue, admissions.activation_of(union), core.by_row, params, fusion_params)
    if cue.entities:
        factors = rank_other_entities_below_the_cues(snapshot, factors, params.other_entity_margin)
    return rank_superseded_below_replacements(snapshot, factors, params.superseded_margin)


def _ordered(snapshot: Snapshot, cue: Cue, factors: FactorArrays, rerank: bool,
             params: MemoryParams) -> tuple[np.ndarray, np.ndarray]:
    """The union's order (positions, best first; ties to the lower id) and each position's score."""
    union = factors.rows
    if not rerank:
        return np.lexsort((snapshot.ids[union], -factors.score)), factors.score
    pool_ids = np.arange(union.size, dtype=np.int64)
    vectors = np.ascontiguousarray(snapshot.embeddings[union])
    fused = factors.score.astype(np.float32)
    operator = cfsr_pool if params.rerank_operator == "cfsr" else cfs_pool
    ranking = operator(pool_ids, vectors, cue.vector, union.size, sims=fused)
    order = np.asarray(ranking.ids, dtype=np.int64)
    position_scores = np.empty(union.size)
    position_scores[order] = np.asarray(ranking.scores, dtype=np.float64)
    return order, position_scores


def _reserved_slots(snapshot: Snapshot, cue: Cue, admissions: Admissions, union: np.ndarray, order: np.ndarray,
                    mode: str, k: int, params: MemoryParams) -> tuple[np.ndarray, frozenset]:
    """Step 5: ``order`` with the reserved share of ``k`` given to the protected memories the gate picks."""
    slots = int(params.protected_share * k)
    if mode not in PROTECTING_MODES or slots <= 0:
        return order, frozenset()
    tier = admissions.by_generator.get("importance", EMPTY_ROWS)
    held = cue.derived.get("by_cue_z")  # the protected tier's order by z, kept by protected_tier
    if (held is not None and held[0] is snapshot and held[1].size == tier.size
            and _held_in_sorted(union, held[1]).all()):
        # the whole tier was admitted (tier is a permutation of its sorted rows) and every
        # row of it is a candidate: by_cue_z of those rows is the order already held
        tier_rows, z = held[2], held[3]
    else:
        tier_rows, z = by_cue_z(snapshot, cue, tier[_held_in_sorted(union, tier)])
    # the cue-conditioned gate: only a durable memory whose similarity to this cue is
    # unusual for it (memory-side z >= protected_min_z) may hold a reserved slot
    chosen = np.searchsorted(union, tier_rows[z >= params.protected_min_z][:slots])
    if not (chosen.size and order.size > k):
        return order, frozenset()
    order, entering = kernels.memory_reserve_slots(order, chosen, k)  # = reserve_slots_reference
    return order, frozenset(entering.tolist())


def run(snapshot: Snapshot, cue: Cue, gates: GateSpec, mode: str, k: int, params: MemoryParams,
        links: LinkIndex, fusion_params) -> Trace:
    """The one recall pipeline: a pure function of (snapshot, cue, gates, mode, k, params, links)."""
    cue = _named_entities(snapshot, cue, params)
    eligible = eligible_rows(snapshot, gates)
    generators = MODE_GENERATORS[mode]
    core = relevance_core(snapshot, cue, eligible, params,
                          params.quota("relevance") if "relevance" in generators else 0)
    admissions = generate(snapshot, cue, eligible, generators, params, links, core)
    factors = _fused(snapshot, cue, gates, eligible, admissions, core, params, fusion_params)
    rerank = mode == "rerank" and factors.rows.size > 0
    order, position_scores = _ordered(snapshot, cue, factors, rerank, params)
    order, reserved = _reserved_slots(snapshot, cue, admissions, factors.rows, order, mode, k, params)
    return _frozen(Trace, {"snapshot": snapshot, "cue": cue, "gates": gates, "mode": mode, "k": k, "params": params,
                           "eligible": eligible, "core": core, "admissions": admissions, "factors": factors,
                           "order": order, "ranking_scores": position_scores[order], "rerank": rerank,
                           "reserved": reserved})


def _factor_values(trace: Trace, at: np.ndarray, rows: np.ndarray) -> list[list]:
    """Each hit's float factors in ScoreFactors' field order (``durable`` inserted), gathered in one step."""
    f = trace.factors
    if f.matrix is not None:
        values = f.matrix[_FACTOR_MATRIX_ROWS[:, None], at].T.tolist()
    else:
        values = np.stack([getattr(f, name)[at] for name in _FACTOR_COLUMNS], axis=1).tolist()
    if f.cosine_pending:  # the cosine is provenance only: taken for these hits alone
        cosine, sim = hit_cosine(trace.snapshot, trace.cue, rows, trace.params)
        for j, (cos, s) in enumerate(zip(cosine.tolist(), sim.tolist())):
            values[j][_COSINE_COLUMN] = cos
            values[j][_SIM_COLUMN] = s
    for row_values, durable in zip(values, f.durable[at].tolist()):
        row_values.insert(_DURABLE_FIELD, durable)
    return values


def hits(trace: Trace, positions: Sequence[int]) -> tuple[Hit, ...]:
    """Hits with full provenance for the given positions of ``trace.order`` (the returned k, or one
    memory for :func:`explain`): the factor columns are gathered in one step for all of them."""
    snapshot = trace.snapshot
    where = np.asarray(positions, dtype=np.int64)
    at = trace.order[where]
    rows = trace.factors.rows[at]
    values = _factor_values(trace, at, rows)
    ranks = trace.admissions.ranks_for(rows.tolist())
    ranking_scores = trace.ranking_scores[where].tolist()
    ids, created = snapshot.ids[rows].tolist(), snapshot.created_at[rows].tolist()
    counts, replaced_by = snapshot.recall_count[rows].tolist(), snapshot.superseded_by[rows].tolist()
    tenant_codes = snapshot.tenant_codes[rows].tolist()
    texts, tenant_names = snapshot.generation.texts, snapshot.generation.tenant_names
    at_time, rerank, reserved = trace.cue.at_time, trace.rerank, trace.reserved
    out = []
    for j, (position, i, row) in enumerate(zip(positions, at.tolist(), rows.tolist())):
        by_field = dict(zip(_SCORE_FACTOR_FIELDS, values[j]))
        factors = _frozen(ScoreFactors, by_field)
        out.append(_frozen(Hit, {
            "id": ids[j],
            "rank": position + 1,
            "score": ranking_scores[j],
            "fused_score": factors.score,
            "rerank_score": ranking_scores[j] if rerank else None,
            "text": texts[row],
            "tenant": tenant_names[tenant_codes[j]],
            "factors": factors,
            "dominant_factor": dominant_factor(by_field),
            "weakest_factor": weakest_factor(by_field),
            # ranks_for fills each row's dict in GENERATORS order, one dict per row
            "admitted_by": MappingProxyType(ranks.get(row, {})),
            "age_days": max(at_time - created[j], 0.0) / SECONDS_PER_DAY,
            "recall_count": counts[j],
            "reserved_slot": i in reserved,
            "superseded_by": None if replaced_by[j] == NO_MEMORY else replaced_by[j],
        }))
    return tuple(out)


def top_hits(trace: Trace) -> list[Hit]:
    """The hits of the top ``k``, each memory once (defence in depth: an update mid-recall cannot
    duplicate one)."""
    seen: set[int] = set()
    unique = []
    for hit in hits(trace, range(min(trace.k, trace.order.size))):
        if hit.id not in seen:
            seen.add(hit.id)
            unique.append(hit)
    return unique


def recall_result(trace: Trace, returned: Sequence[Hit], quotas: Mapping, reinforced: bool) -> RecallResult:
    """The :class:`RecallResult` of ``trace`` with the hits it returns (after the confidence filter)."""
    snapshot, by_generator = trace.snapshot, trace.admissions.by_generator
    return RecallResult(
        hits=tuple(returned),
        mode=trace.mode,
        tenant=trace.gates.tenant,
        k=trace.k,
        admitted=MappingProxyType({g: snapshot.ids[by_generator.get(g, EMPTY_ROWS)]
                                   for g in MODE_GENERATORS[trace.mode]}),
        candidate_ids=np.sort(snapshot.ids[trace.factors.rows]),
        quotas=quotas,
        reinforced=reinforced,
    )


def _refused(trace: Trace, memory_id: int, forgotten: bool, quotas: Mapping) -> Optional[WhyNot]:
    """The answer for a memory the recall could not see (missing, forgotten, another tenant's,
    gated), or None when it passes every gate."""
    if forgotten:
        return WhyNot(memory_id, "tombstoned", f"memory {memory_id} was forgotten (tombstoned)", ("tombstone",),
                      quotas=quotas)
    row = trace.snapshot.row_of(memory_id)
    if row is None:
        return WhyNot(memory_id, "not_found", f"no memory with id {memory_id}", quotas=quotas)
    failed = failed_gates(trace.snapshot, row, trace.gates)
    if "tombstone" in failed:
        return WhyNot(memory_id, "tombstoned", f"memory {memory_id} was forgotten (tombstoned)", failed,
                      quotas=quotas)
    if "tenant" in failed:
        detail = f"memory {memory_id} belongs to another tenant than {trace.gates.tenant!r}"
        return WhyNot(memory_id, "other_tenant", detail, failed, quotas=quotas)
    if failed:
        detail = f"memory {memory_id} fails the gate(s) {', '.join(failed)}"
        return WhyNot(memory_id, "gated", detail, failed, quotas=quotas)
    return None


def _not_admitted(trace: Trace, memory_id: int, row: int, quotas: Mapping) -> WhyNot:
    """A memory no generator admitted: its rank in each generator's ordering, as the trace holds it."""
    generator_ranks = MappingProxyType({g: trace.admissions.rank_in(g, row, trace.eligible)
                                        for g in MODE_GENERATORS[trace.mode]})
    described = ", ".join(
        f"{g}: {'cannot admit it' if r is None else f'rank {r} > quota {quotas[g]}'}"
        for g, r in generator_ranks.items()
    )
    detail = f"memory {memory_id} was not admitted by any generator within its quota ({described})"
    return WhyNot(memory_id, "not_admitted", detail, generator_ranks=generator_ranks, quotas=quotas)


def explain(trace: Trace, memory_id: int, forgotten: bool, quotas: Mapping) -> WhyNot:
    """Why ``memory_id`` is (not) among the hits of the recall that produced ``trace``.

    ``forgotten``: the store knows the id as forgotten. Reads the trace only (see the module notes).
    """
    refused = _refused(trace, memory_id, forgotten, quotas)
    if refused is not None:
        return refused
    row = trace.snapshot.row_of(memory_id)
    in_union = np.flatnonzero(trace.factors.rows == row)
    if in_union.size == 0:
        return _not_admitted(trace, memory_id, row, quotas)
    k = trace.k
    position = int(np.flatnonzero(trace.order == in_union[0])[0])
    hit = hits(trace, [position])[0]
    cutoff = float(trace.ranking_scores[min(k, trace.order.size) - 1])
    generator_ranks = MappingProxyType({g: hit.admitted_by.get(g) for g in MODE_GENERATORS[trace.mode]})
    if position < k:
        detail = f"memory {memory_id} is returned at rank {position + 1}"
        return WhyNot(memory_id, "returned", detail, generator_ranks=generator_ranks, quotas=quotas,
                      rank=position + 1, score=hit.score, cutoff_score=cutoff, hit=hit)
    if hit.score > cutoff:
        detail = (f"memory {memory_id} was admitted but displaced to rank {position + 1} > k={k} by a protected "
                  f"memory holding a reserved slot (score {hit.score:.4f} vs {cutoff:.4f} at rank {k})")
    else:
        detail = (f"memory {memory_id} was admitted but outranked: rank {position + 1} > k={k}, score "
                  f"{hit.score:.4f} vs {cutoff:.4f} at rank {k} (short by {cutoff - hit.score:.4f})")
    return WhyNot(memory_id, "outranked", detail, generator_ranks=generator_ranks, quotas=quotas,
                  rank=position + 1, score=hit.score, cutoff_score=cutoff, hit=hit)
