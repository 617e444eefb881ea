"""Store locations for the tests that run on both backends: an SQLite file and a PostgreSQL schema.

``store_location`` is parametrised over ``sqlite`` and ``postgres``: a test that takes it runs
once per backend, each time with a factory of fresh, empty store locations. The PostgreSQL server
is started once per session (tests/postgres_server.py, data in a temporary folder); the
``postgres`` runs skip, saying why, only when no PostgreSQL or no ``psycopg`` is installed.
"""

from __future__ import annotations

import itertools
import shutil
import tempfile

import pytest

from tests.postgres_server import PostgresUnavailable, fresh_schema, start_postgres, stop_postgres

BACKENDS = ("sqlite", "postgres")


@pytest.fixture(scope="session")
def postgres_server():
    """The superuser URL of a PostgreSQL server started for this test session.

    Its data directory is a temporary folder of its own, not under pytest's: pytest keeps its
    base folder private to root (mode 0700, reset by every pytest run), which the unprivileged
    server user could not reach.
    """
    pytest.importorskip("psycopg", reason="the postgres extra (psycopg) is not installed")
    folder = tempfile.mkdtemp(prefix="fieldrank-postgres-")
    try:
        uri = start_postgres(folder)
    except PostgresUnavailable as error:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(str(error))
    yield uri
    stop_postgres(uri)  # before its data goes: a server whose folder is deleted under it keeps running
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=BACKENDS)
def store_location(request, tmp_path):
    """A factory of fresh store locations on one backend: ``store_location()`` returns a new one each call."""
    counter = itertools.count()
    if request.param == "sqlite":
        return lambda: str(tmp_path / f"store{next(counter)}.sqlite")
    server = request.getfixturevalue("postgres_server")
    return lambda: fresh_schema(server)
