"""Canonical JSON and request digests (contract §6.1).

``request_digest = "sha256:" + hex(sha256(canonical_json({actor, request})))``
with ``canonical_json = json.dumps(obj, sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` encoded as UTF-8. Changing this function changes every
digest ever stored: a store written before the change would then answer
``batch_conflict`` to honest retries. Do not change it without a format
version bump.

Every commit hashes its request, so ``canonical_json`` asks orjson first
(when installed: about ten times faster) and keeps its bytes only where they
are provably those ``json.dumps`` writes — see ``_fast_canonical``; anything
else goes through ``json`` itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

__all__ = ["canonical_json", "normalized_request", "request_digest"]

# The same encoder ``json.dumps`` builds on every call with these arguments, built once.
_encode = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


class _Digest(Protocol):
    def hexdigest(self) -> str: ...


_sha256: Callable[[bytes], _Digest] | None = None  # hashlib.sha256, imported by the first digest
# (orjson.dumps, orjson.loads, options) once looked up; False when orjson is not installed
_fast: tuple[Callable[..., bytes], Callable[[bytes], Any], int] | Literal[False] | None = None
# A float as orjson writes it has a digit followed by a point or an exponent (1.5, 1e16, 5e-324).
# Digits become 0 and the point and exponent letters a point: one search then finds them all.
_FLOAT_MARKS = bytes.maketrans(b"123456789eE", b"000000000..")


def canonical_json(value: object) -> bytes:
    """The canonical UTF-8 bytes of a JSON value."""
    fast = _fast_canonical(value)
    if fast is not None:
        return fast
    return _encode(value).encode("utf-8", "surrogatepass")


def _fast_canonical(value: object) -> bytes | None:
    """orjson's bytes for ``value`` when they are ``json.dumps``'s, else None.

    orjson with sorted keys writes the bytes ``json.dumps`` writes (compact,
    UTF-8, the same escapes, keys in code-point order) for dicts with string
    keys, lists, strings, integers, booleans and None. Everything else is
    refused here: what orjson refuses itself (a lone surrogate, an integer
    beyond 64 bits, a non-string key, a subclass, a date, a dataclass, nesting
    past 255 levels); a float (``json`` spells some differently, e.g. ``1e+16``),
    found as a number token with a point or exponent outside the strings; and
    whatever orjson writes that does not read back equal to ``value`` (NaN and
    infinities become ``null``, a UUID or an Enum a plain value, a tuple a list).
    """
    global _fast
    if _fast is None:
        try:
            import orjson
        except ImportError:
            _fast = False
        else:
            _fast = (orjson.dumps, orjson.loads, orjson.OPT_SORT_KEYS | orjson.OPT_PASSTHROUGH_SUBCLASS
                     | orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS)
    if not _fast:
        return None
    dumps, loads, options = _fast
    try:
        data = dumps(value, option=options)
    except TypeError:  # orjson.JSONEncodeError
        return None
    if _may_hold_float(data) and _may_hold_float(_outside_strings(data)):
        return None
    if loads(data) != value:
        return None
    return data


def _may_hold_float(data: bytes) -> bool:
    """Whether a digit is followed by a point or an exponent anywhere in ``data``."""
    return b"0." in data.translate(_FLOAT_MARKS)


def _outside_strings(data: bytes) -> bytes:
    """The bytes of compact JSON ``data`` that are not inside a string."""
    # Drop escaped backslashes, then escaped quotes: every quote left opens or closes a
    # string, so the even pieces between quotes are the structure and the scalars.
    return b"".join(data.replace(b"\\\\", b"").replace(b'\\"', b"").split(b'"')[::2])


def normalized_request(batch: Mapping) -> dict:
    """The request part of a batch: omitted lists are empty, omitted base_revision is null."""
    return {
        "declarations": batch.get("declarations", []),
        "acknowledges": batch.get("acknowledges", []),
        "base_revision": batch.get("base_revision"),
    }


def request_digest(actor: str, request: Mapping) -> str:
    """The identity of a request under one batch_id (``now`` is not part of it)."""
    global _sha256
    sha256 = _sha256
    if sha256 is None:
        from hashlib import sha256 as imported  # only writes need it: keep it off the read path

        sha256 = _sha256 = imported
    payload = canonical_json({"actor": actor, "request": request})
    return "sha256:" + sha256(payload).hexdigest()
