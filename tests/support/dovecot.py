"""A private Dovecot IMAP server on 127.0.0.1 for the tests (a private config, mail store and port per test session).

``Dovecot(root).start()`` writes a self-contained configuration (it never
reads /etc/dovecot), a self-signed certificate for localhost/127.0.0.1 and a
passwd-file with one user, starts ``dovecot -F`` as a child process and waits
until both listeners (plain and TLS) accept connections. ``stop()`` sends
SIGTERM and waits. Mail is delivered through IMAP APPEND as the test user,
like any mail client would.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.ports import free_ports

USER = "test"
PASSWORD = "secret"


class Dovecot:
    """``oauth2_url``: also log in with OAuth2 tokens (``mechanisms``), checked at that introspection URL.

    ``capability``: the CAPABILITY the server announces instead of its own (to hide IDLE, say).
    """

    def __init__(self, *, oauth2_url: str | None = None, mechanisms: str = "xoauth2 oauthbearer",
                 capability: str | None = None) -> None:
        self.oauth2_url, self.mechanisms, self.capability = oauth2_url, mechanisms, capability
        # Dovecot's auth process runs as another user: pytest's tmp_path (0700) is out of its reach.
        self.root = Path(tempfile.mkdtemp(prefix="fold-dovecot-"))
        os.chmod(self.root, 0o755)
        self.plain_port, self.tls_port = free_ports(2)
        self.cert = self.root / "cert.pem"
        self.process: subprocess.Popen | None = None

    @property
    def config(self) -> Path:
        return self.root / "dovecot.conf"

    def start(self) -> "Dovecot":
        self._write_files()
        check = subprocess.run(["dovecot", "-n", "-c", str(self.config)], capture_output=True, text=True)
        if check.returncode != 0:
            raise RuntimeError(f"dovecot rejected its test configuration: {check.stderr}")
        return self._launch()

    def restart(self, *, down: float = 0.0, during=None) -> None:
        """Stop the server (its clients see the connection end), run ``during()``, start it again on the same ports."""
        self._terminate()
        if during is not None:
            during()
        time.sleep(down)
        self._launch()

    def log(self) -> str:
        path = self.root / "dovecot.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def _launch(self) -> "Dovecot":
        self.process = subprocess.Popen(["dovecot", "-F", "-c", str(self.config)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"dovecot exited: {self.process.stderr.read().decode(errors='replace')}")
            if all(self._accepts(port) for port in (self.plain_port, self.tls_port)):
                return self
            time.sleep(0.05)
        self.stop()
        raise RuntimeError("dovecot did not start listening within 20 s")

    def stop(self) -> None:
        self._terminate()
        shutil.rmtree(self.root, ignore_errors=True)

    def _terminate(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self.process is not None and self.process.stderr:
            self.process.stderr.close()
        self.process = None

    def client(self):
        """A logged-in IMAPClient (plain port) for the test's own appends and checks."""
        from imapclient import IMAPClient

        client = IMAPClient("127.0.0.1", port=self.plain_port, ssl=False, timeout=10)
        client.login(USER, PASSWORD)
        return client

    def create_folder(self, folder: str) -> None:
        client = self.client()
        try:
            client.create_folder(folder)
        finally:
            client.logout()

    def append(self, raw: bytes, folder: str = "INBOX", msg_time=None) -> None:
        client = self.client()
        try:
            if not client.folder_exists(folder):
                client.create_folder(folder)
            client.append(folder, raw, flags=(), msg_time=msg_time)
        finally:
            client.logout()

    def drop_into_maildir(self, raw: bytes) -> None:
        """Deliver to the test user's INBOX as a local delivery agent would, even while the server is down."""
        maildir = self.root / "mail" / USER / "Maildir"
        name = f"{time.time_ns()}.fold{os.getpid()}.localhost"
        staged = maildir / "tmp" / name
        staged.write_bytes(raw)
        if os.getuid() == 0:
            os.chown(staged, pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)
        os.rename(staged, maildir / "new" / name)

    def doveadm(self, *args: str) -> str:
        done = subprocess.run(["doveadm", "-c", str(self.config), *args], capture_output=True, text=True,
                              timeout=30)
        if done.returncode != 0:
            raise RuntimeError(f"doveadm {' '.join(args)} failed: {done.stderr}")
        return done.stdout

    @staticmethod
    def _accepts(port: int) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return True
        except OSError:
            return False

    def _write_files(self) -> None:
        root = self.root
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "3650",
                        "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
                        "-keyout", str(root / "key.pem"), "-out", str(self.cert)],
                       check=True, capture_output=True)
        mail = root / "mail"
        mail.mkdir()
        if os.getuid() == 0:
            user, group = "nobody", "nogroup"
            os.chown(mail, pwd.getpwnam("nobody").pw_uid, pwd.getpwnam("nobody").pw_gid)
            extra = ""
            service_user = ""
        else:
            me = pwd.getpwuid(os.getuid())
            user, group = me.pw_name, str(os.getgid())
            extra = f"default_internal_user = {me.pw_name}\ndefault_login_user = {me.pw_name}\n"
            service_user = "  chroot =\n"
        (root / "passwd").write_text(f"{USER}:{{PLAIN}}{PASSWORD}::::::\n")
        # No login penalty for the tests' own address: a refused login must not slow the next test down.
        (root / "nodelay").write_text("127.0.0.1:::::::nodelay=yes\n")
        mechanisms, oauth2 = "plain login", ""
        if self.oauth2_url:
            mechanisms += " " + self.mechanisms
            (root / "oauth2.conf.ext").write_text(
                f"introspection_mode = post\nintrospection_url = {self.oauth2_url}\nforce_introspection = yes\n"
                "username_attribute = username\nactive_attribute = active\nactive_value = true\n")
            oauth2 = (f"passdb {{\n  driver = oauth2\n  mechanisms = {self.mechanisms}\n"
                      f"  args = {root}/oauth2.conf.ext\n}}\n")
        capability = f"imap_capability = {self.capability}\n" if self.capability else ""
        self.config.write_text(f"""protocols = imap
listen = 127.0.0.1
base_dir = {root}/run
state_dir = {root}/state
log_path = {root}/dovecot.log
instance_name = fold-test-{os.getpid()}-{self.plain_port}
ssl = yes
ssl_cert = <{self.cert}
ssl_key = <{root}/key.pem
disable_plaintext_auth = no
auth_mechanisms = {mechanisms}
auth_failure_delay = 0
{capability}{extra}passdb {{
  driver = passwd-file
  args = username_format=%{{rip}} {root}/nodelay
  default_fields = noauthenticate=y
}}
passdb {{
  driver = passwd-file
  mechanisms = plain login
  args = {root}/passwd
}}
{oauth2}
userdb {{
  driver = passwd-file
  args = {root}/passwd
  default_fields = uid={user} gid={group} home={mail}/%u mail=maildir:~/Maildir
}}
service anvil {{
{service_user}}}
service imap-login {{
{service_user}  inet_listener imap {{
    address = 127.0.0.1
    port = {self.plain_port}
  }}
  inet_listener imaps {{
    address = 127.0.0.1
    port = {self.tls_port}
    ssl = yes
  }}
}}
""")
