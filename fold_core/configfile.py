"""Which ``plugins.toml`` is in use, and the store it names (contract §7, §11.1).

Light on purpose (no pydantic, no plugins): ``foldctl state`` resolves its
store through here. Precedence of the file: ``--config FILE`` >
``$FOLD_CONFIG`` > ``./plugins.toml`` > ``$XDG_CONFIG_HOME/fold/plugins.toml``
(default ``~/.config/fold/plugins.toml``); none at all means the embedded
defaults. ``store_path`` reads only ``[store]``: ``path`` (``~`` expanded,
relative to the file), or ``url`` with ``name``, ``password_env`` and
``password_file`` composed into one store URL (``store.location``); the full
validation is ``fold_core.config.load_config``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fold_core.errors import ConfigError, UsageError
from fold_core.store.location import compose

__all__ = ["find_config", "read_toml", "store_path", "view_settings"]


def find_config(given: str | None = None) -> Path | None:
    """The plugins.toml in use, by the contract's precedence (None: embedded defaults)."""
    if given:
        path = Path(os.path.expanduser(given))
        if not path.is_file():
            raise ConfigError(f"{given}: no such configuration file (from --config)", file=given)
        return path
    named = os.environ.get("FOLD_CONFIG")
    if named:
        path = Path(os.path.expanduser(named))
        if not path.is_file():
            raise ConfigError(f"{named}: no such configuration file (from $FOLD_CONFIG)", file=named)
        return path
    local = Path("plugins.toml")
    if local.is_file():
        return local
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    xdg = Path(config_home) / "fold" / "plugins.toml"
    return xdg if xdg.is_file() else None


def read_toml(path: Path) -> dict[str, Any]:
    """The plugins.toml at ``path`` as a dict; ``ConfigError`` when it cannot be read or is not TOML."""
    import tomllib  # only when a plugins.toml is in use

    try:
        with open(path, "rb") as file:
            return tomllib.load(file)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: not valid TOML: {error}", file=str(path)) from None
    except RecursionError:
        raise ConfigError(f"{path}: not usable TOML: arrays or tables nested too deeply", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path}: cannot be read: {error}", file=str(path)) from None


def store_path(given: str | None = None) -> str | None:
    """``[store] path`` of the plugins.toml in use, resolved; None when it names none."""
    path = find_config(given)
    if path is None:
        return None
    section = read_toml(path).get("store")
    if section is None:
        return None
    if isinstance(section, dict) and section.get("url") is not None:
        return _store_url(path, section)
    value = section.get("path") if isinstance(section, dict) else None
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{path}: [store], field 'path': expected a non-empty string, found {value!r}",
                          file=str(path), instance="[store]", field="path")
    return os.path.join(os.path.dirname(os.path.abspath(path)), os.path.expanduser(value))


def _store_url(path: Path, section: dict) -> str:
    """``[store] url`` (+ ``name``, ``password_env``, ``password_file``) as one store URL."""
    where = str(path)
    options: dict[str, str | None] = {}
    for key in ("url", "name", "password_env", "password_file"):
        value = section.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise ConfigError(f"{where}: [store], field {key!r}: expected a non-empty string, found {value!r}",
                              file=where, instance="[store]", field=key)
        options[key] = value
    if section.get("path") is not None:
        raise ConfigError(f"{where}: [store]: give path or url, not both", file=where, instance="[store]",
                          field="url")
    if options["password_file"] is not None:
        options["password_file"] = os.path.join(os.path.dirname(os.path.abspath(path)),
                                                os.path.expanduser(options["password_file"]))
    url = options["url"]
    assert url is not None  # the caller comes here for a [store] url
    try:
        return compose(url, name=options["name"], password_env=options["password_env"],
                       password_file=options["password_file"])
    except UsageError as error:
        if isinstance(error, ConfigError):
            raise ConfigError(f"{where}: {error}", file=where, instance="[store]", field=error.field) from None
        raise ConfigError(f"{where}: [store], field 'url': {error}", file=where, instance="[store]",
                          field="url") from None


READER_LANGUAGE, READER_ZONE = "en", "UTC"  # what a person reads when [host] does not say


def view_settings(given: str | None = None) -> tuple[str, str]:
    """``(language, timezone)`` for the text views: ``[host] language`` and ``timezone`` of the file in use.

    The rule of every view a person reads (text views, doctor, the Pinboard,
    the briefing's labels, the daemon log's times): ``language`` when the file
    writes it, else English (the skill's default, zh, is the editor's, not the
    reader's); ``timezone``, else UTC, its default. A file that cannot be read
    gives the same defaults: the command itself reports it.
    """
    try:
        path = find_config(given)
        host = read_toml(path).get("host") if path is not None else None
    except ConfigError:
        return READER_LANGUAGE, READER_ZONE
    if not isinstance(host, dict):
        return READER_LANGUAGE, READER_ZONE
    language, zone = host.get("language"), host.get("timezone")
    return (language if language in ("zh", "en") else READER_LANGUAGE,
            zone if isinstance(zone, str) else READER_ZONE)
