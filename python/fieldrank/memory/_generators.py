"""Candidate generators (SPEC §8 step 1): each signal admits up to its own quota, independently.

Every generator searches only the eligible rows (see :mod:`._gates`) and returns rows best first.
They never see each other's output, except ``graph``, which by definition expands the union of
the others; its quota is its own, and it admits only rows the others did not, so no generator
can consume another's budget. :class:`Admissions` records which generators admitted each row
and at which 1-based rank.

======================  ==========================================================================
generator               admits (best first; every tie -> lower row, i.e. older insertion, first)
======================  ==========================================================================
``relevance``           top-``relevance_quota`` of the relevance core (the ``default`` preset's
                        scorer, :func:`relevance_core`)
``dense``               cosine top-``dense_quota`` (the native :func:`fieldrank.prefilter`)
``bm25``                BM25 top-``bm25_quota`` among rows sharing a term with the cue text
``tag``                 rows carrying a cue tag, by containment |cue ∩ tags| / |cue| then newest
``temporal``            rows created nearest the cue time (``cue_time``, default ``at_time``)
``importance``          the protected tier: durable rows (importance >= ``durable_importance`` or
                        tier ``core``) ordered for this cue by cosine and by the relevance core,
                        interleaved; top ``importance_quota`` (cue-conditioned: no global top-n)
``graph``               rows with the highest graph activation from the other generators' rows
======================  ==========================================================================

Graph activation of a row T, spread one hop from the seed rows (the union of the other
generators) and from the cue's entities::

    a(T) = Σ_{seed s ≠ T} max(cos(q, s), 0) · (entity_weight · |E(s) ∩ E(T)| + w_hebb(s, T))
         + cue_entity_weight · |E(cue) ∩ E(T)|

``w_hebb`` are the co-recall links (strengthened when memories are returned together). Each
entity contributes at most its ``entity_fanout`` most recent rows (hub entities stay cheap).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

import numpy as np

from ..operators import prefilter
from ..temporal import Timeline, _run_leg, date_windows, time_intent
from ._columns import Snapshot
from ._gates import Eligibility
from ._lexical import top_by_score
from ._params import MemoryParams
from ._schema import GENERATORS, SECONDS_PER_DAY, TIERS

CORE_TIER_CODE = TIERS.index("core")

__all__ = ["Admissions", "Cue", "Relevance", "generate", "relevance_core"]

_EMPTY_ROWS = np.empty(0, dtype=np.int64)


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


@dataclass(frozen=True)
class Relevance:
    """The relevance core over a recall's eligible rows.

    ``rows`` are the best ``depth`` eligible rows, best first (ties: lower row first), and
    ``scores`` theirs; ``by_row`` holds every row's score (``-inf`` where not eligible), so any
    other candidate's score or a subset's order is a lookup, never a sort of every eligible row.
    """

    rows: np.ndarray
    scores: np.ndarray
    by_row: np.ndarray

    def order_of(self, rows: np.ndarray) -> np.ndarray:
        """``rows`` (eligible) in relevance order, best first, ties to the lower row."""
        return rows[np.lexsort((rows, -self.by_row[rows]))]

    def rank_of(self, row: int) -> Optional[int]:
        """1-based rank of ``row`` in the relevance order of every eligible row (None when not eligible)."""
        score = self.by_row[row]
        if not np.isfinite(score):
            return None
        ahead = np.count_nonzero(self.by_row > score)
        tied = np.count_nonzero(self.by_row[:row] == score)
        return int(ahead + tied) + 1


def durable_rows(snapshot: Snapshot, rows: np.ndarray, params: MemoryParams) -> np.ndarray:
    """bool per row: durable (importance >= ``durable_importance`` or tier ``core``)."""
    return (snapshot.importance[rows] >= params.durable_importance) | (snapshot.tier_codes[rows] == CORE_TIER_CODE)


#: Creation days are clipped to the calendar years 1–9999 (the dates a question can name), so that
#: the accepted extreme timestamps convert to datetime64 days without overflow.
_TIMELINE_DAYS = (float(np.datetime64("0001-01-01", "D").astype(np.int64)),
                  float(np.datetime64("9999-12-31", "D").astype(np.int64)))


def snapshot_timeline(snapshot: Snapshot) -> Timeline:
    """Session keys, creation days and time cues of the snapshot's rows, for the relevance core."""
    days = np.clip(np.floor(snapshot.created_at / SECONDS_PER_DAY), *_TIMELINE_DAYS)
    days = days.astype(np.int64).astype("datetime64[D]")
    return Timeline(session=snapshot.session_keys, time=days, cue=snapshot.time_cue)


def _cue_features(text: Optional[str], timeline: Timeline, rows: np.ndarray):
    """:func:`fieldrank.temporal.question_features` for one cue over ``rows`` (non-empty).

    The years a month or day without a year is looked up in are those the rows' creation days
    span: the min and max day give them (the year is monotone in the day), two reductions instead
    of a per-row conversion to years.
    """
    if not text:
        return None, None
    days = timeline.time.view(np.int64)[rows]
    first, last = (np.datetime64(int(v), "D").astype("datetime64[Y]").astype(int) + 1970
                   for v in (days.min(), days.max()))
    return time_intent([text]), [date_windows(text, tuple(range(int(first), int(last) + 1)))]


def relevance_core(snapshot: Snapshot, cue: Cue, eligible: Eligibility, params: MemoryParams,
                   depth: int) -> Relevance:
    """Score every eligible row with the ``default`` preset's scorer; keep the best ``depth`` in order.

    This is the scorer of :func:`fieldrank.temporal.temporal_batch` (one implementation, shared
    with the ``default`` HybridRetriever) with ``params.relevance_params`` over the rows the cue may
    see (z-scores over the tenant's eligible memories), the store's BM25 scores as its lexical
    input, created-at days as session dates and the memories' sessions as neighbour keys. The
    native leg runs on trusted rows (the store validated them on ingest) and returns every row's
    score in row order: the recall needs a short top and the scores of a few other candidates,
    so the top ``depth`` is selected in O(n), not sorted out of all rows.
    """
    n = snapshot.n
    by_row = np.full(n, -np.inf)
    rows = eligible.rows
    if rows.size == 0:
        return Relevance(_EMPTY_ROWS, np.empty(0), by_row)
    generation = snapshot.generation
    if cue.text:
        lexical = generation.lexical.scores_of_rows(generation.texts, cue.text, eligible.mask)
    else:
        lexical = np.zeros(n, dtype=np.float32)
    relevance_params, query = params.relevance_params, cue.vector
    if query is None:
        # A keyword recall on cue text alone: the scorer's lexical half only (alpha = 1 gives the
        # cosine no weight, so the stand-in query row below cannot change any score).
        relevance_params = replace(relevance_params, alpha=1.0)
        query = snapshot.embeddings[rows[0]]
    timeline = snapshot_timeline(snapshot)
    intent, windows = _cue_features(cue.text, timeline, rows)
    query = np.ascontiguousarray(query, dtype=np.float32)[None, :]
    scores = _run_leg(snapshot.embeddings, query, lexical[None, :], rows.size, timeline, intent, windows,
                      relevance_params, rows, check_rows=False, n_threads=0, row_order=True).scores[0]
    scores = np.asarray(scores, dtype=np.float64)
    by_row[rows] = scores
    if depth <= 0:
        return Relevance(_EMPTY_ROWS, np.empty(0), by_row)
    top, top_scores = top_by_score(rows, scores, int(depth))
    return Relevance(top, top_scores, by_row)


@dataclass
class Admissions:
    """Rows admitted by each generator, best first, and the graph activation used for ``G``."""

    by_generator: dict[str, np.ndarray] = field(default_factory=dict)
    #: Sparse graph activation: sorted rows and their activation (rows not listed: 0).
    activation_rows: np.ndarray = field(default_factory=lambda: _EMPTY_ROWS)
    activation: np.ndarray = field(default_factory=lambda: np.empty(0))

    def union(self) -> np.ndarray:
        """Sorted unique rows admitted by any generator."""
        parts = [rows for rows in self.by_generator.values() if rows.size]
        return np.unique(np.concatenate(parts)) if parts else _EMPTY_ROWS

    def ranks(self) -> dict[int, dict[str, int]]:
        """row -> {generator: 1-based rank} for every admitted row (loops over the small union)."""
        out: dict[int, dict[str, int]] = {}
        for name in GENERATORS:
            rows = self.by_generator.get(name)
            if rows is None:
                continue
            for rank, row in enumerate(rows.tolist(), start=1):
                out.setdefault(row, {})[name] = rank
        return out

    def ranks_for(self, rows) -> dict[int, dict[str, int]]:
        """row -> {generator: 1-based rank} for the given rows only (the hits: a few lookups each)."""
        wanted = np.asarray(list(rows), dtype=np.int64)
        out: dict[int, dict[str, int]] = {int(r): {} for r in wanted.tolist()}
        for name in GENERATORS:
            admitted = self.by_generator.get(name)
            if admitted is None or admitted.size == 0 or wanted.size == 0:
                continue
            hits = np.flatnonzero(np.isin(admitted, wanted))
            for position in hits.tolist():
                out[int(admitted[position])][name] = position + 1
        return out

    def activation_of(self, rows: np.ndarray) -> np.ndarray:
        """Graph activation of ``rows`` (0 for rows without any)."""
        out = np.zeros(rows.size)
        if self.activation_rows.size and rows.size:
            position = np.searchsorted(self.activation_rows, rows)
            position = np.minimum(position, self.activation_rows.size - 1)
            found = self.activation_rows[position] == rows
            out[found] = self.activation[position[found]]
        return out


# ---------------------------------------------------------------------------- generators


def relevance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Relevance,
              params: MemoryParams) -> np.ndarray:
    return core.rows[:quota]


def dense(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Relevance,
          params: MemoryParams) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    subset = None if eligible.all_rows else eligible.rows
    return prefilter(snapshot.embeddings, cue.vector, quota, subset=subset).ids


def bm25(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Optional[Relevance] = None,
         params: Optional[MemoryParams] = None) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0 or not cue.text:
        return _EMPTY_ROWS
    generation = snapshot.generation
    rows, _ = generation.lexical.top(generation.texts, cue.text, quota, eligible.mask)
    return rows


def tag(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Optional[Relevance] = None,
        params: Optional[MemoryParams] = None) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0 or not cue.tags:
        return _EMPTY_ROWS
    index = snapshot.generation.tag_index
    postings = [snapshot.posting(index, label) for label in sorted(cue.tags)]
    rows, shared = np.unique(np.concatenate(postings), return_counts=True)
    keep = eligible.mask[rows]
    rows, shared = rows[keep], shared[keep]
    order = np.lexsort((rows, -snapshot.created_at[rows], -shared))
    return rows[order[:quota]]


def temporal(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Optional[Relevance] = None,
             params: Optional[MemoryParams] = None) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    rows = eligible.rows
    with np.errstate(over="ignore"):  # times 1e308 apart: -inf, the farthest (accepted extremes)
        closeness = -np.abs(snapshot.created_at[rows] - cue.time)
    return top_by_score(rows, closeness, quota)[0]


def protected_tier(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance,
                   params: MemoryParams) -> np.ndarray:
    """The durable eligible rows ordered for the cue: by cosine and by relevance, interleaved.

    Position 2i holds the i-th best by cosine, 2i + 1 the i-th best by relevance (skipping rows
    already placed), so a durable memory that is close in meaning but shares no word with the cue
    (the truncation trap's victim) ranks as high as one the lexical half of the relevance likes.
    """
    candidates = eligible.rows[durable_rows(snapshot, eligible.rows, params)]
    if candidates.size == 0:
        return _EMPTY_ROWS
    by_relevance = core.order_of(candidates)
    if by_relevance.size == 0:
        return _EMPTY_ROWS
    cosine = snapshot.embeddings[by_relevance] @ cue.vector
    by_cosine = by_relevance[np.lexsort((by_relevance, -cosine))]
    merged = np.empty(2 * by_relevance.size, dtype=np.int64)
    merged[0::2], merged[1::2] = by_cosine, by_relevance
    _, first = np.unique(merged, return_index=True)
    return merged[np.sort(first)]


def importance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Relevance,
               params: MemoryParams) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    return protected_tier(snapshot, cue, eligible, core, params)[:quota]


def graph_activation(
    snapshot: Snapshot,
    cue: Cue,
    eligible: Eligibility,
    seeds: np.ndarray,
    params: MemoryParams,
    links: Mapping[int, Mapping[int, float]],
) -> tuple[np.ndarray, np.ndarray]:
    """Sparse activation (sorted rows, values) over eligible rows; see the module formula."""
    generation = snapshot.generation
    fanout = params.entity_fanout
    target_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    if seeds.size:
        if cue.vector is None:  # keyword recall on text alone: every admitted seed counts fully
            seed_weights = np.ones(seeds.size)
        else:
            seed_weights = np.maximum(snapshot.embeddings[seeds] @ cue.vector, 0.0).astype(np.float64)
        for seed, seed_weight in zip(seeds.tolist(), seed_weights.tolist()):
            if seed_weight <= 0.0:
                continue
            if params.entity_weight > 0:
                for entity in generation.entities[seed]:
                    neighbours = snapshot.posting(generation.entity_index, entity)[-fanout:]
                    neighbours = neighbours[neighbours != seed]
                    target_parts.append(neighbours)
                    weight_parts.append(np.full(neighbours.size, seed_weight * params.entity_weight))
            seed_links = links.get(int(snapshot.ids[seed]))
            if seed_links:
                for other_id, link_weight in list(seed_links.items()):
                    other = snapshot.row_of(other_id)
                    if other is not None and other != seed:
                        target_parts.append(np.array([other], dtype=np.int64))
                        weight_parts.append(np.array([seed_weight * link_weight]))
    if params.cue_entity_weight > 0:
        for entity in sorted(cue.entities):
            carriers = snapshot.posting(generation.entity_index, entity)[-fanout:]
            target_parts.append(carriers)
            weight_parts.append(np.full(carriers.size, params.cue_entity_weight))
    if not target_parts:
        return _EMPTY_ROWS, np.empty(0)
    targets = np.concatenate(target_parts)
    weights = np.concatenate(weight_parts)
    allowed = eligible.mask[targets]
    targets, weights = targets[allowed], weights[allowed]
    if targets.size == 0:
        return _EMPTY_ROWS, np.empty(0)
    rows, inverse = np.unique(targets, return_inverse=True)
    return rows, np.bincount(inverse, weights=weights)


_INDEPENDENT = {
    "relevance": relevance,
    "dense": dense,
    "bm25": bm25,
    "tag": tag,
    "temporal": temporal,
    "importance": importance,
}


def generate(
    snapshot: Snapshot,
    cue: Cue,
    eligible: Eligibility,
    generators: tuple[str, ...],
    params: MemoryParams,
    links: Mapping[int, Mapping[int, float]],
    core: Relevance,
) -> Admissions:
    """Run ``generators`` (each within its quota) and compute the graph activation of the union."""
    admissions = Admissions()
    for name in generators:
        if name in _INDEPENDENT:
            admissions.by_generator[name] = _INDEPENDENT[name](snapshot, cue, eligible, params.quota(name), core,
                                                               params)
    seeds = admissions.union()
    rows, activation = graph_activation(snapshot, cue, eligible, seeds, params, links)
    admissions.activation_rows, admissions.activation = rows, activation
    if "graph" in generators:
        quota = params.quota("graph")
        fresh = ~np.isin(rows, seeds) & (activation > 0)
        admitted = top_by_score(rows[fresh], activation[fresh], quota)[0] if quota else _EMPTY_ROWS
        admissions.by_generator["graph"] = admitted
    return admissions


# ---------------------------------------------------------------------------- diagnostics


def _rank_among(rows: np.ndarray, keys: np.ndarray, row: int) -> Optional[int]:
    """1-based rank of ``row`` when ``rows`` are ordered by ``keys`` descending, ties lower row first."""
    position = np.flatnonzero(rows == row)
    if position.size == 0:
        return None
    key = keys[position[0]]
    return int(np.count_nonzero(keys > key) + np.count_nonzero((keys == key) & (rows < row)) + 1)


def generator_rank(
    name: str,
    snapshot: Snapshot,
    cue: Cue,
    eligible: Eligibility,
    row: int,
    admissions: Admissions,
    core: Relevance,
    params: MemoryParams,
) -> Optional[int]:
    """The rank ``row`` has in generator ``name``'s full ordering of the eligible rows.

    None when the generator cannot admit it at any quota (no term overlap, no cue tag, no graph
    activation, not durable for ``importance``, or not eligible). Vectorised over the eligible rows; used by ``why_not`` only.
    """
    if not eligible.mask[row]:
        return None
    rows = eligible.rows
    if name == "relevance":
        return core.rank_of(row)
    if name == "dense":
        return _rank_among(rows, (snapshot.embeddings[rows] @ cue.vector).astype(np.float64), row)
    if name == "bm25":
        if not cue.text:
            return None
        generation = snapshot.generation
        scores = generation.lexical.scores_of_rows(generation.texts, cue.text, eligible.mask)
        if scores[row] <= 0:
            return None
        matched = rows[scores[rows] > 0]
        return _rank_among(matched, scores[matched], row)
    if name == "tag":
        ordered = tag(snapshot, cue, eligible, max(rows.size, 1))
        position = np.flatnonzero(ordered == row)
        return int(position[0]) + 1 if position.size else None
    if name == "temporal":
        return _rank_among(rows, -np.abs(snapshot.created_at[rows] - cue.time), row)
    if name == "importance":
        tier = protected_tier(snapshot, cue, eligible, core, params)
        position = np.flatnonzero(tier == row)
        return int(position[0]) + 1 if position.size else None
    if name == "graph":
        seeds = np.unique(np.concatenate([admissions.by_generator.get(g, _EMPTY_ROWS)
                                          for g in _INDEPENDENT] + [_EMPTY_ROWS]))
        fresh = ~np.isin(admissions.activation_rows, seeds) & (admissions.activation > 0)
        return _rank_among(admissions.activation_rows[fresh], admissions.activation[fresh], row)
    msg = f"unknown generator {name!r}; expected one of {GENERATORS}"
    raise ValueError(msg)
