"""The host: Fold's application, on top of the core and the plugins (contract §9–§12).

``cli`` (every ``foldctl`` command), ``cycle`` (one window, top to bottom),
``daemon``, ``sources`` (polling) and ``delivery`` (consumers) on one
``bounded`` runner, ``hostdb`` (the only owner of host.db), ``agents`` (the
editors), ``pinboard`` (the web page), ``evaluation``, ``demo`` and ``skill``.
"""
