"""The co-recall links (memories returned together) as the recall's graph reads them (:class:`LinkIndex`)."""

from __future__ import annotations

import threading
from typing import Mapping, Optional

import numpy as np

from .._columns import EMPTY_ROWS, concatenated_ranges

__all__ = ["LINK_QUIET_LOOKUPS", "LINK_REBUILD_MIN", "CoRecallLinks", "LinkIndex"]


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
            return EMPTY_ROWS, EMPTY_ROWS, np.empty(0)
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
            flat, lengths = concatenated_ranges(starts, ends)
            return np.repeat(np.arange(memory_ids.size, dtype=np.int64), lengths), neighbours[flat], weights[flat]
        # memories changed since the snapshot: their current dicts, then every link back in memory order
        # (a stable sort: each memory's links stay in its dict's order, as the sums downstream read them)
        found &= ~changed
        flat, lengths = concatenated_ranges(np.where(found, starts, 0), np.where(found, ends, 0))
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


class CoRecallLinks:
    """The store's co-recall links, ``weights[a][b] == weights[b][a]``, and the :class:`LinkIndex` over them.

    Every change is copy-on-write: a memory's neighbour dict is replaced, never modified, so a
    recall iterating one never sees it change; the index is told which memories changed. Callers
    hold the store's lock.
    """

    def __init__(self) -> None:
        self.weights: dict[int, dict[int, float]] = {}
        self.index = LinkIndex(self.weights)

    def reindex(self) -> None:
        """A fresh index (drops every memoised array)."""
        self.index = LinkIndex(self.weights)

    def load(self, rows) -> None:
        """Every link ``(a, b, weight)`` of a store being opened (nothing reads the map yet)."""
        for a, b, weight in rows:
            self.weights.setdefault(a, {})[b] = weight
            self.weights.setdefault(b, {})[a] = weight
        self.index.touched(list(self.weights))

    def copy_of_weights(self) -> dict[int, dict[int, float]]:
        """A copy of every memory's links, each in its dict's order (the order the graph sums them in)."""
        return {a: dict(neighbours) for a, neighbours in self.weights.items() if neighbours}

    def merge(self, rows) -> None:
        """Links ``(a, b, weight)`` read from storage (another process's recalls): the changed ones applied."""
        for a, b, weight in rows:
            if self.weights.get(a, {}).get(b) == weight:
                continue
            for x, y in ((a, b), (b, a)):
                neighbours = dict(self.weights.get(x, {}))
                neighbours[y] = weight
                self.weights[x] = neighbours
            self.index.touched((a, b))

    def update(self, changed: dict[int, dict[int, float]]) -> None:
        """New weights ``{memory: {neighbour: weight}}`` (both directions given): one copy per memory,
        however many of its links changed."""
        for x, weights in changed.items():
            neighbours = dict(self.weights.get(x, {}))
            neighbours.update(weights)
            self.weights[x] = neighbours
        self.index.touched(changed)

    def drop(self, memory_id: int) -> None:
        """Every link of a forgotten memory."""
        for other in self.weights.pop(memory_id, {}):
            neighbours = dict(self.weights.get(other, {}))
            neighbours.pop(memory_id, None)
            self.weights[other] = neighbours
            self.index.touched((other,))
        self.index.touched((memory_id,))
