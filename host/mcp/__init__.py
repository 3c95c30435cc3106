"""``foldctl mcp``: Fold for AI agents over the Model Context Protocol (contract §11.2).

* ``catalogue`` — the tools and resources as data (names, descriptions, JSON
  Schemas), shared with the Agent Skill's reference; no SDK import;
* ``operations`` — ``FoldDesk``: each tool and resource over the store and
  host.db, answering documents or structured errors, never exceptions;
* ``report`` — an agent's report → the observation of a work-log line;
* ``views`` — the state document narrowed by weight and kind;
* ``server`` — the official ``mcp`` SDK's low-level server, and stdio;
* ``http`` — Streamable HTTP with the Pinboard's bind and token policy.

The SDK is imported only by ``server`` and ``http``, when the command runs.
"""
