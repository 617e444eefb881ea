"""Candidate generators (SPEC §8 step 1): each signal admits up to its own quota, independently.

Every generator searches only the eligible rows (see :mod:`._gates`) and orders them
(:class:`Ordering`); it admits the top of its order, up to its quota. They never see each
other's output, except ``graph``, which by definition expands the union of the others; its quota
is its own, and it admits only rows the others did not, so no generator can consume another's
budget. :class:`Admissions` records which generators admitted each row, at which 1-based rank,
and each generator's ordering (``why_not`` reads a row's rank from it).

======================  ==========================================================================
generator               admits (best first; every tie -> lower row, i.e. older insertion, first)
======================  ==========================================================================
``relevance``           top-``relevance_quota`` of the relevance core (the ``default`` preset's
                        scorer, :func:`relevance_core`)
``dense``               cosine top-``dense_quota`` (the float64 cosines of the relevance core's leg)
``bm25``                BM25 top-``bm25_quota`` among rows sharing a term with the cue text
``tag``                 rows carrying a cue tag, by containment |cue ∩ tags| / |cue| then newest
``temporal``            rows created nearest the cue time (``cue_time``, default ``at_time``)
``importance``          the protected tier: durable rows (importance >= ``durable_importance`` or
                        tier ``core``) ordered for this cue by the memory-side z-score of its cosine
                        (:mod:`._tier`) and by the relevance core, interleaved; top
                        ``importance_quota`` (cue-conditioned: no global top-n)
``graph``               rows with the highest graph activation from the other generators' rows
======================  ==========================================================================

Graph activation is :mod:`._signals._graph`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

import numpy as np

from .. import _kernels as kernels
from ..temporal import Timeline, date_windows, run_leg, time_intent, years_spanned
from ._columns import EMPTY_ROWS, NO_MEMORY, Snapshot, frozen
from ._gates import Eligibility
from ._lexical import top_by_score
from ._params import MemoryParams
from ._query import Cue
from ._schema import GENERATORS
from ._signals._graph import graph_activation
from ._similarity import by_cue_z, cue_tier_z, durable_rows

__all__ = ["Admissions", "KeyedOrdering", "ListedOrdering", "Ordering", "Relevance", "generate", "protected_tier",
           "relevance_core", "relevance_leg_scores"]

#: Bytes of eligible embeddings (rows x dim x 4) from which the relevance core's native leg splits
#: its cosine pass across every core; below it the leg runs on the calling thread (the native
#: defaults table says why; the scores are the same for any thread count).
PARALLEL_LEG_MIN_BYTES = int(kernels.DEFAULTS["memory_parallel_leg_min_bytes"])


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
    #: float64 cosine of the cue with each eligible row, in the order of ``eligible.rows``: the ones
    #: the leg blended its scores from (None for a keyword recall on text alone). The ``dense``
    #: generator ranks by them, so a recall reads the rows once.
    cosines: Optional[np.ndarray] = None

    def top(self, quota: int) -> np.ndarray:
        """The ``relevance`` generator's admissions: the core's best ``quota`` rows."""
        return self.rows[:quota]

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


def snapshot_timeline(snapshot: Snapshot) -> Timeline:
    """Session keys, creation days and time cues of the snapshot's rows, for the relevance core.

    The columns are kept on append (:func:`.columns.creation_days`); the timeline of ``n`` rows is
    built once per row count (:attr:`.columns.Generation.derived`).
    """
    return snapshot.generation.derived.get_or_compute(
        "timeline", snapshot.n,
        lambda: Timeline(session=snapshot.session_keys, time=snapshot.creation_days, cue=snapshot.time_cue))


def _cue_features(text: Optional[str], timeline: Timeline, eligible: Eligibility):
    """:func:`fieldrank.temporal.question_features` for one cue over the eligible rows (non-empty).

    A month or day without a year is looked up in every year the rows' creation days span
    (computed once per eligibility).
    """
    if not text:
        return None, None
    years = eligible.derived("years", lambda: years_spanned(timeline, eligible.rows))
    return time_intent([text]), [date_windows(text, years)]


def isolated_positions(snapshot: Snapshot, eligible: Eligibility, radius: int) -> np.ndarray:
    """Positions in ``eligible.rows`` of the rows with no same-session neighbour among the eligible rows.

    A neighbour of row r is row r ± d (1 <= d <= ``radius``) with the same session key that is
    itself eligible, as the relevance core's neighbour support defines it; a memory stored without
    a session has none. O(eligible rows), once per eligibility (memoised with it).
    """
    rows = eligible.rows
    keys = snapshot.session_keys
    n = keys.shape[0]
    has_neighbour = np.zeros(rows.size, dtype=bool)
    for distance in range(1, radius + 1):
        for other in (rows - distance, rows + distance):
            inside = (other >= 0) & (other < n)
            clipped = np.clip(other, 0, n - 1)
            has_neighbour |= inside & eligible.mask[clipped] & (keys[clipped] == keys[rows])
    return frozen(np.flatnonzero(~has_neighbour))


def cue_lexical_scores(snapshot: Snapshot, cue: Cue, eligible: Eligibility) -> np.ndarray:
    """float32 ``(n,)`` BM25 scores of the cue text for the eligible rows (0 elsewhere), computed
    once per recall: the relevance core and the ``bm25`` generator read the same array."""
    held = cue.derived.get("lexical")
    if held is not None and held[0] is snapshot and held[1] is eligible.mask:
        return held[2]
    generation = snapshot.generation
    outside = eligible.derived("outside", lambda: frozen(~eligible.mask))
    scores = frozen(generation.lexical.scores_of_rows(generation.texts, cue.text, eligible.mask, outside))
    cue.derived["lexical"] = (snapshot, eligible.mask, scores)
    return scores


def relevance_core(snapshot: Snapshot, cue: Cue, eligible: Eligibility, params: MemoryParams,
                   depth: int) -> Relevance:
    """Score every eligible row with the ``default`` preset's scorer; keep the best ``depth`` in order.

    This is the scorer of :func:`fieldrank.temporal.temporal_batch` (one implementation, shared
    with the ``default`` HybridRetriever) with ``params.relevance_params`` over the rows the cue may
    see (z-scores over the tenant's eligible memories), the store's BM25 scores as its lexical
    input, created-at days as session dates and the memories' sessions as neighbour keys. The
    native leg runs on trusted rows (the store validated them on ingest) and returns every row's
    score in row order (:func:`relevance_leg_scores`): the recall needs a short top and the scores
    of a few other candidates, so the top ``depth`` is selected in O(n), not sorted out of all rows.
    """
    n = snapshot.n
    rows = eligible.rows
    if rows.size == 0:
        return Relevance(EMPTY_ROWS, np.empty(0), np.full(n, -np.inf))
    scores, cosines = relevance_leg_scores(snapshot, cue, eligible, params, cosines=True)
    relevance_params = params.relevance_params
    isolated, all_isolated, gamma = None, False, 0.0
    if params.isolated_self_support and relevance_params.gamma > 0.0:
        radius, gamma = relevance_params.radius, relevance_params.gamma
        isolated = eligible.derived(("isolated", radius), lambda: isolated_positions(snapshot, eligible, radius))
        all_isolated = isolated.size == rows.size
    # the self-support, the score by row and the top in one native pass (relevance_tail_reference:
    # the numpy formulation it equals bit for bit)
    by_row, top, top_scores = kernels.memory_relevance_tail(
        np.asarray(scores, dtype=np.float64), rows, None if all_isolated else isolated, all_isolated, gamma, n,
        max(int(depth), 0))
    return Relevance(top, top_scores, by_row, cosines)


def relevance_leg_scores(snapshot: Snapshot, cue: Cue, eligible: Eligibility, params: MemoryParams,
                         block: Optional[bool] = None, cosines: bool = False):
    """The ``default`` scorer's score of each eligible row (there is one at least), in the order of
    ``eligible.rows``.

    When the rows are one block of consecutive rows, anywhere in the store (a tenant's rows, a
    store of one tenant), the leg takes its all-rows path over views of the block
    (``lexical_begin``, as HybridRetriever runs a subset's span): no row indirection and no
    neighbour search, the same rows, arithmetic and scores as the rows path. ``block`` None picks
    the path so; False forces the rows path (the tests hold the two equal bit for bit).

    ``cosines=True`` returns (scores, cosines): also the float64 cosine of each eligible row (same
    order) that the leg blended (None for a keyword recall on text alone), read from the leg's
    own cosine pass (no second pass over the rows).
    """
    n = snapshot.n
    rows = eligible.rows
    if cue.text:
        lexical = cue_lexical_scores(snapshot, cue, eligible)
    else:
        lexical = np.zeros(n, dtype=np.float32)
    relevance_params, query = params.relevance_params, cue.vector
    if query is None:
        # A keyword recall on cue text alone: the scorer's lexical half only (alpha = 1 gives the
        # cosine no weight, so the stand-in query row below cannot change any score).
        relevance_params = replace(relevance_params, alpha=1.0)
        query = snapshot.embeddings[rows[0]]
    timeline = snapshot_timeline(snapshot)
    intent, windows = _cue_features(cue.text, timeline, eligible)
    query = np.ascontiguousarray(query, dtype=np.float32)[None, :]
    threads = 0 if rows.size * snapshot.embeddings.shape[1] * snapshot.embeddings.itemsize >= PARALLEL_LEG_MIN_BYTES else 1
    if block is None:
        block = bool(rows[-1] - rows[0] + 1 == rows.size)
    if block:
        first = int(rows[0])
        leg = run_leg(snapshot.embeddings, query, lexical[None, first:first + rows.size], rows.size, timeline,
                       intent, windows, relevance_params, None, check_rows=False, n_threads=threads,
                       row_order=True, lexical_begin=first, native=True)
    else:
        leg = run_leg(snapshot.embeddings, query, lexical[None, :], rows.size, timeline, intent, windows,
                       relevance_params, rows, check_rows=False, n_threads=threads, row_order=True, native=True)
    if not cosines:
        return leg.scores[0]
    return leg.scores[0], (leg.cosines[0] if cue.vector is not None and leg.cosines.size else None)


def relevance_tail_reference(scores: np.ndarray, rows: np.ndarray, isolated: Optional[np.ndarray], gamma: float,
                             n: int, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy twin of ``kernels.memory_relevance_tail`` (isolated: positions into ``rows`` given the
    self-support ``s + gamma · max(s, 0)``; None: none): (by_row, top rows, their scores).

    The neighbour support of the ``default`` scorer lifts a dialogue turn by its neighbours' base
    relevance (``γ · decay^(d−1) · max(b_{i±d}, 0)``), which a memory without neighbours (a fact
    or rule stored on its own, ``session=None``) can never get: in a store that mixes the two, a
    standalone memory loses to chatter whose *neighbours* are about the cue. A standalone memory
    is its own evidence span, so it counts as its own neighbour at distance 1 with its own leg
    score (base and priors: it has nothing else), the convention the BM25 neighbour-text
    expansion already uses (its context document is its own text). The map is monotone, so the
    order among standalone memories is unchanged; rows with a neighbour are untouched, so a store
    of dialogue turns (LoCoMo) ranks exactly as ``default``.
    """
    by_row = np.full(n, -np.inf)
    scores = np.asarray(scores, dtype=np.float64)
    if isolated is not None and isolated.size:
        if isolated.size == scores.size:
            scores = scores + gamma * np.maximum(scores, 0.0)
        else:
            supported = scores.copy()
            supported[isolated] += gamma * np.maximum(scores[isolated], 0.0)
            scores = supported
    by_row[rows] = scores
    if depth <= 0:
        return by_row, EMPTY_ROWS, np.empty(0)
    top, top_scores = top_by_score(rows, scores, int(depth))
    return by_row, top, top_scores


@dataclass
class Admissions:
    """Rows admitted by each generator, best first, and the graph activation used for ``G``."""

    by_generator: dict[str, np.ndarray] = field(default_factory=dict)
    #: Sparse graph activation: sorted rows and their activation (rows not listed: 0).
    activation_rows: np.ndarray = field(default_factory=lambda: EMPTY_ROWS)
    activation: np.ndarray = field(default_factory=lambda: np.empty(0))
    #: The union, set by :func:`generate` when every generator has run.
    final_union: Optional[np.ndarray] = field(default=None, repr=False)
    #: Each generator's :class:`Ordering` (what it admitted by; ``why_not`` reads ranks from it).
    orderings: dict[str, Ordering] = field(default_factory=dict, repr=False)

    def rank_in(self, name: str, row: int, eligible: Eligibility) -> Optional[int]:
        """``row``'s 1-based rank in generator ``name``'s ordering of the eligible rows (None: it
        cannot admit it at any quota, or the row is not eligible)."""
        if not eligible.mask[row]:
            return None
        return self.orderings[name].rank_of(row)

    def union(self) -> np.ndarray:
        """Sorted unique rows admitted by any generator (kept once :func:`generate` is done)."""
        if self.final_union is not None:
            return self.final_union
        parts = [rows for rows in self.by_generator.values() if rows.size]
        if not parts:
            return EMPTY_ROWS
        return kernels.memory_sorted_unique(parts[0] if len(parts) == 1 else np.concatenate(parts))

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
        """row -> {generator: 1-based rank} for the given rows only (the hits: one native lookup per
        generator, ``kernels.memory_ranks_of``; :meth:`ranks_for_reference` is its numpy formulation)."""
        wanted_list = [int(r) for r in rows]
        out: dict[int, dict[str, int]] = {r: {} for r in wanted_list}
        if not wanted_list:
            return out
        wanted = np.asarray(wanted_list, dtype=np.int64)
        for name in GENERATORS:
            admitted = self.by_generator.get(name)
            if admitted is None or admitted.size == 0:
                continue
            for row, rank in zip(wanted_list, kernels.memory_ranks_of(wanted, admitted).tolist()):
                if rank:
                    out[row][name] = rank
        return out

    def ranks_for_reference(self, rows) -> dict[int, dict[str, int]]:
        """numpy formulation of :meth:`ranks_for`."""
        wanted = np.asarray(list(rows), dtype=np.int64)
        out: dict[int, dict[str, int]] = {int(r): {} for r in wanted.tolist()}
        wanted = np.unique(wanted)
        for name in GENERATORS:
            admitted = self.by_generator.get(name)
            if admitted is None or admitted.size == 0 or wanted.size == 0:
                continue
            at = np.minimum(np.searchsorted(wanted, admitted), wanted.size - 1)
            hits = np.flatnonzero(wanted[at] == admitted)  # admitted rows among the (few) wanted
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


# ---------------------------------------------------------------------------- orderings


def _rank_among(rows: np.ndarray, keys: np.ndarray, row: int) -> Optional[int]:
    """1-based rank of ``row`` when ``rows`` are ordered by ``keys`` descending, ties lower row first."""
    position = np.flatnonzero(rows == row)
    if position.size == 0:
        return None
    key = keys[position[0]]
    return int(np.count_nonzero(keys > key) + np.count_nonzero((keys == key) & (rows < row)) + 1)


class Ordering:
    """How one generator orders the eligible rows it can admit (best first, ties to the lower row).

    Admission is its :meth:`top` ``quota`` rows; :meth:`rank_of` is any row's 1-based rank in the
    same order (None: the generator cannot admit it at any quota), which ``why_not`` reads from
    the recall's trace. One order per generator, so the two never disagree.
    """

    def top(self, quota: int) -> np.ndarray:
        raise NotImplementedError

    def rank_of(self, row: int) -> Optional[int]:
        raise NotImplementedError


class KeyedOrdering(Ordering):
    """``rows`` by ``keys`` descending (ties: lower row first)."""

    def __init__(self, rows: np.ndarray, keys: np.ndarray) -> None:
        self.rows, self.keys = rows, keys

    def top(self, quota: int) -> np.ndarray:
        return top_by_score(self.rows, self.keys, quota)[0]

    def rank_of(self, row: int) -> Optional[int]:
        return _rank_among(self.rows, self.keys, row)


class ListedOrdering(Ordering):
    """Rows in an order given whole."""

    def __init__(self, order: np.ndarray) -> None:
        self.order = order

    def top(self, quota: int) -> np.ndarray:
        return self.order[:quota]

    def rank_of(self, row: int) -> Optional[int]:
        position = np.flatnonzero(self.order == row)
        return int(position[0]) + 1 if position.size else None


#: A generator with nothing to go by (no cue text for ``bm25``, no cue tag for ``tag``).
UNRANKED = ListedOrdering(EMPTY_ROWS)


class _PrefilterOrdering(Ordering):
    """The cosine order of the native prefilter, for a dense generator without the leg's cosines."""

    def __init__(self, snapshot: Snapshot, cue: Cue, eligible: Eligibility) -> None:
        self.snapshot, self.cue, self.eligible = snapshot, cue, eligible

    def top(self, quota: int) -> np.ndarray:
        subset = None if self.eligible.all_rows else self.eligible.rows
        # trusted inputs (rows validated on ingest, the cue at the boundary, eligible rows sorted and
        # unique): the raw kernel, not the public wrapper's per-call checks of the subset
        return np.asarray(kernels.prefilter(self.snapshot.embeddings, self.cue.vector, quota, subset).ids,
                          dtype=np.int64)

    def rank_of(self, row: int) -> Optional[int]:
        return ListedOrdering(self.top(self.eligible.rows.size)).rank_of(row)


class _Deferred(Ordering):
    """An ordering computed when first read: a generator at quota 0 admits nothing, and only a
    ``why_not`` asks it for a rank."""

    def __init__(self, compute) -> None:
        self._compute, self._ordering = compute, None

    def _get(self) -> Ordering:
        if self._ordering is None:
            self._ordering = self._compute()
        return self._ordering

    def top(self, quota: int) -> np.ndarray:
        return self._get().top(quota)

    def rank_of(self, row: int) -> Optional[int]:
        return self._get().rank_of(row)


# ---------------------------------------------------------------------------- generators


def relevance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance, params: MemoryParams) -> Ordering:
    return core


def dense(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance, params: MemoryParams) -> Ordering:
    if core.cosines is not None:
        # the cosines the relevance core's leg computed (one pass over the rows for both signals)
        return KeyedOrdering(eligible.rows, core.cosines)
    return _PrefilterOrdering(snapshot, cue, eligible)


def bm25(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance, params: MemoryParams) -> Ordering:
    if not cue.text:
        return UNRANKED
    scores = cue_lexical_scores(snapshot, cue, eligible)  # the relevance core's own (one computation)
    rows = np.flatnonzero(scores > 0)  # the rows sharing a term with the cue (Lucene scores are positive exactly then)
    return KeyedOrdering(rows, scores[rows])


def tag(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance, params: MemoryParams) -> Ordering:
    if not cue.tags:
        return UNRANKED
    index = snapshot.generation.tag_index
    postings = [snapshot.posting(index, label) for label in sorted(cue.tags)]
    rows, shared = np.unique(np.concatenate(postings), return_counts=True)
    keep = eligible.mask[rows]
    rows, shared = rows[keep], shared[keep]
    return ListedOrdering(rows[np.lexsort((rows, -snapshot.created_at[rows], -shared))])


def temporal(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance, params: MemoryParams) -> Ordering:
    rows = eligible.rows
    with np.errstate(over="ignore"):  # times 1e308 apart: -inf, the farthest (accepted extremes)
        closeness = -np.abs(snapshot.created_at[rows] - cue.time)
    return KeyedOrdering(rows, closeness)


def protected_tier(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance,
                   params: MemoryParams) -> np.ndarray:
    """The durable eligible rows ordered for the cue: by memory-side z and by relevance, interleaved.

    Position 2i holds the i-th best by the cue's memory-side z-score (:mod:`._tier`: how unusual
    the cue's cosine is for that memory), 2i + 1 the i-th best by relevance (skipping rows already
    placed), so a durable memory that is close in meaning but shares no word with the cue (the
    truncation trap's victim) ranks as high as one the lexical half of the relevance likes.

    Both orders and the interleaving in one native call (``kernels.memory_protected_order``; the
    tier's z from :func:`~._similarity.cue_tier_z`, numpy's einsum), equal to :func:`protected_tier_reference`; the
    order by z is kept for the reserved slots' gate (:func:`by_cue_z` reads it back).
    """
    candidates = eligible.derived(
        "durable", lambda: eligible.rows[durable_rows(snapshot, eligible.rows, params)])
    if candidates.size == 0:
        return EMPTY_ROWS
    stats = None if cue.vector is None else snapshot.tier_stats.get(int(snapshot.tenant_codes[candidates[0]]))
    if stats is None or stats.rows.size == 0:
        tier_rows, tier_z = EMPTY_ROWS, np.empty(0)
    else:
        tier_rows, tier_z = stats.rows, cue_tier_z(snapshot, cue, stats)
    merged, by_z, z = kernels.memory_protected_order(candidates, core.by_row, tier_rows, tier_z)
    if cue.vector is not None:
        cue.derived["by_cue_z"] = (snapshot, candidates, by_z, z)
    return merged


def protected_tier_reference(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance,
                             params: MemoryParams) -> np.ndarray:
    """numpy formulation of :func:`protected_tier` (its reference in the parity tests)."""
    candidates = eligible.rows[durable_rows(snapshot, eligible.rows, params)]
    if candidates.size == 0:
        return EMPTY_ROWS
    by_relevance = core.order_of(candidates)
    if by_relevance.size == 0:
        return EMPTY_ROWS
    by_z, _ = by_cue_z(snapshot, cue, candidates)
    merged = np.empty(2 * by_relevance.size, dtype=np.int64)
    merged[0::2], merged[1::2] = by_z, by_relevance
    _, first = np.unique(merged, return_index=True)
    return merged[np.sort(first)]


def importance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance, params: MemoryParams) -> Ordering:
    return ListedOrdering(protected_tier(snapshot, cue, eligible, core, params))


#: The generators that run on the eligible rows alone (``graph`` runs on their union).
_INDEPENDENT = {
    "relevance": relevance,
    "dense": dense,
    "bm25": bm25,
    "tag": tag,
    "temporal": temporal,
    "importance": importance,
}


def _admit_independent(admissions: Admissions, snapshot: Snapshot, cue: Cue, eligible: Eligibility,
                       generators: tuple[str, ...], params: MemoryParams, core: Relevance) -> None:
    """Each independent generator's ordering and its top quota (an ordering no quota reads is deferred)."""
    for name in generators:
        order_of = _INDEPENDENT.get(name)
        if order_of is None:
            continue
        quota = params.quota(name)
        if quota == 0 or eligible.rows.size == 0:
            admissions.orderings[name] = _Deferred(lambda order_of=order_of: order_of(snapshot, cue, eligible, core,
                                                                                       params))
            admissions.by_generator[name] = EMPTY_ROWS
        else:
            ordering = admissions.orderings[name] = order_of(snapshot, cue, eligible, core, params)
            admissions.by_generator[name] = ordering.top(quota)


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
    _admit_independent(admissions, snapshot, cue, eligible, generators, params, core)
    seeds = admissions.union()
    # Without the graph generator only the candidates' own activation is read (their G factor);
    # the replacement of a superseded candidate joins them later, so then every row is computed.
    only_seeds = "graph" not in generators and not (snapshot.superseded_by[seeds] != NO_MEMORY).any()
    rows, activation = graph_activation(snapshot, cue, eligible, seeds, params, links,
                                        within=seeds if only_seeds else None)
    admissions.activation_rows, admissions.activation = rows, activation
    if "graph" in generators:
        quota = params.quota("graph")
        fresh = ~np.isin(rows, seeds) & (activation > 0)
        ordering = admissions.orderings["graph"] = KeyedOrdering(rows[fresh], activation[fresh])
        admissions.by_generator["graph"] = ordering.top(quota) if quota else EMPTY_ROWS
    admissions.final_union = admissions.union() if "graph" in admissions.by_generator else seeds
    return admissions
