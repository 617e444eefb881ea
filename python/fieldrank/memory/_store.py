"""``MemoryStore``: long-lived agent memory with multi-signal fused recall (SPEC §8).

The store holds the lifecycle: opening a backend and loading it, writes (``add``, ``add_many``,
``update``, ``forget``, ``compact``), catching up with other processes (:mod:`._sync`) and the
bookkeeping a recall writes back (:mod:`._signals._reinforcement`). A recall checks its query
once (:mod:`._query`), takes a snapshot of the rows under the lock and runs the pipeline on it
(:mod:`._pipeline`: candidates, factors, fusion, tier, hits as one trace that ``why_not``
reads too).

Several processes or store objects may share a file: ids are allocated in the file, and every
public call (``len``, ``in`` and ``tenants`` included) first applies what others committed
(``PRAGMA data_version``, row revisions, the purge epoch; see :mod:`._persistence`): a memory
whose ``forget()`` returned in any process is never returned, got or revived by a call that
starts afterwards, in any process, whatever purges and compactions happened in between.

Thread-safety model. One re-entrant lock serialises writers (``add``, ``add_many``, ``update``,
``forget``, ``compact``, the bookkeeping at the end of a recall) and the SQLite connection. A
recall holds the lock only to take a snapshot (rows ``[0, n)`` of the current generation and
read-only copies of the live mask and ``superseded_by``, shared until a tombstone or supersede
changes them) and, if it reinforces, for the bookkeeping; candidate
generation and scoring run without it, and the native prefilter releases the GIL. Rows a
snapshot can see are never modified except the bookkeeping columns (element writes), and a
half-added memory is never visible: writers publish the row count last (:mod:`._columns`). The
BM25 leg has its own lock (:mod:`._lexical`). A memory forgotten before a recall takes its
snapshot is never returned by it.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterable, Sequence
from typing import Any, Optional, Union

import numpy as np

from .. import _validation as _v
from ..embed import Embedder
from . import _confidence as _hit_confidence
from . import _pipeline as pipeline
from ._columns import Generation, RowBatch
from ._gates import GateSpec
from ._identity import KeyedAccess, KeyIndex, checked_keys
from ._ingest import (NewRows, UnitRows, checked_changes, checked_options, checked_text, checked_texts, embedded,
                      new_rows, single_vector, updated_batch)
from ._params import DEFAULT_PARAMS, MemoryParams
from ._persistence import KEY, TENANT, TOMBSTONE, DuplicateKeyError, StoreBackend, StoreIOError, batch_of_records
from ._persistence import open_backend
from ._provenance import RecallResult, WhyNot
from ._query import Cue, ModeQuotas, build_query
from ._schema import (
    DEFAULT_IMPORTANCE,
    DEFAULT_MAX_TEXT_BYTES,
    DEFAULT_MODE,
    DEFAULT_STORAGE_STRENGTH,
    DEFAULT_TENANT,
    DEFAULT_TIER,
    DEFAULT_VALENCE,
    Memory,
    check_labels,
    check_memory_id,
    check_mode,
    check_positive_int,
    check_tenant,
)
from ._scoring import native_fusion_params
from ._signals import _reinforcement as reinforcement
from ._signals._links import CoRecallLinks
from ._signals._supersession import stale_rows_of
from ._sync import SyncState

__all__ = ["MemoryStore", "ReinforcementWarning"]


class ReinforcementWarning(RuntimeWarning):
    """A recall's bookkeeping (reinforcement) could not be written; its hits were returned unreinforced."""

DEFAULT_K = _v.DEFAULTS["k"]  # results per recall: the core's k, as for a hybrid query
DEFAULT_SYNCHRONOUS = "FULL"

PathLike = Union[str, "os.PathLike[str]"]


class MemoryStore(KeyedAccess):
    """Agent memory with multi-signal fused recall, provenance, tenants and SQLite persistence.

    Parameters
    ----------
    path : str or os.PathLike, optional
        SQLite file (created if missing). None keeps everything in memory.
    dim : int, optional
        Embedding dimension; required for a new store, checked against an existing file.
    params : MemoryParams, default DEFAULT_PARAMS
        Quotas, fused-score weights and index policy.
    synchronous : str, default "FULL"
        SQLite ``PRAGMA synchronous`` for a file store ("FULL": a returned add survives a
        machine crash; "NORMAL": it survives a process crash).
    embedder : fieldrank.embed.Embedder, optional
        Embeds the text of ``add``/``add_many``/``update`` and the cue of ``recall``/``why_not``
        when no vector is passed (``dim`` defaults to its dimension).
    max_text_bytes : int, default 262144 (256 KiB)
        The longest memory text ``add``, ``add_many`` and ``update`` take, in UTF-8 bytes (a
        ``ValueError`` past it, before anything is embedded or written). Every text is tokenised
        when a store opens and by BM25, so one huge text would slow every open and first recall.

    Notes
    -----
    Without an embedder the store never embeds text: ``add`` takes the memory's embedding and
    ``recall`` the cue's vector. Embeddings of any real dtype are converted once to float32 and
    L2-normalised on ingest. See the module docstring for the thread-safety model.

    When SQLite cannot read or write the file (locked past the 30 s busy timeout, read-only, disk
    full, I/O error), ``add``, ``add_many``, ``update``, ``forget`` and ``compact`` raise
    :class:`~fieldrank.memory.StoreIOError` (an ``OSError`` naming the file, the operation and
    SQLite's cause) and change nothing; a recall's bookkeeping never raises (see ``recall``).
    """

    def __init__(
        self,
        path: Optional[PathLike] = None,
        dim: Optional[int] = None,
        *,
        params: MemoryParams = DEFAULT_PARAMS,
        synchronous: str = DEFAULT_SYNCHRONOUS,
        embedder: Optional[Embedder] = None,
        max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
    ) -> None:
        self._embedder, dim = checked_options(dim, params, synchronous, embedder, max_text_bytes)
        self._max_text_bytes = int(max_text_bytes)
        self._params = params
        self._synchronous = synchronous
        #: The fused score's constants for the native kernel, built once with the params.
        self._fusion_params = native_fusion_params(params)
        self._quotas = ModeQuotas(params)
        self._lock = threading.RLock()
        self._links = CoRecallLinks()
        self._forgotten: set[int] = set()
        self._next_id = 0
        self._closed = False
        #: How far this store has caught up with its backend (:meth:`_refresh`).
        self._sync = SyncState()
        self._reinforce_failures = 0
        self._keys, self._revision = KeyIndex(), 0  # external keys; the counter behind :attr:`revision`
        if path is None:
            if dim is None:
                msg = "dim is required for an in-memory store (path=None)"
                raise ValueError(msg)
            self._backend: Optional[StoreBackend] = None
            self._dim = dim
        else:
            self._backend = open_backend(path, dim, synchronous)
            self._dim = self._backend.dim
        self._generation = Generation(self._dim, params)
        if self._backend is not None:
            self._load()

    # ------------------------------------------------------------------ properties
    @property
    def dim(self) -> int:
        """Embedding dimension."""
        return self._dim

    @property
    def params(self) -> MemoryParams:
        return self._params

    @property
    def max_text_bytes(self) -> int:
        """The longest memory text this store takes, in UTF-8 bytes."""
        return self._max_text_bytes

    @property
    def reinforce_failures(self) -> int:
        """How many recalls of this store object returned their hits unreinforced (bookkeeping not written)."""
        return self._reinforce_failures

    @property
    def path(self) -> Optional[str]:
        """The SQLite file, or None for an in-memory store."""
        return None if self._backend is None else self._backend.path

    def __repr__(self) -> str:
        where = "in memory" if self._backend is None else repr(self._backend.path)
        return f"MemoryStore({where}, dim={self._dim}, memories={len(self)})"

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the SQLite file (a no-op for in-memory stores). Further calls raise."""
        with self._lock:
            if not self._closed and self._backend is not None:
                self._backend.close()
            self._closed = True

    def __reduce__(self) -> tuple:
        """Pickling and ``copy.deepcopy``: a file store reopens its file by path (with its params,
        synchronous mode and embedder); an in-memory store copies its rows, links and bookkeeping
        (a copy recalls as the original does, and the two change independently afterwards)."""
        with self._lock:
            self._check_open()
            self._refresh()
            if self._backend is not None:
                return _reopened, (self._backend.path, self._params, self._synchronous, self._embedder,
                                   self._max_text_bytes)
            state = {"dim": self._dim, "params": self._params, "embedder": self._embedder,
                     "max_text_bytes": self._max_text_bytes,
                     "generation": self._generation.state(), "links": self._links.copy_of_weights(),
                     "forgotten": set(self._forgotten), "next_id": self._next_id, "keys": self._keys.held()}
            return MemoryStore._copied, (state,)

    @classmethod
    def _copied(cls, state: dict) -> MemoryStore:
        """A pickled in-memory store: a new one holding its rows, links and bookkeeping."""
        store = cls(dim=state["dim"], params=state["params"], embedder=state["embedder"],
                    max_text_bytes=state["max_text_bytes"])
        store._generation = Generation.restored(state["dim"], state["params"], state["generation"])
        store._links.update(state["links"])
        store._forgotten = state["forgotten"]
        store._next_id = state["next_id"]
        store._keys.restore(state.get("keys", {}))
        return store

    def _check_open(self) -> None:
        if self._closed:
            msg = "the memory store is closed"
            raise ValueError(msg)

    # ------------------------------------------------------------------ loading
    def _load(self) -> None:
        state = self._sync.load(self._backend)
        self._apply_rows(state.rows)
        self._next_id = max(self._next_id, self._backend.next_id())
        self._links.load(state.links)

    def _apply_rows(self, records: list) -> None:
        """Bring the in-memory generation up to date with records read from the backend (caller holds the lock).

        A tombstoned record is forgotten; a record with a known id is a new version (update,
        supersede): its old row is tombstoned and the new one appended; an unknown id is appended.
        """
        generation = self._generation
        live = []
        if records:
            self._revision += 1
        for record in records:
            memory_id = record[0]
            self._next_id = max(self._next_id, memory_id + 1)
            current = generation.row_of.get(memory_id)
            if record[TOMBSTONE]:
                if current is not None:
                    self._forget_row(memory_id, current)
                self._forgotten.add(memory_id)
                continue
            if current is not None:
                generation.tombstone(current)
                del generation.row_of[memory_id]
            if record[KEY] is not None:
                self._keys.bind(record[TENANT], record[KEY], memory_id)
            live.append(record)
        if live:
            generation.append(batch_of_records(live, self._dim, self._backend.path))

    def _refresh(self) -> None:
        """Apply what other processes (or store objects) committed since the last look (:mod:`._sync`).

        Caller holds the lock; every public call that reads or writes calls it first, so a call
        that starts after another process's ``forget()`` returned never sees that memory. After
        another store's purge, every memory the backend no longer holds live is forgotten first.
        A closed store does nothing (its calls raise, or answer from memory: ``len``, ``in``).
        """
        if self._backend is None or self._closed:
            return
        state = self._sync.pending(self._backend)
        if state is None:
            return
        if state.live_ids is not None:
            self._reconcile(state.live_ids, state.tombstoned_ids)
        records = self._sync.unapplied(state)
        if records is None:
            return
        self._apply_rows(records)
        self._links.merge(state.links)
        self._sync.applied(state)

    def _reconcile(self, live_ids: frozenset, tombstoned_ids: frozenset) -> None:
        """After another store's purge: forget every memory the file no longer holds live (caller holds the lock).

        A purge deletes tombstoned rows, so a store that had not read a tombstone yet cannot learn
        of that forget from the rows; it compares its live ids with the file's instead. Purged ids
        are then unknown (``not_found``), as in the purging store.
        """
        for memory_id, row in list(self._generation.row_of.items()):
            if memory_id not in live_ids:
                self._forget_row(memory_id, row)
        self._forgotten = set(tombstoned_ids)

    def _forget_row(self, memory_id: int, row: int) -> None:
        """Tombstone ``row`` in memory, drop its links and free its key (caller holds the lock)."""
        self._generation.tombstone(row)
        del self._generation.row_of[memory_id]
        self._forgotten.add(memory_id)
        self._links.drop(memory_id)
        self._keys.drop(memory_id)
        self._revision += 1

    # ------------------------------------------------------------------ writing
    def add(
        self,
        text: str,
        embedding: Optional[np.ndarray] = None,
        *,
        tenant: str = DEFAULT_TENANT,
        importance: float = DEFAULT_IMPORTANCE,
        valence: float = DEFAULT_VALENCE,
        tier: str = DEFAULT_TIER,
        tags: Iterable[str] = (),
        entities: Iterable[str] = (),
        storage_strength: float = DEFAULT_STORAGE_STRENGTH,
        created_at: Optional[float] = None,
        session: Optional[str] = None,
        supersedes: Optional[int] = None,
        key: Optional[str] = None,
    ) -> int:
        """Store one memory and return its id.

        Parameters
        ----------
        text : str
        embedding : (dim,) array, optional
            Converted to float32 and L2-normalised once. None: the store's embedder embeds ``text``.
        tenant : str, default "default"
        importance : float in [0, 1], default 0.5
        valence : float in [-1, 1], default 0.0
        tier : str, default "episodic"
            One of :data:`fieldrank.memory.TIERS`.
        tags, entities : iterable of str
        storage_strength : float >= 1, default 1.0
            Initial S (a durable constraint may start higher: it decays more slowly).
        created_at : float, optional
            Unix seconds; default now. ``last_access`` starts equal to it.
        session : str, optional
            The conversation or session it was said in: memories of one session, added one after
            another, support each other in the relevance core (same-session neighbours).
        supersedes : int, optional
            Id of a memory of the same tenant that this one replaces ("Orion now uses Postgres 16"
            replacing "Orion uses MySQL 5.7"). The stale memory stays recallable but always ranks
            below its replacement (docs/memory.md, "Updates").
        key : str, optional
            An external name, unique among the live memories of the tenant (the file enforces it):
            see :meth:`put`. A held key is a ``DuplicateKeyError`` (a ``ValueError``), nothing written.

        Returns
        -------
        int
            The new memory's id. With a file store the memory is committed before this returns.
        """
        text = checked_text(text, self._max_text_bytes)
        if embedding is None:
            embedding = embedded(self._embedder, [text], "embedding")[0]
        ids = self.add_many(
            [text],
            # normalised once here (the messages name `embedding`); add_many stores these very bits
            UnitRows(single_vector(embedding, self._dim, array_only=True)[None, :]),
            tenants=check_tenant(tenant),
            importances=importance,
            valences=valence,
            tiers=tier,
            tags=[check_labels(tags, "tags")],
            entities=[check_labels(entities, "entities")],
            storage_strengths=storage_strength,
            created_at=created_at,
            sessions=session,
            supersedes=None if supersedes is None else [supersedes],
            keys=None if key is None else [key],
        )
        return int(ids[0])

    def add_many(
        self,
        texts: Sequence[str],
        embeddings: Optional[np.ndarray] = None,
        *,
        tenants: Union[str, Sequence[str]] = DEFAULT_TENANT,
        importances: Union[float, Sequence[float]] = DEFAULT_IMPORTANCE,
        valences: Union[float, Sequence[float]] = DEFAULT_VALENCE,
        tiers: Union[str, Sequence[str]] = DEFAULT_TIER,
        tags: Optional[Sequence[Iterable[str]]] = None,
        entities: Optional[Sequence[Iterable[str]]] = None,
        storage_strengths: Union[float, Sequence[float]] = DEFAULT_STORAGE_STRENGTH,
        created_at: Union[float, Sequence[float], None] = None,
        last_access: Union[float, Sequence[float], None] = None,
        recall_counts: Union[int, Sequence[int]] = 0,
        sessions: Union[str, Sequence[Optional[str]], None] = None,
        supersedes: Optional[Sequence[Optional[int]]] = None,
        keys: Optional[Sequence[Optional[str]]] = None,
    ) -> np.ndarray:
        """Store many memories in one step (one transaction for a file store); return their ids.

        Every keyword takes either one value for all memories or a sequence with one value per
        memory; ``tags``/``entities`` take one collection of labels per memory. Validation
        happens before anything is written: either every memory is stored or none.
        ``last_access`` (default: ``created_at``) and ``recall_counts`` (default 0) restore a
        recall history, e.g. when importing memories from another system. ``sessions`` (one str
        for all, or one str/None per memory), ``supersedes`` and ``keys`` (one id/None, one str/None
        per memory; no key twice) are as in :meth:`add`.

        Returns
        -------
        np.ndarray
            int64 ids, in the order of ``texts``.
        """
        text_list = checked_texts(texts, self._max_text_bytes)
        if embeddings is None:
            embeddings = embedded(self._embedder, text_list, "embeddings")
        rows = new_rows(text_list, embeddings, self._dim, tenants=tenants, importances=importances, valences=valences,
                        tiers=tiers, tags=tags, entities=entities, storage_strengths=storage_strengths,
                        created_at=created_at, last_access=last_access, recall_counts=recall_counts,
                        sessions=sessions, supersedes=supersedes)
        key_list = checked_keys(keys, rows.tenants)
        if len(rows) == 0:
            return np.empty(0, dtype=np.int64)
        with self._lock:
            self._check_open()
            self._refresh()
            return self._insert(rows, key_list)

    def _insert(self, rows: NewRows, keys: Optional[list[Optional[str]]] = None) -> np.ndarray:
        """Give ``rows`` ids (in the backend's transaction, with one) and append them (caller holds the lock)."""
        stale_rows = stale_rows_of(self._generation, rows.supersedes, rows.tenants)
        n = len(rows)
        named = self._keys.named(keys, rows.tenants, check_free=self._backend is None)
        if self._backend is not None:
            built: list[RowBatch] = []

            def built_batch(first: int) -> RowBatch:
                built.append(rows.batch(first))
                return built[0]

            pairs = [(r, offset) for offset, r in enumerate(rows.supersedes) if r is not None]
            try:
                first, revision = self._backend.insert(built_batch, n, pairs, **({} if keys is None else {"keys": keys}))
            except DuplicateKeyError:  # another process holds the key: learn of it before raising
                self._sync.look_again()
                self._refresh()
                raise
            batch = built[0]
            self._sync.wrote(revision)
        else:
            first = self._next_id
            batch = rows.batch(first)
        self._next_id = max(self._next_id, first + n)
        self._generation.append(batch)
        for offset, row in stale_rows:
            self._generation.mark_superseded(row, first + offset)
        self._keys.bind_rows(named, first)
        self._revision += 1
        return batch.ids

    @property
    def embedder(self) -> Optional[Embedder]:
        """The embedder of texts given without a vector, or None."""
        return self._embedder

    def get(self, memory_id: int, *, tenant: Optional[str] = None) -> Memory:
        """The memory with this id.

        Parameters
        ----------
        memory_id : int
        tenant : str, optional
            Scope the lookup: a memory of another tenant raises ``KeyError`` like a missing one.

        Raises
        ------
        KeyError
            If there is no such (live) memory; the message says whether it was forgotten,
            unless ``tenant`` is given.
        """
        memory_id = check_memory_id(memory_id)
        tenant = None if tenant is None else check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            return self._generation.memory(self._generation.live_row(memory_id, tenant, self._forgotten))

    def update(
        self,
        memory_id: int,
        *,
        text: Optional[str] = None,
        embedding: Optional[np.ndarray] = None,
        importance: Optional[float] = None,
        valence: Optional[float] = None,
        tier: Optional[str] = None,
        tags: Optional[Iterable[str]] = None,
        entities: Optional[Iterable[str]] = None,
        storage_strength: Optional[float] = None,
        tenant: Optional[str] = None,
    ) -> Memory:
        """Change fields of a memory (None: unchanged); returns the updated memory.

        ``tenant`` scopes the call as in :meth:`get` (it does not move the memory).

        The id, ``created_at``, ``last_access`` and ``recall_count`` are kept. Internally the old
        row is tombstoned and a new row appended in one step, so every index (BM25 included)
        sees the new text at once. ``storage_strength`` may not decrease (S never decreases).

        Raises
        ------
        KeyError
            If the memory does not exist or was forgotten (or purged), in any process: an
            update never revives a forgotten memory.
        """
        memory_id = check_memory_id(memory_id)
        tenant = None if tenant is None else check_tenant(tenant)
        if text is not None and embedding is None and self._embedder is not None:
            # New words, new vector: keeping the old embedding would rank the new text by the old one.
            embedding = embedded(self._embedder, [checked_text(text, self._max_text_bytes)], "embedding")[0]
        changes = checked_changes(self._dim, self._max_text_bytes, text=text, embedding=embedding, importance=importance, valence=valence,
                                  tier=tier, tags=tags, entities=entities, storage_strength=storage_strength)
        with self._lock:
            self._check_open()
            self._refresh()
            generation = self._generation
            row = self._generation.live_row(memory_id, tenant, self._forgotten)
            batch = updated_batch(generation.memory(row), changes)
            if self._backend is not None:
                try:
                    revision = self._backend.replace(batch)
                except KeyError:  # forgotten (or purged) by another process since the refresh
                    self._sync.look_again()
                    self._refresh()
                    raise
                self._sync.wrote(revision)
            generation.tombstone(row)
            generation.append(batch)
            self._revision += 1
            return generation.memory(generation.row_of[memory_id])

    def forget(self, memory_id: int, *, tenant: Optional[str] = None) -> bool:
        """Tombstone a memory: from now on no recall returns it, from any generator.

        Returns True if it was live, False if it had already been forgotten. The row leaves the
        in-memory indexes at the next :meth:`compact`; the text stays in the SQLite file (as a
        tombstone) until ``compact(purge=True)``. ``tenant`` scopes the call as in :meth:`get`; with it,
        an already forgotten id raises ``KeyError`` (its tenant can no longer be checked).

        Raises
        ------
        KeyError
            If there is no memory with this id (for this tenant).
        """
        memory_id = check_memory_id(memory_id)
        tenant = None if tenant is None else check_tenant(tenant)
        with self._lock:
            self._check_open()
            self._refresh()
            if memory_id in self._forgotten and tenant is None:
                return False
            if memory_id in self._forgotten:
                msg = f"no memory with id {memory_id} for tenant {tenant!r}"
                raise KeyError(msg)
            row = self._generation.live_row(memory_id, tenant, self._forgotten)
            was_live = True
            if self._backend is not None:
                revision = self._backend.tombstone(memory_id)
                if revision is None:  # another process forgot it after the refresh
                    was_live = False
                    self._sync.look_again()
                else:
                    self._sync.wrote(revision)
            self._forget_row(memory_id, row)
            return was_live

    def compact(self, *, purge: bool = False) -> int:
        """Rebuild the in-memory indexes (embedding matrix, BM25, postings) without tombstones.

        Ids do not change. Recalls running meanwhile keep using the old generation. It first
        applies what other stores committed (so it never keeps or purges on a stale view).

        Parameters
        ----------
        purge : bool, default False
            Also delete tombstoned rows from the SQLite file (their text and embedding); after
            that ``why_not`` reports them as ``not_found``. Other stores on the file learn of the
            purge from the file's purge epoch at their next call and forget, before answering,
            every memory the file no longer holds live (a forget stays final everywhere).

        Returns
        -------
        int
            Rows dropped from the in-memory indexes.
        """
        purge = _v.flag(purge, "purge")
        with self._lock:
            self._check_open()
            self._refresh()  # never drop (or purge) on a stale view of the file
            if purge and self._backend is not None:
                purged, epoch = self._backend.purge_tombstones()
                # Rows another process tombstoned after the refresh were purged too: forget them now
                # (no later revision scan can see a deleted row).
                for memory_id in purged:
                    row = self._generation.row_of.get(memory_id)
                    if row is not None:
                        self._forget_row(memory_id, row)
                self._forgotten.difference_update(purged)
                self._sync.purged(epoch)
            elif purge:
                self._forgotten.clear()
            old = self._generation
            self._generation = old.compacted(self._params)
            return int(old.n - self._generation.n)

    # ------------------------------------------------------------------ recall
    def _cue(self, cue_text: Optional[str], cue_vector_value: Optional[np.ndarray], **arguments: Any
             ) -> tuple[Cue, GateSpec]:
        """The checked cue and gates of a recall or why_not (:func:`._query.build_query`)."""
        return build_query(cue_text, cue_vector_value, dim=self._dim,
                           embed=None if self._embedder is None else self._embedded_query, **arguments)

    def _embedded_query(self, text: str) -> np.ndarray:
        return embedded(self._embedder, [text], "cue_vector", queries=True)[0]

    def recall(
        self,
        cue_text: Optional[str],
        cue_vector: Optional[np.ndarray] = None,
        k: int = DEFAULT_K,
        *,
        tenant: str = DEFAULT_TENANT,
        mode: str = DEFAULT_MODE,
        required_tags: Optional[Iterable[str]] = None,
        tier_mask: Optional[Iterable[str]] = None,
        valence_window: Optional[tuple[float, float]] = None,
        min_importance: Optional[float] = None,
        at_time: Optional[float] = None,
        cue_tags: Optional[Iterable[str]] = None,
        cue_entities: Optional[Iterable[str]] = None,
        cue_valence: Optional[float] = None,
        cue_time: Optional[float] = None,
        reinforce: bool = True,
        min_confidence: Optional[float] = None,
    ) -> RecallResult:
        """The ``k`` best memories of ``tenant`` for a cue, with provenance.

        Parameters
        ----------
        cue_text : str or None
            For the BM25 generator (None: BM25 admits nothing).
        cue_vector : (dim,) array, optional
            The cue's embedding (same model as the memories); also gives every candidate's sim.
            None: the store's embedder embeds ``cue_text``; without an embedder it is required
            except in ``keyword`` mode, where ``sim`` is then each candidate's BM25 score relative
            to the best candidate's (and ``factors.cosine`` holds that).
        k : int, default 10
        tenant : str, default "default"
            Only this tenant's memories are searched, scored or returned.
        mode : str, default "hybrid"
            ``hybrid`` (dense + BM25), ``vector`` (dense), ``keyword`` (BM25), ``full`` (all
            generators) or ``rerank`` (the ``full`` union reranked by CFS-R/CFS).
        required_tags : iterable of str, optional
            Gate: a memory must carry all of them. They also count as cue tags.
        tier_mask : iterable of str, optional
            Gate: allowed tiers (from :data:`fieldrank.memory.TIERS`).
        valence_window : (low, high), optional
            Gate: the memory's valence must lie in [low, high].
        min_importance : float, optional
            Gate: importance >= min_importance.
        at_time : float, optional
            Unix seconds the recall happens at (decay, ages, bookkeeping); default now.
        cue_tags, cue_entities : iterable of str, optional
            Soft signals: tag containment (factor and ``tag`` generator) and cue entities
            (graph activation).
        cue_valence : float in [-1, 1], optional
            Enables the valence alignment V.
        cue_time : float, optional
            Centre of the ``temporal`` generator; default ``at_time``.
        reinforce : bool, default True
            Apply the recall dynamics to the returned memories (and persist them). This
            bookkeeping never fails the read: with a file it waits at most 0.25 s for another
            writer's lock, and if it cannot be written (locked, read-only, disk full), the hits
            are returned, nothing changes in memory or in the file, ``reinforced`` is False on
            the result, a :class:`~fieldrank.memory.ReinforcementWarning` is issued and
            :attr:`reinforce_failures` counts it.
        min_confidence : float in [0, 1], optional
            Return only the hits whose ``confidence`` (calibrated probability of being relevant,
            :class:`Hit`) is at least this: fewer than k, possibly none. Needs the cue text and vector.

        Returns
        -------
        RecallResult
        """
        reinforce = _v.flag(reinforce, "reinforce")
        trace, _ = self._traced(cue_text, cue_vector, k, mode, None, dict(
            tenant=tenant, required_tags=required_tags, tier_mask=tier_mask, valence_window=valence_window,
            min_importance=min_importance, at_time=at_time, cue_tags=cue_tags, cue_entities=cue_entities,
            cue_valence=cue_valence, cue_time=cue_time))
        cue = trace.cue
        returned = list(_hit_confidence.annotate(pipeline.top_hits(trace), cue.text, cue.vector is not None,
                                                 min_confidence))
        # The bookkeeping never fails the read: if it cannot be written, the hits come back unreinforced.
        reinforced = reinforce and (not returned or self._reinforce([hit.id for hit in returned], cue.at_time))
        return pipeline.recall_result(trace, returned, self._quotas.of(mode), reinforced)

    def _traced(self, cue_text: Optional[str], cue_vector: Optional[np.ndarray], k: int, mode: str,
                memory_id: Optional[int], arguments: dict) -> tuple[pipeline.Trace, bool]:
        """Check a recall's query, take a snapshot and run the pipeline on it; also whether the store
        knows ``memory_id`` as forgotten (read with the snapshot)."""
        check_positive_int(k, "k")
        check_mode(mode)
        cue, gates = self._cue(cue_text, cue_vector, mode=mode, **arguments)
        with self._lock:
            self._check_open()
            self._refresh()
            snapshot = self._generation.snapshot()
            forgotten = memory_id in self._forgotten
        trace = pipeline.run(snapshot, cue, gates, mode, k, self._params, self._links.index, self._fusion_params)
        return trace, forgotten

    def _reinforce(self, memory_ids: list[int], at_time: float) -> bool:
        """Recall dynamics for the returned memories (see :mod:`._scoring`), persisted atomically.

        With a file, the file does the arithmetic (``recall_count = recall_count + 1``, S grows
        by the gain, ``last_access`` only moves forward, links ``w += rate · (1 − w)``) in one
        transaction, and the values after it are copied back: concurrent recalls of several
        processes never lose an update. Nothing in memory changes before that commit succeeded.

        Returns whether the bookkeeping is in effect. The write waits at most
        ``REINFORCE_BUSY_TIMEOUT_MS`` (0.25 s) for another writer's lock; if it cannot commit
        (locked, read-only, disk full, I/O error), nothing is written or changed, a
        :class:`ReinforcementWarning` names the file and the cause, and False is returned: the
        recall still returns its hits (``RecallResult.reinforced`` is False).
        """
        with self._lock:
            if self._closed:
                return False
            plan = reinforcement.plan(self._generation, self._links, memory_ids, at_time, self._params)
            if self._backend is None:
                reinforcement.apply_in_memory(plan, self._generation, self._links)
                return True
            if not plan.ids:
                return True
            try:
                after = self._backend.reinforce(plan.updates(), plan.link_rows)
            except StoreIOError as error:
                self._reinforce_failures += 1
                warnings.warn(ReinforcementWarning(
                    f"recall returned its hits unreinforced: {error}"), stacklevel=3)
                return False
            reinforcement.apply_stored(after, self._generation, self._links)
            return True

    # ------------------------------------------------------------------ why not
    def why_not(
        self,
        memory_id: int,
        cue_text: Optional[str],
        cue_vector: Optional[np.ndarray] = None,
        k: int = DEFAULT_K,
        *,
        tenant: str = DEFAULT_TENANT,
        mode: str = DEFAULT_MODE,
        required_tags: Optional[Iterable[str]] = None,
        tier_mask: Optional[Iterable[str]] = None,
        valence_window: Optional[tuple[float, float]] = None,
        min_importance: Optional[float] = None,
        at_time: Optional[float] = None,
        cue_tags: Optional[Iterable[str]] = None,
        cue_entities: Optional[Iterable[str]] = None,
        cue_valence: Optional[float] = None,
        cue_time: Optional[float] = None,
    ) -> WhyNot:
        """Why ``memory_id`` is (not) among the hits of the same :meth:`recall` (no side effects).

        Checks, in order: not found; tombstoned; other tenant; gated (which gates); not admitted
        by any generator within its quota (with the rank it has in each generator); outranked
        (its rank, score, the k-th score and the margin); otherwise ``returned``.

        Notes
        -----
        A diagnostic for trusted callers: it says whether an id exists in another tenant.
        """
        memory_id = check_memory_id(memory_id)
        trace, forgotten = self._traced(cue_text, cue_vector, k, mode, memory_id, dict(
            tenant=tenant, required_tags=required_tags, tier_mask=tier_mask, valence_window=valence_window,
            min_importance=min_importance, at_time=at_time, cue_tags=cue_tags, cue_entities=cue_entities,
            cue_valence=cue_valence, cue_time=cue_time))
        return pipeline.explain(trace, memory_id, forgotten, self._quotas.of(mode))


def _reopened(path: str, params: MemoryParams, synchronous: str, embedder: Optional[Embedder],
              max_text_bytes: int) -> MemoryStore:
    """A pickled file store: its file, opened again."""
    return MemoryStore(path, params=params, synchronous=synchronous, embedder=embedder, max_text_bytes=max_text_bytes)

