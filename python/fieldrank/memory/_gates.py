"""Hard gates (SPEC §8 step 2): tombstone, tenant, tier mask, required tags, valence window,
minimum importance.

The gates are applied twice, with the same definitions:

1. **pushed down**: :func:`eligible_rows` computes the rows that pass every gate (vectorised
   over the tenant's rows) and every generator searches only those, so no quota is spent on a
   memory that could never be returned, and another tenant's rows are never even scored. With
   the tenant gate alone (the common recall) the result is memoised per generation, keyed by the
   tenant, the row count and the live mask's version, together with what the recall derives from
   those rows alone (:attr:`Eligibility.memo`);
2. **on the union**: :func:`failed_gates` re-checks each candidate of the union (a small set)
   before scoring; this is the check :meth:`MemoryStore.why_not` reports from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np

from ._columns import TIER_CODE, Snapshot, frozen
from ._schema import GATES, TIERS

__all__ = ["GATES", "Eligibility", "GateSpec", "eligible_rows", "failed_gates", "passes_union_gates"]


@dataclass(frozen=True)
class GateSpec:
    """The gates of one recall (None: gate off)."""

    tenant: str
    tier_mask: Optional[frozenset[str]] = None
    required_tags: frozenset[str] = frozenset()
    valence_window: Optional[tuple[float, float]] = None
    min_importance: Optional[float] = None

    def tier_lookup(self) -> np.ndarray:
        """Boolean table indexed by tier code: True where the tier is allowed."""
        allowed = np.ones(len(TIERS), dtype=bool)
        if self.tier_mask is not None:
            allowed[:] = False
            for tier in self.tier_mask:
                allowed[TIER_CODE[tier]] = True
        return allowed


@dataclass(frozen=True)
class Eligibility:
    """Rows that pass every gate: sorted int64 ``rows`` and the same set as a mask over ``[0, n)``."""

    rows: np.ndarray
    mask: np.ndarray
    #: True when ``rows`` is every row ``0..n-1`` (the dense generator then needs no ``subset``).
    all_rows: bool
    #: Values derived from these rows and the columns that never change for a row (durable rows,
    #: day span, cosine sample), computed once per eligibility (see :meth:`derived`).
    memo: dict = field(default_factory=dict, compare=False, repr=False)

    def derived(self, name: str, compute: Callable[[], Any]) -> Any:
        """``memo[name]``, computed by ``compute()`` on first use (a racing recall may compute it twice, equal)."""
        value = self.memo.get(name)
        if value is None:
            value = self.memo[name] = compute()
        return value


def eligible_rows(snapshot: Snapshot, gates: GateSpec) -> Eligibility:
    """Rows of ``gates.tenant`` that are live and pass every gate. O(tenant rows), no Python loops.

    With no gate but the tenant the answer (read-only arrays) is shared by every recall of the same
    tenant, row count and live mask (see the module notes).
    """
    if (gates.tier_mask is None and not gates.required_tags and gates.valence_window is None
            and gates.min_importance is None):
        version = (snapshot.n, snapshot.live_version)
        return snapshot.generation.derived.get_or_compute(("eligible", gates.tenant), version,
                                                          lambda: _frozen(_eligible_rows(snapshot, gates)))
    return _eligible_rows(snapshot, gates)


def _frozen(eligibility: Eligibility) -> Eligibility:
    frozen(eligibility.rows)
    frozen(eligibility.mask)
    return eligibility


def _eligible_rows(snapshot: Snapshot, gates: GateSpec) -> Eligibility:
    n = snapshot.n
    code = snapshot.tenant_code(gates.tenant)
    if code is None:
        rows = np.empty(0, dtype=np.int64)
    else:
        rows = snapshot.posting(snapshot.generation.tenant_rows, code)
        rows = rows[snapshot.live[rows]]
    if rows.size and gates.tier_mask is not None:
        rows = rows[gates.tier_lookup()[snapshot.tier_codes[rows]]]
    if rows.size and gates.valence_window is not None:
        low, high = gates.valence_window
        valence = snapshot.valence[rows]
        rows = rows[(valence >= low) & (valence <= high)]
    if rows.size and gates.min_importance is not None:
        rows = rows[snapshot.importance[rows] >= gates.min_importance]
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    for tag in gates.required_tags:
        if not rows.size:
            break
        tagged = np.zeros(n, dtype=bool)
        tagged[snapshot.posting(snapshot.generation.tag_index, tag)] = True
        mask &= tagged
        rows = rows[tagged[rows]]
    return Eligibility(rows=rows, mask=mask, all_rows=rows.size == n)


def failed_gates(snapshot: Snapshot, row: int, gates: GateSpec) -> tuple[str, ...]:
    """The gates (names from :data:`GATES`, in that order) that ``row`` fails."""
    failed = []
    if not snapshot.live[row]:
        failed.append("tombstone")
    if snapshot.tenant_of(row) != gates.tenant:
        failed.append("tenant")
    if gates.tier_mask is not None and snapshot.tier_of(row) not in gates.tier_mask:
        failed.append("tier")
    if gates.required_tags and not gates.required_tags <= set(snapshot.generation.tags[row]):
        failed.append("required_tags")
    if gates.valence_window is not None:
        low, high = gates.valence_window
        if not low <= snapshot.valence[row] <= high:
            failed.append("valence_window")
    if gates.min_importance is not None and snapshot.importance[row] < gates.min_importance:
        failed.append("min_importance")
    return tuple(failed)


def passes_union_gates(snapshot: Snapshot, rows: np.ndarray, gates: GateSpec) -> np.ndarray:
    """Vectorised re-check of every gate over the union ``rows``; True where a row passes."""
    if rows.size == 0:
        return np.zeros(0, dtype=bool)
    code = snapshot.tenant_code(gates.tenant)
    keep = snapshot.live[rows] & (snapshot.tenant_codes[rows] == (-1 if code is None else code))
    if gates.tier_mask is not None:  # no mask: every tier is allowed
        keep &= gates.tier_lookup()[snapshot.tier_codes[rows]]
    if gates.valence_window is not None:
        low, high = gates.valence_window
        keep &= (snapshot.valence[rows] >= low) & (snapshot.valence[rows] <= high)
    if gates.min_importance is not None:
        keep &= snapshot.importance[rows] >= gates.min_importance
    if gates.required_tags:
        tags = snapshot.generation.tags
        keep &= np.fromiter((gates.required_tags <= set(tags[r]) for r in rows.tolist()), dtype=bool, count=rows.size)
    return keep
