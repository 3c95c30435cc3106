"""``[[adapters]] type = "email"`` settings (contract §11.1): server, login (password or OAuth2), IDLE.

Besides the keys of every mail source (``fold_adapters.mail.source``):

* ``host``, ``port``, ``security`` (``ssl`` | ``starttls`` | ``none``, the last
  only for a loopback host), ``username``, ``folders``, ``ca_file``;
* ``auth = "password"`` (default) with ``password_env``; or ``auth =
  "oauth2"`` with either ``oauth2_token_command`` (argv list) or the refresh
  flow: ``oauth2_token_url``, ``oauth2_client_id``, one of
  ``oauth2_refresh_token_env`` / ``oauth2_refresh_token_file``, at most one of
  ``oauth2_client_secret_env`` / ``oauth2_client_secret_file`` (public
  clients have none), ``oauth2_scope`` (optional);
* ``idle`` (default true: watch the folders — the first four — with IMAP
  IDLE under ``foldctl run`` when the server offers it) and ``idle_delay`` (default
  ``"10s"``: how long mail that arrives together is gathered before the poll).
"""

from __future__ import annotations

import ipaddress
from datetime import timedelta
from typing import Literal

from pydantic import Field, model_validator

from fold_adapters.mail.source import MailSettings
from fold_core.settings import ConfigPath, Duration, EnvName

__all__ = ["EmailSettings", "is_loopback"]

_REFRESH_FIELDS = ("oauth2_token_url", "oauth2_client_id", "oauth2_client_secret_env", "oauth2_client_secret_file",
                   "oauth2_refresh_token_env", "oauth2_refresh_token_file", "oauth2_scope")


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class EmailSettings(MailSettings):
    """``[[adapters]] type = "email"`` (contract §11.1); see the module docstring."""

    host: str = Field(min_length=1, max_length=255)
    port: int | None = Field(default=None, ge=1, le=65535)
    security: Literal["ssl", "starttls", "none"] = "ssl"
    username: str = Field(min_length=1, max_length=320)
    auth: Literal["password", "oauth2"] = "password"
    password_env: EnvName | None = None
    oauth2_token_command: tuple[str, ...] | None = Field(default=None, min_length=1, max_length=64)
    oauth2_token_url: str | None = Field(default=None, pattern=r"^[hH][tT][tT][pP][sS]?://\S+$", max_length=2048)
    oauth2_client_id: str | None = Field(default=None, min_length=1, max_length=512)
    oauth2_client_secret_env: EnvName | None = None
    oauth2_client_secret_file: ConfigPath | None = None
    oauth2_refresh_token_env: EnvName | None = None
    oauth2_refresh_token_file: ConfigPath | None = None
    oauth2_scope: str | None = Field(default=None, max_length=1024)
    folders: tuple[str, ...] = Field(default=("INBOX",), min_length=1, max_length=64)
    first_run: str = "new"
    ca_file: ConfigPath | None = None  # a PEM file of certificates to trust (a self-signed server)
    idle: bool = True
    idle_delay: Duration = Field(default=timedelta(seconds=10))

    @model_validator(mode="after")
    def _plaintext_only_on_loopback(self) -> "EmailSettings":
        if self.security == "none" and not is_loopback(self.host):
            raise ValueError(f'security = "none" sends the password in clear text; it is allowed only for a '
                             f'loopback host (127.0.0.1, ::1, localhost), found host {self.host!r}: use "ssl" '
                             f'or "starttls"')
        return self

    @model_validator(mode="after")
    def _one_login(self) -> "EmailSettings":
        given = [name for name in ("oauth2_token_command", *_REFRESH_FIELDS) if getattr(self, name) is not None]
        if self.auth == "password":
            if self.password_env is None:
                raise ValueError('auth = "password" needs password_env (the environment variable holding it)')
            if given:
                raise ValueError(f'{given[0]} is for auth = "oauth2"; this instance has auth = "password"')
            return self
        if self.password_env is not None:
            raise ValueError('password_env is for auth = "password"; this instance has auth = "oauth2"')
        if self.oauth2_token_command is not None:
            if len(given) > 1:
                raise ValueError(f"oauth2_token_command and {given[1]} exclude each other: the command gives the "
                                 f"access token, or the refresh flow does")
            return self
        missing = [name for name in ("oauth2_token_url", "oauth2_client_id") if getattr(self, name) is None]
        if (self.oauth2_refresh_token_env is None) == (self.oauth2_refresh_token_file is None):
            missing.append("exactly one of oauth2_refresh_token_env / oauth2_refresh_token_file")
        if self.oauth2_client_secret_env is not None and self.oauth2_client_secret_file is not None:
            missing.append("at most one of oauth2_client_secret_env / oauth2_client_secret_file")
        if missing:
            raise ValueError('auth = "oauth2" needs oauth2_token_command, or the refresh flow: '
                             + ", ".join(missing))
        return self
