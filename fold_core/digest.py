"""Canonical JSON and request digests (contract §6.1).

``request_digest = "sha256:" + hex(sha256(canonical_json({actor, request})))``
with ``canonical_json = json.dumps(obj, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` encoded as UTF-8. Changing this function changes every
digest ever stored: a store written before the change would then answer
``batch_conflict`` to honest retries. Do not change it without a format
version bump.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["canonical_json", "normalized_request", "request_digest"]


def canonical_json(value: object) -> bytes:
    """The canonical UTF-8 bytes of a JSON value."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode("utf-8", "surrogatepass")


def normalized_request(batch: Mapping) -> dict:
    """The request part of a batch: omitted lists are empty, omitted base_revision is null."""
    return {
        "declarations": batch.get("declarations", []),
        "acknowledges": batch.get("acknowledges", []),
        "base_revision": batch.get("base_revision"),
    }


def request_digest(actor: str, request: Mapping) -> str:
    """The identity of a request under one batch_id (``now`` is not part of it)."""
    import hashlib  # only writes need it: keep it off the read path

    payload = canonical_json({"actor": actor, "request": request})
    return "sha256:" + hashlib.sha256(payload).hexdigest()
