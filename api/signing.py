"""Signed questions: an external publisher proves it holds a key without sending the key.

Each API key has a *signing secret*, issued with it (``POST /api/v1/keys``,
``agentbus keys create --json``). A publisher puts its key id and a Unix timestamp in the
question and adds a second stream field, ``signature``: the hex HMAC-SHA256 of the entry's
``data`` bytes exactly as sent, keyed with the signing secret. The signature covers the
bytes, not a re-encoding of the JSON, so no publisher has to reproduce a canonical JSON
form byte for byte (key order, escapes, number spelling differ between JSON libraries).

The secret is derived, never stored: ``HMAC-SHA256(master, "agentbus/signing/v1/" + key
id)``, with ``master`` the deployment's signing key (``AGENTBUS_SIGNING_KEY``, or a random
key kept in ``<data_dir>/signing-key``, mode 0600). Keys are stored as SHA-256 digests, and
a digest cannot key an HMAC without becoming a credential itself (whoever reads the table
could sign as anyone); a derived secret leaves nothing in the database to steal, needs no
column and no encryption library, and revoking the key (its row) disables its signatures
too. The cost: rotating the master key re-issues every signing secret.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from typing import TYPE_CHECKING

from bus.errors import BusError

if TYPE_CHECKING:
    from pathlib import Path

    from pydantic import SecretStr

#: The stream field that carries a signed entry's signature (beside ``data``).
SIGNATURE_FIELD = "signature"
SECRET_PREFIX = "abs_"
MASTER_FILE = "signing-key"
_MIN_MASTER_BYTES = 32
_LABEL = b"agentbus/signing/v1/"
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


class SigningKeyInvalid(BusError):
    """The configured signing key is too short to be a key."""

    code = "config_error"
    hint = "set AGENTBUS_SIGNING_KEY to 32+ random bytes, e.g. `openssl rand -hex 32`"


def master_key(signing_key: SecretStr | None, data_dir: Path) -> bytes:
    """The deployment's signing master key: the setting, or the data folder's key file.

    Every API process of a deployment must use the same key: set ``AGENTBUS_SIGNING_KEY``
    wherever processes do not share a data folder.

    Raises:
        SigningKeyInvalid: ``AGENTBUS_SIGNING_KEY`` is shorter than 32 bytes.
    """
    if signing_key is not None:
        key = signing_key.get_secret_value().encode()
        if len(key) < _MIN_MASTER_BYTES:
            raise SigningKeyInvalid(
                f"AGENTBUS_SIGNING_KEY must be at least {_MIN_MASTER_BYTES} bytes"
            )
        return key
    return _key_file(data_dir / MASTER_FILE)


def _key_file(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        # O_EXCL: of two processes starting at once, one creates and both read the same key.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip().encode()
    with os.fdopen(fd, "w") as out:
        out.write(secrets.token_hex(32) + "\n")
    return path.read_text().strip().encode()


def signing_secret(master: bytes, key_id: str) -> str:
    """The signing secret of the key ``key_id`` (what its holder keys the HMAC with)."""
    mac = hmac.new(master, _LABEL + key_id.encode(), hashlib.sha256).hexdigest()
    return f"{SECRET_PREFIX}{mac}"


def sign(secret: str, data: bytes) -> str:
    """The signature of an entry's ``data`` bytes: hex HMAC-SHA256 keyed with ``secret``."""
    return hmac.new(secret.encode(), data, hashlib.sha256).hexdigest()


def verify(secret: str, data: bytes, signature: str) -> bool:
    """Whether ``signature`` signs ``data`` under ``secret`` (constant-time comparison)."""
    if not _HEX64.fullmatch(signature):
        return False
    return hmac.compare_digest(sign(secret, data), signature)
