"""Cosines of a recall's cue with memories, taken once per recall and read back (:attr:`Cue.derived`).

The protected tier's memory-side z-scores (:mod:`._tier`), the order of durable rows by them,
and the cosine of any candidate (the graph's seeds, the hits' provenance) come from the same
products, so every reader of a cosine sees the same bits.
"""

from __future__ import annotations

import numpy as np

from ._columns import Snapshot
from ._params import MemoryParams
from ._query import Cue
from ._schema import TIERS
from ._tier import TierStatistics

__all__ = ["CORE_TIER_CODE", "by_cue_z", "candidate_cosine", "cue_tier_z", "durable_rows"]

CORE_TIER_CODE = TIERS.index("core")


def durable_rows(snapshot: Snapshot, rows: np.ndarray, params: MemoryParams) -> np.ndarray:
    """bool per row: durable (importance >= ``durable_importance`` or tier ``core``)."""
    return (snapshot.importance[rows] >= params.durable_importance) | (snapshot.tier_codes[rows] == CORE_TIER_CODE)


def cue_tier_z(snapshot: Snapshot, cue: Cue, stats: TierStatistics) -> np.ndarray:
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
    whole tier's z (:func:`cue_tier_z`, computed once per recall) rather than computed again.
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
        z = np.where(known, cue_tier_z(snapshot, cue, stats)[position], np.inf)
    order = np.lexsort((rows, -z))
    cue.derived["by_cue_z"] = (snapshot, rows, rows[order], z[order])
    return rows[order], z[order]
