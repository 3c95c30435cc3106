"""Full-text search over the observations' titles and texts: the ``observation_text`` table (``HostDB`` part).

An FTS5 table with the trigram tokenizer, so a search finds substrings in any
language (Chinese has no spaces between words; the default tokenizer would
take a whole clause for one word). Its rowid is the observation's ``seq``;
the table keeps only the index: its title and text are read from the
observation's body (``observation_fields``, a view), so the text is stored
once. Such an index must be told the exact values it held whenever a body
changes or goes (SQLite's FTS5 "delete" command: any other value leaves the
index wrong), so SQL triggers on ``observations`` (host.db migration 8)
index every insert and re-index every change of body or delete, whatever
code makes it, in the same transaction. PostgreSQL keeps its own table
(``pg.dialect``).

A query is split at whitespace into at most ``MAX_TERMS`` terms, all of which
must occur (case-insensitively). Terms of three characters or more go through
the index (each quoted, so no query can be FTS5 syntax); shorter ones — a
two-character Chinese word is common — are matched with ``LIKE``. Hits come
best first (bm25), then newest first, each with a snippet cut around the
first term found.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from fold_host.hostdb.part import TablePart
from fold_host.hostdb.protocol import Link

__all__ = ["MAX_TERMS", "SearchTables", "hits", "like_pattern", "snippet"]

MAX_TERMS = 8
SNIPPET_BEFORE, SNIPPET_AFTER = 60, 140


def like_pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def hits(rows: Iterable[tuple[str, str, str]], terms: list[str]) -> list[dict]:
    """A search's answer from its ``(body, title, text)`` rows: ``{id, source, at, title, snippet}`` each."""
    found = []
    for body, title, text in rows:
        observation = json.loads(body)
        found.append({"id": observation["id"], "source": observation["source"], "at": observation.get("at"),
                      "title": observation.get("title"), "snippet": snippet(title, text, terms)})
    return found


def snippet(title: str, text: str, terms: list[str]) -> str:
    """A part of ``text`` around the first term found (its start when only the title matched)."""
    folded = text.casefold()
    found = [position for position in (folded.find(term.casefold()) for term in terms) if position >= 0]
    if not found:
        return text[:SNIPPET_BEFORE + SNIPPET_AFTER] + ("…" if len(text) > SNIPPET_BEFORE + SNIPPET_AFTER else "")
    start = max(0, min(found) - SNIPPET_BEFORE)
    end = min(len(text), min(found) + SNIPPET_AFTER)
    return ("…" if start else "") + text[start:end] + ("…" if end < len(text) else "")


class SearchTables(TablePart):
    """``search_observations``: the editor's ``fold_search_observations`` tool."""

    @staticmethod
    def _index_text(db: Link, seq: int, title: str | None, text: str | None) -> None:
        """Nothing to do: a trigger indexes each observation as it is inserted (host.db migration 8)."""

    @staticmethod
    def index_texts(db: Link, rows: list[tuple[int, str, str]]) -> None:
        """Nothing to do: the rows a move inserts are indexed by the same trigger."""

    def search_observations(self, query: str, limit: int) -> list[dict]:
        """Observations whose title or text holds every term of ``query``: ``{id, source, at, title, snippet}``."""
        terms = query.split()[:MAX_TERMS]
        if not terms:
            return []
        indexed = [term for term in terms if len(term) >= 3]
        clauses, params = [], []
        if indexed:
            clauses.append("observation_text MATCH ?")
            params.append(" ".join('"' + term.replace('"', '""') + '"' for term in indexed))
        for term in terms:
            if len(term) < 3:
                clauses.append("(observation_text.title LIKE ? ESCAPE '\\' OR observation_text.text LIKE ? "
                               "ESCAPE '\\')")
                params += [like_pattern(term), like_pattern(term)]
        order = "observation_text.rank, o.seq DESC" if indexed else "o.seq DESC"
        rows = self.connection.execute(
            f"SELECT o.body, observation_text.title, observation_text.text FROM observation_text "
            f"JOIN observations AS o ON o.seq = observation_text.rowid WHERE {' AND '.join(clauses)} "
            f"ORDER BY {order} LIMIT ?", (*params, limit)).fetchall()
        return hits(rows, terms)
