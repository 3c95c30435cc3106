"""Fold's editors: the plugins that answer a window with a batch (contract §9, §11.1).

``plugin`` registers the built-in types (``baseline``, ``command``, ``openai``,
``anthropic``); ``baseline/`` is the deterministic editor, ``llm/`` the chat
backends with their conversation and tool loop, ``command`` any program.
Like every plugin family, this package imports only ``fold_core`` and itself.
"""
