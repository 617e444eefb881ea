"""Durable storage of a memory store behind one interface (:class:`StoreBackend`).

``_backend`` declares the interface and its contract, ``_sqlite`` implements it in one SQLite
file, ``_postgres`` in a PostgreSQL database (a ``postgresql://`` location), ``_file_check`` validates a store file before it is read, and ``_records`` converts the
records a backend reads and writes to and from column batches. A new backend implements
:class:`StoreBackend` (see its docstring) and is picked by :func:`open_backend`.
"""

from __future__ import annotations

from ._backend import COLUMNS, SYNCHRONOUS_MODES, Changes, DuplicateKeyError, Reinforced, StoreBackend, StoreIOError
from ._file_check import FORMAT_NAME, FORMAT_VERSION, StoreFormatError, check_embedding_values, check_store_file
from ._records import KEY, TENANT, TOMBSTONE, batch_of_records
from ._postgres import PostgresBackend, is_postgres_location
from ._sqlite import BUSY_TIMEOUT_MS, REINFORCE_BUSY_TIMEOUT_MS, SqliteBackend

__all__ = [
    "BUSY_TIMEOUT_MS",
    "COLUMNS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "KEY",
    "REINFORCE_BUSY_TIMEOUT_MS",
    "SYNCHRONOUS_MODES",
    "TENANT",
    "TOMBSTONE",
    "Changes",
    "DuplicateKeyError",
    "PostgresBackend",
    "Reinforced",
    "SqliteBackend",
    "StoreBackend",
    "StoreFormatError",
    "StoreIOError",
    "batch_of_records",
    "check_embedding_values",
    "check_store_file",
    "open_backend",
]


def open_backend(path, dim, synchronous: str) -> StoreBackend:
    """The backend of a store at ``path``: a ``postgresql://`` URL is a PostgreSQL database, anything else an SQLite file."""
    if is_postgres_location(path):
        return PostgresBackend(path, dim, synchronous)
    return SqliteBackend(path, dim, synchronous)
