"""Durable storage of a memory store in one SQLite file (stdlib ``sqlite3``, WAL mode).

The file is the source of truth; the in-memory indexes (embedding matrix, BM25, tag/entity
postings) are rebuilt from it on open. Nothing is pickled: embeddings are little-endian float32
BLOBs of exactly ``4 · dim`` bytes, tags and entities JSON arrays, everything else plain columns.

Durability. Every mutation is one transaction, committed before the call returns: an ``add``
that returned survives a crash of the process (SIGKILL) and, with ``synchronous="FULL"`` (the
default), of the machine. ``add_many`` is one transaction: all of its rows or none. A reader never
sees a half-written row, because SQLite commits atomically.

Schema (``format_version`` 2)::

    meta(key TEXT PRIMARY KEY, value TEXT)            format, format_version, dim, next_id, revision,
                                                      purge_epoch
    memories(id INTEGER PRIMARY KEY, tenant, text, embedding BLOB, created_at, last_access,
             recall_count, importance, storage_strength, valence, tier, tags JSON,
             entities JSON, tombstone INTEGER,
             session TEXT, supersedes INTEGER, superseded_by INTEGER, revision INTEGER, key TEXT)
    UNIQUE INDEX memories_key ON memories (tenant, key) WHERE key IS NOT NULL AND tombstone = 0
    links(a INTEGER, b INTEGER, weight REAL, PRIMARY KEY (a, b))   co-recall links, a < b

The last five columns were added after the first release; a file without them gains them on
open (``ALTER TABLE ... ADD COLUMN``, NULL / 0 defaults: no session, nothing superseded, no key),
so old files keep working. Version 2 added ``key`` and its unique index (issue #34: an adapter's
identity of a memory, e.g. LangGraph's (namespace, key), lives in the file, so every process
agrees on it); a version-1 file is migrated on open (column, index and ``format_version`` in one
transaction), and an older fieldrank refuses the migrated file by its version.

Several processes (or several store objects) on one file. Every write is ``BEGIN IMMEDIATE``
(SQLite's write lock, waited for up to ``busy_timeout``), and ids are allocated *inside* that
transaction from ``meta.next_id``, so two writers never pick the same id. Every write also bumps
``meta.revision`` and stamps the rows it touched with it, so a store sees another writer's
changes by reading the rows whose revision is newer than the last it loaded
(:meth:`SqliteBackend.changes`; ``PRAGMA data_version`` tells it cheaply when to look).
The recall bookkeeping is one atomic SQL increment per memory (``recall_count = recall_count +
1``), so concurrent recalls never lose a count.

Forgetting is final in every process. A forget is a row write (``tombstone = 1`` at a new
revision), so other stores learn of it by the revision scan. ``compact(purge=True)`` *deletes*
tombstoned rows, which a revision scan cannot see; so a purge also bumps ``meta.purge_epoch`` in
the same transaction, and a store whose last seen epoch differs reconciles its live set against
the file's (every memory the file no longer holds live is forgotten) before it answers
(:meth:`SqliteBackend.changes`). Everything a refresh reads comes from one read transaction (one
snapshot of the file). Writes never revive a forgotten row: an update, a supersede, a link or a
recall's bookkeeping only touch rows that are live *in the file* (``tombstone = 0``), and an
update or supersede of a row that is not raises ``KeyError``.

Errors. A failure of SQLite while reading or writing an opened file (locked past the busy
timeout, read-only, disk full, I/O error) is raised as :class:`StoreIOError` (an ``OSError``)
naming the file, the operation and SQLite's message, never as a raw ``sqlite3`` exception; the
transaction is rolled back, so the file holds all of the write or none of it.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional


from .._schema import RECALL_COUNT_RANGE
from ._backend import (COLUMNS, EMBEDDING_DTYPE, SYNCHRONOUS_MODES, Changes, DuplicateKeyError, Reinforced,
                       StoreBackend, StoreIOError)
from ._file_check import (FORMAT_NAME, FORMAT_VERSION, KEY_INDEX, KEY_INDEX_SQL, OWN_SCHEMA_OBJECTS,
                          READABLE_VERSIONS, StoreFormatError, check_store_file)
from ._records import records_of

if TYPE_CHECKING:  # the column batch type, for annotations only
    from .._columns import RowBatch

__all__ = ["BUSY_TIMEOUT_MS", "REINFORCE_BUSY_TIMEOUT_MS", "SqliteBackend"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS memories (
    id INTEGER PRIMARY KEY,
    tenant TEXT NOT NULL,
    text TEXT NOT NULL,
    embedding BLOB NOT NULL,
    created_at REAL NOT NULL,
    last_access REAL NOT NULL,
    recall_count INTEGER NOT NULL,
    importance REAL NOT NULL,
    storage_strength REAL NOT NULL,
    valence REAL NOT NULL,
    tier TEXT NOT NULL,
    tags TEXT NOT NULL,
    entities TEXT NOT NULL,
    tombstone INTEGER NOT NULL DEFAULT 0,
    session TEXT,
    supersedes INTEGER,
    superseded_by INTEGER,
    revision INTEGER NOT NULL DEFAULT 0,
    key TEXT
);
CREATE TABLE IF NOT EXISTS links (
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (a, b)
);
"""

#: Columns added after the first release, with their declarations (migrated on open).
ADDED_COLUMNS = (
    ("session", "TEXT"), ("supersedes", "INTEGER"), ("superseded_by", "INTEGER"),
    ("revision", "INTEGER NOT NULL DEFAULT 0"), ("key", "TEXT"),
)
#: How long a writer waits for another process's write lock before SQLite raises (milliseconds).
BUSY_TIMEOUT_MS = 30_000
#: How long a recall's bookkeeping (reinforcement) waits for the write lock (milliseconds): a
#: read must not stall behind another process's long write; past it the hits are returned unreinforced.
REINFORCE_BUSY_TIMEOUT_MS = 250


class SqliteBackend(StoreBackend):
    """A :class:`~._backend.StoreBackend` in one SQLite file: one connection, used only under the store's lock.

    Parameters
    ----------
    path : str or os.PathLike
    dim : int or None
        Embedding dimension; required for a new file, checked against an existing one.
    synchronous : str
        ``PRAGMA synchronous`` (one of :data:`SYNCHRONOUS_MODES`).
    """

    def __init__(self, path: str | os.PathLike[str], dim: int | None, synchronous: str) -> None:
        if synchronous not in SYNCHRONOUS_MODES:
            msg = f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}"
            raise ValueError(msg)
        self.path = os.fspath(path)
        if dim is None and not os.path.exists(self.path):
            raise ValueError(self._dim_required())  # before connecting: sqlite3 would create the file
        # isolation_level=None: autocommit; every mutation opens its own BEGIN IMMEDIATE ... COMMIT.
        try:
            self._connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                               timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as error:
            raise StoreIOError(self.path, "open", str(error)) from error
        try:
            # read-only until the file is known to be a store of this format, or empty and created on purpose
            creating = self._inspect(dim)
            check_store_file(self._connection, self.path)
            self._connection.execute("PRAGMA journal_mode=WAL")
            self._connection.execute(f"PRAGMA synchronous={synchronous}")
            self._connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            if creating:
                self._create(dim)
            self._migrate()
            self.dim = self._check_meta(dim)
        except sqlite3.OperationalError as error:  # locked, read-only, disk I/O: the file may be fine
            self._connection.close()
            raise StoreIOError(self.path, "open", str(error)) from error
        except sqlite3.DatabaseError as error:  # "file is not a database", a damaged file
            self._connection.close()
            msg = (f"{self.path!r} is not a {FORMAT_NAME} store: {error} (SQLite could not read it as a "
                   "database); pass a new path to create a store, or the file of an existing one")
            raise ValueError(msg) from error
        except BaseException:
            self._connection.close()
            raise

    def _migrate(self) -> None:
        """Bring an older file to :data:`FORMAT_VERSION` (one transaction): the columns of
        :data:`ADDED_COLUMNS` it lacks, the key index, the version in ``meta``."""
        present = {row[1] for row in self._connection.execute("PRAGMA table_info(memories)").fetchall()}
        missing = [(name, kind) for name, kind in ADDED_COLUMNS if name not in present]
        if missing or not self._has_key_index() or self._meta().get("format_version") != str(FORMAT_VERSION):
            with self.transaction("open") as cursor:
                present = {row[1] for row in cursor.execute("PRAGMA table_info(memories)").fetchall()}
                for name, kind in missing:
                    if name not in present:  # another process may have migrated meanwhile
                        cursor.execute(f"ALTER TABLE memories ADD COLUMN {name} {kind}")
                if not self._has_key_index():
                    try:
                        cursor.execute(KEY_INDEX_SQL)
                    except sqlite3.IntegrityError as error:  # a version-2 file whose index was dropped
                        raise StoreFormatError(self.path, "memories", None, "key",
                                               "a key names two live memories of one tenant") from error
                cursor.execute("UPDATE meta SET value = ? WHERE key = 'format_version'", (str(FORMAT_VERSION),))

    def _has_key_index(self) -> bool:
        return self._connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?",
                                        (KEY_INDEX,)).fetchone() is not None

    # ------------------------------------------------------------------ meta
    def _dim_required(self) -> str:
        return f"dim is required to create a new memory store at {self.path!r}"

    def _inspect(self, dim: int | None) -> bool:
        """Read-only, before any write: True for a store to create (an empty database, or one whose
        ``meta`` is still empty: another process is creating it), False for a store of this format.

        Refuses, untouched: another application's database (tables but no ``meta``, or a ``meta``
        of another format or version) and any schema object a store does not have (a trigger, a
        view, another table or index: a trigger would run on the store's own writes).
        """
        objects = self._connection.execute("SELECT type, name FROM sqlite_master").fetchall()
        if not objects:
            if dim is None:
                raise ValueError(self._dim_required())
            return True
        tables = {name for kind, name in objects if kind == "table"}
        if "meta" not in tables:
            msg = (f"{self.path!r} is an SQLite database but not a {FORMAT_NAME} store (it has tables "
                   f"{sorted(tables)} and no 'meta' table); refusing to modify it")
            raise ValueError(msg)
        created = self._connection.execute("SELECT COUNT(*) FROM meta").fetchone()[0] > 0
        if created:
            self._check_format(self._format_keys())
        unknown = sorted(f"{kind} {name!r}" for kind, name in objects
                         if (kind, name) not in OWN_SCHEMA_OBJECTS and not name.startswith("sqlite_"))
        index_sql = self._connection.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?",
                                             (KEY_INDEX,)).fetchone()
        if index_sql is not None and index_sql[0] != KEY_INDEX_SQL:
            # the index's name is ours but not its definition: it would not keep keys unique
            unknown.append(f"index {KEY_INDEX!r} defined as {index_sql[0]!r}")
        if unknown:
            raise StoreFormatError(self.path, "sqlite_master", None, None,
                                   f"schema objects a store does not have: {', '.join(unknown)} (a store holds "
                                   "the tables meta, memories and links only); refusing to open it")
        if not created and dim is None:
            raise ValueError(self._dim_required())
        return not created

    def _format_keys(self) -> dict[str, str]:
        """``meta``'s format and version, read as text whatever bytes they hold (the file check
        reports bad UTF-8 by name afterwards)."""
        previous = self._connection.text_factory
        self._connection.text_factory = lambda raw: raw.decode("utf-8", "replace")
        try:
            return dict(self._connection.execute(
                "SELECT key, value FROM meta WHERE key IN ('format', 'format_version')").fetchall())
        finally:
            self._connection.text_factory = previous

    def _create(self, dim: int) -> None:
        """The schema and the ``meta`` rows of a new store, in one write transaction (a second process
        creating the same file at once finds them there and checks its ``dim`` against them)."""
        with self.transaction("open") as cursor:
            for statement in _SCHEMA.split(";"):
                if statement.strip():
                    cursor.execute(statement)
            if not self._has_key_index():
                cursor.execute(KEY_INDEX_SQL)
            if cursor.execute("SELECT COUNT(*) FROM meta").fetchone()[0] == 0:
                cursor.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("format", FORMAT_NAME), ("format_version", str(FORMAT_VERSION)), ("dim", str(dim)),
                     ("next_id", "0"), ("revision", "0")],
                )

    def _meta(self) -> dict[str, str]:
        return dict(self._connection.execute("SELECT key, value FROM meta").fetchall())

    def _check_format(self, meta: dict[str, str]) -> None:
        if meta.get("format") != FORMAT_NAME:
            msg = f"{self.path!r} is not a {FORMAT_NAME} file (format {meta.get('format')!r}); refusing to modify it"
            raise ValueError(msg)
        if meta.get("format_version") not in READABLE_VERSIONS:
            msg = (f"{self.path!r} has format_version {meta.get('format_version')!r}, expected one of "
                   f"{', '.join(READABLE_VERSIONS)}")
            raise ValueError(msg)

    def _check_meta(self, dim: int | None) -> int:
        meta = self._meta()
        self._check_format(meta)
        stored_dim = int(meta["dim"])
        if dim is not None and dim != stored_dim:
            msg = f"dim must match the store at {self.path!r}: it holds dim={stored_dim}, got dim={dim}"
            raise ValueError(msg)
        return stored_dim

    def next_id(self) -> int:
        return int(self._meta()["next_id"])

    def revision(self) -> int:
        """The file's write counter (bumped by every add, update and forget of any process)."""
        return int(self._meta().get("revision", 0))

    def data_version(self) -> int:
        """``PRAGMA data_version``: changes when another connection commits (cheap, no I/O)."""
        try:
            return int(self._connection.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error as error:
            raise StoreIOError(self.path, "read", str(error)) from error

    @staticmethod
    def _meta_int(cursor: sqlite3.Cursor, key: str) -> int:
        row = cursor.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    @staticmethod
    def _bump_revision(cursor: sqlite3.Cursor) -> int:
        row = cursor.execute("SELECT value FROM meta WHERE key = 'revision'").fetchone()
        revision = (int(row[0]) if row else 0) + 1
        cursor.execute("INSERT INTO meta (key, value) VALUES ('revision', ?) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(revision),))
        return revision

    # ------------------------------------------------------------------ transactions
    class _Transaction:
        """``BEGIN IMMEDIATE`` (a write) or ``BEGIN`` (a read snapshot) ... ``COMMIT``, rolled back on
        any error; SQLite's own errors leave as :class:`StoreIOError` naming the file and ``operation``."""

        def __init__(self, connection: sqlite3.Connection, path: str, operation: str, write: bool) -> None:
            self._connection, self._path, self._operation, self._write = connection, path, operation, write

        def _error(self, error: sqlite3.Error) -> StoreIOError:
            return StoreIOError(self._path, self._operation, str(error))

        def __enter__(self) -> sqlite3.Cursor:
            connection = self._connection
            try:
                connection.execute("BEGIN IMMEDIATE" if self._write else "BEGIN")
            except sqlite3.Error as error:
                raise self._error(error) from error
            return connection.cursor()

        def __exit__(self, exc_type, exc, tb) -> None:
            connection = self._connection
            if exc_type is None:
                try:
                    connection.execute("COMMIT")
                    return
                except sqlite3.Error as error:
                    self._rollback(connection)
                    raise self._error(error) from error
            self._rollback(connection)
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc) from exc

        @staticmethod
        def _rollback(connection: sqlite3.Connection) -> None:
            try:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
            except sqlite3.Error:  # SQLite already rolled back (a full disk, an I/O error)
                pass

    def transaction(self, operation: str) -> SqliteBackend._Transaction:
        """``with backend.transaction("add") as cursor:`` commits on success, rolls back on error."""
        return self._Transaction(self._connection, self.path, operation, write=True)

    def reading(self) -> SqliteBackend._Transaction:
        """``with backend.reading() as cursor:``: every read inside sees one snapshot of the file."""
        return self._Transaction(self._connection, self.path, "read", write=False)

    # ------------------------------------------------------------------ writes
    def insert(self, make_batch: Callable[[int], RowBatch], count: int,
               supersede: Iterable[tuple[int, int]] = (),
               keys: Optional[Sequence[Optional[str]]] = None) -> tuple[int, int]:
        """Allocate ``count`` ids in the file and insert the rows, atomically; returns (first id, revision).

        ``make_batch(first_id)`` builds the rows once the ids are known: they are read from ``meta.next_id`` inside the write transaction, so two
        processes never allocate the same id. ``supersede`` holds ``(stale_id, offset)`` pairs:
        the stale memory is marked superseded by the new row ``first_id + offset``. ``keys``: each
        row's ``key`` (the UNIQUE index refuses one a live memory of the tenant holds:
        :class:`DuplicateKeyError`, nothing written).
        """
        placeholders = ", ".join("?" for _ in COLUMNS)
        with self.transaction("add to") as cursor:
            first = int(cursor.execute("SELECT value FROM meta WHERE key = 'next_id'").fetchone()[0])
            first = max(first, int(cursor.execute("SELECT COALESCE(MAX(id) + 1, 0) FROM memories").fetchone()[0]))
            revision = self._bump_revision(cursor)
            records = records_of(make_batch(first), keys)
            try:
                cursor.executemany(
                    f"INSERT INTO memories ({', '.join(COLUMNS)}, revision) VALUES ({placeholders}, {revision})",
                    records)
            except sqlite3.IntegrityError as error:  # only the key index can refuse a new id
                raise self._duplicate_key(cursor, records) from error
            for stale, offset in supersede:
                # Only a memory live in the file can be superseded (another process may have forgotten it).
                cursor.execute("UPDATE memories SET superseded_by = ?, revision = ? WHERE id = ? AND tombstone = 0",
                               (first + offset, revision, stale))
                if cursor.rowcount != 1:
                    msg = f"supersedes[{offset}]: no live memory with id {stale} (it was forgotten)"
                    raise KeyError(msg)
            cursor.execute("UPDATE meta SET value = ? WHERE key = 'next_id'", (str(first + count),))
        return first, revision

    @staticmethod
    def _duplicate_key(cursor: sqlite3.Cursor, records: list[tuple]) -> DuplicateKeyError:
        """The error for the first key of ``records`` that a live memory (or an earlier record) holds."""
        seen: set[tuple[str, str]] = set()
        for record in records:
            tenant, key = record[COLUMNS.index("tenant")], record[COLUMNS.index("key")]
            if key is None:
                continue
            holder = cursor.execute("SELECT id FROM memories WHERE tenant = ? AND key = ? AND tombstone = 0",
                                    (tenant, key)).fetchone()
            if holder is not None or (tenant, key) in seen:
                return DuplicateKeyError(key, tenant, None if holder is None else int(holder[0]))
            seen.add((tenant, key))
        return DuplicateKeyError("?", "?")  # pragma: no cover - the index refused a row of records

    def replace(self, batch: RowBatch) -> int:
        """Overwrite one memory (an update), atomically; the recall bookkeeping columns stay the file's.

        Returns the write's revision. Raises ``KeyError`` (writing nothing) when the memory is not
        live in the file: another process forgot or purged it; an update never revives a memory.
        """
        (record,) = records_of(batch)
        kept = {"last_access", "recall_count", "storage_strength", "tombstone", "key"}
        names = [name for name in COLUMNS[1:] if name not in kept]
        values = [value for name, value in zip(COLUMNS[1:], record[1:]) if name not in kept]
        assignments = ", ".join(f"{name} = ?" for name in names)
        with self.transaction("update") as cursor:
            revision = self._bump_revision(cursor)
            cursor.execute(f"UPDATE memories SET {assignments}, revision = ? WHERE id = ? AND tombstone = 0",
                           (*values, revision, record[0]))
            if cursor.rowcount != 1:
                msg = f"memory {record[0]} was forgotten"
                raise KeyError(msg)
            cursor.execute("UPDATE memories SET storage_strength = MAX(storage_strength, ?) WHERE id = ?",
                           (record[COLUMNS.index("storage_strength")], record[0]))
        return revision

    def tombstone(self, memory_id: int) -> Optional[int]:
        """Mark a memory forgotten and drop its links, atomically; returns the write's revision.

        None (nothing written) when the file no longer holds it live (another process forgot it).
        """
        with self.transaction("forget in") as cursor:
            row = cursor.execute("SELECT tombstone FROM memories WHERE id = ?", (memory_id,)).fetchone()
            if row is None or row[0]:
                return None
            revision = self._bump_revision(cursor)
            cursor.execute("UPDATE memories SET tombstone = 1, revision = ? WHERE id = ?", (revision, memory_id))
            cursor.execute("DELETE FROM links WHERE a = ? OR b = ?", (memory_id, memory_id))
        return revision

    def reinforce(self, updates: list[tuple[float, float, int]], links: list[tuple[int, int, float]]) -> Reinforced:
        """Persist a recall's bookkeeping atomically; returns ``id -> (last_access, recall_count, S)`` after it.

        ``updates`` are ``(at_time, storage_gain_times_(1 - D), id)``: ``recall_count`` is
        incremented in SQL, ``last_access`` only moves forward and S only grows, so concurrent
        recalls from several processes never lose an update. ``links`` are ``(a, b, rate)``:
        ``w ← w + rate · (1 − w)``, also in SQL. Only memories live in the file are touched (no
        link to a forgotten memory is written).

        It waits at most :data:`REINFORCE_BUSY_TIMEOUT_MS` for the write lock; any failure is a
        :class:`StoreIOError` and nothing is written.
        """
        operation = "write the recall bookkeeping to"
        try:
            self._connection.execute(f"PRAGMA busy_timeout={REINFORCE_BUSY_TIMEOUT_MS}")
        except sqlite3.Error as error:
            raise StoreIOError(self.path, operation, str(error)) from error
        try:
            return self._reinforce(updates, links, operation)
        finally:
            try:
                self._connection.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            except sqlite3.Error:  # the connection is unusable: the next call reports it
                pass

    def _reinforce(self, updates: list[tuple[float, float, int]], links: list[tuple[int, int, float]],
                   operation: str) -> Reinforced:
        with self.transaction(operation) as cursor:
            cursor.executemany(
                # recall_count stops at the top of its range (what the loader accepts).
                "UPDATE memories SET last_access = MAX(last_access, ?), "
                f"recall_count = MIN(recall_count + 1, {RECALL_COUNT_RANGE[1]}), "
                "storage_strength = storage_strength + ? WHERE id = ? AND tombstone = 0", updates)
            cursor.executemany(
                "INSERT INTO links (a, b, weight) SELECT ?, ?, ? WHERE "
                "(SELECT COUNT(*) FROM memories WHERE id IN (?, ?) AND tombstone = 0) = 2 "
                "ON CONFLICT (a, b) DO UPDATE SET weight = weight + excluded.weight * (1 - weight)",
                [(a, b, rate, a, b) for a, b, rate in links],
            )
            ids = [u[2] for u in updates]
            rows = cursor.execute(
                f"SELECT id, last_access, recall_count, storage_strength FROM memories WHERE id IN "
                f"({', '.join('?' for _ in ids)})", ids).fetchall() if ids else []
            weights = {}
            for a, b, _ in links:
                found = cursor.execute("SELECT weight FROM links WHERE a = ? AND b = ?", (a, b)).fetchone()
                if found:
                    weights[(a, b)] = float(found[0])
        return Reinforced({r[0]: (float(r[1]), int(r[2]), float(r[3])) for r in rows}, weights)

    def purge_tombstones(self) -> tuple[list[int], Optional[int]]:
        """Delete tombstoned rows for good; returns their ids and the new purge epoch (None if none).

        The epoch is bumped in the same transaction, so every other store sees that rows were
        deleted (a revision scan cannot) and reconciles before its next answer.
        """
        with self.transaction("purge") as cursor:
            ids = [row[0] for row in cursor.execute("SELECT id FROM memories WHERE tombstone = 1").fetchall()]
            if not ids:
                return [], None
            cursor.execute("DELETE FROM memories WHERE tombstone = 1")
            epoch = self._meta_int(cursor, "purge_epoch") + 1
            cursor.execute("INSERT INTO meta (key, value) VALUES ('purge_epoch', ?) "
                           "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(epoch),))
        return ids, epoch

    # ------------------------------------------------------------------ reads
    def changes(self, since_revision: Optional[int], known_epoch: Optional[int]) -> Changes:
        """The file's state after ``since_revision`` (None: everything), read in one snapshot.

        When the file's purge epoch is not ``known_epoch`` (None: the caller loads everything
        anyway), the ids the file holds live and tombstoned are read too: rows were deleted that
        the caller may still hold.
        """
        with self.reading() as cursor:
            revision = self._meta_int(cursor, "revision")
            epoch = self._meta_int(cursor, "purge_epoch")
            live = tombstoned = None
            if known_epoch is not None and epoch != known_epoch:
                flags = cursor.execute("SELECT id, tombstone FROM memories").fetchall()
                live = frozenset(i for i, t in flags if not t)
                tombstoned = frozenset(i for i, t in flags if t)
            rows: list = []
            links: list = []
            if since_revision is None or revision > since_revision:  # else only bookkeeping or a purge
                rows = list(self.rows(since_revision, cursor))
                links = cursor.execute("SELECT a, b, weight FROM links").fetchall()
        return Changes(revision, epoch, rows, links, live, tombstoned)

    def rows(self, since_revision: int | None = None, cursor: Optional[sqlite3.Cursor] = None
             ) -> Iterator[tuple[Any, ...]]:
        """Memory rows in id order (tuples in :data:`COLUMNS` order then the row's revision; tags/entities decoded).

        With ``since_revision``, only the rows written (added, updated, superseded, forgotten)
        after that revision.
        """
        query = f"SELECT {', '.join(COLUMNS)}, revision FROM memories"
        arguments: tuple = ()
        if since_revision is not None:
            query += " WHERE revision > ?"
            arguments = (since_revision,)
        cursor = (cursor or self._connection).execute(query + " ORDER BY id", arguments)
        expected_bytes = self.dim * EMBEDDING_DTYPE.itemsize
        for row in cursor:
            if len(row[3]) != expected_bytes:
                msg = f"memory {row[0]} in {self.path!r} has a {len(row[3])}-byte embedding, expected {expected_bytes}"
                raise ValueError(msg)
            yield (*row[:11], tuple(json.loads(row[11])), tuple(json.loads(row[12])), *row[13:])

    def links(self) -> list[tuple[int, int, float]]:
        return self._connection.execute("SELECT a, b, weight FROM links").fetchall()

    def close(self) -> None:
        self._connection.close()

