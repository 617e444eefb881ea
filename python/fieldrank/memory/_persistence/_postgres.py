"""Durable storage of a memory store in a PostgreSQL database (``psycopg``, the ``postgres`` extra).

The database is the durable log and copy of the rows; every process ranks in memory, as with
the SQLite file. Several processes on several machines open the same store by its connection
string (``postgresql://user@host:port/dbname``; the store's tables live in the connection's
``search_path`` schema, so ``?options=-csearch_path%3Dname`` puts a store in its own schema).

Schema (``format_version`` 2, the same records as the SQLite file)::

    fieldrank_meta(singleton, format, format_version, dim, next_id, revision, purge_epoch)  one row
    fieldrank_memories(id BIGINT PRIMARY KEY, tenant, text, embedding BYTEA, created_at, last_access,
                       recall_count, importance, storage_strength, valence, tier, tags JSON text,
                       entities JSON text, tombstone SMALLINT, session, supersedes, superseded_by,
                       revision, key)
    UNIQUE INDEX fieldrank_memories_key ON fieldrank_memories (tenant, key)
                 WHERE key IS NOT NULL AND tombstone = 0      a key names one live memory per tenant

A version-1 store (before keys, issue #34) gains the column and the index on open, with its
``format_version`` set to 2, in the open transaction (under the creation lock).
    fieldrank_links(a, b, weight, tenant, PRIMARY KEY (a, b))   co-recall links, a < b

Writes and the change sequence. Every write transaction first bumps ``fieldrank_meta.revision``
(``UPDATE ... RETURNING``): the row lock it takes is held to the commit, so writes commit in
revision order and a reader whose snapshot shows revision R sees every row stamped <= R. Ids are
allocated from ``next_id`` under that same lock, so two processes never pick the same id. A
purge bumps ``purge_epoch`` in its transaction. :meth:`PostgresBackend.data_version` reads
``(revision, purge_epoch)`` (one primary-key read, no memory row) at the start of every public
call of the store, so a call that starts after another process's ``forget()`` returned never
sees that memory: the catch-up bound is zero calls, not a polling interval.

Tenants. Every memory and link row carries its tenant; a shared database can confine each
tenant's database role to its own rows with row-level security (docs/deployment.md).

Errors. An unreachable server, a connection lost, a lock or statement timeout, a wrong schema
version: every failure of the database while reading or writing is a :class:`StoreIOError`
naming the store (no password), the operation and the server's message. Every method is one
transaction: on any error it is rolled back by the server, so a write is all of it or none.
A connection lost *during* ``COMMIT`` leaves the outcome unknown to the client (the error says
so; the next call reconnects and applies whatever the database holds). Reads are retried once
on a fresh connection; writes are not retried (an insert retried after an unknown commit could
add its rows twice).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Optional

from .._schema import RECALL_COUNT_RANGE
from ._backend import (COLUMNS, EMBEDDING_DTYPE, SYNCHRONOUS_MODES, Changes, DuplicateKeyError, Reinforced,
                       StoreBackend, StoreIOError)
from ._file_check import FORMAT_NAME, FORMAT_VERSION, READABLE_VERSIONS, StoreFormatError
from ._records import records_of

if TYPE_CHECKING:  # the column batch type, for annotations only
    from .._columns import RowBatch

__all__ = ["POSTGRES_SCHEMES", "REINFORCE_LOCK_TIMEOUT_MS", "PostgresBackend", "is_postgres_location"]

#: URL schemes that name a PostgreSQL store (anything else is an SQLite file path).
POSTGRES_SCHEMES = ("postgresql://", "postgres://")
#: How long a recall's bookkeeping waits for a row lock (a read must not stall behind a long write).
REINFORCE_LOCK_TIMEOUT_MS = 250
#: ``synchronous`` (the SQLite knob) mapped onto ``synchronous_commit``: OFF may lose the last
#: writes on a server crash (never half of one), every other mode waits for the WAL flush.
_SYNCHRONOUS_COMMIT = {"OFF": "off", "NORMAL": "on", "FULL": "on", "EXTRA": "on"}
#: The store's own tables; a trigger or rule on any of them is refused on open.
_TABLES = ("fieldrank_meta", "fieldrank_memories", "fieldrank_links")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fieldrank_meta (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    format TEXT NOT NULL,
    format_version INTEGER NOT NULL,
    dim INTEGER NOT NULL,
    next_id BIGINT NOT NULL,
    revision BIGINT NOT NULL,
    purge_epoch BIGINT NOT NULL
);
CREATE TABLE IF NOT EXISTS fieldrank_memories (
    id BIGINT PRIMARY KEY,
    tenant TEXT NOT NULL,
    text TEXT NOT NULL,
    embedding BYTEA NOT NULL,
    created_at DOUBLE PRECISION NOT NULL,
    last_access DOUBLE PRECISION NOT NULL,
    recall_count BIGINT NOT NULL,
    importance DOUBLE PRECISION NOT NULL,
    storage_strength DOUBLE PRECISION NOT NULL,
    valence DOUBLE PRECISION NOT NULL,
    tier TEXT NOT NULL,
    tags TEXT NOT NULL,
    entities TEXT NOT NULL,
    tombstone SMALLINT NOT NULL DEFAULT 0,
    session TEXT,
    supersedes BIGINT,
    superseded_by BIGINT,
    revision BIGINT NOT NULL,
    key TEXT
);
CREATE INDEX IF NOT EXISTS fieldrank_memories_revision ON fieldrank_memories (revision);
CREATE INDEX IF NOT EXISTS fieldrank_memories_tenant ON fieldrank_memories (tenant);
CREATE UNIQUE INDEX IF NOT EXISTS fieldrank_memories_key ON fieldrank_memories (tenant, key)
    WHERE key IS NOT NULL AND tombstone = 0;
CREATE TABLE IF NOT EXISTS fieldrank_links (
    a BIGINT NOT NULL,
    b BIGINT NOT NULL,
    weight DOUBLE PRECISION NOT NULL,
    tenant TEXT NOT NULL,
    PRIMARY KEY (a, b)
)
"""


def _duplicate_key(records: list[tuple], error: Exception) -> DuplicateKeyError:
    """The error for a batch the key index refused (the transaction is aborted: nothing more is read)."""
    keyed = [(record[COLUMNS.index("tenant")], record[COLUMNS.index("key")]) for record in records
             if record[COLUMNS.index("key")] is not None]
    if len(keyed) == 1:
        return DuplicateKeyError(keyed[0][1], keyed[0][0])
    detail = getattr(getattr(error, "diag", None), "message_detail", None) or str(error)
    return DuplicateKeyError(f"one of {[key for _, key in keyed]} ({detail})", keyed[0][0] if keyed else "?")


def is_postgres_location(path: object) -> bool:
    """Whether ``path`` names a PostgreSQL store (a ``postgresql://`` or ``postgres://`` URL)."""
    return isinstance(path, str) and path.startswith(POSTGRES_SCHEMES)


def _psycopg():
    try:
        import psycopg
    except ImportError as error:
        msg = ("a postgresql:// memory store needs the PostgreSQL client: pip install 'fieldrank[postgres]' "
               "(psycopg)")
        raise ImportError(msg) from error
    return psycopg


def _public_location(conninfo: str) -> str:
    """The connection string without its password (what :attr:`PostgresBackend.path` shows).

    Kept a ``postgresql://`` URL, so the store can be reopened from it (the password then comes
    from ``PGPASSWORD`` or the password file, as libpq reads them).
    """
    from urllib.parse import quote

    from psycopg.conninfo import conninfo_to_dict

    params = {k: str(v) for k, v in conninfo_to_dict(conninfo).items() if k != "password"}
    user, host, port, dbname = (params.pop(k, "") for k in ("user", "host", "port", "dbname"))
    if host.startswith("/"):  # a Unix socket directory goes in the query
        params["host"], host = host, ""
    netloc = (f"{quote(user, safe='')}@" if user else "") + host + (f":{port}" if port else "")
    query = "&".join(f"{k}={quote(v, safe='/')}" for k, v in params.items())
    return f"postgresql://{netloc}/{quote(dbname, safe='')}" + (f"?{query}" if query else "")


class PostgresBackend(StoreBackend):
    """A :class:`~._backend.StoreBackend` in a PostgreSQL database: one connection, used under the store's lock.

    Parameters
    ----------
    conninfo : str
        ``postgresql://`` connection string (a password in it is used, never shown).
    dim : int or None
        Embedding dimension; required for a new store, checked against an existing one.
    synchronous : str
        One of :data:`SYNCHRONOUS_MODES`; "OFF" sets ``synchronous_commit = off``.
    connect_timeout : float
        Seconds to wait for the server when connecting.
    """

    def __init__(self, conninfo: str, dim: int | None, synchronous: str, *, connect_timeout: float = 10.0) -> None:
        if synchronous not in SYNCHRONOUS_MODES:
            msg = f"synchronous must be one of {SYNCHRONOUS_MODES}, got {synchronous!r}"
            raise ValueError(msg)
        self._psycopg = _psycopg()
        self._conninfo = conninfo
        self._synchronous_commit = _SYNCHRONOUS_COMMIT[synchronous]
        self._connect_timeout = connect_timeout
        try:
            self.path = _public_location(conninfo)
        except self._psycopg.ProgrammingError as error:
            msg = f"not a PostgreSQL connection string: {error}"
            raise ValueError(msg) from error
        self._connection = None
        self._connect("open")
        try:
            self.dim = self._open(dim)
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ connection
    def _connect(self, operation: str):
        psycopg = self._psycopg
        try:
            self._connection = psycopg.connect(self._conninfo, autocommit=True,
                                               connect_timeout=max(1, int(self._connect_timeout)))
            self._connection.execute(f"SET synchronous_commit = {self._synchronous_commit}")
        except psycopg.Error as error:
            self._connection = None
            raise StoreIOError(self.path, operation, f"cannot reach the database: {error}".strip()) from error
        return self._connection

    def _live_connection(self, operation: str):
        connection = self._connection
        if connection is None or connection.closed or connection.broken:
            connection = self._connect(operation)
        return connection

    class _Transaction:
        """One transaction on the backend's connection; psycopg's errors leave as :class:`StoreIOError`.

        A write runs in READ COMMITTED (its row locks order it), a read in REPEATABLE READ READ
        ONLY (one snapshot). ``KeyError`` and other exceptions of the body roll back and propagate.
        """

        def __init__(self, backend: PostgresBackend, operation: str, write: bool, lock_timeout_ms: int = 0) -> None:
            self._backend, self._operation, self._write = backend, operation, write
            self._lock_timeout_ms = lock_timeout_ms
            self._contexts: list = []

        def __enter__(self):
            backend, psycopg = self._backend, self._backend._psycopg
            connection = backend._live_connection(self._operation)
            try:
                self._contexts.append(connection.transaction())
                for context in self._contexts:
                    context.__enter__()
                cursor = connection.cursor(binary=True)
                if not self._write:
                    cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                elif self._lock_timeout_ms:
                    cursor.execute(f"SET LOCAL lock_timeout = {int(self._lock_timeout_ms)}")
            except psycopg.Error as error:
                self._unwind(type(error), error, None)
                raise self._error(error) from error
            return cursor

        def _unwind(self, exc_type, exc, tb) -> Optional[Exception]:
            """Exit the transaction; the psycopg error raised on the way, if any."""
            psycopg = self._backend._psycopg
            raised = None
            while self._contexts:
                context = self._contexts.pop()
                try:
                    context.__exit__(exc_type, exc, tb)
                except psycopg.Error as error:
                    raised = raised or error
                    exc_type, exc = type(error), error
            return raised

        def __exit__(self, exc_type, exc, tb) -> None:
            psycopg = self._backend._psycopg
            raised = self._unwind(exc_type, exc, tb)
            if raised is not None:
                raise self._error(raised, exc_type is None) from raised
            if isinstance(exc, psycopg.Error):
                raise self._error(exc) from exc

        def _error(self, error: Exception, committing: bool = False) -> StoreIOError:
            cause = str(error).strip() or type(error).__name__
            if committing and isinstance(error, self._backend._psycopg.OperationalError):
                cause += " (the connection was lost while committing: the write may or may not have been applied)"
            elif isinstance(error, self._backend._psycopg.OperationalError):
                cause += " (nothing was written)" if self._write else ""
            return StoreIOError(self._backend.path, self._operation, cause)

    def transaction(self, operation: str, lock_timeout_ms: int = 0) -> PostgresBackend._Transaction:
        return self._Transaction(self, operation, write=True, lock_timeout_ms=lock_timeout_ms)

    def _read(self, body: Callable[[Any], Any]) -> Any:
        """Run ``body(cursor)`` in one read snapshot, retried once on a fresh connection if it was lost."""
        for attempt in (0, 1):
            try:
                with self._Transaction(self, "read", write=False) as cursor:
                    return body(cursor)
            except StoreIOError:
                connection = self._connection
                if attempt or connection is None or not (connection.closed or connection.broken):
                    raise
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ open and meta
    def _open(self, dim: int | None) -> int:
        """Create the schema when the database has none (``dim`` required), else check format, version and dim."""
        with self.transaction("open") as cursor:
            cursor.execute("SELECT to_regclass('fieldrank_meta') IS NOT NULL")
            exists = cursor.fetchone()[0]
            if not exists:
                if dim is None:
                    msg = f"dim is required to create a new memory store at {self.path!r}"
                    raise ValueError(msg)
                # Two processes creating the same store at once: the advisory lock serialises them.
                cursor.execute("SELECT pg_advisory_xact_lock(hashtext('fieldrank_meta'))")
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        cursor.execute(statement)
                cursor.execute(
                    "INSERT INTO fieldrank_meta (format, format_version, dim, next_id, revision, purge_epoch) "
                    "VALUES (%s, %s, %s, 0, 0, 0) ON CONFLICT DO NOTHING",
                    (FORMAT_NAME, FORMAT_VERSION, dim))
            self._check_schema(cursor)
            cursor.execute("SELECT format, format_version, dim FROM fieldrank_meta")
            row = cursor.fetchone()
            if row is not None and row[0] == FORMAT_NAME and str(row[1]) in READABLE_VERSIONS \
                    and row[1] != FORMAT_VERSION:
                self._migrate(cursor)
                row = (row[0], FORMAT_VERSION, row[2])
        if row is None:
            msg = f"{self.path!r} has a fieldrank_meta table without its row: not a {FORMAT_NAME} store"
            raise ValueError(msg)
        format_name, version, stored_dim = row
        if format_name != FORMAT_NAME:
            msg = f"{self.path!r} is not a {FORMAT_NAME} store (format {format_name!r}); refusing to modify it"
            raise ValueError(msg)
        if str(version) not in READABLE_VERSIONS:
            msg = f"{self.path!r} has format_version {version!r}, expected one of {', '.join(READABLE_VERSIONS)}"
            raise ValueError(msg)
        if dim is not None and dim != stored_dim:
            msg = f"dim must match the store at {self.path!r}: it holds dim={stored_dim}, got dim={dim}"
            raise ValueError(msg)
        return int(stored_dim)

    @staticmethod
    def _migrate(cursor) -> None:
        """A version-1 store gains ``key`` and its unique index (issue #34), under the creation lock."""
        cursor.execute("SELECT pg_advisory_xact_lock(hashtext('fieldrank_meta'))")
        cursor.execute("ALTER TABLE fieldrank_memories ADD COLUMN IF NOT EXISTS key TEXT")
        cursor.execute("CREATE UNIQUE INDEX IF NOT EXISTS fieldrank_memories_key ON fieldrank_memories (tenant, key) "
                       "WHERE key IS NOT NULL AND tombstone = 0")
        cursor.execute("UPDATE fieldrank_meta SET format_version = %s", (FORMAT_VERSION,))

    def _check_schema(self, cursor) -> None:
        """Refuse a trigger or rule on the store's tables (it would run on the store's own writes)."""
        cursor.execute(
            "SELECT c.relname, t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
            "WHERE NOT t.tgisinternal AND c.oid = ANY (ARRAY[to_regclass('fieldrank_meta'), "
            "to_regclass('fieldrank_memories'), to_regclass('fieldrank_links')]::oid[]) "
            "UNION ALL SELECT c.relname, r.rulename FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class "
            "WHERE r.rulename <> '_RETURN' AND c.oid = ANY (ARRAY[to_regclass('fieldrank_meta'), "
            "to_regclass('fieldrank_memories'), to_regclass('fieldrank_links')]::oid[])")
        found = cursor.fetchall()
        if found:
            listed = ", ".join(f"{name!r} on {table}" for table, name in found)
            raise StoreFormatError(self.path, found[0][0], None, None,
                                   f"triggers or rules a store does not have: {listed}; refusing to open it")

    def next_id(self) -> int:
        return self._read(lambda cursor: cursor.execute("SELECT next_id FROM fieldrank_meta").fetchone()[0])

    def data_version(self) -> int:
        """``(revision, purge_epoch)`` packed into one int: it moves with every write and purge of any process.

        One statement outside a transaction (autocommit: its own snapshot), so one round trip.
        """
        for attempt in (0, 1):
            connection = self._live_connection("read")
            try:
                revision, epoch = connection.execute("SELECT revision, purge_epoch FROM fieldrank_meta").fetchone()
                return (int(revision) << 32) | int(epoch)
            except self._psycopg.Error as error:
                if attempt or not (connection.closed or connection.broken):
                    raise StoreIOError(self.path, "read", str(error).strip()) from error
        raise AssertionError("unreachable")

    @staticmethod
    def _bump_revision(cursor, allocate: int = 0) -> tuple[int, int]:
        """Take the store's write lock (the meta row), a new revision and ``allocate`` ids; returns
        (revision, first allocated id)."""
        cursor.execute("UPDATE fieldrank_meta SET revision = revision + 1, next_id = next_id + %s "
                       "RETURNING revision, next_id - %s", (allocate, allocate))
        revision, first = cursor.fetchone()
        return int(revision), int(first)

    # ------------------------------------------------------------------ writes
    def insert(self, make_batch: Callable[[int], RowBatch], count: int,
               supersede: Iterable[tuple[int, int]] = (),
               keys: Optional[Sequence[Optional[str]]] = None) -> tuple[int, int]:
        placeholders = ", ".join("%s" for _ in COLUMNS)
        with self.transaction("add to") as cursor:
            revision, first = self._bump_revision(cursor, count)
            records = records_of(make_batch(first), keys)
            try:
                cursor.executemany(
                    f"INSERT INTO fieldrank_memories ({', '.join(COLUMNS)}, revision) "
                    f"VALUES ({placeholders}, {revision})", records)
            except self._psycopg.errors.UniqueViolation as error:  # only the key index can refuse a new id
                raise _duplicate_key(records, error) from error
            for stale, offset in supersede:
                cursor.execute("UPDATE fieldrank_memories SET superseded_by = %s, revision = %s "
                               "WHERE id = %s AND tombstone = 0", (first + offset, revision, stale))
                if cursor.rowcount != 1:
                    msg = f"supersedes[{offset}]: no live memory with id {stale} (it was forgotten)"
                    raise KeyError(msg)
        return first, revision

    def replace(self, batch: RowBatch) -> int:
        (record,) = records_of(batch)
        kept = {"last_access", "recall_count", "storage_strength", "tombstone", "key"}
        names = [name for name in COLUMNS[1:] if name not in kept]
        values = [value for name, value in zip(COLUMNS[1:], record[1:]) if name not in kept]
        assignments = ", ".join(f"{name} = %s" for name in names)
        strength = record[COLUMNS.index("storage_strength")]
        with self.transaction("update") as cursor:
            revision, _ = self._bump_revision(cursor)
            cursor.execute(f"UPDATE fieldrank_memories SET {assignments}, revision = %s, "
                           "storage_strength = GREATEST(storage_strength, %s) WHERE id = %s AND tombstone = 0",
                           (*values, revision, strength, record[0]))
            if cursor.rowcount != 1:
                msg = f"memory {record[0]} was forgotten"
                raise KeyError(msg)
        return revision

    def tombstone(self, memory_id: int) -> Optional[int]:
        try:
            return self._tombstone(memory_id)
        except _NothingToForget:
            return None

    def _tombstone(self, memory_id: int) -> int:
        with self.transaction("forget in") as cursor:
            revision, _ = self._bump_revision(cursor)
            cursor.execute("UPDATE fieldrank_memories SET tombstone = 1, revision = %s "
                           "WHERE id = %s AND tombstone = 0", (revision, memory_id))
            if cursor.rowcount != 1:
                # Nothing to forget: roll the revision back with the transaction.
                raise _NothingToForget
            cursor.execute("DELETE FROM fieldrank_links WHERE a = %s OR b = %s", (memory_id, memory_id))
        return revision

    def reinforce(self, updates: list[tuple[float, float, int]], links: list[tuple[int, int, float]]) -> Reinforced:
        operation = "write the recall bookkeeping to"
        # Rows locked in id order, so two recalls over overlapping memories never deadlock.
        updates = sorted(updates, key=lambda u: u[2])
        links = sorted(links)
        rows_cursor = links_cursor = None
        # Not in pipeline mode: measured slower here (4.0 ms a call against 1.6 ms statement by statement).
        with self.transaction(operation, lock_timeout_ms=REINFORCE_LOCK_TIMEOUT_MS) as cursor:
            connection = cursor.connection
            if updates:
                at_times, gains, ids = (list(column) for column in zip(*updates))
                cursor.execute("SELECT id FROM fieldrank_memories WHERE id = ANY(%s) ORDER BY id FOR UPDATE", (ids,))
                rows_cursor = connection.cursor(binary=True)
                rows_cursor.execute(
                    "UPDATE fieldrank_memories AS m SET last_access = GREATEST(m.last_access, u.at_time), "
                    f"recall_count = LEAST(m.recall_count + 1, {RECALL_COUNT_RANGE[1]}), "
                    "storage_strength = m.storage_strength + u.gain "
                    "FROM unnest(%s::float8[], %s::float8[], %s::bigint[]) AS u(at_time, gain, id) "
                    "WHERE m.id = u.id AND m.tombstone = 0 "
                    "RETURNING m.id, m.last_access, m.recall_count, m.storage_strength",
                    (at_times, gains, ids))
            if links:
                firsts, seconds, rates = (list(column) for column in zip(*links))
                links_cursor = connection.cursor(binary=True)
                links_cursor.execute(
                    "INSERT INTO fieldrank_links (a, b, weight, tenant) "
                    "SELECT l.a, l.b, l.rate, ma.tenant FROM unnest(%s::bigint[], %s::bigint[], %s::float8[]) "
                    "AS l(a, b, rate) JOIN fieldrank_memories ma ON ma.id = l.a AND ma.tombstone = 0 "
                    "JOIN fieldrank_memories mb ON mb.id = l.b AND mb.tombstone = 0 ORDER BY l.a, l.b "
                    "ON CONFLICT (a, b) DO UPDATE SET weight = fieldrank_links.weight + "
                    "excluded.weight * (1 - fieldrank_links.weight) RETURNING a, b, weight",
                    (firsts, seconds, rates))
        rows = rows_cursor.fetchall() if rows_cursor is not None else []
        found = links_cursor.fetchall() if links_cursor is not None else []
        return Reinforced({int(r[0]): (float(r[1]), int(r[2]), float(r[3])) for r in rows},
                          {(int(a), int(b)): float(w) for a, b, w in found})

    def purge_tombstones(self) -> tuple[list[int], Optional[int]]:
        with self.transaction("purge") as cursor:
            cursor.execute("SELECT purge_epoch FROM fieldrank_meta FOR UPDATE")
            ids = [int(row[0]) for row in cursor.execute(
                "DELETE FROM fieldrank_memories WHERE tombstone = 1 RETURNING id").fetchall()]
            if not ids:
                return [], None
            cursor.execute("UPDATE fieldrank_meta SET purge_epoch = purge_epoch + 1 RETURNING purge_epoch")
            epoch = int(cursor.fetchone()[0])
        return sorted(ids), epoch

    # ------------------------------------------------------------------ reads
    def changes(self, since_revision: Optional[int], known_epoch: Optional[int]) -> Changes:
        def body(cursor) -> Changes:
            revision, epoch = (int(v) for v in cursor.execute(
                "SELECT revision, purge_epoch FROM fieldrank_meta").fetchone())
            live = tombstoned = None
            if known_epoch is not None and epoch != known_epoch:
                flags = cursor.execute("SELECT id, tombstone FROM fieldrank_memories").fetchall()
                live = frozenset(int(i) for i, t in flags if not t)
                tombstoned = frozenset(int(i) for i, t in flags if t)
            rows: list = []
            links: list = []
            if since_revision is None or revision > since_revision:
                rows = list(self._rows(cursor, since_revision))
                links = self._links(cursor)
            return Changes(revision, epoch, rows, links, live, tombstoned)

        return self._read(body)

    def _rows(self, cursor, since_revision: Optional[int]) -> Iterator[tuple[Any, ...]]:
        query = f"SELECT {', '.join(COLUMNS)}, revision FROM fieldrank_memories"
        arguments: tuple = ()
        if since_revision is not None:
            query += " WHERE revision > %s"
            arguments = (since_revision,)
        cursor.execute(query + " ORDER BY id", arguments)
        expected_bytes = self.dim * EMBEDDING_DTYPE.itemsize
        for row in cursor.fetchall():
            embedding = bytes(row[3])
            if len(embedding) != expected_bytes:
                msg = f"memory {row[0]} in {self.path!r} has a {len(embedding)}-byte embedding, expected {expected_bytes}"
                raise ValueError(msg)
            yield (*row[:3], embedding, *row[4:11], tuple(json.loads(row[11])), tuple(json.loads(row[12])),
                   *row[13:])

    @staticmethod
    def _links(cursor) -> list[tuple[int, int, float]]:
        return [(int(a), int(b), float(w)) for a, b, w in
                cursor.execute("SELECT a, b, weight FROM fieldrank_links ORDER BY a, b").fetchall()]

    def rows(self, since_revision: Optional[int] = None) -> Iterator[tuple[Any, ...]]:
        return iter(self._read(lambda cursor: list(self._rows(cursor, since_revision))))

    def links(self) -> list[tuple[int, int, float]]:
        return self._read(self._links)

    def close(self) -> None:
        if self._connection is not None:
            try:
                self._connection.close()
            finally:
                self._connection = None


class _NothingToForget(Exception):
    """Raised inside :meth:`PostgresBackend.tombstone` to roll back a forget of a memory not live."""
