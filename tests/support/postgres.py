"""A private PostgreSQL cluster for the tests, made with Debian's own binaries.

``Cluster().start()`` runs ``initdb`` into a fresh temporary directory, writes
its own ``pg_hba.conf`` and starts the server with ``pg_ctl``, listening on a
Unix socket inside that directory and on 127.0.0.1 at a free port — nothing
else. ``stop()`` stops it (``pg_ctl stop -m fast``) and removes the directory.

``initdb`` and ``postgres`` refuse to run as root. The tests run as root in CI
(a fresh Debian machine), so when this process is root the server's files
belong to ``nobody`` and the binaries run as ``nobody:nogroup`` through
``subprocess``'s ``user``/``group`` (a plain setuid/setgid in the child: no
``sudo``, no ``su``); the directory is made with ``tempfile.mkdtemp`` and
opened to others (pytest's ``tmp_path`` is 0700, out of ``nobody``'s reach).
A non-root user runs them as itself.

Authentication: ``trust`` on the socket and on 127.0.0.1 for everyone but the
role ``fold_secret``, which must give its password (``scram-sha-256``) over
TCP — the tests of ``password_env`` / ``password_file`` log in as it.

``find_binaries()`` looks in ``FOLD_PG_BIN``, then ``/usr/lib/postgresql/*/bin``
(newest first), then ``PATH``; ``None`` when PostgreSQL is not installed.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.support.ports import free_port

__all__ = ["SECRET_PASSWORD", "SECRET_ROLE", "SUPERUSER", "Cluster", "find_binaries"]

SUPERUSER = "fold"
SECRET_ROLE, SECRET_PASSWORD = "fold_secret", "s3cret pass"
DATABASE = "fold"
PACKAGE = "postgresql"  # the Debian package that installs the binaries


def find_binaries() -> Path | None:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres`` (None: not installed)."""
    candidates = [os.environ.get("FOLD_PG_BIN")]
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=_version, reverse=True)
    found = shutil.which("pg_ctl")
    candidates.append(os.path.dirname(found) if found else None)
    for candidate in candidates:
        if candidate and all(os.access(os.path.join(candidate, name), os.X_OK)
                             for name in ("initdb", "pg_ctl", "postgres")):
            return Path(candidate)
    return None


def _version(path: str) -> tuple:
    part = Path(path).parent.name
    return tuple(int(piece) for piece in part.split(".") if piece.isdigit())


class Cluster:
    """One private cluster: data, socket and log in a temporary directory."""

    def __init__(self, binaries: Path) -> None:
        self.bin = binaries
        self.root = Path(tempfile.mkdtemp(prefix="fold-postgres-"))
        os.chmod(self.root, 0o755)
        self.data = self.root / "data"
        self.socket_dir = self.root / "run"
        self.logfile = self.root / "server.log"
        self.port = free_port()
        self.started = False
        root_user = os.geteuid() == 0
        # initdb and postgres refuse root: run them as nobody (see the module docstring).
        self.as_user = {"user": "nobody", "group": "nogroup", "extra_groups": []} if root_user else {}
        self.owner = _ids("nobody") if root_user else None

    # -- addresses -------------------------------------------------------------------

    def url(self, database: str = DATABASE, *, user: str = SUPERUSER, tcp: bool = False, **params: str) -> str:
        """A ``postgresql://`` URL of this cluster (over the socket unless ``tcp``)."""
        from urllib.parse import quote, urlencode

        if tcp:
            base = f"postgresql://{quote(user)}@127.0.0.1:{self.port}/{database}"
        else:
            params = {"host": str(self.socket_dir), "port": str(self.port), **params}
            base = f"postgresql://{quote(user)}@/{database}"
        return base + ("?" + urlencode(params) if params else "")

    def conninfo(self, database: str = DATABASE) -> str:
        return f"host={self.socket_dir} port={self.port} user={SUPERUSER} dbname={database}"

    # -- life ----------------------------------------------------------------------------

    def start(self) -> "Cluster":
        for directory in (self.data, self.socket_dir):
            directory.mkdir()
            self._own(directory)
        self.logfile.touch()
        self._own(self.logfile)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "-E", "UTF8",
                  "--locale=C.UTF-8", "--no-sync")
        with open(self.data / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write(
                "\n# fold tests: a private cluster\n"
                "listen_addresses = '127.0.0.1'\n"
                f"port = {self.port}\n"
                f"unix_socket_directories = '{self.socket_dir}'\n"
                "max_connections = 60\n"
                "shared_buffers = 32MB\n"
                "log_min_messages = warning\n"
            )
        (self.data / "pg_hba.conf").write_text(
            "local all all trust\n"
            f"host all {SECRET_ROLE} 127.0.0.1/32 scram-sha-256\n"
            "host all all 127.0.0.1/32 trust\n",
            encoding="utf-8",
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.logfile), "-w", "-t", "60", "start")
        self.started = True
        self.psql(f"CREATE DATABASE {DATABASE}", database="postgres")
        self.psql(f"CREATE ROLE {SECRET_ROLE} LOGIN PASSWORD '{SECRET_PASSWORD}'", database="postgres")
        self.psql(f"GRANT ALL ON DATABASE {DATABASE} TO {SECRET_ROLE}; ", database="postgres")
        self._grant(DATABASE)
        return self

    def stop(self) -> None:
        try:
            if self.started:
                self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop")
                self.started = False
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def log(self) -> str:
        try:
            return self.logfile.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    # -- helpers ------------------------------------------------------------------------

    def create_database(self, name: str) -> str:
        """A new empty database (its URL over the socket)."""
        self.psql(f'CREATE DATABASE "{name}"', database="postgres")
        self.psql(f'GRANT ALL ON DATABASE "{name}" TO {SECRET_ROLE}', database="postgres")
        self._grant(name)
        return self.url(name)

    def _grant(self, database: str) -> None:
        """Let the password role use the tables, whichever of the two roles creates them."""
        for owner in (SUPERUSER, SECRET_ROLE):
            other = SECRET_ROLE if owner == SUPERUSER else SUPERUSER
            self.psql(f"ALTER DEFAULT PRIVILEGES FOR ROLE {owner} IN SCHEMA public"
                      f" GRANT ALL ON TABLES TO {other}", database=database)
        self.psql(f"GRANT ALL ON SCHEMA public TO {SECRET_ROLE}", database=database)

    def psql(self, sql: str, *, database: str = DATABASE) -> str:
        done = subprocess.run([str(self.bin / "psql"), "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At",
                               self.conninfo(database), "-c", sql], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"psql {sql!r} failed: {done.stderr.strip()}")
        return done.stdout

    def _own(self, path: Path) -> None:
        if self.owner is not None:
            os.chown(path, *self.owner)

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run([str(self.bin / program), *args], capture_output=True, text=True, timeout=120,
                              cwd=self.root, **self.as_user)
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr.strip() or done.stdout.strip()}"
                               f"\n{self.log()[-2000:]}")


def _ids(user: str) -> tuple[int, int]:
    import pwd

    entry = pwd.getpwnam(user)
    return entry.pw_uid, entry.pw_gid
