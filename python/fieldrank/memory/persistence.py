"""Durable storage of a memory store in one SQLite file (stdlib ``sqlite3``, WAL mode).

The file is the source of truth; the in-memory indexes (embedding matrix, BM25, tag/entity
postings) are rebuilt from it on open. Nothing is pickled: embeddings are little-endian float32
BLOBs of exactly ``4 · dim`` bytes, tags and entities JSON arrays, everything else plain columns.

Durability. Every mutation is one transaction, committed before the call returns: an ``add``
that returned survives a crash of the process (SIGKILL) and, with ``synchronous="FULL"`` (the
default), of the machine. ``add_many`` is one transaction: all of its rows or none. A reader never
sees a half-written row, because SQLite commits atomically.

Schema (``format_version`` 1)::

    meta(key TEXT PRIMARY KEY, value TEXT)            format, format_version, dim, next_id
    memories(id INTEGER PRIMARY KEY, tenant, text, embedding BLOB, created_at, last_access,
             recall_count, importance, storage_strength, valence, tier, tags JSON,
             entities JSON, tombstone INTEGER)
    links(a INTEGER, b INTEGER, weight REAL, PRIMARY KEY (a, b))   co-recall links, a < b
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ._file_check import check_store_file

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "SYNCHRONOUS_MODES", "SqliteBackend"]

FORMAT_NAME = "fieldrank.memory"
FORMAT_VERSION = 1
#: Accepted values of ``PRAGMA synchronous``.
SYNCHRONOUS_MODES: tuple[str, ...] = ("OFF", "NORMAL", "FULL", "EXTRA")
EMBEDDING_DTYPE = np.dtype("<f4")

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
    tombstone INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS links (
    a INTEGER NOT NULL,
    b INTEGER NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (a, b)
);
"""

#: Column order of ``memories`` used by inserts and loads.
COLUMNS = (
    "id", "tenant", "text", "embedding", "created_at", "last_access", "recall_count", "importance",
    "storage_strength", "valence", "tier", "tags", "entities", "tombstone",
)


class SqliteBackend:
    """One SQLite connection, used only under the store's lock.

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
        # isolation_level=None: autocommit; every mutation opens its own BEGIN IMMEDIATE ... COMMIT.
        self._connection = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        try:
            self._refuse_foreign_database()
            check_store_file(self._connection, self.path)
        except BaseException:
            self._connection.close()
            raise
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute(f"PRAGMA synchronous={synchronous}")
        self._connection.executescript(_SCHEMA)
        self.dim = self._check_meta(dim)

    # ------------------------------------------------------------------ meta
    def _refuse_foreign_database(self) -> None:
        """Read-only check, before any write: a file with tables but no ``meta`` is not a store.

        Another application's SQLite database must not gain the store's tables or be switched to
        WAL: refuse it while the file is still untouched.
        """
        tables = {name for (name,) in self._connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()}
        if tables and "meta" not in tables:
            msg = (
                f"{self.path!r} is an SQLite database but not a {FORMAT_NAME} store (it has tables "
                f"{sorted(tables)} and no 'meta' table); refusing to modify it"
            )
            raise ValueError(msg)

    def _meta(self) -> dict[str, str]:
        return dict(self._connection.execute("SELECT key, value FROM meta").fetchall())

    def _check_meta(self, dim: int | None) -> int:
        meta = self._meta()
        if not meta:
            if dim is None:
                msg = f"dim is required to create a new memory store at {self.path!r}"
                raise ValueError(msg)
            with self.transaction() as cursor:
                cursor.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [("format", FORMAT_NAME), ("format_version", str(FORMAT_VERSION)), ("dim", str(dim)),
                     ("next_id", "0")],
                )
            return dim
        if meta.get("format") != FORMAT_NAME:
            msg = f"{self.path!r} is not a {FORMAT_NAME} file (format {meta.get('format')!r})"
            raise ValueError(msg)
        if meta.get("format_version") != str(FORMAT_VERSION):
            msg = f"{self.path!r} has format_version {meta.get('format_version')!r}, expected {FORMAT_VERSION}"
            raise ValueError(msg)
        stored_dim = int(meta["dim"])
        if dim is not None and dim != stored_dim:
            msg = f"dim must match the store at {self.path!r}: it holds dim={stored_dim}, got dim={dim}"
            raise ValueError(msg)
        return stored_dim

    def next_id(self) -> int:
        return int(self._meta()["next_id"])

    # ------------------------------------------------------------------ transactions
    class _Transaction:
        def __init__(self, connection: sqlite3.Connection) -> None:
            self._connection = connection

        def __enter__(self) -> sqlite3.Cursor:
            self._connection.execute("BEGIN IMMEDIATE")
            return self._connection.cursor()

        def __exit__(self, exc_type, exc, tb) -> None:
            if exc_type is None:
                self._connection.execute("COMMIT")
            else:
                self._connection.execute("ROLLBACK")

    def transaction(self) -> SqliteBackend._Transaction:
        """``with backend.transaction() as cursor:`` commits on success, rolls back on error."""
        return self._Transaction(self._connection)

    # ------------------------------------------------------------------ writes
    @staticmethod
    def encode_embedding(vector: np.ndarray) -> bytes:
        return np.ascontiguousarray(vector, dtype=EMBEDDING_DTYPE).tobytes()

    def insert(self, records: Iterable[tuple[Any, ...]], next_id: int) -> None:
        """Insert rows (tuples in :data:`COLUMNS` order) and advance ``next_id``, atomically."""
        placeholders = ", ".join("?" for _ in COLUMNS)
        with self.transaction() as cursor:
            cursor.executemany(f"INSERT INTO memories ({', '.join(COLUMNS)}) VALUES ({placeholders})", records)
            cursor.execute("UPDATE meta SET value = ? WHERE key = 'next_id'", (str(next_id),))

    def replace(self, record: tuple[Any, ...]) -> None:
        """Overwrite one memory (an update), atomically."""
        assignments = ", ".join(f"{name} = ?" for name in COLUMNS[1:])
        with self.transaction() as cursor:
            cursor.execute(f"UPDATE memories SET {assignments} WHERE id = ?", (*record[1:], record[0]))

    def tombstone(self, memory_id: int) -> None:
        with self.transaction() as cursor:
            cursor.execute("UPDATE memories SET tombstone = 1 WHERE id = ?", (memory_id,))
            cursor.execute("DELETE FROM links WHERE a = ? OR b = ?", (memory_id, memory_id))

    def reinforce(self, updates: list[tuple[float, int, float, int]], links: list[tuple[int, int, float]]) -> None:
        """Persist a recall's bookkeeping: (last_access, recall_count, storage_strength, id) and links."""
        with self.transaction() as cursor:
            cursor.executemany(
                "UPDATE memories SET last_access = ?, recall_count = ?, storage_strength = ? WHERE id = ?", updates
            )
            cursor.executemany(
                "INSERT INTO links (a, b, weight) VALUES (?, ?, ?) "
                "ON CONFLICT (a, b) DO UPDATE SET weight = excluded.weight",
                links,
            )

    def purge_tombstones(self) -> int:
        """Delete tombstoned rows for good; returns how many."""
        with self.transaction() as cursor:
            cursor.execute("DELETE FROM memories WHERE tombstone = 1")
            return cursor.rowcount

    # ------------------------------------------------------------------ reads
    def rows(self) -> Iterator[tuple[Any, ...]]:
        """Every memory row in id order (tuples in :data:`COLUMNS` order, tags/entities decoded)."""
        cursor = self._connection.execute(f"SELECT {', '.join(COLUMNS)} FROM memories ORDER BY id")
        expected_bytes = self.dim * EMBEDDING_DTYPE.itemsize
        for row in cursor:
            if len(row[3]) != expected_bytes:
                msg = f"memory {row[0]} in {self.path!r} has a {len(row[3])}-byte embedding, expected {expected_bytes}"
                raise ValueError(msg)
            yield (*row[:11], tuple(json.loads(row[11])), tuple(json.loads(row[12])), row[13])

    def links(self) -> list[tuple[int, int, float]]:
        return self._connection.execute("SELECT a, b, weight FROM links").fetchall()

    def close(self) -> None:
        self._connection.close()


def encode_labels(labels: tuple[str, ...]) -> str:
    return json.dumps(list(labels), ensure_ascii=False)
