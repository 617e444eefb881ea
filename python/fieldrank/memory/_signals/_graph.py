"""Graph activation (the ``graph`` generator and the G factor), spread one hop from a recall's seeds.

Graph activation of a row T, spread one hop from the seed rows (the union of the other
generators) and from the cue's entities::

    a(T) = Σ_{seed s ≠ T} max(cos(q, s), 0) · (entity_weight · |E(s) ∩ E(T)| + w_hebb(s, T))
         + cue_entity_weight · |E(cue) ∩ E(T)|

``w_hebb`` are the co-recall links (strengthened when memories are returned together,
:mod:`._links`). Each entity contributes at most its ``entity_fanout`` most recent rows (hub
entities stay cheap; :func:`._entities.entity_terms`).
"""

from __future__ import annotations

from typing import Mapping, Optional

import numpy as np

from .._columns import EMPTY_ROWS, Snapshot, frozen
from .._gates import Eligibility
from .._params import MemoryParams
from .._query import Cue
from .._similarity import candidate_cosine
from ._entities import entity_terms
from ._links import LinkIndex

__all__ = ["graph_activation"]


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
    link_at, link_ids, link_weights = EMPTY_ROWS, EMPTY_ROWS, np.empty(0)
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
        return EMPTY_ROWS, np.empty(0)
    return _summed(np.concatenate(target_parts), np.concatenate(weight_parts), eligible, within)


def _summed(targets: np.ndarray, weights: np.ndarray, eligible: Eligibility,
            within: Optional[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Every term summed per target row (eligible, positive, among ``within`` when given), sparse."""
    allowed = eligible.mask[targets] & (weights > 0.0)
    if within is not None and within.size:
        wanted = np.zeros(eligible.mask.size, dtype=bool)  # a table, not a search per target
        wanted[within] = True
        allowed &= wanted[targets]
    elif within is not None:
        allowed[:] = False
    targets, weights = targets[allowed], weights[allowed]
    if targets.size == 0:
        return EMPTY_ROWS, np.empty(0)
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
