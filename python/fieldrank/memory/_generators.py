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

Graph activation of a row T, spread one hop from the seed rows (the union of the other
generators) and from the cue's entities::

    a(T) = Σ_{seed s ≠ T} max(cos(q, s), 0) · (entity_weight · |E(s) ∩ E(T)| + w_hebb(s, T))
         + cue_entity_weight · |E(cue) ∩ E(T)|

``w_hebb`` are the co-recall links (strengthened when memories are returned together). Each
entity contributes at most its ``entity_fanout`` most recent rows (hub entities stay cheap).
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field, replace
from typing import Mapping, Optional

import numpy as np

from .. import _core
from ..temporal import Timeline, _run_leg, _years_spanned, date_windows, time_intent
from ._columns import NO_MEMORY, Snapshot, frozen
from ._gates import Eligibility
from ._lexical import top_by_score
from ._params import MemoryParams
from ._schema import GENERATORS, TIERS
from ._tier import TierStatistics

CORE_TIER_CODE = TIERS.index("core")

__all__ = ["Admissions", "Cue", "LinkIndex", "Relevance", "by_cue_z", "candidate_cosine", "generate",
           "mentioned_entities", "relevance_core", "relevance_leg_scores"]

_EMPTY_ROWS = np.empty(0, dtype=np.int64)

#: Bytes of eligible embeddings (rows x dim x 4) from which the relevance core's native leg splits
#: its cosine pass across every core; below it the leg runs on the calling thread (the native
#: defaults table says why; the scores are the same for any thread count).
PARALLEL_LEG_MIN_BYTES = int(_core.DEFAULTS["memory_parallel_leg_min_bytes"])


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


#: Words of a cue or an entity label for :func:`mentioned_entities` (a possessive stays on its word).
_WORD = re.compile(r"[0-9a-z]+(?:['’][0-9a-z]+)*")
#: Labels longer than this many words are never matched in a cue.
_MAX_LABEL_WORDS = 4


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


def _entity_vocabulary(generation) -> dict[tuple[str, ...], tuple[str, ...]]:
    """Lower-cased words of every entity label -> the labels spelt so (built once per label count)."""
    def build() -> dict[tuple[str, ...], tuple[str, ...]]:
        vocabulary: dict[tuple[str, ...], tuple[str, ...]] = {}
        for label in list(generation.entity_code):
            words = tuple(_words(label))
            if 0 < len(words) <= _MAX_LABEL_WORDS:
                vocabulary[words] = vocabulary.get(words, ()) + (label,)
        return vocabulary

    return generation.derived.get_or_compute("entity_vocabulary", len(generation.entity_code), build)


def mentioned_entities(snapshot: Snapshot, text: Optional[str]) -> frozenset[str]:
    """The store's entity labels the cue text names, longest match first, whole words only.

    "What does Ben's brother drink?" names ``Ben's brother`` (not ``Ben``: the longer label takes
    the words); "What is Ben allergic to?" names ``Ben``, never ``Benny`` or ``Bena`` (a near-twin
    is another word). A possessive ("Ben's car") also names its word without the ``'s``.
    Matching ignores case; labels of more than four words are not looked for.
    """
    if not text:
        return frozenset()
    vocabulary = _entity_vocabulary(snapshot.generation)
    if not vocabulary:
        return frozenset()
    words = _words(text)
    found: list[str] = []
    i = 0
    while i < len(words):
        for width in range(min(_MAX_LABEL_WORDS, len(words) - i), 0, -1):
            gram = tuple(words[i:i + width])
            labels = vocabulary.get(gram)
            if labels is None and width == 1 and gram[0].endswith("'s"):
                labels = vocabulary.get((gram[0][:-2],))
            if labels is not None:
                found.extend(labels)
                i += width
                break
        else:
            i += 1
    return frozenset(found)


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
    years = eligible.derived("years", lambda: _years_spanned(timeline, eligible.rows))
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
        return Relevance(_EMPTY_ROWS, np.empty(0), np.full(n, -np.inf))
    scores, cosines = relevance_leg_scores(snapshot, cue, eligible, params, cosines=True)
    relevance_params = params.relevance_params
    isolated, all_isolated, gamma = None, False, 0.0
    if params.isolated_self_support and relevance_params.gamma > 0.0:
        radius, gamma = relevance_params.radius, relevance_params.gamma
        isolated = eligible.derived(("isolated", radius), lambda: isolated_positions(snapshot, eligible, radius))
        all_isolated = isolated.size == rows.size
    # the self-support, the score by row and the top in one native pass (relevance_tail_reference:
    # the numpy formulation it equals bit for bit)
    by_row, top, top_scores = _core.memory_relevance_tail(
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
        leg = _run_leg(snapshot.embeddings, query, lexical[None, first:first + rows.size], rows.size, timeline,
                       intent, windows, relevance_params, None, check_rows=False, n_threads=threads,
                       row_order=True, lexical_begin=first, native=True)
    else:
        leg = _run_leg(snapshot.embeddings, query, lexical[None, :], rows.size, timeline, intent, windows,
                       relevance_params, rows, check_rows=False, n_threads=threads, row_order=True, native=True)
    if not cosines:
        return leg.scores[0]
    return leg.scores[0], (leg.cosines[0] if cue.vector is not None and leg.cosines.size else None)


def relevance_tail_reference(scores: np.ndarray, rows: np.ndarray, isolated: Optional[np.ndarray], gamma: float,
                             n: int, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy twin of ``_core.memory_relevance_tail`` (isolated: positions into ``rows`` given the
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
        return by_row, _EMPTY_ROWS, np.empty(0)
    top, top_scores = top_by_score(rows, scores, int(depth))
    return by_row, top, top_scores


@dataclass
class Admissions:
    """Rows admitted by each generator, best first, and the graph activation used for ``G``."""

    by_generator: dict[str, np.ndarray] = field(default_factory=dict)
    #: Sparse graph activation: sorted rows and their activation (rows not listed: 0).
    activation_rows: np.ndarray = field(default_factory=lambda: _EMPTY_ROWS)
    activation: np.ndarray = field(default_factory=lambda: np.empty(0))
    #: The union, set by :func:`generate` when every generator has run.
    final_union: Optional[np.ndarray] = field(default=None, repr=False)

    def union(self) -> np.ndarray:
        """Sorted unique rows admitted by any generator (kept once :func:`generate` is done)."""
        if self.final_union is not None:
            return self.final_union
        parts = [rows for rows in self.by_generator.values() if rows.size]
        if not parts:
            return _EMPTY_ROWS
        return _core.memory_sorted_unique(parts[0] if len(parts) == 1 else np.concatenate(parts))

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
        generator, ``_core.memory_ranks_of``; :meth:`ranks_for_reference` is its numpy formulation)."""
        wanted_list = [int(r) for r in rows]
        out: dict[int, dict[str, int]] = {r: {} for r in wanted_list}
        if not wanted_list:
            return out
        wanted = np.asarray(wanted_list, dtype=np.int64)
        for name in GENERATORS:
            admitted = self.by_generator.get(name)
            if admitted is None or admitted.size == 0:
                continue
            for row, rank in zip(wanted_list, _core.memory_ranks_of(wanted, admitted).tolist()):
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


# ---------------------------------------------------------------------------- generators


def relevance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Relevance,
              params: MemoryParams) -> np.ndarray:
    return core.rows[:quota]


def dense(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Relevance,
          params: MemoryParams) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    if core.cosines is not None:
        # the cosines the relevance core's leg computed (one pass over the rows for both signals)
        return top_by_score(eligible.rows, core.cosines, quota)[0]
    subset = None if eligible.all_rows else eligible.rows
    # trusted inputs (rows validated on ingest, the cue at the boundary, eligible rows sorted and
    # unique): the raw kernel, not the public wrapper's per-call checks of the subset
    return np.asarray(_core.prefilter(snapshot.embeddings, cue.vector, quota, subset).ids, dtype=np.int64)


def bm25(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Optional[Relevance] = None,
         params: Optional[MemoryParams] = None) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0 or not cue.text:
        return _EMPTY_ROWS
    scores = cue_lexical_scores(snapshot, cue, eligible)
    rows = np.flatnonzero(scores > 0)  # the rows sharing a term with the cue (Lucene scores are positive exactly then)
    return top_by_score(rows, scores[rows], quota)[0]


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


def _tier_z(snapshot: Snapshot, cue: Cue, stats: TierStatistics) -> np.ndarray:
    """The cue's memory-side z-score of every row of ``stats`` (the tenant's durable tier), once per recall.

    One matrix-vector product with the tier's own contiguous copy of its vectors (no gather from the
    store's rows); einsum's own loop, not a BLAS call: a multi-threaded BLAS gemv of a few thousand
    rows contends with the native legs' threads and costs 10-40x more.
    """
    held = cue.derived.get("tier_z")
    if held is not None and held[0] is stats:
        return held[1]
    cosine = np.einsum("ij,j->i", stats.vectors, cue.vector).astype(np.float64)
    z = stats.tier_z(cosine)
    cue.derived["tier_z"] = (stats, z, cosine)
    return z


def candidate_cosine(snapshot: Snapshot, cue: Cue, rows: np.ndarray) -> np.ndarray:
    """float64 cosine of the cue with each of ``rows`` (one tenant's), for the fused score's provenance.

    The recall has already taken the cosine of most candidates: the graph activation of its seeds
    (often these very rows), the tier z-scores of the tenant's durable rows (the protected tier is
    most of a default-mode union). Those are read back (the same rows times the same cue, the same
    einsum loop: the same bits); only the rest are multiplied here, einsum's own loop, not a BLAS
    gemv (a gemv of a few hundred rows wakes OpenBLAS's worker threads, which then spin on the
    cores the native legs run on).
    """
    held = cue.derived.get("cosine")
    if held is not None and held[0].size == rows.size and np.array_equal(held[0], rows):
        return held[1]
    tier = cue.derived.get("tier_z")
    if tier is None or rows.size == 0 or snapshot.tier_stats.get(int(snapshot.tenant_codes[rows[0]])) is not tier[0]:
        return np.einsum("ij,j->i", snapshot.embeddings[rows], cue.vector).astype(np.float64)
    stats, tier_cosine = tier[0], tier[2]
    position = np.minimum(np.searchsorted(stats.rows, rows), max(stats.rows.size - 1, 0))
    known = stats.rows[position] == rows if stats.rows.size else np.zeros(rows.size, dtype=bool)
    cosine = np.empty(rows.size)
    cosine[known] = tier_cosine[position[known]]
    rest = ~known
    cosine[rest] = np.einsum("ij,j->i", snapshot.embeddings[rows[rest]], cue.vector).astype(np.float64)
    return cosine


def by_cue_z(snapshot: Snapshot, cue: Cue, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Durable ``rows`` ordered by the cue's memory-side z-score (best first, ties -> lower row), and their z.

    A row without statistics (not in the tenant's durable tier) gets +inf, as in
    :meth:`.tier.TierStatistics.cue_z`; each row's z is elementwise, so it is looked up in the
    whole tier's z (:func:`_tier_z`, computed once per recall) rather than computed again.
    """
    rows = np.sort(np.asarray(rows, dtype=np.int64))
    if rows.size == 0 or cue.vector is None:
        return rows, np.full(rows.size, np.inf)
    # the importance generator orders the tier, then the reserved slots gate on the same rows
    held = cue.derived.get("by_cue_z")
    if held is not None and held[0] is snapshot and np.array_equal(held[1], rows):
        return held[2], held[3]
    stats = snapshot.tier_stats.get(int(snapshot.tenant_codes[rows[0]]))
    if stats is None or stats.rows.size == 0:
        z = np.full(rows.size, np.inf)
    else:
        position = np.minimum(np.searchsorted(stats.rows, rows), stats.rows.size - 1)
        known = stats.rows[position] == rows
        z = np.where(known, _tier_z(snapshot, cue, stats)[position], np.inf)
    order = np.lexsort((rows, -z))
    cue.derived["by_cue_z"] = (snapshot, rows, rows[order], z[order])
    return rows[order], z[order]


def protected_tier(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance,
                   params: MemoryParams) -> np.ndarray:
    """The durable eligible rows ordered for the cue: by memory-side z and by relevance, interleaved.

    Position 2i holds the i-th best by the cue's memory-side z-score (:mod:`._tier`: how unusual
    the cue's cosine is for that memory), 2i + 1 the i-th best by relevance (skipping rows already
    placed), so a durable memory that is close in meaning but shares no word with the cue (the
    truncation trap's victim) ranks as high as one the lexical half of the relevance likes.

    Both orders and the interleaving in one native call (``_core.memory_protected_order``; the
    tier's z from :func:`_tier_z`, numpy's einsum), equal to :func:`protected_tier_reference`; the
    order by z is kept for the reserved slots' gate (:func:`by_cue_z` reads it back).
    """
    candidates = eligible.derived(
        "durable", lambda: eligible.rows[durable_rows(snapshot, eligible.rows, params)])
    if candidates.size == 0:
        return _EMPTY_ROWS
    stats = None if cue.vector is None else snapshot.tier_stats.get(int(snapshot.tenant_codes[candidates[0]]))
    if stats is None or stats.rows.size == 0:
        tier_rows, tier_z = _EMPTY_ROWS, np.empty(0)
    else:
        tier_rows, tier_z = stats.rows, _tier_z(snapshot, cue, stats)
    merged, by_z, z = _core.memory_protected_order(candidates, core.by_row, tier_rows, tier_z)
    if cue.vector is not None:
        cue.derived["by_cue_z"] = (snapshot, candidates, by_z, z)
    return merged


def protected_tier_reference(snapshot: Snapshot, cue: Cue, eligible: Eligibility, core: Relevance,
                             params: MemoryParams) -> np.ndarray:
    """numpy formulation of :func:`protected_tier` (its reference in the parity tests)."""
    candidates = eligible.rows[durable_rows(snapshot, eligible.rows, params)]
    if candidates.size == 0:
        return _EMPTY_ROWS
    by_relevance = core.order_of(candidates)
    if by_relevance.size == 0:
        return _EMPTY_ROWS
    by_z, _ = by_cue_z(snapshot, cue, candidates)
    merged = np.empty(2 * by_relevance.size, dtype=np.int64)
    merged[0::2], merged[1::2] = by_z, by_relevance
    _, first = np.unique(merged, return_index=True)
    return merged[np.sort(first)]


def importance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int, core: Relevance,
               params: MemoryParams) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    return protected_tier(snapshot, cue, eligible, core, params)[:quota]


class LinkIndex:
    """The co-recall links (``{memory id: {neighbour id: weight}}``) as CSR arrays for vectorised lookups.

    A snapshot of the whole map (sorted memory ids, offsets, neighbour ids, weights) answers
    :meth:`linked` with one ``searchsorted`` and one gather; memories whose links changed since the
    snapshot (the store calls :meth:`touched` after each change, holding its lock) are read from
    the map itself, one at a time (a recall that reinforces changes only its hits' links). The
    snapshot is rebuilt when more than :data:`LINK_REBUILD_MIN` memories, or a quarter of them,
    changed, or when changes stopped (:data:`LINK_QUIET_LOOKUPS`). The store replaces a memory's dict whenever one of its links changes
    (copy-on-write), so a recall never sees a dict change under it.
    """

    def __init__(self, links: Mapping[int, Mapping[int, float]]) -> None:
        self.links = links
        self._rebuild_lock = threading.Lock()
        #: (ids with links, sorted; offsets; neighbour ids; weights; ids changed since, a set)
        self._state: Optional[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, set]] = None
        #: the changed-ids sets of the snapshots in use (each change is added to all of them)
        self._dirty_sets: tuple[set, ...] = ()
        #: lookups since the last change: once the links have been quiet for LINK_QUIET_LOOKUPS of
        #: them, a snapshot with changed memories is taken again (a heuristic: races only shift it)
        self._quiet = 0

    def touched(self, memory_ids) -> None:
        """The links of ``memory_ids`` changed (called by the store after the change, under its lock)."""
        for dirty in self._dirty_sets:
            dirty.update(memory_ids)
        self._quiet = 0

    def _fresh_enough(self, state) -> bool:
        if state is None:
            return False
        changed = len(state[4])
        return changed == 0 or (changed <= max(LINK_REBUILD_MIN, state[0].size // 4)
                                and self._quiet < LINK_QUIET_LOOKUPS)

    def _current(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, set]:
        self._quiet += 1
        state = self._state
        if self._fresh_enough(state):
            return state
        with self._rebuild_lock:
            state = self._state
            if self._fresh_enough(state):
                return state
            dirty: set = set()
            self._dirty_sets = self._dirty_sets + (dirty,)  # changes from now on are recorded in it ...
            copied = dict(self.links)  # ... so every change the copy misses is in it (one C-level copy)
            keys = np.fromiter((k for k, v in copied.items() if v), dtype=np.int64)
            keys.sort()
            maps = [copied[k] for k in keys.tolist()]
            sizes = np.fromiter((len(m) for m in maps), dtype=np.int64, count=len(maps))
            indptr = np.zeros(keys.size + 1, dtype=np.int64)
            np.cumsum(sizes, out=indptr[1:])
            total = int(indptr[-1])
            neighbours = np.fromiter((k for m in maps for k in m.keys()), dtype=np.int64, count=total)
            weights = np.fromiter((w for m in maps for w in m.values()), dtype=np.float64, count=total)
            state = self._state = (keys, indptr, neighbours, weights, dirty)
            self._dirty_sets = (dirty,)
            return state

    def linked(self, memory_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every link of the memories ``memory_ids`` (int64), flat: (position in ``memory_ids`` of the
        memory, neighbour id, weight), memory by memory in the order given, each memory's links in its
        dict's order."""
        memory_ids = np.asarray(memory_ids, dtype=np.int64)
        if memory_ids.size == 0 or not self.links:
            return _EMPTY_ROWS, _EMPTY_ROWS, np.empty(0)
        keys, indptr, neighbours, weights, dirty = self._current()
        changed = np.zeros(memory_ids.size, dtype=bool)
        if dirty:
            changed = np.isin(memory_ids, np.fromiter(list(dirty), dtype=np.int64))
        if keys.size:
            at = np.minimum(np.searchsorted(keys, memory_ids), keys.size - 1)
            found = (keys[at] == memory_ids) & ~changed
        else:
            at, found = np.zeros(memory_ids.size, dtype=np.int64), np.zeros(memory_ids.size, dtype=bool)
        starts = np.where(found, indptr[at], 0)
        ends = np.where(found, indptr[np.minimum(at + 1, indptr.size - 1)], 0)
        if not changed.any():
            flat, lengths = _ranges(starts, ends)
            return np.repeat(np.arange(memory_ids.size, dtype=np.int64), lengths), neighbours[flat], weights[flat]
        # memories changed since the snapshot: their current dicts, then every link back in memory order
        # (a stable sort: each memory's links stay in its dict's order, as the sums downstream read them)
        found &= ~changed
        flat, lengths = _ranges(np.where(found, starts, 0), np.where(found, ends, 0))
        parts_pos = [np.repeat(np.arange(memory_ids.size, dtype=np.int64), lengths)]
        parts_ids, parts_w = [neighbours[flat]], [weights[flat]]
        links_get = self.links.get
        for position in np.flatnonzero(changed).tolist():  # the few memories changed since the snapshot
            current = links_get(int(memory_ids[position]))
            if current:
                parts_pos.append(np.full(len(current), position, dtype=np.int64))
                parts_ids.append(np.fromiter(current.keys(), dtype=np.int64, count=len(current)))
                parts_w.append(np.fromiter(current.values(), dtype=np.float64, count=len(current)))
        positions = np.concatenate(parts_pos)
        order = np.argsort(positions, kind="stable")
        return positions[order], np.concatenate(parts_ids)[order], np.concatenate(parts_w)[order]


#: :class:`LinkIndex` rebuilds its snapshot once more than this many memories (or a quarter of
#: those with links) changed since it was taken, ...
LINK_REBUILD_MIN = 64
#: ... or when some changed and the links then stayed unchanged for this many lookups (recalls
#: without reinforcement read a current snapshot, with no per-memory reads).
LINK_QUIET_LOOKUPS = 8


def _ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated ``arange(start, end)`` of every pair (as one array) and each range's length."""
    lengths = np.maximum(ends - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return _EMPTY_ROWS, lengths
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(total, dtype=np.int64) + offsets, lengths


def entity_terms(snapshot: Snapshot, seeds: np.ndarray, seed_weight: np.ndarray, cue_entities: frozenset,
                 params: MemoryParams) -> tuple[np.ndarray, np.ndarray]:
    """The entity terms of graph activation as (target rows, weights), vectorised over the seeds.

    ``seed_weight``: each seed's spreading weight (0: spreads nothing). By the module formula a
    target T gets ``entity_weight · w_s`` for every seed s ≠ T and every entity they share, and
    ``cue_entity_weight`` per cue entity it carries, each entity reaching its ``entity_fanout``
    most recent rows. Grouped by entity, that is one weight per entity,
    ``A_e = entity_weight · Σ_{s carries e} w_s + cue_entity_weight · [e ∈ cue]``, given to every row
    of e's window, minus the target's own seed weight (s ≠ T): the work is one pass over the
    seeds' entity codes and one over the active entities' windows (CSR postings,
    :meth:`.columns.Generation.entity_postings`), with no Python loop over seeds or postings.
    """
    generation = snapshot.generation
    n = snapshot.n
    postings = generation.entity_postings(n)
    n_entities = postings.indptr.size - 1
    if n_entities == 0:
        return _EMPTY_ROWS, np.empty(0)
    ew = float(params.entity_weight)
    per_entity = np.zeros(n_entities)
    own = None
    spreading = np.flatnonzero(seed_weight > 0.0) if ew > 0 else _EMPTY_ROWS
    if spreading.size:
        spread_rows = seeds[spreading]
        ptr = generation.entity_ptr.buffer
        at, counts = _ranges(ptr[spread_rows], ptr[spread_rows + 1])
        if at.size:
            codes = generation.entity_codes.buffer[at]
            per_entity += np.bincount(codes, weights=np.repeat(ew * seed_weight[spreading], counts),
                                      minlength=n_entities)
            own = np.zeros(n)  # each seed's own share, taken off its own entities' terms (s ≠ T)
            own[spread_rows] = ew * seed_weight[spreading]
    if params.cue_entity_weight > 0 and cue_entities:
        code_of = generation.entity_code
        for entity in cue_entities:  # the cue's few labels
            code = code_of.get(entity)
            if code is not None and code < n_entities:
                per_entity[code] += params.cue_entity_weight
    active = np.flatnonzero(per_entity > 0.0)
    if active.size == 0:
        return _EMPTY_ROWS, np.empty(0)
    ends = postings.indptr[active + 1]
    starts = np.maximum(postings.indptr[active], ends - params.entity_fanout)
    at, lengths = _ranges(starts, ends)
    targets = postings.rows[at]
    weights = np.repeat(per_entity[active], lengths)
    if own is not None:
        # a target that is itself a spreading seed carries the entity: its own term leaves the sum
        # (exact when it is the entity's only spreader: x − x = 0); never below 0 by rounding
        weights = np.maximum(weights - own[targets], 0.0)
    return targets, weights


def graph_activation(
    snapshot: Snapshot,
    cue: Cue,
    eligible: Eligibility,
    seeds: np.ndarray,
    params: MemoryParams,
    links: "Mapping[int, Mapping[int, float]] | LinkIndex",
    within: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sparse activation (sorted rows, values) over eligible rows; see the module formula.

    ``within`` (sorted rows): only their activation is wanted (a mode without the ``graph``
    generator reads the activation of its own candidates alone). Every row's activation is
    computed the same way whichever rows are wanted (entity terms per entity, :func:`entity_terms`;
    link terms in one vectorised step; one ``bincount``), so a row's activation is the same either way.
    """
    index = links if isinstance(links, LinkIndex) else LinkIndex(links)
    target_parts: list[np.ndarray] = []
    weight_parts: list[np.ndarray] = []
    # Only seeds with an entity (when entities count) or a co-recall link, at a positive weight
    # (cosine > 0), can spread activation: the links of those seeds are looked up in one pass
    # (positions among the seeds).
    entity_seeds = snapshot.has_entities[seeds] if params.entity_weight > 0 else np.zeros(seeds.size, dtype=bool)
    cosine = None
    # every link of the seeds that can spread, flat: (position among the seeds, neighbour id, weight)
    link_at, link_ids, link_weights = _EMPTY_ROWS, _EMPTY_ROWS, np.empty(0)
    if index.links and seeds.size:
        if cue.vector is None:  # keyword recall on text alone: every admitted seed counts fully
            link_at, link_ids, link_weights = index.linked(snapshot.ids[seeds])
        else:
            cosine = _seed_cosine(snapshot, cue, seeds)
            reaching = np.flatnonzero(cosine > 0.0)
            found, link_ids, link_weights = index.linked(snapshot.ids[seeds[reaching]])
            link_at = reaching[found]
    spreading = entity_seeds.copy()
    spreading[link_at] = True
    weight_of_seed = np.zeros(seeds.size)
    if spreading.any():
        if cue.vector is None:
            weight_of_seed = np.where(spreading, 1.0, 0.0)
        else:
            if cosine is None:
                cosine = _seed_cosine(snapshot, cue, seeds)
            weight_of_seed = np.where(spreading, np.maximum(cosine, 0.0), 0.0)
        positive = weight_of_seed[link_at] > 0.0  # a seed at cosine <= 0 spreads nothing
        if not positive.all():
            link_at, link_ids, link_weights = link_at[positive], link_ids[positive], link_weights[positive]
    if params.entity_weight > 0 or (params.cue_entity_weight > 0 and cue.entities):
        targets, weights = entity_terms(snapshot, seeds, np.where(entity_seeds, weight_of_seed, 0.0),
                                        cue.entities, params)
        target_parts.append(targets)
        weight_parts.append(weights)
    if link_at.size:
        # Every link term in one step: neighbour ids to rows of the snapshot, weight × the seed's weight.
        rows = _rows_of_ids(snapshot, link_ids, within)
        keep = (rows >= 0) & (rows != seeds[link_at])
        target_parts.append(rows[keep])
        weight_parts.append((weight_of_seed[link_at] * link_weights)[keep])
    if not target_parts:
        return _EMPTY_ROWS, np.empty(0)
    targets, weights = np.concatenate(target_parts), np.concatenate(weight_parts)
    allowed = eligible.mask[targets] & (weights > 0.0)
    if within is not None and within.size:
        wanted = np.zeros(eligible.mask.size, dtype=bool)  # a table, not a search per target
        wanted[within] = True
        allowed &= wanted[targets]
    elif within is not None:
        allowed[:] = False
    targets, weights = targets[allowed], weights[allowed]
    if targets.size == 0:
        return _EMPTY_ROWS, np.empty(0)
    n = eligible.mask.size
    present = np.zeros(n, dtype=bool)
    present[targets] = True
    rows = np.flatnonzero(present)
    return rows, np.bincount(targets, weights=weights, minlength=n)[rows]


def _seed_cosine(snapshot: Snapshot, cue: Cue, seeds: np.ndarray) -> np.ndarray:
    """The cosine of the cue with each seed (:func:`candidate_cosine`), kept for the recall."""
    cosine = candidate_cosine(snapshot, cue, seeds)
    cue.derived["cosine"] = (seeds, cosine)
    return cosine


#: :func:`_rows_of_ids` maps ids through a table of ``max id + 1`` entries while that is at most
#: this many times the snapshot's rows (plus the floor below); sparser ids take a sorted search.
_ID_TABLE_ROWS_FACTOR = 4
_ID_TABLE_MIN = 4096


def _rows_of_ids(snapshot: Snapshot, ids: np.ndarray, within: Optional[np.ndarray]) -> np.ndarray:
    """The snapshot's row of each memory id (-1: none, or with ``within``, none among those rows)."""
    if within is not None:
        if within.size == 0:
            return np.full(ids.size, -1, dtype=np.int64)
        within_ids = snapshot.ids[within]
        top = int(within_ids.max())
        if top <= _ID_TABLE_ROWS_FACTOR * snapshot.n + _ID_TABLE_MIN:
            # a table over ids: one gather per id, where a binary search per (unsorted) id costs 10x more
            row_of_id = np.full(top + 1, -1, dtype=np.int64)
            row_of_id[within_ids] = within
            rows = np.full(ids.size, -1, dtype=np.int64)
            known = (ids >= 0) & (ids <= top)
            rows[known] = row_of_id[ids[known]]
            return rows
        by_id = np.argsort(within_ids)
        sorted_ids = within_ids[by_id]
        at = np.minimum(np.searchsorted(sorted_ids, ids), sorted_ids.size - 1)
        return np.where(sorted_ids[at] == ids, within[by_id[at]], -1)
    table = _live_row_of_id(snapshot)
    if table is None:  # ids too sparse for a table: the dict, id by id
        row_of, n = snapshot.generation.row_of.get, snapshot.n
        rows = np.fromiter((row_of(i, -1) for i in ids.tolist()), dtype=np.int64, count=ids.size)
        rows[rows >= n] = -1
        return rows
    rows = np.full(ids.size, -1, dtype=np.int64)
    known = (ids >= 0) & (ids < table.size)
    rows[known] = table[ids[known]]
    return rows


def _live_row_of_id(snapshot: Snapshot) -> Optional[np.ndarray]:
    """id -> row of its live version in the snapshot (-1: none), as a table over ids, built once
    per (row count, live version); None when the ids are too sparse for a table."""
    def build() -> Optional[np.ndarray]:
        live_rows = np.flatnonzero(snapshot.live)
        if live_rows.size == 0:
            return frozen(np.full(0, -1, dtype=np.int64))
        live_ids = snapshot.ids[live_rows]
        top = int(live_ids.max())
        if top > _ID_TABLE_ROWS_FACTOR * snapshot.n + _ID_TABLE_MIN:
            return None
        table = np.full(top + 1, -1, dtype=np.int64)
        table[live_ids] = live_rows
        return frozen(table)

    return snapshot.generation.derived.get_or_compute("live_row_of_id", (snapshot.n, snapshot.live_version), build)


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
    # Without the graph generator only the candidates' own activation is read (their G factor);
    # the replacement of a superseded candidate joins them later, so then every row is computed.
    only_seeds = "graph" not in generators and not (snapshot.superseded_by[seeds] != NO_MEMORY).any()
    rows, activation = graph_activation(snapshot, cue, eligible, seeds, params, links,
                                        within=seeds if only_seeds else None)
    admissions.activation_rows, admissions.activation = rows, activation
    if "graph" in generators:
        quota = params.quota("graph")
        fresh = ~np.isin(rows, seeds) & (activation > 0)
        admitted = top_by_score(rows[fresh], activation[fresh], quota)[0] if quota else _EMPTY_ROWS
        admissions.by_generator["graph"] = admitted
    admissions.final_union = admissions.union() if "graph" in admissions.by_generator else seeds
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
        # the dense generator's own cosines and tie rule over every eligible row (a cosine taken any
        # other way can order near-ties differently from the admissions)
        if core.cosines is not None:
            return _rank_among(rows, core.cosines, row)
        subset = None if eligible.all_rows else rows
        ordered = np.asarray(_core.prefilter(snapshot.embeddings, cue.vector, rows.size, subset).ids, dtype=np.int64)
        position = np.flatnonzero(ordered == row)
        return int(position[0]) + 1 if position.size else None
    if name == "bm25":
        if not cue.text:
            return None
        scores = cue_lexical_scores(snapshot, cue, eligible)  # the recall's own scores (its trace)
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
