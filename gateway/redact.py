"""Deep redaction of secret-looking values before anything is stored or shown."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

REDACTED = "[REDACTED]"

# Matched against the key lower-cased with every non-alphanumeric run turned into "_",
# so "X-API-Key", "apiKey", "client_secret" and "Set-Cookie" are all caught.
# Substrings on purpose: a false positive hides a harmless value, a false negative leaks one.
# "token(?!s)" keeps counters such as "max_tokens" readable.
_SECRET_KEY = re.compile(
    r"authori[sz]ation|token(?!s)|api_?key|password|passwd|passphrase|secret|cookie|bearer"
    r"|session|private_?key|credential|signature"
    r"|(?:^|_)(?:auth|pwd|jwt|sid)(?:_|$)"
)
# A value that carries its own credential, whatever the key is called.
_SECRET_VALUE = re.compile(r"^\s*(?:bearer|basic|digest|token)\s+\S", re.IGNORECASE)
_MAX_DEPTH = 64


@functools.lru_cache(maxsize=4_096)
def is_secret_key(key: str) -> bool:
    """True if a mapping key looks like it names a credential (remembered per key: a
    tool's arguments and results name the same few keys on every call)."""
    normalised = re.sub(r"[^a-z0-9]+", "_", key.lower())
    return _SECRET_KEY.search(normalised) is not None


def _is_mapping(value: object) -> TypeGuard[Mapping[object, object]]:
    # A dict (what JSON gives) without the abstract class's instance check.
    return type(value) is dict or isinstance(value, Mapping)


def _is_list_or_tuple(value: object) -> TypeGuard[Sequence[object]]:
    return isinstance(value, list | tuple)


def redact(value: Any, *, _depth: int = 0) -> Any:
    """A deep copy of `value` with secret-looking entries replaced by ``"[REDACTED]"``.

    Mapping values under secret-looking keys are redacted whatever their type; strings
    that start with an auth scheme (``Bearer x``) are redacted; credentials in URL strings
    (userinfo, secret-looking query parameters) are redacted in place. Lists and tuples
    are walked (tuples come back as lists, as they would from JSON). Nesting deeper than
    64 levels is cut rather than walked, so a hostile payload cannot exhaust the stack.
    """
    if _depth > _MAX_DEPTH:
        return "[TRUNCATED]"
    if _is_mapping(value):
        return {
            k: REDACTED if isinstance(k, str) and is_secret_key(k) else redact(v, _depth=_depth + 1)
            for k, v in value.items()
        }
    if _is_list_or_tuple(value):
        return [redact(v, _depth=_depth + 1) for v in value]
    if isinstance(value, str):
        return _redact_string(value)
    return value


def _redact_string(text: str) -> str:
    if _SECRET_VALUE.match(text):
        return REDACTED
    if "://" in text and len(text) <= 8192 and " " not in text:
        return _redact_url(text)
    return text


def _redact_url(text: str) -> str:
    try:
        parts = urlsplit(text)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return text
    netloc = parts.netloc
    if "@" in netloc and host:
        # Keep the host (useful in an audit), drop whatever came before "@".
        shown = f"[{host}]" if ":" in host else host
        netloc = f"{REDACTED}@{shown}" + (f":{port}" if port is not None else "")
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_key(k) for k, _ in pairs):
            query = urlencode(
                [(k, REDACTED if is_secret_key(k) else v) for k, v in pairs], safe="[]"
            )
    if netloc == parts.netloc and query == parts.query:
        return text
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
