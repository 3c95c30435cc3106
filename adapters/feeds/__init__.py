"""Feeds: the ``rss`` adapter (RSS and Atom), ``fetch`` (bounded conditional GET), ``entries`` (entry → observation)."""
