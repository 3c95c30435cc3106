"""Searching the observations' titles and texts in PostgreSQL (``PgHostDB`` part; ``search`` on SQLite).

``observation_text`` holds each observation's title and text by its seq,
written in the same transaction as the observation. A query is split at
whitespace into at most ``MAX_TERMS`` terms, each of which must occur in the
title or the text (``ILIKE``: substrings, case-insensitive, any language).
PostgreSQL has no FTS5 and no bm25 here: hits whose title holds every term
come first, then the rest, newest first in each group; the snippet is cut as
on SQLite.
"""

from __future__ import annotations

import json

from fold_host.hostdb.search import MAX_TERMS, like_pattern, snippet

__all__ = ["PgSearchTables"]


class PgSearchTables:
    """``search_observations`` over ``observation_text`` with ``ILIKE``."""

    @staticmethod
    def _index_text(db, seq: int, title: str | None, text: str | None) -> None:
        db.execute("INSERT INTO observation_text (seq, title, text) VALUES (?, ?, ?)", (seq, title or "", text or ""))

    def search_observations(self, query: str, limit: int) -> list[dict]:
        """Observations whose title or text holds every term of ``query``: ``{id, source, at, title, snippet}``."""
        terms = query.split()[:MAX_TERMS]
        if not terms:
            return []
        clauses, params, in_title = [], [], []
        for term in terms:
            clauses.append("(t.title ILIKE ? OR t.text ILIKE ?)")
            params += [like_pattern(term), like_pattern(term)]
            in_title.append("t.title ILIKE ?")
        rows = self.connection.execute(
            f"SELECT o.body, t.title, t.text FROM observation_text AS t JOIN observations AS o ON o.seq = t.seq "
            f"WHERE {' AND '.join(clauses)} ORDER BY ({' AND '.join(in_title)}) DESC, o.seq DESC LIMIT ?",
            (*params, *[like_pattern(term) for term in terms], limit)).fetchall()
        hits = []
        for body, title, text in rows:
            observation = json.loads(body)
            hits.append({"id": observation["id"], "source": observation["source"], "at": observation.get("at"),
                         "title": observation.get("title"), "snippet": snippet(title, text, terms)})
        return hits
