"""API keys: minting, parsing and checking them against the digest the store keeps.

A key reads ``abk_<id>_<secret>``: ``id`` (12 hex) finds the row, ``secret`` (256 random
bits) is what proves possession. With that much entropy a plain SHA-256 is the right
digest: a slow password hash protects guessable secrets, and these are not guessable.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass

from bus.commands import NAME_PATTERN
from bus.store import ApiKeyRecord, ApiKeyStore, KeyRole

PREFIX = "abk_"
ID_HEX = 12
#: Most ACL groups one key may carry (``Command.groups`` holds at most this many).
MAX_GROUPS = 64


@dataclass(frozen=True, slots=True)
class MintedKey:
    """A new key: ``key`` is shown once and never stored; ``record`` is what is stored."""

    key: str
    record: ApiKeyRecord


def digest(key: str) -> str:
    """The SHA-256 hex digest the store keeps for a key."""
    return hashlib.sha256(key.encode()).hexdigest()


def key_id(key: str) -> str | None:
    """The id part of a well-formed key, or None for anything else."""
    if not key.startswith(PREFIX) or len(key) < len(PREFIX) + ID_HEX + 2:
        return None
    kid, sep = key[len(PREFIX) : len(PREFIX) + ID_HEX], key[len(PREFIX) + ID_HEX]
    if sep != "_" or any(c not in "0123456789abcdef" for c in kid):
        return None
    return kid


def matches(key: str, record: ApiKeyRecord) -> bool:
    """Whether ``key`` is the key ``record`` was made from (constant-time comparison)."""
    return hmac.compare_digest(digest(key), record.key_hash)


def mint(
    tenant_id: str,
    subject: str,
    role: KeyRole,
    name: str | None = None,
    groups: Sequence[str] = (),
) -> MintedKey:
    """A fresh key for a tenant and subject (not stored yet).

    Raises:
        ValueError: the tenant, subject or a group is not a valid name (they travel in
            every command, so they follow the bus's name pattern; tenants are at most 64
            chars), or there are more than 64 groups.
    """
    named = [("tenant", tenant_id, 64), ("subject", subject, 128)]
    named += [("group", g, 128) for g in groups]
    for what, value, longest in named:
        if not re.fullmatch(NAME_PATTERN, value) or len(value) > longest:
            raise ValueError(
                f"{what} {value!r} must be 1-{longest} characters of letters, digits and _.@:-"
            )
    if len(set(groups)) > MAX_GROUPS:
        raise ValueError(f"a key holds at most {MAX_GROUPS} groups")
    kid = secrets.token_hex(ID_HEX // 2)
    key = f"{PREFIX}{kid}_{secrets.token_urlsafe(32)}"
    record = ApiKeyRecord(
        id=kid,
        key_hash=digest(key),
        tenant_id=tenant_id,
        subject=subject,
        role=role,
        name=name,
        groups=tuple(groups),
    )
    return MintedKey(key, record)


async def create_key(
    store: ApiKeyStore,
    tenant_id: str,
    subject: str,
    role: KeyRole = KeyRole.USER,
    name: str | None = None,
    groups: Sequence[str] = (),
) -> MintedKey:
    """Mint a key and store its digest; the caller shows ``key`` once."""
    minted = mint(tenant_id, subject, role, name, groups)
    await store.create(minted.record)
    return minted
