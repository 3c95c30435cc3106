"""Mail sources: IMAP (``imap``), maildir and mbox (``mailbox``), and what they share.

``mime`` reads one message into observations (with ``headers`` and
``policy``), ``source`` holds the settings, first-run policy and seen cache of
every mail source, ``mbox`` reads mbox files incrementally.
"""
