"""The interface between a memory store and its durable storage (:class:`StoreBackend`).

A :class:`~fieldrank.memory.MemoryStore` keeps its rows in memory and ranks them there; a
backend is the durable log and copy of those rows that one or several processes share. The store
calls nothing else of a backend than what :class:`StoreBackend` declares, so a second backend
(PostgreSQL, issue #39) implements this class and nothing in the store changes. The SQLite file
(:class:`~._sqlite.SqliteBackend`) is the first implementation.

Records. Rows cross the interface in two shapes:

- written: a :class:`~fieldrank.memory._columns.RowBatch` (validated columns, ids allocated);
- read: one tuple per memory in :data:`COLUMNS` order followed by the row's revision, with the
  embedding as :data:`EMBEDDING_DTYPE` bytes (``4 · dim`` of them), tags and entities as tuples
  of str, ``tombstone`` 0 or 1, ``session``/``supersedes``/``superseded_by`` None when unset.
  :func:`~._records.batch_of_records` turns them into a ``RowBatch``, checking every value as the
  API checks it.

Keys. A memory may carry an external ``key`` (the last column; None for none): a name an
adapter gives it (LangGraph's (namespace, key)), unique among the *live* memories of its tenant
and enforced by storage itself, so two processes can never both hold a key. A key is written by
:meth:`StoreBackend.insert` and never changed afterwards (:meth:`StoreBackend.replace` keeps it);
forgetting the memory frees it.

Revisions. Every write of any process bumps one counter (the *revision*) and stamps the rows it
touched with it; a process catches up by reading the rows written after the last revision it
applied (:meth:`StoreBackend.changes`). Deleting rows (a purge) cannot be seen that way, so a
purge bumps a second counter, the *purge epoch*; a process that sees it move compares its live
ids with the backend's.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional

import numpy as np

if TYPE_CHECKING:  # the column batch type, for annotations only
    from .._columns import RowBatch

__all__ = ["COLUMNS", "EMBEDDING_DTYPE", "SYNCHRONOUS_MODES", "Changes", "DuplicateKeyError", "Reinforced",
           "StoreBackend", "StoreIOError"]

#: Accepted values of ``PRAGMA synchronous`` (the SQLite backend's durability knob).
SYNCHRONOUS_MODES: tuple[str, ...] = ("OFF", "NORMAL", "FULL", "EXTRA")
#: How an embedding is stored: little-endian float32, ``dim`` of them.
EMBEDDING_DTYPE = np.dtype("<f4")
#: Column order of a memory record (read from a backend; the row's revision follows).
COLUMNS = (
    "id", "tenant", "text", "embedding", "created_at", "last_access", "recall_count", "importance",
    "storage_strength", "valence", "tier", "tags", "entities", "tombstone", "session", "supersedes",
    "superseded_by", "key",
)


class StoreIOError(OSError):
    """The backend could not read or write an opened memory store.

    Locked past the busy timeout, a read-only file or directory, a full disk, an I/O error: the
    file may well be intact; the operation was rolled back (nothing of it was written).
    Opening a file that SQLite cannot open or set up raises it too. Attributes ``path`` (also
    ``filename``), ``operation`` (what the store was doing: "open", "add to", "update", "forget
    in", "purge", "write the recall bookkeeping to", "read") and ``cause`` (the backend's
    message); the original exception is chained as ``__cause__``.
    """

    def __init__(self, path: str, operation: str, cause: str) -> None:
        self.path, self.operation, self.cause = path, operation, cause
        self._message = f"cannot {operation} the memory store {path!r}: {cause}"
        super().__init__(self._message)
        self.filename = path

    def __str__(self) -> str:  # OSError would print "[Errno None] None: path" once filename is set
        return self._message


class DuplicateKeyError(ValueError):
    """A key already names a live memory of the tenant (``add(..., key=...)``; nothing was written).

    Attributes ``key``, ``tenant`` and ``memory_id`` (the memory holding it, or None when
    storage did not say). ``MemoryStore.put`` replaces that memory instead.
    """

    def __init__(self, key: str, tenant: str, memory_id: Optional[int] = None) -> None:
        self.key, self.tenant, self.memory_id = key, tenant, memory_id
        holder = "a live memory" if memory_id is None else f"live memory {memory_id}"
        super().__init__(f"key {key!r} already names {holder} of tenant {tenant!r} (put() replaces it in place)")


@dataclass(frozen=True)
class Changes:
    """What a refresh read, in one read transaction (:meth:`StoreBackend.changes`).

    ``rows``: the memory records written after the given revision, and ``links`` every link (both
    empty when the backend's revision is not past it). ``live_ids`` and ``tombstoned_ids``: every
    id the backend holds live / tombstoned, read only when its purge epoch differs from the one
    the caller knows (None otherwise).
    """

    revision: int
    purge_epoch: int
    rows: list
    links: list
    live_ids: Optional[frozenset]
    tombstoned_ids: Optional[frozenset]


@dataclass(frozen=True)
class Reinforced:
    """The bookkeeping values after :meth:`StoreBackend.reinforce`, as the backend holds them.

    ``rows``: ``id -> (last_access, recall_count, storage_strength)`` of every live memory it
    touched; ``links``: ``(a, b) -> weight`` (a < b) of every link it wrote.
    """

    rows: dict
    links: dict


class StoreBackend(abc.ABC):
    """Durable storage of one memory store, shared by every process that opens it.

    Contract of every implementation:

    - **Opening** (the constructor) never writes to storage that is not known to be a store of
      this format (or empty and being created: then ``dim`` is required); it refuses another
      format or schema version with a ``ValueError`` naming it, and a damaged or hostile store
      with :class:`~fieldrank.memory.StoreFormatError`. After it, :attr:`path` names the storage
      (no credentials) and :attr:`dim` is the embedding dimension it holds.
    - **Transactions.** Every method is one transaction: a write commits all of its rows or
      none, and is durable when it returns; a read sees one consistent state. Ids are allocated
      inside the write transaction, so two processes never pick the same id.
    - **Keys are unique in storage.** Among the live memories of one tenant a non-null ``key`` is
      held at most once, enforced by storage (SQLite: a partial UNIQUE index; PostgreSQL: the
      same as a partial unique index ``WHERE key IS NOT NULL AND tombstone = 0``), not by a read
      before the write: two processes inserting one key at once get one row and one
      :class:`DuplicateKeyError`.
    - **Forgetting is final.** No write revives a tombstoned row: :meth:`replace`, a supersede
      in :meth:`insert`, :meth:`reinforce` and its links touch only rows live in storage.
    - **Errors.** A failure of the storage itself (locked, read-only, full, unreachable) is a
      :class:`StoreIOError` naming the storage and the operation, with nothing written.
    - Calls come from one thread at a time (the store holds its lock around every call).
    """

    path: str
    dim: int

    @abc.abstractmethod
    def next_id(self) -> int:
        """The lowest id no memory has had (ids of purged memories are never reused)."""

    @abc.abstractmethod
    def data_version(self) -> int:
        """A cheap token that changes whenever another connection commits (no row read)."""

    @abc.abstractmethod
    def changes(self, since_revision: Optional[int], known_epoch: Optional[int]) -> Changes:
        """Records written after ``since_revision`` (None: every record) and the link table, in one read.

        When the purge epoch is not ``known_epoch`` (None: the caller loads everything anyway),
        the ids held live and tombstoned are read too.
        """

    @abc.abstractmethod
    def insert(self, make_batch: Callable[[int], RowBatch], count: int,
               supersede: Iterable[tuple[int, int]] = (),
               keys: Optional[Sequence[Optional[str]]] = None) -> tuple[int, int]:
        """Allocate ``count`` ids and insert ``make_batch(first_id)``; returns (first id, revision).

        ``supersede`` holds ``(stale_id, offset)`` pairs: the stale memory is marked superseded by
        ``first_id + offset``; a stale memory not live in storage is a ``KeyError`` (nothing written).
        ``keys`` (None: no row has one) gives each row its ``key`` column (None: none); a key that
        a live memory of the row's tenant already holds is a :class:`DuplicateKeyError` naming it
        (nothing written).
        """

    @abc.abstractmethod
    def replace(self, batch: RowBatch) -> int:
        """Overwrite the one memory of ``batch`` (an update); returns the write's revision.

        The bookkeeping columns (``last_access``, ``recall_count``) and ``key`` stay storage's, and
        ``storage_strength`` never decreases. ``KeyError`` (nothing written) when the memory is
        not live in storage.
        """

    @abc.abstractmethod
    def tombstone(self, memory_id: int) -> Optional[int]:
        """Mark a memory forgotten and drop its links; returns the revision, or None if it was not live."""

    @abc.abstractmethod
    def reinforce(self, updates: list[tuple[float, float, int]], links: list[tuple[int, int, float]]) -> Reinforced:
        """A recall's bookkeeping, as arithmetic in storage (concurrent recalls lose no update).

        ``updates`` are ``(at_time, gain, id)``: ``last_access`` only moves forward, ``recall_count``
        grows by one (saturating at the top of its range), S grows by ``gain``. ``links`` are
        ``(a, b, rate)``, a < b: ``w ← w + rate · (1 − w)``. Only live memories are touched. It waits
        briefly for a lock (a read must not stall behind a long write): past it, StoreIOError.
        """

    @abc.abstractmethod
    def purge_tombstones(self) -> tuple[list[int], Optional[int]]:
        """Delete tombstoned rows for good and bump the purge epoch; returns their ids and the epoch (None: none)."""

    @abc.abstractmethod
    def rows(self, since_revision: Optional[int] = None) -> Iterator[tuple[Any, ...]]:
        """Memory records in id order (written after ``since_revision`` when given)."""

    @abc.abstractmethod
    def links(self) -> list[tuple[int, int, float]]:
        """Every co-recall link ``(a, b, weight)``, a < b."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release the storage; no method is called afterwards."""
