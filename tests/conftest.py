"""Shared test helpers: real system components, skipped only outside CI.

``require_component(what, package)`` returns when the component is there; when
it is missing the test skips with a message naming the Debian package — except
under ``CI=true``, where a missing component is a failure, never a skip.
``missing_component(what, package)`` does the same for a component that is
not an executable (a font, a library) once the test has found it missing.
``dovecot`` is a private Dovecot IMAP server per test module (a module may
define its own, e.g. with OAuth2). ``postgres_cluster`` is a private PostgreSQL cluster, started once per test
session (only when a test asks for it) and stopped after the last test.
"""

from __future__ import annotations

import os
import shutil

import pytest


def require_component(executable: str, package: str) -> str:
    """The path of ``executable``; skip (or fail under CI=true) naming ``package`` when missing."""
    found = shutil.which(executable) or (executable if os.path.isabs(executable) and os.access(executable, os.X_OK)
                                         else None)
    if found:
        return found
    missing_component(f"{executable} not found", package)


def missing_component(what: str, package: str) -> None:
    """Skip (or fail under CI=true) because ``what`` is missing; ``package`` installs it."""
    message = f"{what}: install the Debian package {package!r} (scripts/system-packages.sh does, as root)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


@pytest.fixture(scope="module")
def dovecot():
    """A private Dovecot on 127.0.0.1 for the module's tests (``tests/support/dovecot.py``)."""
    require_component("dovecot", "dovecot-imapd")
    require_component("doveadm", "dovecot-imapd")
    from tests.support.dovecot import Dovecot

    server = Dovecot().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def postgres_cluster():
    """A private PostgreSQL cluster for the whole test session (``tests/support/postgres.py``)."""
    from tests.support.postgres import PACKAGE, Cluster, find_binaries

    binaries = find_binaries()
    if binaries is None:
        missing_component("PostgreSQL (initdb, pg_ctl, postgres) not found", PACKAGE)
    cluster = Cluster(binaries).start()
    try:
        yield cluster
    finally:
        cluster.stop()
