"""Opening a logged-in IMAP connection (password or OAuth2), and naming what went wrong (contract §10).

``connect(settings, tokens)`` opens the connection (TLS, STARTTLS or plain
on loopback) and logs in: ``LOGIN`` with the password from
``password_env``, or SASL with an OAuth2 access token — ``OAUTHBEARER``
(RFC 7628) when the server advertises it, else ``XOAUTH2``. A refused token
is dropped and a new one asked for once (an access token may expire or be
revoked before its announced lifetime); a second refusal is an ``auth``
failure that says the grant itself is the problem.

``health_for(error, where)`` turns anything met on the way into a failed
``Health`` with an error class (``auth``, ``network``, ``timeout``,
``protocol``, ``internal``); no imaplib, socket or ssl exception leaves the
adapter.
"""

from __future__ import annotations

from typing import Any

from fold_adapters.mail.imap_settings import EmailSettings
from fold_adapters.mail.oauth import TokenError, TokenSource
from fold_core.observation import Health
from fold_core.settings import env_value

__all__ = ["OAuthRefused", "connect", "health_for", "port_of"]


class OAuthRefused(Exception):
    """The server refused a freshly obtained access token."""


def port_of(settings: EmailSettings) -> int:
    return settings.port or (993 if settings.security == "ssl" else 143)


def connect(settings: EmailSettings, tokens: TokenSource | None, *, read_timeout: float) -> Any:
    """A logged-in ``IMAPClient``; raises what failed (``health_for`` names it)."""
    import ssl

    from imapclient import IMAPClient, SocketTimeout

    timeout = SocketTimeout(connect=min(read_timeout, 30.0), read=read_timeout)
    context = None
    if settings.security != "none":
        context = ssl.create_default_context(cafile=str(settings.ca_file) if settings.ca_file else None)
    client = IMAPClient(settings.host, port=port_of(settings), ssl=settings.security == "ssl",
                        ssl_context=context, timeout=timeout)
    try:
        if settings.security == "starttls":
            client.starttls(context)
        client.normalise_times = False  # INTERNALDATE stays tz-aware
        if settings.auth == "oauth2":
            if tokens is None:
                raise ValueError("an oauth2 login needs the adapter's token source")
            _oauth_login(client, settings, tokens)
        else:
            password = env_value(settings.password_env)
            if password is None:
                raise TokenError("auth", f"the environment variable {settings.password_env} (password_env) is not set")
            client.login(settings.username, password)
    except BaseException:
        try:
            client.shutdown()
        except Exception:
            pass
        raise
    return client


def _oauth_login(client: Any, settings: EmailSettings, tokens: TokenSource) -> None:
    from imapclient.exceptions import LoginError

    bearer = client.has_capability("AUTH=OAUTHBEARER")
    for attempt in (1, 2):
        token = tokens.token()
        try:
            if bearer:
                client.oauthbearer_login(settings.username, token)
            else:
                client.oauth2_login(settings.username, token)
            return
        except LoginError as error:
            tokens.invalidate()
            if attempt == 2:
                how = ("running oauth2_token_command again" if settings.oauth2_token_command
                       else "refreshing it")
                raise OAuthRefused(f"the server refused the OAuth2 access token for {settings.username} "
                                   f"({'OAUTHBEARER' if bearer else 'XOAUTH2'}: {str(error)[:200]}) even after "
                                   f"{how}: the grant was revoked, has expired or lacks IMAP access") from None


def health_for(error: BaseException, where: str) -> Health:
    """A failed ``Health`` with an error class for any exception met while talking to the server."""
    import imaplib
    import socket
    import ssl

    try:
        from imapclient.exceptions import LoginError
    except ImportError:  # imapclient missing: every error below is still classified
        LoginError = ()  # noqa: N806

    detail = f"{type(error).__name__}: {error}"[:500]
    if isinstance(error, TokenError):
        return Health.failed(error.error_class, f"{where}: {error}")
    if isinstance(error, OAuthRefused):
        return Health.failed("auth", f"{where}: {error}")
    if isinstance(error, LoginError):
        return Health.failed("auth", f"{where}: the server refused the login ({error})")
    if isinstance(error, (socket.timeout, TimeoutError)):
        return Health.failed("timeout", f"{where}: no answer in time ({detail})")
    if isinstance(error, ssl.SSLError):
        return Health.failed("network", f"{where}: TLS failed ({detail})")
    if isinstance(error, imaplib.IMAP4.abort):
        return Health.failed("network", f"{where}: the connection broke ({detail})")
    if isinstance(error, imaplib.IMAP4.error):
        return Health.failed("protocol", f"{where}: the server said no ({detail})")
    if isinstance(error, OSError):
        return Health.failed("network", f"{where}: cannot reach the server ({detail})")
    return Health.failed("internal", f"{where}: unexpected {detail}")
