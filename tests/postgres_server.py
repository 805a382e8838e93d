"""A throwaway PostgreSQL server for the tests, started from the Debian
``postgresql`` package's binaries (``initdb``, ``pg_ctl``) on a free loopback
port, owned by an unprivileged user when the tests run as root (PostgreSQL
refuses to run as root). :func:`skip_reason` says why it cannot run here."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile

__all__ = ["PostgresServer", "skip_reason"]

_USER = "nobody"


def _binaries() -> str | None:
    for directory in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if os.path.exists(os.path.join(directory, "pg_ctl")):
            return directory
    found = shutil.which("pg_ctl")
    return os.path.dirname(found) if found else None


def skip_reason() -> str | None:
    """Why no PostgreSQL server can be started here, or None."""
    if _binaries() is None:
        return ("PostgreSQL server binaries not found (install Debian's 'postgresql' "
                "package: apt-get install postgresql)")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install '.[postgres]')"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root without 'runuser' to start PostgreSQL as another user"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresServer:
    """``with PostgresServer() as server: server.new_database()`` -> a URL."""

    def __init__(self):
        self.bin = _binaries()
        self.port = _free_port()
        self.directory = tempfile.mkdtemp(prefix="privloss-pg-")
        self.data = os.path.join(self.directory, "data")
        self._count = 0

    def _run(self, *argv: str) -> None:
        command = list(argv)
        if os.geteuid() == 0:
            command = ["runuser", "-u", _USER, "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)

    def __enter__(self) -> "PostgresServer":
        if os.geteuid() == 0:
            shutil.chown(self.directory, user=_USER)
        self._run(os.path.join(self.bin, "initdb"), "-D", self.data, "-U", "privloss",
                  "--auth=trust", "--no-sync", "-E", "UTF8")
        options = (f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.directory} "
                   f"-c fsync=off -c max_connections=200")
        self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-o", options,
                  "-l", os.path.join(self.directory, "log"), "-w", "-t", "60", "start")
        return self

    @property
    def admin_url(self) -> str:
        return f"postgresql://privloss@127.0.0.1:{self.port}/postgres"

    def new_database(self) -> str:
        """A fresh empty database; its URL."""
        import psycopg
        self._count += 1
        name = f"ledger_{os.getpid()}_{self._count}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://privloss@127.0.0.1:{self.port}/{name}"

    def __exit__(self, *exc) -> None:
        try:
            self._run(os.path.join(self.bin, "pg_ctl"), "-D", self.data, "-m", "immediate",
                      "-w", "stop")
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)
