"""Recall dynamics: what a recall writes back for the memories it returned (SPEC §8).

With D the retrieval strength just before the recall (:func:`~.._scoring.retrieval_strength`),
each returned memory gets ``S ← S + storage_gain · (1 − D)`` (a hard recall strengthens storage
more: the spacing effect), ``last_access ← at_time`` (never backwards) and ``recall_count += 1``
(saturating at the top of its range); every pair returned together gets
``w ← w + hebbian_rate · (1 − w)``. :func:`plan` computes it from the generation; an in-memory
store applies it (:func:`apply_in_memory`), a store with a backend has the backend do the
arithmetic and copies the values back (:func:`apply_stored`), so concurrent recalls of several
processes never lose an update.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._columns import Generation
from .._params import MemoryParams
from .._persistence import Reinforced
from .._schema import RECALL_COUNT_RANGE
from .._scoring import retrieval_strength
from ._links import CoRecallLinks

__all__ = ["Reinforcement", "apply_in_memory", "apply_stored", "plan"]


@dataclass(frozen=True)
class Reinforcement:
    """One recall's bookkeeping: the live returned memories (ids, rows) and what changes for them."""

    ids: list[int]
    rows: np.ndarray
    at_time: float
    last_access: np.ndarray
    storage_strength: np.ndarray
    gains: np.ndarray
    #: new link weights, ``{memory: {neighbour: weight}}``, both directions
    links: dict[int, dict[int, float]]
    #: the same links for a backend: ``(a, b, rate)`` with a < b
    link_rows: list[tuple[int, int, float]]

    def updates(self) -> list[tuple[float, float, int]]:
        """``(at_time, gain, id)`` per memory, as :meth:`StoreBackend.reinforce` takes them."""
        return [(float(self.at_time), gain, memory_id) for gain, memory_id in zip(self.gains.tolist(), self.ids)]


def _link_changes(ids: list[int], links: CoRecallLinks, rate: float) -> tuple[dict, list]:
    """Every pair of ``ids`` strengthened once: new weights (both directions) and backend rows."""
    link_rows: list[tuple[int, int, float]] = []
    changed: dict[int, dict[int, float]] = {}
    if rate <= 0:
        return changed, link_rows
    # every returned memory's links as they were before this recall (the loop writes to `changed`
    # only), looked up once each rather than once per pair
    empty: dict[int, float] = {}
    before = {a: links.weights.get(a, empty) for a in ids}
    for i, a in enumerate(ids):
        for b in ids[i + 1:]:
            low, high = (a, b) if a < b else (b, a)
            weight = before[low].get(high, 0.0)
            weight += rate * (1.0 - weight)
            changed.setdefault(low, {})[high] = weight
            changed.setdefault(high, {})[low] = weight
            link_rows.append((low, high, rate))
    return changed, link_rows


def plan(generation: Generation, links: CoRecallLinks, memory_ids: list[int], at_time: float,
         params: MemoryParams) -> Reinforcement:
    """The bookkeeping of returning ``memory_ids`` (distinct) at ``at_time``; forgotten ones are skipped."""
    ids, rows = [], []
    for memory_id in memory_ids:
        row = generation.row_of.get(memory_id)
        if row is None or not generation.live.buffer[row]:
            continue  # forgotten meanwhile
        ids.append(memory_id)
        rows.append(row)
    # The returned memories are distinct: their updates are independent, one vectorised step.
    at = np.asarray(rows, dtype=np.int64)
    last = generation.last_access.buffer[at]
    storage = generation.storage_strength.buffer[at]
    gains = params.storage_gain * (1.0 - retrieval_strength(last, storage, at_time, params))
    changed, link_rows = _link_changes(ids, links, params.hebbian_rate)
    return Reinforcement(ids, at, at_time, last, storage, gains, changed, link_rows)


def apply_in_memory(reinforcement: Reinforcement, generation: Generation, links: CoRecallLinks) -> None:
    """The bookkeeping of a store without a backend (element writes under the store's lock)."""
    at = reinforcement.rows
    generation.storage_strength.buffer[at] = reinforcement.storage_strength + reinforcement.gains
    generation.last_access.buffer[at] = np.maximum(reinforcement.last_access, reinforcement.at_time)
    generation.recall_count.buffer[at] = np.minimum(generation.recall_count.buffer[at] + 1, RECALL_COUNT_RANGE[1])
    links.update(reinforcement.links)


def apply_stored(after: Reinforced, generation: Generation, links: CoRecallLinks) -> None:
    """Copy back the values the backend holds after writing the bookkeeping."""
    for memory_id, (last_value, count, strength) in after.rows.items():
        row = generation.row_of.get(memory_id)
        if row is not None:
            generation.last_access.buffer[row] = last_value
            generation.recall_count.buffer[row] = count
            generation.storage_strength.buffer[row] = strength
    written: dict[int, dict[int, float]] = {}
    for (low, high), weight in after.links.items():
        written.setdefault(low, {})[high] = weight
        written.setdefault(high, {})[low] = weight
    links.update(written)
