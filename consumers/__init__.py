"""Fold's built-in consumers (contract §12, §13): plugins that read accepted records.

``briefing``, ``push`` and ``changelog`` are consumer types (with ``items``
and ``briefing_render`` for what they show). A module here imports only ``fold_core`` and this package; the engine that
delivers records to consumers is the host's (``fold_host.cycle.delivery``).
"""
