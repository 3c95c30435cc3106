"""An OPML list turned into an ``[[adapters]]`` block of plugins.toml, and appended safely.

``adapter_block(name, feeds)`` writes the TOML text: an rss instance whose
``feeds`` array holds each feed's URL, or an inline table with its title and
folder when it has them. Strings are TOML basic strings (JSON escaping, which
TOML accepts, plus DEL), so a title from the list can never break out of its
string.

``append_checked(path, block)`` appends the block to a plugins.toml only
when the result loads without a problem the file did not already have (a
duplicate name, a bad key): the candidate is written beside the file,
loaded, and moved over it in one rename (the file's mode kept). Problems the
file already had — an environment variable not set in this shell, say — are
not held against the import.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from fold_core.errors import ConfigError, UsageError
from fold_host.plugins import load_config

__all__ = ["adapter_block", "append_checked", "toml_string"]


def toml_string(text: str) -> str:
    """A TOML basic string holding ``text`` exactly."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def adapter_block(name: str, feeds, *, every: str = "30m") -> str:
    """The ``[[adapters]]`` block reading ``feeds`` (``FeedRef`` values)."""
    lines = ["[[adapters]]", f"name = {toml_string(name)}", 'type = "rss"', f"every = {toml_string(every)}",
             "feeds = ["]
    for feed in feeds:
        extra = [f"title = {toml_string(feed.title)}"] if feed.title else []
        extra += [f"folder = {toml_string(feed.folder)}"] if feed.folder else []
        if extra:
            lines.append(f"  {{ url = {toml_string(feed.url)}, {', '.join(extra)} }},")
        else:
            lines.append(f"  {toml_string(feed.url)},")
    lines.append("]")
    return "\n".join(lines) + "\n"


def _problems(path: Path, shown_as: Path) -> set[str]:
    try:
        load_config(path=path)
    except ConfigError as error:
        found = getattr(error, "problems", None) or [error]
        return {str(problem).replace(str(path), str(shown_as)) for problem in found}
    return set()


def append_checked(path: Path, block: str) -> None:
    """Append ``block`` to the plugins.toml at ``path`` if it brings no new problem; ``ConfigError`` otherwise."""
    try:
        existing = path.read_text(encoding="utf-8") if path.exists() else ""
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o600
    except OSError as error:
        raise UsageError(f"cannot read {path}: {error.strerror or error}") from None
    before = _problems(path, path) if path.exists() else set()
    text = existing + ("\n" if existing and not existing.endswith("\n") else "") + ("\n" if existing else "") + block
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.resolve().parent, prefix=".plugins-",
                                         suffix=".toml", delete=False)
    candidate = Path(handle.name)
    try:
        with handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        new = sorted(_problems(candidate, path) - before)
        if new:
            raise ConfigError("the block was not appended: with it, " + "; ".join(new), file=str(path))
        os.chmod(candidate, mode)
        os.replace(candidate, path)
    finally:
        if candidate.exists():
            candidate.unlink()
