"""``auth = "oauth2"`` against a real Dovecot whose ``oauth2`` passdb asks a local introspection server.

Each test runs twice: against a server offering only XOAUTH2, and one also
offering OAUTHBEARER (which the adapter then prefers); Dovecot's own log
says which mechanism logged in.
"""

from __future__ import annotations

import itertools
import json
import sys
import time
from datetime import datetime, timezone

import pytest
from pydantic import ValidationError

from fold_adapters.mail.imap import EmailAdapter, EmailSettings
from tests.conftest import require_component
from tests.support.host_workspace import Workspace

NOW = datetime(2026, 10, 20, 8, 0, tzinfo=timezone.utc)
REFRESH_ENV = "FOLD_TEST_OAUTH_REFRESH"
SECRET_ENV = "FOLD_TEST_OAUTH_SECRET"
FOLDERS = itertools.count(1)
TOKEN_SCRIPT = "import sys\nprint(open(sys.argv[1]).read().strip())\nsys.exit(int(sys.argv[2]) if len(sys.argv) > 2 else 0)\n"


@pytest.fixture(scope="module")
def oauth():
    from tests.support.oauth_server import OAuthServer

    server = OAuthServer(client_secret="s3cret")
    try:
        yield server
    finally:
        server.close()


@pytest.fixture(scope="module", params=["xoauth2", "xoauth2 oauthbearer"])
def dovecot(request, oauth):
    require_component("dovecot", "dovecot-imapd")
    from tests.support.dovecot import Dovecot

    server = Dovecot(oauth2_url=oauth.url("/introspect"), mechanisms=request.param).start()
    server.mechanism = "OAUTHBEARER" if "oauthbearer" in request.param else "XOAUTH2"
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def folder(dovecot):
    name = f"OAuth{next(FOLDERS)}"
    dovecot.append(message(name), folder=name)
    return name


def message(subject: str) -> bytes:
    return (f"From: Li Na <li.na@example.org>\r\nTo: test@example.com\r\nSubject: {subject}\r\n"
            f"Message-ID: <{subject}@example.org>\r\nDate: Mon, 12 Oct 2026 10:00:00 +0800\r\n\r\nbody\r\n").encode()


def refresh_adapter(dovecot, oauth, folder, monkeypatch, token="refresh-a", **settings) -> EmailAdapter:
    oauth.add_refresh(token)
    monkeypatch.setenv(REFRESH_ENV, token)
    monkeypatch.setenv(SECRET_ENV, "s3cret")
    settings.setdefault("oauth2_refresh_token_env", REFRESH_ENV)
    return EmailAdapter("mail", EmailSettings(
        host="127.0.0.1", port=dovecot.plain_port, security="none", username="test", auth="oauth2",
        oauth2_token_url=oauth.url("/token"), oauth2_client_id="fold-test", oauth2_client_secret_env=SECRET_ENV,
        folders=(folder,), first_run="last:10", **settings))


def command_adapter(dovecot, folder, tmp_path, token: str, status: int = 0) -> EmailAdapter:
    script, token_file = tmp_path / "token.py", tmp_path / "token.txt"
    script.write_text(TOKEN_SCRIPT)
    token_file.write_text(token + "\n")
    return EmailAdapter("mail", EmailSettings(
        host="127.0.0.1", port=dovecot.plain_port, security="none", username="test", auth="oauth2",
        oauth2_token_command=(sys.executable, str(script), str(token_file), str(status)),
        folders=(folder,), first_run="last:10"))


def logins(dovecot, method: str) -> int:
    return dovecot.log().count(f"Login: user=<test>, method={method},")


def test_a_token_command(dovecot, oauth, folder, tmp_path):
    oauth.issue("command-token-1")
    before = logins(dovecot, dovecot.mechanism)
    poll = command_adapter(dovecot, folder, tmp_path, "command-token-1").poll(None, now=NOW)
    assert poll.health.status == "ok", poll.health
    assert [o.title for o in poll.observations] == [folder]
    assert logins(dovecot, dovecot.mechanism) == before + 1


def test_a_token_command_that_fails_or_prints_a_refused_token(dovecot, folder, tmp_path):
    failed = command_adapter(dovecot, folder, tmp_path, "whatever", status=3).poll({"keep": 1}, now=NOW)
    assert failed.health.error_class == "auth" and "exit status 3" in failed.health.message
    assert failed.cursor == {"keep": 1} and "whatever" not in failed.health.message
    refused = command_adapter(dovecot, folder, tmp_path, "never-issued").poll(None, now=NOW)
    assert refused.health.status == "failed" and refused.health.error_class == "auth"
    assert "even after running oauth2_token_command again" in refused.health.message
    assert "never-issued" not in refused.health.message


def test_the_refresh_flow_caches_the_access_token(dovecot, oauth, folder, monkeypatch):
    mail = refresh_adapter(dovecot, oauth, folder, monkeypatch)
    before = oauth.refreshes()
    first = mail.poll(None, now=NOW)
    assert first.health.status == "ok", first.health
    second = mail.poll(json.loads(json.dumps(first.cursor)), now=NOW)
    assert second.health.status == "ok" and oauth.refreshes() == before + 1  # the cached token was used again
    request = oauth.token_requests[-1]
    assert request["grant_type"] == "refresh_token" and request["client_secret"] == "s3cret"


def test_an_expired_token_is_refreshed(dovecot, oauth, folder, monkeypatch):
    mail = refresh_adapter(dovecot, oauth, folder, monkeypatch)
    oauth.lifetime = 61  # cached for one second (a minute's margin before expiry)
    try:
        before = oauth.refreshes()
        assert mail.poll(None, now=NOW).health.status == "ok"
        time.sleep(1.2)
        assert mail.poll(None, now=NOW).health.status == "ok" and oauth.refreshes() == before + 2
    finally:
        oauth.lifetime = 3600


def test_a_token_refused_before_its_expiry_is_refreshed(dovecot, oauth, folder, monkeypatch):
    mail = refresh_adapter(dovecot, oauth, folder, monkeypatch)
    before = oauth.refreshes()
    assert mail.poll(None, now=NOW).health.status == "ok"
    oauth.revoke_access()  # the server dropped every access token; the refresh token still holds
    again = mail.poll(None, now=NOW)
    assert again.health.status == "ok" and [o.title for o in again.observations] == [folder]
    assert oauth.refreshes() == before + 2


def test_a_rotated_refresh_token_is_written_back_to_its_file(dovecot, oauth, folder, tmp_path, monkeypatch):
    token_file = tmp_path / "refresh.txt"
    token_file.write_text("refresh-rotating\n")
    token_file.chmod(0o600)
    mail = refresh_adapter(dovecot, oauth, folder, monkeypatch, token="refresh-rotating",
                           oauth2_refresh_token_env=None, oauth2_refresh_token_file=str(token_file))
    oauth.rotate = True
    try:
        assert mail.poll(None, now=NOW).health.status == "ok"
        rotated = token_file.read_text().strip()
        assert rotated.startswith("refresh-") and rotated != "refresh-rotating"
        assert token_file.stat().st_mode & 0o777 == 0o600
        oauth.revoke_access()
        assert mail.poll(None, now=NOW).health.status == "ok"  # refreshed with the rotated token
    finally:
        oauth.rotate = False


def test_a_revoked_grant_is_a_clear_failed_source_that_doctor_names(dovecot, oauth, folder, tmp_path,
                                                                     monkeypatch):
    oauth.add_refresh("refresh-doomed")
    monkeypatch.setenv(REFRESH_ENV, "refresh-doomed")
    monkeypatch.setenv(SECRET_ENV, "s3cret")
    ws = Workspace(tmp_path, sources=(), extra=f'''
        [[adapters]]
        name = "work-mail"
        type = "email"
        every = "5m"
        host = "127.0.0.1"
        port = {dovecot.plain_port}
        security = "none"
        username = "test"
        auth = "oauth2"
        oauth2_token_url = "{oauth.url('/token')}"
        oauth2_client_id = "fold-test"
        oauth2_client_secret_env = "{SECRET_ENV}"
        oauth2_refresh_token_env = "{REFRESH_ENV}"
        folders = ["{folder}"]
        first_run = "last:5"
    ''')
    assert ws.tick("2026-10-20T08:00:00+08:00")["polled"][0]["status"] == "ok"
    oauth.revoke_refresh("refresh-doomed")
    oauth.revoke_access()
    polled = ws.tick("2026-10-20T08:10:00+08:00")["polled"][0]
    assert polled == {"source": "work-mail", "status": "failed", "observations": 0}
    code, doctor, _ = ws.run("doctor")
    check = next(c for c in doctor["checks"] if c["name"] == "source work-mail")
    assert code == 1 and check["status"] == "fail"
    assert "invalid_grant" in check["detail"] and "authorize Fold again" in check["detail"]
    assert "refresh-doomed" not in json.dumps(doctor)


@pytest.mark.parametrize("settings", [
    {"auth": "oauth2"},
    {"auth": "oauth2", "password_env": "X", "oauth2_token_command": ["t"]},
    {"auth": "password", "password_env": "X", "oauth2_token_command": ["t"]},
    {"auth": "password"},
    {"auth": "oauth2", "oauth2_token_url": "https://t/token", "oauth2_client_id": "c"},
    {"auth": "oauth2", "oauth2_token_command": ["t"], "oauth2_token_url": "https://t/token"},
    {"auth": "oauth2", "oauth2_token_url": "https://t/token", "oauth2_client_id": "c",
     "oauth2_refresh_token_env": "R", "oauth2_refresh_token_file": "/r"},
    {"auth": "oauth2", "oauth2_token_command": []},
])
def test_incomplete_or_mixed_login_settings_are_refused(settings):
    with pytest.raises(ValidationError):
        EmailSettings(host="imap.example.com", username="u", **settings)
