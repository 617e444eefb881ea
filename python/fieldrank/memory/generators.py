"""Candidate generators (SPEC §8 step 1): each signal admits up to its own quota, independently.

Every generator searches only the eligible rows (see :mod:`.gates`) and returns rows best first.
They never see each other's output, except ``graph``, which by definition expands the union of
the others; its quota is its own, and it admits only rows the others did not, so no generator
can consume another's budget. :class:`Admissions` records which generators admitted each row
and at which 1-based rank.

======================  ==========================================================================
generator               admits (best first; every tie -> lower row, i.e. older insertion, first)
======================  ==========================================================================
``dense``               cosine top-``dense_quota`` (the native :func:`fieldrank.prefilter`)
``bm25``                BM25 top-``bm25_quota`` among rows sharing a term with the cue text
``tag``                 rows carrying a cue tag, by containment |cue ∩ tags| / |cue| then newest
``temporal``            rows created nearest the cue time (``cue_time``, default ``at_time``)
``importance``          rows of highest importance (durable constraints)
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

from dataclasses import dataclass, field
from typing import Mapping, Optional

import numpy as np

from ..operators import prefilter
from .columns import Snapshot
from .gates import Eligibility
from .lexical import top_by_score
from .params import MemoryParams
from .schema import GENERATORS

__all__ = ["Admissions", "Cue", "generate"]

_EMPTY_ROWS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class Cue:
    """Everything a recall knows about its cue."""

    text: Optional[str]
    vector: np.ndarray
    tags: frozenset[str]
    entities: frozenset[str]
    valence: Optional[float]
    time: float
    at_time: float


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


def dense(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    subset = None if eligible.all_rows else eligible.rows
    return prefilter(snapshot.embeddings, cue.vector, quota, subset=subset).ids


def bm25(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0 or not cue.text:
        return _EMPTY_ROWS
    generation = snapshot.generation
    rows, _ = generation.lexical.top(generation.texts, cue.text, quota, eligible.mask)
    return rows


def tag(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0 or not cue.tags:
        return _EMPTY_ROWS
    index = snapshot.generation.tag_index
    postings = [snapshot.posting(index, label) for label in sorted(cue.tags)]
    rows, shared = np.unique(np.concatenate(postings), return_counts=True)
    keep = eligible.mask[rows]
    rows, shared = rows[keep], shared[keep]
    order = np.lexsort((rows, -snapshot.created_at[rows], -shared))
    return rows[order[:quota]]


def temporal(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    rows = eligible.rows
    with np.errstate(over="ignore"):  # times 1e308 apart: -inf, the farthest (accepted extremes)
        closeness = -np.abs(snapshot.created_at[rows] - cue.time)
    return top_by_score(rows, closeness, quota)[0]


def importance(snapshot: Snapshot, cue: Cue, eligible: Eligibility, quota: int) -> np.ndarray:
    if quota == 0 or eligible.rows.size == 0:
        return _EMPTY_ROWS
    rows = eligible.rows
    return top_by_score(rows, snapshot.importance[rows], quota)[0]


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
) -> Admissions:
    """Run ``generators`` (each within its quota) and compute the graph activation of the union."""
    admissions = Admissions()
    for name in generators:
        if name in _INDEPENDENT:
            admissions.by_generator[name] = _INDEPENDENT[name](snapshot, cue, eligible, params.quota(name))
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
) -> Optional[int]:
    """The rank ``row`` has in generator ``name``'s full ordering of the eligible rows.

    None when the generator cannot admit it at any quota (no term overlap, no cue tag, no graph
    activation, or not eligible). Vectorised over the eligible rows; used by ``why_not`` only.
    """
    if not eligible.mask[row]:
        return None
    rows = eligible.rows
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
        return _rank_among(rows, snapshot.importance[rows], row)
    if name == "graph":
        seeds = np.unique(np.concatenate([admissions.by_generator.get(g, _EMPTY_ROWS)
                                          for g in _INDEPENDENT] + [_EMPTY_ROWS]))
        fresh = ~np.isin(admissions.activation_rows, seeds) & (admissions.activation > 0)
        return _rank_among(admissions.activation_rows[fresh], admissions.activation[fresh], row)
    msg = f"unknown generator {name!r}; expected one of {GENERATORS}"
    raise ValueError(msg)
