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

Derived values. What a recall derives from rows that do not change (a tenant's eligible rows,
their durable rows, the relevance core's timeline, the frozen copies of the live mask and of
``superseded_by``) is memoised in :attr:`Generation.derived`, keyed by everything it depends on:
the row count ``n`` and the versions the in-place writers bump (``live_version`` on a tombstone,
``superseded_version`` when a memory is superseded). A key that no longer matches is never
looked up again: the next recall replaces it (one value per tenant and per kind, the latest), so
the O(n) numpy work of deriving them is paid once per change of the store, not once per recall.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Hashable, Mapping, Optional

import numpy as np

from ..temporal import time_cues
from . import _tier as tier_statistics
from ._lexical import LexicalLeg
from ._params import MemoryParams
from ._schema import SECONDS_PER_DAY, TIERS, Memory
from ._tier import TierStatistics

__all__ = ["EMPTY_ROWS", "NO_MEMORY", "DerivedCache", "EntityPostings", "Generation", "GrowingArray", "RowBatch", "Snapshot",
           "concatenated_ranges", "creation_days"]

#: Initial capacity of a growing column; it doubles when full (amortised O(1) append).
INITIAL_CAPACITY = 64
#: ``supersedes`` / ``superseded_by`` of a memory without one.
NO_MEMORY = -1
#: No rows (shared: never written to).
EMPTY_ROWS = np.empty(0, dtype=np.int64)
TIER_CODE = {name: code for code, name in enumerate(TIERS)}
#: Slots of derived values kept per generation (see the module notes): the eligible rows of the
#: last tenants recalled (with their memos) and the timeline; the least recently used go first.
DERIVED_CACHE_ENTRIES = 16
#: Creation days are clipped to the calendar years 1–9999 (the dates a question can name), so that
#: the accepted extreme timestamps convert to datetime64 days without overflow.
_TIMELINE_DAYS = (float(np.datetime64("0001-01-01", "D").astype(np.int64)),
                  float(np.datetime64("9999-12-31", "D").astype(np.int64)))


def creation_days(created_at: np.ndarray) -> np.ndarray:
    """``datetime64[D]`` creation day of each row (the relevance core's session dates), clipped to years 1–9999."""
    days = np.clip(np.floor(np.asarray(created_at, dtype=np.float64) / SECONDS_PER_DAY), *_TIMELINE_DAYS)
    return days.astype(np.int64).astype("datetime64[D]")


def concatenated_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The concatenated ``arange(start, end)`` of every pair (as one array) and each range's length."""
    lengths = np.maximum(ends - starts, 0)
    total = int(lengths.sum())
    if total == 0:
        return EMPTY_ROWS, lengths
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(lengths)[:-1])), lengths)
    return np.arange(total, dtype=np.int64) + offsets, lengths


def frozen(array: np.ndarray) -> np.ndarray:
    """``array`` marked read-only (a cached value shared by concurrent recalls must never be written)."""
    array.setflags(write=False)
    return array


class DerivedCache:
    """Thread-safe memo of derived values: one value per slot (e.g. a tenant's eligible rows), for
    the latest version of its inputs only, and at most ``entries`` slots (least recently used go).

    A value is returned only for the exact ``version`` (everything it depends on) it was computed
    for; a newer version replaces it, so a store that keeps growing holds one value per slot, not
    one per row count. Two recalls that miss at once may both compute it; the results are equal.
    """

    def __init__(self, entries: int = DERIVED_CACHE_ENTRIES) -> None:
        self._entries = entries
        self._values: OrderedDict[Hashable, tuple[Hashable, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compute(self, slot: Hashable, version: Hashable, compute: Callable[[], Any]) -> Any:
        with self._lock:
            cached = self._values.get(slot)
            if cached is not None and cached[0] == version:
                self._values.move_to_end(slot)
                return cached[1]
        value = compute()
        with self._lock:
            self._values[slot] = (version, value)
            self._values.move_to_end(slot)
            while len(self._values) > self._entries:
                self._values.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._values)


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
        #: Creation day of each row (:func:`creation_days`): the relevance core's session dates.
        self.creation_days = GrowingArray(np.dtype("datetime64[D]"))
        #: Does the memory carry an entity (a graph seed can only spread activation through one)?
        self.has_entities = GrowingArray(np.bool_)
        self.supersedes = GrowingArray(np.int64)
        #: Written in place (element write under the store lock) when a later memory supersedes it.
        self.superseded_by = GrowingArray(np.int64)
        self._init_labels()
        #: id -> row of its current (live) version.
        self.row_of: dict[int, int] = {}
        self.lexical = LexicalLeg(params, ids=self.ids, sessions=self.session_keys, live=self.live)
        self._durable_importance = params.durable_importance
        #: tenant code -> cosine statistics of its durable rows (:mod:`._tier`); an entry is replaced,
        #: never modified, on every write, so a reader holding one sees a consistent object.
        self.tier_stats: dict[int, TierStatistics] = {}
        #: Published row count: readers never look at rows >= n.
        self.n = 0
        self.n_live = 0
        #: Bumped by every in-place write of the live mask / of ``superseded_by`` (cache keys).
        self.live_version = 0
        self.superseded_version = 0
        #: Values derived from rows that do not change (see the module notes).
        self.derived = DerivedCache()
        #: ((n, version), read-only copy) of the live mask / ``superseded_by`` the last snapshot took.
        self._frozen_live: tuple = (None, None)
        self._frozen_superseded_by: tuple = (None, None)

    def _init_labels(self) -> None:
        """The per-row Python lists and the label indexes (tenants, sessions, tags, entities)."""
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
        #: Entity labels as dense codes (first seen first) and each row's codes as CSR over rows:
        #: row r carries ``entity_codes[entity_ptr[r]:entity_ptr[r + 1]]`` (append-only, so any
        #: prefix of rows is valid); the postings by entity, as CSR arrays, are derived per row count
        #: (:meth:`entity_postings`), extended incrementally as rows are added.
        self.entity_code: dict[str, int] = {}
        self.entity_ptr = GrowingArray(np.int64)
        self.entity_ptr.append(np.zeros(1, dtype=np.int64))
        self.entity_codes = GrowingArray(np.int64)
        self._entity_postings: Optional[EntityPostings] = None
        self._entity_postings_lock = threading.Lock()

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
        self._append_columns(batch, start, codes)
        self._index(batch, start, rows, codes)
        for offset, memory_id in enumerate(batch.ids.tolist()):
            self.row_of[memory_id] = start + offset
        self.n_live += m
        self.n = start + m  # publish
        return rows

    def _append_columns(self, batch: RowBatch, start: int, codes: np.ndarray) -> None:
        """Every per-row column of ``batch`` (rows ``start, ...``; not yet published)."""
        m = len(batch)
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
        self.creation_days.append(creation_days(batch.created_at))
        self.has_entities.append(np.fromiter((bool(labels) for labels in batch.entities), dtype=bool, count=m))
        none = np.full(m, NO_MEMORY, dtype=np.int64)
        self.supersedes.append(none if batch.supersedes is None else batch.supersedes)
        self.superseded_by.append(none if batch.superseded_by is None else batch.superseded_by)
        self.sessions.extend(sessions)
        self.texts.extend(batch.texts)
        self.tags.extend(batch.tags)
        self.entities.extend(batch.entities)

    def _index(self, batch: RowBatch, start: int, rows: np.ndarray, codes: np.ndarray) -> None:
        """The postings (tenant, tag, entity), tier statistics and entity CSR of the new rows."""
        m = len(batch)
        for code in np.unique(codes):
            self._post(self.tenant_rows, int(code), rows[codes == code])
        durable = (batch.importance >= self._durable_importance) | np.array(
            [t == "core" for t in batch.tiers], dtype=bool)
        for code in np.unique(codes):
            code = int(code)
            chosen = codes == code

            def tenant_live(code: int = code) -> np.ndarray:
                tenant_rows = self.tenant_rows[code].view()
                return tenant_rows[self.live.buffer[tenant_rows]]

            self.tier_stats[code] = tier_statistics.added(
                self.tier_stats.get(code, TierStatistics.empty(self.dim)), self.embeddings.buffer, tenant_live,
                rows[chosen], durable[chosen])
        for index, labels_per_row in ((self.tag_index, batch.tags), (self.entity_index, batch.entities)):
            by_label: dict[str, list[int]] = {}
            for offset, labels in enumerate(labels_per_row):
                for label in labels:
                    by_label.setdefault(label, []).append(start + offset)
            for label, label_rows in by_label.items():
                self._post(index, label, np.asarray(label_rows, dtype=np.int64))
        codes_of_rows = [[self.entity_code.setdefault(label, len(self.entity_code)) for label in labels]
                         for labels in batch.entities]
        counts = np.fromiter((len(c) for c in codes_of_rows), dtype=np.int64, count=m)
        self.entity_codes.append(np.fromiter((c for row in codes_of_rows for c in row), dtype=np.int64,
                                             count=int(counts.sum())))
        self.entity_ptr.append(self.entity_ptr.buffer[start] + np.cumsum(counts))

    def entity_postings(self, n: int) -> EntityPostings:
        """The entity postings of rows ``[0, n)`` as CSR arrays (see :class:`EntityPostings`).

        Built once per row count and extended incrementally: the rows appended since the last
        build are merged in O(postings) numpy work (no sort of the old postings), so a recall
        after an ``add`` does not rebuild them and a recall on an unchanged store reads them as
        they are. A reader on an older snapshot (rare: a concurrent add) gets its own build.
        """
        with self._entity_postings_lock:
            held = self._entity_postings
        if held is not None and held.n == n:
            return held
        if held is not None and held.n < n:
            built = held.extended(self, n)
        else:
            built = EntityPostings.empty().extended(self, n)
        with self._entity_postings_lock:
            current = self._entity_postings
            if current is None or current.n <= n:
                self._entity_postings = built
        return built

    def tombstone(self, row: int) -> None:
        """Mark ``row`` dead (a single-element write; caller holds the store lock)."""
        if self.live.buffer[row]:
            self.live.buffer[row] = False
            self.n_live -= 1
            self.lexical.note_forgotten(row)  # its words leave BM25 and its neighbours' documents
            self.live_version += 1
            code = int(self.tenant_codes.buffer[row])
            self.tier_stats[code] = tier_statistics.removed(self.tier_stats[code], self.embeddings.buffer, row)

    def mark_superseded(self, row: int, by: int) -> None:
        """Record that memory ``by`` supersedes ``row`` (a single-element write; caller holds the store lock)."""
        self.superseded_by.buffer[row] = by
        self.superseded_version += 1

    def snapshot(self) -> Snapshot:
        """A consistent view for one reader (caller holds the lock): O(1) views plus read-only copies of
        the live mask and of ``superseded_by``, shared by every snapshot until one of them changes."""
        n, live_version, superseded_version = self.n, self.live_version, self.superseded_version
        if self._frozen_live[0] != (n, live_version):
            self._frozen_live = ((n, live_version), frozen(self.live.buffer[:n].copy()))
        if self._frozen_superseded_by[0] != (n, superseded_version):
            self._frozen_superseded_by = ((n, superseded_version), frozen(self.superseded_by.buffer[:n].copy()))
        live, superseded_by = self._frozen_live[1], self._frozen_superseded_by[1]
        return Snapshot(
            generation=self,
            n=n,
            live_version=live_version,
            live=live,
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
            creation_days=self.creation_days.buffer[:n],
            has_entities=self.has_entities.buffer[:n],
            superseded_by=superseded_by,
            tier_stats=self.tier_stats,
        )

    def live_row(self, memory_id: int, tenant: Optional[str], forgotten: set[int]) -> int:
        """Row of a live memory (caller holds the store lock); a ``KeyError`` for any other id.

        With ``tenant`` given, a memory of another tenant is reported exactly like a missing one;
        without it, the message says whether the id was ``forgotten``.
        """
        row = self.row_of.get(memory_id)
        if tenant is not None and row is not None and self.tenant_names[int(self.tenant_codes.buffer[row])] != tenant:
            row = None
        if row is None:
            if tenant is not None:
                msg = f"no memory with id {memory_id} for tenant {tenant!r}"
            elif memory_id in forgotten:
                msg = f"memory {memory_id} was forgotten"
            else:
                msg = f"no memory with id {memory_id}"
            raise KeyError(msg)
        return row

    def memory(self, row: int) -> Memory:
        """The :class:`Memory` at ``row`` (its embedding a copy)."""
        def optional_id(value: object) -> Optional[int]:
            return None if int(value) == NO_MEMORY else int(value)

        return Memory(
            id=int(self.ids.buffer[row]),
            tenant=self.tenant_names[int(self.tenant_codes.buffer[row])],
            text=self.texts[row],
            embedding=self.embeddings.buffer[row].copy(),
            created_at=float(self.created_at.buffer[row]),
            last_access=float(self.last_access.buffer[row]),
            recall_count=int(self.recall_count.buffer[row]),
            importance=float(self.importance.buffer[row]),
            storage_strength=float(self.storage_strength.buffer[row]),
            valence=float(self.valence.buffer[row]),
            tier=TIERS[int(self.tier_codes.buffer[row])],
            tags=self.tags[row],
            entities=self.entities[row],
            session=self.sessions[row],
            supersedes=optional_id(self.supersedes.buffer[row]),
            superseded_by=optional_id(self.superseded_by.buffer[row]),
        )

    def batch_of(self, rows: np.ndarray) -> RowBatch:
        """Copies of ``rows`` (sorted) as a :class:`RowBatch`: appended to an empty generation, they
        are its rows in this order."""
        listed = rows.tolist()
        return RowBatch(
            ids=self.ids.buffer[rows].copy(),
            tenants=[self.tenant_names[c] for c in self.tenant_codes.buffer[rows].tolist()],
            texts=[self.texts[r] for r in listed],
            embeddings=self.embeddings.buffer[rows].copy(),
            created_at=self.created_at.buffer[rows].copy(),
            last_access=self.last_access.buffer[rows].copy(),
            recall_count=self.recall_count.buffer[rows].copy(),
            importance=self.importance.buffer[rows].copy(),
            storage_strength=self.storage_strength.buffer[rows].copy(),
            valence=self.valence.buffer[rows].copy(),
            tiers=[TIERS[c] for c in self.tier_codes.buffer[rows].tolist()],
            tags=[self.tags[r] for r in listed],
            entities=[self.entities[r] for r in listed],
            sessions=[self.sessions[r] for r in listed],
            supersedes=self.supersedes.buffer[rows].copy(),
            superseded_by=self.superseded_by.buffer[rows].copy(),
        )

    def compacted(self, params: MemoryParams) -> Generation:
        """A new generation of the live rows alone, in their order, with its BM25 index built."""
        rows = np.flatnonzero(self.live.buffer[:self.n])
        fresh = Generation(self.dim, params)
        if rows.size:
            fresh.append(self.batch_of(rows))
            fresh.lexical.build_now(fresh.texts, fresh.n)
        return fresh

    def state(self) -> tuple[Optional[RowBatch], np.ndarray, dict]:
        """Every row (dead ones included, so rows keep their numbers, neighbours and tier
        statistics), the live mask and the tier statistics: what :meth:`restored` rebuilds from
        (picklable; copies)."""
        n = self.n
        batch = self.batch_of(np.arange(n, dtype=np.int64)) if n else None
        return batch, self.live.buffer[:n].copy(), dict(self.tier_stats)

    @staticmethod
    def restored(dim: int, params: MemoryParams, state: tuple[Optional[RowBatch], np.ndarray, dict]) -> Generation:
        """A generation in the state :meth:`state` took."""
        batch, live, tier_stats = state
        fresh = Generation(dim, params)
        if batch is None:
            return fresh
        fresh.append(batch)
        for row in np.flatnonzero(~live).tolist():
            fresh.tombstone(row)
        for memory_id, row in list(fresh.row_of.items()):
            if not live[row]:
                del fresh.row_of[memory_id]
        # the statistics as the original accumulated them (the same rows: the same objects apply)
        fresh.tier_stats = dict(tier_stats)
        return fresh


@dataclass(frozen=True)
class EntityPostings:
    """Every entity's rows among rows ``[0, n)``, ascending, as CSR: entity code c holds
    ``rows[indptr[c]:indptr[c + 1]]``. Immutable; rows are never removed (dead rows are gated
    out by the reader's eligibility)."""

    n: int
    indptr: np.ndarray
    rows: np.ndarray

    @staticmethod
    def empty() -> EntityPostings:
        return EntityPostings(0, frozen(np.zeros(1, dtype=np.int64)), frozen(np.empty(0, dtype=np.int64)))

    def extended(self, generation: Generation, n: int) -> EntityPostings:
        """These postings plus the rows ``[self.n, n)`` of ``generation`` (a new object)."""
        ptr = generation.entity_ptr.buffer
        first, last = int(ptr[self.n]), int(ptr[n])
        new_codes = generation.entity_codes.buffer[first:last]
        entities = max(self.indptr.size - 1, int(new_codes.max()) + 1 if new_codes.size else 0)
        old_counts = np.zeros(entities, dtype=np.int64)
        old_counts[: self.indptr.size - 1] = np.diff(self.indptr)
        # each new pair's row, in row order (a row's codes are consecutive)
        new_rows = np.repeat(np.arange(self.n, n, dtype=np.int64), np.diff(ptr[self.n:n + 1]))
        new_counts = np.bincount(new_codes, minlength=entities).astype(np.int64)
        indptr = np.zeros(entities + 1, dtype=np.int64)
        np.cumsum(old_counts + new_counts, out=indptr[1:])
        rows = np.empty(int(indptr[-1]), dtype=np.int64)
        if self.rows.size:  # old rows keep their order, each entity's block shifted by the new rows before it
            old_entity = np.repeat(np.arange(self.indptr.size - 1), np.diff(self.indptr))
            shift = indptr[:-1][: self.indptr.size - 1] - self.indptr[:-1]
            rows[np.arange(self.rows.size) + shift[old_entity]] = self.rows
        if new_codes.size:  # new rows after the old ones of their entity, in row order (stable sort)
            order = np.argsort(new_codes, kind="stable")
            sorted_codes = new_codes[order]
            starts = np.zeros(entities + 1, dtype=np.int64)
            np.cumsum(new_counts, out=starts[1:])
            rank = np.arange(new_codes.size) - starts[sorted_codes]
            rows[indptr[sorted_codes] + old_counts[sorted_codes] + rank] = new_rows[order]
        return EntityPostings(n, frozen(indptr), frozen(rows))


@dataclass(frozen=True)
class Snapshot:
    """What one recall sees: rows ``[0, n)`` of a generation and the live mask at one instant."""

    generation: Generation
    n: int
    #: ``Generation.live_version`` when the snapshot was taken (``live`` is the mask of that version).
    live_version: int
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
    creation_days: np.ndarray
    has_entities: np.ndarray
    #: A read-only copy (the column changes in place when a memory is superseded).
    superseded_by: np.ndarray
    #: The generation's tenant code -> :class:`~.tier.TierStatistics` (entries are replaced, never
    #: modified; rows past ``n`` in an entry are never looked up).
    tier_stats: Mapping[int, TierStatistics]

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
