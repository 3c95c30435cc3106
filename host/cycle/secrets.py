"""The secrets this host knows, and an editor's answer that repeats one (contract §9, [hardening-2]).

``known_secrets(host)`` gathers every secret value the configuration leads
to: each ``*_env`` setting of the editor, the adapters, the consumers and
the host's own sections (the environment variable's value, or the file an
``*_file`` setting names), ``[mcp] token_file``, a password written in a URL
of any setting (``https://user:pw@…``), and the store's password (its URL).
They are read when asked, so a rotated key counts at once.

``secret_problems(output, secrets)``: an answer that holds one of them
verbatim (in any string of its batch or dispositions) is refused by the host
like any other invalid answer — the error goes back to the editor as a
correction, the window stays pending if it never corrects it — because
whatever the state holds is shown on the Pinboard, pushed, written to files
and read by agents. Only secrets of at least ``MIN_REFUSED`` characters
refuse an answer: a short password may well be an ordinary word.
``masker(secrets)`` blanks every one (``MIN_MASKED`` characters and up)
out of a text: the call log and the errors keep ``[secret]`` instead.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from pydantic import BaseModel

from fold_core.settings import env_value

__all__ = ["MASK", "MIN_MASKED", "MIN_REFUSED", "known_secrets", "masker", "secret_problems", "url_passwords"]

MASK = "[secret]"
MIN_MASKED = 4
MIN_REFUSED = 8
SECRET_FILES = ("token_file", "password_file")  # settings naming a file that holds a secret itself
MAX_SECRET_FILE = 64 * 1024
MAX_PROBLEMS = 5


def url_passwords(text: str) -> set[str]:
    """The passwords written in a URL (``user:password@`` and a ``password=`` parameter), decoded and not."""
    if "://" not in text:
        return set()
    try:
        parts = urlsplit(text.strip())
    except ValueError:
        return set()
    found = set()
    if parts.password:
        found |= {parts.password, unquote(parts.password)}
    for key, value in parse_qsl(parts.query):
        if key.lower() == "password" and value:
            found.add(value)
    return found


def _read_secret_file(path: Any) -> str | None:
    try:
        with open(path, encoding="utf-8") as file:
            return file.read(MAX_SECRET_FILE).strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _walk(value: Any, name: str, found: set[str]) -> None:
    if isinstance(value, BaseModel):
        for field in type(value).model_fields:
            _walk(getattr(value, field), field, found)
    elif isinstance(value, (list, tuple, frozenset, set)):
        for item in value:
            _walk(item, name, found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, str(key), found)
    elif isinstance(value, str):
        if name.endswith("_env"):
            secret = env_value(value)
            if secret:
                found.add(secret.strip())
        found |= url_passwords(value)
    elif name in SECRET_FILES and value is not None:
        secret = _read_secret_file(value)
        if secret:
            found.add(secret)


def known_secrets(host: Any) -> tuple[str, ...]:
    """Every secret value the host's configuration leads to (longest first), ``MIN_MASKED`` characters and up."""
    config = host.config
    found: set[str] = set()
    instances = [*config.adapters, *config.consumers, *([config.agent] if config.agent is not None else [])]
    for instance in instances:
        _walk(instance.settings, "", found)
    for section in config.sections.values():
        _walk(section, "", found)
    found |= url_passwords(str(host.location))
    return tuple(sorted((s for s in found if len(s) >= MIN_MASKED), key=lambda s: (-len(s), s)))


def masker(secrets: Iterable[str]) -> Callable[[str], str]:
    """A function that replaces every secret in a text with ``[secret]`` (longest first)."""
    ordered = sorted({s for s in secrets if len(s) >= MIN_MASKED}, key=len, reverse=True)

    def mask(text: str) -> str:
        for secret in ordered:
            if secret in text:
                text = text.replace(secret, MASK)
        return text
    return mask


def secret_problems(output: Any, secrets: Iterable[str]) -> list[dict]:
    """One ``secret_in_output`` error per string of ``output`` holding a secret (at most ``MAX_PROBLEMS``)."""
    refused = [s for s in secrets if len(s) >= MIN_REFUSED]
    if not refused:
        return []
    problems: list[dict] = []

    def visit(value: Any, path: str) -> None:
        if len(problems) >= MAX_PROBLEMS:
            return
        if isinstance(value, dict):
            for key, item in value.items():
                visit(item, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                visit(item, f"{path}[{index}]")
        elif isinstance(value, str) and any(secret in value for secret in refused):
            problems.append({"code": "secret_in_output", "field": path, "message": (
                f"{path} holds a secret of this Fold's configuration verbatim (an API key, password or token; "
                f"shown here as {MASK}): the state is shown, pushed and read by agents, so it never holds one. "
                "Answer again without it: leave it out, or say what it is (\"the API key from the mail\")")})

    visit(output, "")
    return problems
