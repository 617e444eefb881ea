"""Validation of a memory store file when it is opened (issue 15).

A store file may come from anywhere: another version, another program, an attacker. Every
value the store will later read is checked here, once, before the store loads anything, so
that a store that opened never fails afterwards because of what it read. What is refused is
exactly what the API refuses (the ranges come from :mod:`._schema`), and every refusal is one
:class:`StoreFormatError` naming the file, the table, the row and the column.

The checks are driven by :data:`MEMORY_COLUMNS`, :data:`LINK_COLUMNS` and :data:`META_KEYS`: a
new column is one entry. Type and range checks run as SQL over the whole table (one query per
column, stopping at the first bad row); what SQL cannot check (UTF-8, JSON labels, the float32
embeddings) is checked in Python over one pass.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..._validation import UNIT_NORM_ATOL
from .._schema import IMPORTANCE_RANGE, MEMORY_ID_LIMIT, RECALL_COUNT_RANGE, TIERS, VALENCE_RANGE

#: The store file's format name and version (in its ``meta`` table); defined here, with the
#: checks, and re-exported by :mod:`fieldrank.memory._persistence`.
FORMAT_NAME = "fieldrank.memory"
FORMAT_VERSION = 2
#: Older versions a store still opens, migrating the file to :data:`FORMAT_VERSION` on open
#: (version 1 lacks the ``key`` column and its unique index).
READABLE_VERSIONS = ("1", str(FORMAT_VERSION))
#: The unique index that makes a key name at most one live memory per tenant (format version 2).
KEY_INDEX = "memories_key"
KEY_INDEX_SQL = (f"CREATE UNIQUE INDEX {KEY_INDEX} ON memories (tenant, key) "
                 "WHERE key IS NOT NULL AND tombstone = 0")

__all__ = ["KEY_INDEX", "KEY_INDEX_SQL", "OWN_SCHEMA_OBJECTS", "READABLE_VERSIONS", "StoreFormatError", "check_embedding_values", "check_store_file"]

#: The schema objects of a store file (``sqlite_master``'s type and name): its three tables, the
#: indexes SQLite builds for their primary keys and the key index (:data:`KEY_INDEX_SQL`, whose
#: SQL the backend checks too). Anything else (a trigger, a view, another table or
#: index) is refused before the file is written to; names starting ``sqlite_`` are SQLite's own.
OWN_SCHEMA_OBJECTS = frozenset({
    ("table", "meta"), ("table", "memories"), ("table", "links"),
    ("index", "sqlite_autoindex_meta_1"), ("index", "sqlite_autoindex_links_1"), ("index", KEY_INDEX),
})

#: SQLite's literal for +inf (a REAL column can hold ±inf; NaN is stored as NULL).
_SQL_INF = "9e999"
#: Rows per fetch while sqlite3 decodes every TEXT value (bounded memory).
_FETCH_ROWS = 4096
#: Largest embedding dimension a store file may declare (the embedding BLOBs are 4·dim bytes).
MAX_DIM = 1 << 20


class StoreFormatError(ValueError):
    """A memory store file that is not a valid store.

    Attributes ``path``, ``table``, ``row`` (the memory id, the link ``(a, b)`` or the meta key;
    None for the table as a whole) and ``column`` say where; the message says what.
    """

    def __init__(self, path: str, table: str, row: object, column: Optional[str], problem: str) -> None:
        self.path, self.table, self.row, self.column = path, table, row, column
        where = f"table {table!r}"
        if row is not None:
            where += f", {_ROW_NAMES.get(table, 'row')} {row if table == 'memories' else repr(row)}"
        if column is not None:
            where += f", column {column!r}"
        super().__init__(f"invalid memory store file {path!r}: {where}: {problem}")


#: How a row of each table is named in messages (the memory id, the link "a,b", the meta key).
_ROW_NAMES = {"memories": "memory", "links": "link", "meta": "key"}


@dataclass(frozen=True)
class Column:
    """One column: its SQLite storage type and, for numbers, the closed range [low, high].

    Type and range are checked in SQL, as is ``bad_sql`` (a condition true for a bad value, which
    ``describe(value, embedding_bytes)`` then explains). ``check`` validates what SQL cannot, in
    Python, once per distinct value: it returns the problem or None.
    """

    name: str
    kind: str  # "integer", "real", "text" or "blob"
    low: float = -math.inf
    high: float = math.inf
    check: Optional[Callable[[object], Optional[str]]] = None
    #: An extra SQL condition true for a bad value, with ``{bytes}`` the embedding size 4·dim.
    bad_sql: Optional[str] = None
    #: The problem for a value ``bad_sql`` refused, given (value, 4·dim).
    describe: Optional[Callable[[object, int], str]] = None
    #: NULL is a valid value (no session, supersedes nothing).
    nullable: bool = False
    #: Added after format 1 was first written: an older file may lack it (the backend adds it).
    added: bool = False


def _one_of(names: tuple[str, ...]) -> Callable[[object], Optional[str]]:
    return lambda value: None if value in names else f"must be one of {names}, got {_show(value)}"


def _labels(value: object) -> Optional[str]:
    """Tags and entities: a JSON array of non-empty strings."""
    try:
        labels = json.loads(value)
    except (ValueError, RecursionError):
        return f"must be a JSON array of strings, got {_show(value)} (not JSON)"
    if not isinstance(labels, list) or not all(isinstance(x, str) and x for x in labels):
        return f"must be a JSON array of non-empty strings, got {_show(value)}"
    return None


#: The ``memories`` table (the embedding's length against ``meta.dim``; its values where the store
#: decodes them, :func:`check_embedding_values`).
MEMORY_COLUMNS: tuple[Column, ...] = (
    Column("id", "integer", 0, MEMORY_ID_LIMIT - 1),
    Column("tenant", "text", bad_sql="tenant = ''",
           describe=lambda value, size: "must be a non-empty string"),
    Column("text", "text"),
    Column("embedding", "blob", bad_sql="length(embedding) != {bytes}",
           describe=lambda value, size: (f"a {len(value)}-byte embedding, expected {size} (4 bytes per dimension)"
                                         if isinstance(value, bytes) else f"must be BLOB, got {_show(value)}")),
    Column("created_at", "real"),
    Column("last_access", "real"),
    Column("recall_count", "integer", *RECALL_COUNT_RANGE),
    Column("importance", "real", *IMPORTANCE_RANGE),
    Column("storage_strength", "real", 1.0),
    Column("valence", "real", *VALENCE_RANGE),
    Column("tier", "text", bad_sql=f"tier NOT IN ({', '.join(repr(t) for t in TIERS)})",
           describe=lambda value, size: _one_of(TIERS)(value)),
    Column("tags", "text", check=_labels),
    Column("entities", "text", check=_labels),
    Column("tombstone", "integer", 0, 1),
    Column("session", "text", nullable=True, added=True),
    Column("supersedes", "integer", 0, MEMORY_ID_LIMIT - 1, nullable=True, added=True),
    Column("superseded_by", "integer", 0, MEMORY_ID_LIMIT - 1, nullable=True, added=True),
    Column("revision", "integer", 0, added=True),
    Column("key", "text", nullable=True, added=True),
)

#: The ``links`` table (co-recall weights: w ← w + rate·(1 − w) stays in [0, 1]).
LINK_COLUMNS: tuple[Column, ...] = (
    Column("a", "integer", 0, MEMORY_ID_LIMIT - 1),
    Column("b", "integer", 0, MEMORY_ID_LIMIT - 1),
    Column("weight", "real", 0.0, 1.0),
)

#: ``meta`` keys holding integers, with their ranges (``format`` and ``format_version`` are
#: checked by the backend, which gives the clearer "not a store" / "another version" messages).
META_KEYS: dict[str, tuple[int, int]] = {
    "dim": (1, MAX_DIM),
    "next_id": (0, MEMORY_ID_LIMIT),
}

#: ``meta`` keys a file may lack (older files; a missing one reads as 0), checked when present.
OPTIONAL_META_KEYS: dict[str, tuple[int, int]] = {
    "revision": (0, 2**63 - 1),
    "purge_epoch": (0, 2**63 - 1),
}

_SQL_TYPES = {"integer": ("integer",), "real": ("integer", "real"), "text": ("text",), "blob": ("blob",)}
_PYTHON_TYPES = {"integer": int, "real": (int, float), "text": str, "blob": bytes}


def _show(value: object, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _bad_condition(column: Column, embedding_bytes: int) -> str:
    """SQL that is true where ``column`` has the wrong storage type or lies outside its range."""
    types = ", ".join(f"'{t}'" for t in (*_SQL_TYPES[column.kind], *(("null",) if column.nullable else ())))
    conditions = [f"typeof({column.name}) NOT IN ({types})"]
    if column.bad_sql is not None:
        conditions.append(column.bad_sql.format(bytes=embedding_bytes))
    if column.kind in ("integer", "real"):
        conditions.append(f"{column.name} IN ({_SQL_INF}, -{_SQL_INF})")
        if math.isfinite(column.low):
            conditions.append(f"{column.name} < {column.low!r}")
        if math.isfinite(column.high):
            conditions.append(f"{column.name} > {column.high!r}")
    return " OR ".join(conditions)


def _range_text(column: Column) -> str:
    if column.kind in ("integer", "real"):
        what = "an integer" if column.kind == "integer" else "a finite number"
        if math.isfinite(column.low) or math.isfinite(column.high):
            return f"must be {what} in [{column.low:g}, {column.high:g}]"
        return f"must be {what}"
    return f"must be {column.kind.upper()}"


def _present(connection: sqlite3.Connection, table: str, columns: tuple[Column, ...]) -> tuple[Column, ...]:
    """The ``columns`` the file's ``table`` has (an older file may lack the ``added`` ones)."""
    present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
    return tuple(c for c in columns if c.name in present)


def _check_columns(connection: sqlite3.Connection, path: str, table: str, key: str,
                   columns: tuple[Column, ...], embedding_bytes: int = 0) -> None:
    present = {c.name for c in _present(connection, table, columns)}
    missing = [c.name for c in columns if c.name not in present and not c.added]
    columns = tuple(c for c in columns if c.name in present)
    if missing:
        raise StoreFormatError(path, table, None, missing[0], "the column is missing")
    # One scan of the table for every column (a store's rows hold its embeddings: each scan reads
    # them all), naming the first bad column of the first bad row; then its value, for the message.
    cases = " ".join(f"WHEN {_bad_condition(c, embedding_bytes)} THEN {i}" for i, c in enumerate(columns))
    bad = connection.execute(f"SELECT {key}, CASE {cases} END AS bad FROM {table} "
                             f"WHERE bad IS NOT NULL ORDER BY {key} LIMIT 1").fetchone()
    if bad is not None:
        row, column = bad[0], columns[bad[1]]
        with _raw_text(connection):
            value = connection.execute(f"SELECT {column.name} FROM {table} WHERE {key} = ? LIMIT 1",
                                       (row,)).fetchone()[0]
        if isinstance(value, bytes) and column.kind == "text":
            value = value.decode("utf-8", errors="replace")
        right_type = isinstance(value, _PYTHON_TYPES[column.kind]) and not isinstance(value, bool)
        problem = (column.describe(value, embedding_bytes) if column.describe is not None and right_type
                   else f"{_range_text(column)}, got {_show(value)}")
        raise StoreFormatError(path, table, row, column.name, problem)


def _check_meta(connection: sqlite3.Connection, path: str) -> Optional[int]:
    """The integer meta keys; returns ``dim`` (None when the file is not initialised yet)."""
    with _raw_text(connection):
        meta = {_decoded(k): _decoded(v) for k, v in connection.execute("SELECT key, value FROM meta")}
    if not meta:
        return None
    if meta.get("format") != FORMAT_NAME or meta.get("format_version") not in READABLE_VERSIONS:
        return None  # another program's or version's file: the backend refuses it by name
    values = {}
    for key, (low, high) in {**META_KEYS, **OPTIONAL_META_KEYS}.items():
        if key not in meta:
            if key in OPTIONAL_META_KEYS:
                continue
            raise StoreFormatError(path, "meta", key, "value", "the key is missing")
        raw = meta[key]
        number = int(raw) if isinstance(raw, str) and raw.isascii() and raw.isdigit() else None
        if number is None or not low <= number <= high:
            raise StoreFormatError(path, "meta", key, "value", f"must be a decimal integer in [{low}, {high}], "
                                   f"got {_show(raw)}")
        values[key] = number
    return values["dim"]


def _check_memory_values(connection: sqlite3.Connection, path: str) -> None:
    """Text as UTF-8; tags and entities as JSON arrays of non-empty strings.

    UTF-8 is checked by sqlite3's own decoding in C over every TEXT value; only if that fails does
    a slower pass find the row. Labels are parsed once per distinct value. The embeddings' length
    and type are checked in SQL; their values (finite, a squared norm the kernels accept) where the
    store decodes them, in one vectorised pass (:func:`check_embedding_values`): reading every BLOB
    here too would double the cost of an open.
    """
    text_columns = [c for c in _present(connection, "memories", MEMORY_COLUMNS) if c.kind == "text"]
    names = ", ".join(c.name for c in text_columns)
    try:
        cursor = connection.execute(f"SELECT {names} FROM memories")
        while cursor.fetchmany(_FETCH_ROWS):
            pass
    except sqlite3.OperationalError:  # "Could not decode to UTF-8": find the row and column
        _find_bad_utf8(connection, path, text_columns)
        raise
    for column in text_columns:
        if column.check is None or column.bad_sql is not None:
            continue  # checked in SQL already
        for (value,) in connection.execute(f"SELECT DISTINCT {column.name} FROM memories"):
            problem = column.check(value)
            if problem is not None:
                (memory_id,) = connection.execute(
                    f"SELECT id FROM memories WHERE {column.name} = ? ORDER BY id LIMIT 1", (value,)).fetchone()
                raise StoreFormatError(path, "memories", memory_id, column.name, problem)


def _find_bad_utf8(connection: sqlite3.Connection, path: str, text_columns: list[Column]) -> None:
    names = ", ".join(c.name for c in text_columns)
    with _raw_text(connection):
        for memory_id, *texts in connection.execute(f"SELECT id, {names} FROM memories ORDER BY id"):
            for column, raw in zip(text_columns, texts):
                if raw is None:  # a nullable column (no session)
                    continue
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as error:
                    raise StoreFormatError(path, "memories", memory_id, column.name,
                                           f"not valid UTF-8 (byte {error.start})") from None


def check_embedding_values(embeddings: np.ndarray, ids: np.ndarray, path: str) -> None:
    """The decoded embeddings (n, dim) float32 of memories ``ids``: every one finite and of unit norm
    within the API's tolerance (``UNIT_NORM_ATOL``: the store writes only unit rows, and a longer
    row would win every vector recall)."""
    finite = np.isfinite(embeddings).all(axis=1)
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", embeddings, embeddings, dtype=np.float64))
    bad = np.flatnonzero(~finite | ~(np.abs(norms - 1.0) <= UNIT_NORM_ATOL))
    if bad.size:
        row = int(bad[0])
        what = "a non-finite value" if not finite[row] else f"norm {norms[row]:g}"
        raise StoreFormatError(path, "memories", int(ids[row]), "embedding",
                               f"stored embeddings must be finite unit vectors (norm within 1 ± {UNIT_NORM_ATOL:g}), "
                               f"got {what}")


class _raw_text:
    """TEXT values as bytes while in effect, so that bad UTF-8 is reported, not raised by sqlite3."""

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def __enter__(self) -> None:
        self._previous = self._connection.text_factory
        self._connection.text_factory = bytes

    def __exit__(self, *exc_info: object) -> None:
        self._connection.text_factory = self._previous


def _decoded(value: object) -> object:
    """meta values: bytes decoded as UTF-8 where they are valid, else left as bytes (and refused)."""
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return value
    return value


def check_store_file(connection: sqlite3.Connection, path: str) -> None:
    """Validate an opened store file before anything is read from it or written to it.

    A file without a ``meta`` table, or with an empty one (a store being created), passes: the
    backend creates or refuses it. Raises :class:`StoreFormatError`.
    """
    tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "meta" not in tables:
        return
    _check_columns(connection, path, "meta", "key", (Column("key", "text"), Column("value", "text")))
    dim = _check_meta(connection, path)
    if dim is None:
        return
    for table in ("memories", "links"):
        if table not in tables:
            raise StoreFormatError(path, table, None, None, "the table is missing")
    _check_columns(connection, path, "memories", "id", MEMORY_COLUMNS, 4 * dim)
    _check_columns(connection, path, "links", "a || ',' || b", LINK_COLUMNS)
    _check_memory_values(connection, path)
