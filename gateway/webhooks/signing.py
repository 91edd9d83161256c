"""Standard Webhooks signatures (https://www.standardwebhooks.com).

A secret is ``whsec_`` + base64 of random bytes. Each attempt carries ``webhook-id`` (the
same on every retry, so receivers deduplicate by it), ``webhook-timestamp`` (Unix seconds of
this attempt) and ``webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"
_SECRET_BYTES = 32


def new_secret() -> str:
    """A fresh signing secret in the ``whsec_`` form."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(_SECRET_BYTES)).decode()


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_`` secret.

    Raises:
        ValueError: the secret is not ``whsec_`` + base64.
    """
    if not secret.startswith(SECRET_PREFIX):
        raise ValueError("a webhook secret starts with whsec_")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except binascii.Error as e:
        raise ValueError("a webhook secret is base64 after whsec_") from e
    if not key:
        raise ValueError("a webhook secret may not be empty")
    return key


def signature(secret: str, msg_id: str, timestamp: int, body: bytes) -> str:
    """The ``webhook-signature`` value for one attempt."""
    signed = f"{msg_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_key(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, msg_id: str, timestamp: int, body: bytes) -> dict[str, str]:
    """The three Standard Webhooks headers of one attempt."""
    return {
        "webhook-id": msg_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(secret, msg_id, timestamp, body),
    }
