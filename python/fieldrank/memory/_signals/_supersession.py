"""The supersession signal: a memory replaced by a newer one ("Orion now uses Postgres 16") ranks below it.

A superseded candidate brings its replacement into the union (:func:`with_replacements`), and
its fused score is capped below the replacement's (:func:`rank_superseded_below_replacements`).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._columns import NO_MEMORY, Generation, Snapshot
from .._scoring import FactorArrays, with_score

__all__ = ["rank_superseded_below_replacements", "stale_rows_of", "with_replacements"]


def with_replacements(snapshot: Snapshot, union: np.ndarray, eligible: np.ndarray) -> np.ndarray:
    """The union plus the eligible replacement of every superseded candidate (so it can outrank it)."""
    replaced_by = snapshot.superseded_by[union]
    stale = replaced_by != NO_MEMORY
    if not stale.any():
        return union
    extra = [row for row in (snapshot.row_of(int(i)) for i in replaced_by[stale].tolist())
             if row is not None and eligible[row]]
    return np.unique(np.concatenate([union, np.asarray(extra, dtype=np.int64)])) if extra else union


def rank_superseded_below_replacements(snapshot: Snapshot, factors: FactorArrays, margin: float) -> FactorArrays:
    """Cap a superseded candidate's score at its replacement's minus ``margin`` (when both are candidates).

    Chains (A superseded by B superseded by C) are resolved newest first, so A < B < C.
    """
    rows = factors.rows
    replaced_by = snapshot.superseded_by[rows]
    if not (replaced_by != NO_MEMORY).any():
        return factors
    score = factors.score.copy()
    stale_positions = np.flatnonzero(replaced_by != NO_MEMORY)
    # each stale candidate's replacement among the candidates (rows are sorted): position or -1
    replacement_rows = np.fromiter((-1 if (r := snapshot.row_of(int(i))) is None else r
                                    for i in replaced_by[stale_positions].tolist()),
                                   dtype=np.int64, count=stale_positions.size)
    at = np.minimum(np.searchsorted(rows, replacement_rows), rows.size - 1)
    found = (replacement_rows >= 0) & (rows[at] == replacement_rows)
    pairs = list(zip(stale_positions[found].tolist(), at[found].tolist()))
    for _ in range(len(pairs)):  # at most one pass per link of the longest chain
        changed = False
        for i, j in pairs:
            if score[i] > score[j] - margin:
                score[i] = score[j] - margin
                changed = True
        if not changed:
            break
    return with_score(factors, score)


def stale_rows_of(generation: Generation, replaced: list[Optional[int]], tenants: list[str]) -> list[tuple[int, int]]:
    """(offset, row of the stale memory) per new memory that supersedes one (``replaced[offset]``, an id or None).

    Each stale memory must be live and of the new memory's tenant (a KeyError / ValueError naming it).
    """
    out = []
    for offset, memory_id in enumerate(replaced):
        if memory_id is None:
            continue
        row = generation.row_of.get(memory_id)
        if row is None:
            msg = f"supersedes[{offset}]: no live memory with id {memory_id}"
            raise KeyError(msg)
        tenant = generation.tenant_names[int(generation.tenant_codes.buffer[row])]
        if tenant != tenants[offset]:
            msg = (f"supersedes[{offset}]: memory {memory_id} belongs to tenant {tenant!r}, not "
                   f"{tenants[offset]!r}; a memory can only supersede one of its own tenant")
            raise ValueError(msg)
        out.append((offset, row))
    return out
