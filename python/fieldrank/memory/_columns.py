"""Columnar in-memory rows of the store: growing numpy columns, label indexes, snapshots.

Rows are append-only within a *generation*. A memory's row never changes once published:
:meth:`MemoryStore.update` tombstones the old row and appends a new one with the same id, and
:meth:`MemoryStore.compact` builds a new generation without the tombstoned rows. Only the
recall bookkeeping (``last_access``, ``recall_count``, ``storage_strength``) and the live mask are
written in place, element by element, under the store's lock.

Publishing: a writer fills every column and index for rows ``[n, n + m)`` first and sets
``Generation.n`` last. A reader takes a :class:`Snapshot` (views ``[:n]`` plus a copy of the live
mask) under the lock and never reads rows at or past its ``n``; growing a column copies it into a
new buffer, so no buffer a snapshot holds is ever moved or shrunk.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..temporal import time_cues
from ._lexical import LexicalLeg
from ._params import MemoryParams
from ._schema import TIERS

__all__ = ["Generation", "GrowingArray", "RowBatch", "Snapshot"]

#: Initial capacity of a growing column; it doubles when full (amortised O(1) append).
INITIAL_CAPACITY = 64
#: ``supersedes`` / ``superseded_by`` of a memory without one.
NO_MEMORY = -1
TIER_CODE = {name: code for code, name in enumerate(TIERS)}


class GrowingArray:
    """A numpy column with amortised-doubling appends and lock-free prefix views.

    Parameters
    ----------
    dtype : numpy dtype
    width : int, optional
        Row width for a 2-D column (the embedding matrix); None for 1-D.
    """

    def __init__(self, dtype: np.dtype, width: Optional[int] = None, capacity: int = INITIAL_CAPACITY) -> None:
        shape = (capacity,) if width is None else (capacity, width)
        self._buffer = np.zeros(shape, dtype=dtype)
        self._count = 0

    def __len__(self) -> int:
        return self._count

    @property
    def buffer(self) -> np.ndarray:
        """The whole backing buffer (valid prefix: ``[:len(self)]``); for in-place element writes."""
        return self._buffer

    def view(self) -> np.ndarray:
        """The valid prefix, without copying. Reads the count before the buffer (see module notes)."""
        count = self._count
        return self._buffer[:count]

    def append(self, values: np.ndarray) -> None:
        """Append rows (1-D: a vector of values; 2-D: a (m, width) block)."""
        values = np.asarray(values)
        m = values.shape[0]
        needed = self._count + m
        if needed > self._buffer.shape[0]:
            capacity = max(needed, 2 * self._buffer.shape[0])
            grown = np.empty((capacity, *self._buffer.shape[1:]), dtype=self._buffer.dtype)
            grown[: self._count] = self._buffer[: self._count]
            self._buffer = grown  # published before the count grows
        self._buffer[self._count : needed] = values
        self._count = needed


@dataclass
class RowBatch:
    """Rows to append: per-row columns as arrays, labels as tuples (all validated already)."""

    ids: np.ndarray
    tenants: list[str]
    texts: list[str]
    embeddings: np.ndarray
    created_at: np.ndarray
    last_access: np.ndarray
    recall_count: np.ndarray
    importance: np.ndarray
    storage_strength: np.ndarray
    valence: np.ndarray
    tiers: list[str]
    tags: list[tuple[str, ...]]
    entities: list[tuple[str, ...]]
    #: Session of each memory (None: none, so no same-session neighbours).
    sessions: Optional[list[Optional[str]]] = None
    #: Id each memory supersedes (NO_MEMORY: none).
    supersedes: Optional[np.ndarray] = None
    #: Id that superseded each memory (NO_MEMORY: none); set when loading a file.
    superseded_by: Optional[np.ndarray] = None

    def __len__(self) -> int:
        return len(self.texts)


class Generation:
    """All rows of one generation and their indexes (tenant, tag and entity postings, lexical leg)."""

    def __init__(self, dim: int, params: MemoryParams) -> None:
        self.dim = dim
        self.embeddings = GrowingArray(np.float32, width=dim)
        self.ids = GrowingArray(np.int64)
        self.tenant_codes = GrowingArray(np.int32)
        self.created_at = GrowingArray(np.float64)
        self.last_access = GrowingArray(np.float64)
        self.recall_count = GrowingArray(np.int64)
        self.importance = GrowingArray(np.float64)
        self.storage_strength = GrowingArray(np.float64)
        self.valence = GrowingArray(np.float64)
        self.tier_codes = GrowingArray(np.int8)
        self.live = GrowingArray(np.bool_)
        #: Neighbour key of the relevance core: equal for rows of one (tenant, session); a row
        #: without a session gets its own negative key (no neighbours).
        self.session_keys = GrowingArray(np.int64)
        #: Does the text anchor something in time (``fieldrank.temporal.time_cues``)?
        self.time_cue = GrowingArray(np.bool_)
        self.supersedes = GrowingArray(np.int64)
        #: Written in place (element write under the store lock) when a later memory supersedes it.
        self.superseded_by = GrowingArray(np.int64)
        self.sessions: list[Optional[str]] = []
        self.session_code: dict[tuple[str, str], int] = {}
        self.texts: list[str] = []
        self.tags: list[tuple[str, ...]] = []
        self.entities: list[tuple[str, ...]] = []
        self.tenant_code: dict[str, int] = {}
        self.tenant_names: list[str] = []
        self.tenant_rows: dict[int, GrowingArray] = {}
        self.tag_index: dict[str, GrowingArray] = {}
        self.entity_index: dict[str, GrowingArray] = {}
        #: id -> row of its current (live) version.
        self.row_of: dict[int, int] = {}
        self.lexical = LexicalLeg(params, ids=self.ids, sessions=self.session_keys, live=self.live)
        #: Published row count: readers never look at rows >= n.
        self.n = 0
        self.n_live = 0

    def _code_of(self, tenant: str) -> int:
        code = self.tenant_code.get(tenant)
        if code is None:
            code = len(self.tenant_names)
            self.tenant_names.append(tenant)
            self.tenant_code[tenant] = code
        return code

    @staticmethod
    def _post(index: dict, key: object, rows: np.ndarray) -> None:
        posting = index.get(key)
        if posting is None:
            posting = GrowingArray(np.int64, capacity=max(8, rows.size))
            index[key] = posting
        posting.append(rows)

    def append(self, batch: RowBatch) -> np.ndarray:
        """Append ``batch`` (caller holds the store lock); returns the new rows. Publishes last."""
        m = len(batch)
        start = self.n
        rows = np.arange(start, start + m, dtype=np.int64)
        codes = np.array([self._code_of(t) for t in batch.tenants], dtype=np.int32)
        self.embeddings.append(batch.embeddings)
        self.ids.append(batch.ids)
        self.tenant_codes.append(codes)
        self.created_at.append(batch.created_at)
        self.last_access.append(batch.last_access)
        self.recall_count.append(batch.recall_count)
        self.importance.append(batch.importance)
        self.storage_strength.append(batch.storage_strength)
        self.valence.append(batch.valence)
        self.tier_codes.append(np.array([TIER_CODE[t] for t in batch.tiers], dtype=np.int8))
        self.live.append(np.ones(m, dtype=bool))
        sessions = batch.sessions if batch.sessions is not None else [None] * m
        keys = np.empty(m, dtype=np.int64)
        for offset, (tenant, session) in enumerate(zip(batch.tenants, sessions)):
            if session is None:
                keys[offset] = -(start + offset) - 1
            else:
                keys[offset] = self.session_code.setdefault((tenant, session), len(self.session_code))
        self.session_keys.append(keys)
        self.time_cue.append(time_cues(batch.texts))
        none = np.full(m, NO_MEMORY, dtype=np.int64)
        self.supersedes.append(none if batch.supersedes is None else batch.supersedes)
        self.superseded_by.append(none if batch.superseded_by is None else batch.superseded_by)
        self.sessions.extend(sessions)
        self.texts.extend(batch.texts)
        self.tags.extend(batch.tags)
        self.entities.extend(batch.entities)
        for code in np.unique(codes):
            self._post(self.tenant_rows, int(code), rows[codes == code])
        for index, labels_per_row in ((self.tag_index, batch.tags), (self.entity_index, batch.entities)):
            by_label: dict[str, list[int]] = {}
            for offset, labels in enumerate(labels_per_row):
                for label in labels:
                    by_label.setdefault(label, []).append(start + offset)
            for label, label_rows in by_label.items():
                self._post(index, label, np.asarray(label_rows, dtype=np.int64))
        for offset, memory_id in enumerate(batch.ids.tolist()):
            self.row_of[memory_id] = start + offset
        self.n_live += m
        self.n = start + m  # publish
        return rows

    def tombstone(self, row: int) -> None:
        """Mark ``row`` dead (a single-element write; caller holds the store lock)."""
        if self.live.buffer[row]:
            self.live.buffer[row] = False
            self.n_live -= 1
            self.lexical.note_forgotten(row)  # its words leave BM25 and its neighbours' documents

    def snapshot(self) -> Snapshot:
        """A consistent view for one reader: O(1) views plus an O(n)-byte live-mask copy (caller holds the lock)."""
        n = self.n
        return Snapshot(
            generation=self,
            n=n,
            live=self.live.buffer[:n].copy(),
            embeddings=self.embeddings.buffer[:n],
            ids=self.ids.buffer[:n],
            tenant_codes=self.tenant_codes.buffer[:n],
            created_at=self.created_at.buffer[:n],
            last_access=self.last_access.buffer[:n],
            recall_count=self.recall_count.buffer[:n],
            importance=self.importance.buffer[:n],
            storage_strength=self.storage_strength.buffer[:n],
            valence=self.valence.buffer[:n],
            tier_codes=self.tier_codes.buffer[:n],
            session_keys=self.session_keys.buffer[:n],
            time_cue=self.time_cue.buffer[:n],
            superseded_by=self.superseded_by.buffer[:n].copy(),
        )


@dataclass(frozen=True)
class Snapshot:
    """What one recall sees: rows ``[0, n)`` of a generation and the live mask at one instant."""

    generation: Generation
    n: int
    live: np.ndarray
    embeddings: np.ndarray
    ids: np.ndarray
    tenant_codes: np.ndarray
    created_at: np.ndarray
    last_access: np.ndarray
    recall_count: np.ndarray
    importance: np.ndarray
    storage_strength: np.ndarray
    valence: np.ndarray
    tier_codes: np.ndarray
    session_keys: np.ndarray
    time_cue: np.ndarray
    #: A copy (it changes in place when a memory is superseded).
    superseded_by: np.ndarray

    def posting(self, index: dict, key: object) -> np.ndarray:
        """Rows of ``index[key]`` published in this snapshot (empty if the key is absent)."""
        posting = index.get(key)
        if posting is None:
            return np.empty(0, dtype=np.int64)
        rows = posting.view()
        return rows[rows < self.n]

    def tenant_code(self, tenant: str) -> Optional[int]:
        return self.generation.tenant_code.get(tenant)

    def tenant_of(self, row: int) -> str:
        return self.generation.tenant_names[int(self.tenant_codes[row])]

    def tier_of(self, row: int) -> str:
        return TIERS[int(self.tier_codes[row])]

    def row_of(self, memory_id: int) -> Optional[int]:
        row = self.generation.row_of.get(memory_id)
        if row is None or row >= self.n:
            return None
        return row
