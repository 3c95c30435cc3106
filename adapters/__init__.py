"""Fold's built-in adapters (contract §10, §11): plugins that turn sources into observations.

One subpackage per channel family — ``mail`` (IMAP, maildir, mbox and the
MIME reading they share), ``feeds`` (RSS, Atom), ``worklog`` (AI-agent work
logs) — and ``text``, the cleaning of untrusted text they all use. A module
here imports only ``fold_core`` and this package.
"""
