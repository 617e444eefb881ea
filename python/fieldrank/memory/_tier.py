"""The protected tier's cue statistics: how unusual a cue is *for each durable memory*.

A durable memory that shares no word with its cue (the truncation trap's victim) can only be
related to the cue through its embedding. Raw cosine is a poor guide among durable memories: a
generic conversational turn ("Thanks! Do you have plans for the weekend?") is close to almost
every cue (a *hub* of the embedding space), while a specific rule ("Never deploy to production
on Fridays") is far from most of them, so a cue about deploying that reaches cosine 0.35 to the
rule is far more telling than the same 0.35 to the hub. The store therefore orders the durable
tier for a cue by the cue's cosine *standardised by the memory's own cosine distribution over the
tenant's memories* (a memory-side z-score, the standard hubness correction of nearest-neighbour
retrieval; Radovanović et al. 2010, Schnitzer et al. 2012)::

    z_T(q) = (cos(q, T) − μ_T) / σ_T,   μ_T, σ_T = mean and spread of cos(x, T) over the tenant's
                                         other live memories x

The tenant's memories stand in for the cues it will see (an agent's cues come from the same
conversation as its memories). The statistics are exact, not sampled: every durable row keeps
Σ cos and Σ cos² against the tenant's other live rows, updated on every add (O(D·d) per added
row, D the tenant's durable rows) and forget, and computed once against all of them when the
durable row is added (O(N·d)). A :class:`TierStatistics` is immutable: a write replaces it, so
a recall reads one consistent object without a lock.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

__all__ = ["TierStatistics", "added", "removed"]

#: Rows multiplied at once when updating or computing the sums (bounds the D × rows temporary).
CHUNK_ROWS = 16384
#: Reference memories a durable memory needs before its z-score is defined; below it (a store of a
#: few memories, where nothing is truncated anyway) every durable memory gets z = +inf.
MIN_REFERENCE_ROWS = 2

_EMPTY_ROWS = np.empty(0, dtype=np.int64)


@dataclass(frozen=True)
class TierStatistics:
    """Cosine sums of one tenant's durable rows against the tenant's other live rows.

    ``rows`` are the tenant's live durable rows (sorted) and ``vectors`` their embeddings (a
    contiguous copy, so an add multiplies by it without gathering rows); ``total[i]`` and
    ``total_sq[i]`` are Σ cos and Σ cos² of ``rows[i]`` against the ``count − 1`` other live rows
    of the tenant.
    """

    rows: np.ndarray
    vectors: np.ndarray
    total: np.ndarray
    total_sq: np.ndarray
    count: int

    @classmethod
    def empty(cls, dim: int) -> TierStatistics:
        return cls(_EMPTY_ROWS, np.empty((0, dim), dtype=np.float32), np.empty(0), np.empty(0), 0)

    @cached_property
    def moments(self) -> tuple[np.ndarray, np.ndarray]:
        """Mean and spread of each durable row's cosines to the tenant's other rows (derived once per object)."""
        reference = self.count - 1
        mean = self.total / reference
        spread = np.sqrt(np.maximum(self.total_sq / reference - mean * mean, 0.0))
        return mean, spread

    def cue_z(self, rows: np.ndarray, cosine: np.ndarray) -> np.ndarray:
        """Memory-side z-score of each of ``rows`` (durable rows of this tenant) for a cue with ``cosine``.

        A row without statistics (not durable, or a tenant below :data:`MIN_REFERENCE_ROWS`
        reference rows) or with zero spread gets +inf when its cosine exceeds its mean, else 0.
        """
        rows = np.asarray(rows, dtype=np.int64)
        cosine = np.asarray(cosine, dtype=np.float64)
        out = np.full(rows.size, np.inf)
        if rows.size == 0 or self.count - 1 < MIN_REFERENCE_ROWS or self.rows.size == 0:
            return out
        position = np.minimum(np.searchsorted(self.rows, rows), self.rows.size - 1)
        known = self.rows[position] == rows
        z = self._z(cosine, position)
        out[known] = z[known]
        return out

    def tier_z(self, cosine: np.ndarray) -> np.ndarray:
        """:meth:`cue_z` of every row of the tier (``cosine`` per row of :attr:`rows`), without the lookup."""
        cosine = np.asarray(cosine, dtype=np.float64)
        if self.count - 1 < MIN_REFERENCE_ROWS or self.rows.size == 0:
            return np.full(cosine.size, np.inf)
        return self._z(cosine, None)

    def _z(self, cosine: np.ndarray, position) -> np.ndarray:
        mean, spread = self.moments
        if position is not None:
            mean, spread = mean[position], spread[position]
        elif not self.any_flat:  # no zero spread in the tier: nothing to patch
            return (cosine - mean) / spread
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (cosine - mean) / spread
        flat = spread == 0.0
        z[flat] = np.where(cosine[flat] > mean[flat], np.inf, 0.0)
        return z

    @cached_property
    def any_flat(self) -> bool:
        """Whether some durable row has zero spread (its z is then patched: +inf or 0)."""
        return bool((self.moments[1] == 0.0).any())


def _sums(products: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Σ and Σ² per column of an (other rows × durable rows) block of cosines, accumulated in float64."""
    products = products.astype(np.float64)
    return products.sum(axis=0), np.einsum("ij,ij->j", products, products)


def _sums_against(durable: np.ndarray, embeddings: np.ndarray, rows: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Σ and Σ² of the cosines of each ``durable`` vector with the embeddings of ``rows`` (sorted, < ``n``).

    When ``rows`` cover most of ``[0, n)`` the products are taken over that contiguous block (no
    gather of the rows) and the other rows' columns dropped; otherwise the rows are gathered in
    chunks of :data:`CHUNK_ROWS`.
    """
    total = np.zeros(durable.shape[0])
    total_sq = np.zeros(durable.shape[0])
    if durable.shape[0] == 0 or rows.size == 0:
        return total, total_sq
    contiguous = 2 * rows.size >= n
    for start in range(0, rows.size, CHUNK_ROWS):
        chunk = rows[start:start + CHUNK_ROWS]
        if contiguous:
            low, high = int(chunk[0]), int(chunk[-1]) + 1
            products = (embeddings[low:high] @ durable.T)[chunk - low]
        else:
            products = embeddings[chunk] @ durable.T
        part, part_sq = _sums(products)
        total += part
        total_sq += part_sq
    return total, total_sq


def added(stats: TierStatistics, embeddings: np.ndarray, live_rows, new_rows: np.ndarray,
          new_durable: np.ndarray) -> TierStatistics:
    """The statistics after ``new_rows`` joined the tenant (already live).

    ``embeddings`` holds every row (at least up to the new ones); ``live_rows()`` returns the
    tenant's live rows including the new ones (called only when a new row is durable);
    ``new_durable`` (bool per new row) marks the durable ones.
    """
    new_rows = np.asarray(new_rows, dtype=np.int64)
    total, total_sq = stats.total, stats.total_sq
    if stats.rows.size:
        increment, increment_sq = _sums_against(stats.vectors, embeddings, new_rows, int(new_rows[-1]) + 1)
        total, total_sq = total + increment, total_sq + increment_sq
    durable_rows = new_rows[np.asarray(new_durable, dtype=bool)]
    rows, vectors = stats.rows, stats.vectors
    if durable_rows.size:
        fresh = np.ascontiguousarray(embeddings[durable_rows])
        reference = live_rows()
        new_total, new_sq = _sums_against(fresh, embeddings, reference, int(reference[-1]) + 1)
        self_cos = np.einsum("ij,ij->i", fresh, fresh).astype(np.float64)  # each row against itself
        rows = np.concatenate([rows, durable_rows])  # new rows come after every existing row: still sorted
        vectors = np.concatenate([vectors, fresh])
        total = np.concatenate([total, new_total - self_cos])
        total_sq = np.concatenate([total_sq, new_sq - self_cos * self_cos])
    return TierStatistics(rows, vectors, total, total_sq, stats.count + int(new_rows.size))


def removed(stats: TierStatistics, embeddings: np.ndarray, row: int) -> TierStatistics:
    """The statistics after the live ``row`` of this tenant was forgotten."""
    keep = stats.rows != row
    rows, vectors, total, total_sq = stats.rows, stats.vectors, stats.total, stats.total_sq
    if not keep.all():
        rows, vectors, total, total_sq = rows[keep], vectors[keep], total[keep], total_sq[keep]
    if rows.size:
        products = (vectors @ embeddings[row]).astype(np.float64)
        total, total_sq = total - products, total_sq - products * products
    return TierStatistics(rows, vectors, total, total_sq, stats.count - 1)
