"""A tenant's API keys as its admin manages them (``/api/v1/keys``): list, create, revoke.

A key is shown once, when it is made; a list shows everything else about it. A user erased
lately gets no new key (their steps would commit nothing).
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts.ids import NAME_PATTERN
from api import credentials, signing
from api.app.auth import Principal
from api.app.errors import InvalidRequest, KeyNotFound, UserErased
from api.app.ports import ErasedLately
from bus.store import ApiKeyRecord, ApiKeyStore, KeyRole


class KeyCreate(BaseModel):
    """A key for a subject of the admin's tenant."""

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(pattern=NAME_PATTERN, max_length=128)
    role: KeyRole = KeyRole.USER
    name: str | None = Field(default=None, max_length=120)
    groups: list[Annotated[str, Field(pattern=NAME_PATTERN)]] = Field(
        default=[],
        max_length=credentials.MAX_GROUPS,
        description="The holder's ACL groups: runs started with the key read documents "
        "ingested with one of these (--acl GROUP) besides the tenant's '*' ones.",
    )


class KeyView(BaseModel):
    """A key as listed: never the key itself."""

    id: str
    tenant_id: str
    subject: str
    role: KeyRole
    name: str | None
    groups: list[str]
    created_at: datetime
    revoked_at: datetime | None

    @classmethod
    def of(cls, record: ApiKeyRecord) -> KeyView:
        """The listed form of a stored key."""
        return cls.model_validate(record.model_dump(exclude={"key_hash"}))


class KeyCreated(KeyView):
    """A new key; ``key`` and ``signing_secret`` are shown this once."""

    key: str
    signing_secret: str | None = Field(
        description="Signs questions on runs.questions instead of sending the key "
        "(HMAC-SHA256 of the entry's data; see the README)."
    )


class KeyList(BaseModel):
    """The tenant's keys, oldest first."""

    keys: list[KeyView]


class KeyBook:
    """The tenants' API keys, as their admins manage them.

    Args:
        store: the API keys.
        forget: drops a revoked key from this process's cache of checked keys.
        changed: records that a tenant's keys changed (`bus.tenant_versions.bump`), so
            every replica's cache of them reads them again (None: only this process's
            cache is kept current).
        erased_lately: whether the erasure fence holds a user (None: nothing is fenced).
        signing_master: what keys' signing secrets derive from (None: keys get none).
    """

    def __init__(
        self,
        store: ApiKeyStore,
        *,
        forget: Callable[[str], None],
        erased_lately: ErasedLately | None,
        signing_master: bytes | None,
        changed: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        self._store = store
        self._forget = forget
        self._changed = changed
        self._erased = erased_lately
        self._master = signing_master

    async def list(self, admin: Principal) -> KeyList:
        """The admin's tenant's keys (revoked ones included)."""
        return KeyList(keys=[KeyView.of(k) for k in await self._store.list(admin.tenant_id)])

    async def create(self, admin: Principal, body: KeyCreate) -> KeyCreated:
        """A new key in the admin's tenant, shown this once.

        Raises:
            UserErased: the subject was erased lately.
            InvalidRequest: the subject cannot hold a key.
        """
        if self._erased is not None and await self._erased(admin.tenant_id, body.subject):
            raise UserErased(f"the user {body.subject[:80]!r} of this tenant was erased lately")
        try:
            minted = await credentials.create_key(
                self._store, admin.tenant_id, body.subject, body.role, body.name, body.groups
            )
        except ValueError as e:
            raise InvalidRequest(str(e), field="subject") from e
        secret = None
        if self._master is not None:
            secret = signing.signing_secret(self._master, minted.record.id)
        return KeyCreated(
            **KeyView.of(minted.record).model_dump(), key=minted.key, signing_secret=secret
        )

    async def revoke(self, admin: Principal, key_id: str) -> KeyView:
        """Revoke a key of the admin's tenant (``KeyNotFound`` otherwise); no replica
        accepts it once this returns."""
        record = await self._store.revoke(key_id, admin.tenant_id)
        if record is None:
            raise KeyNotFound(f"no key {key_id[:40]!r}")
        self._forget(key_id)
        if self._changed is not None:  # after the commit: a re-read finds it revoked
            await self._changed(admin.tenant_id)
        return KeyView.of(record)


class OperatorKeys:
    """Every tenant's API keys, as the operator manages them on the command line.

    Args:
        store: the API keys.
        signing_master: what keys' signing secrets derive from (read when a secret is asked
            for: reading it may create the data folder's key file).
    """

    def __init__(self, store: ApiKeyStore, *, signing_master: Callable[[], bytes]) -> None:
        self._store = store
        self._master = signing_master

    async def create(
        self,
        tenant_id: str,
        subject: str,
        role: str,
        name: str | None,
        groups: Sequence[str],
        *,
        with_secret: bool = False,
    ) -> KeyCreated:
        """A new key, shown this once (with its signing secret when ``with_secret``).

        Raises:
            InvalidRequest: the subject or the role cannot hold a key.
        """
        try:
            minted = await credentials.create_key(
                self._store, tenant_id, subject, KeyRole(role), name, groups
            )
        except ValueError as e:
            raise InvalidRequest(str(e), field="subject") from e
        secret = None
        if with_secret:
            secret = signing.signing_secret(self._master(), minted.record.id)
        return KeyCreated(
            **KeyView.of(minted.record).model_dump(), key=minted.key, signing_secret=secret
        )

    async def list(self, tenant_id: str | None) -> builtins.list[KeyView]:
        """The keys of one tenant, or of every tenant, oldest first (revoked ones too)."""
        return [KeyView.of(k) for k in await self._store.list(tenant_id)]

    async def revoke(self, key_id: str) -> KeyView | None:
        """Revoke any tenant's key (None: no such key). The caller then bumps the key's
        tenant's settings version (`api.compose.key_revocation`), as the API's DELETE does."""
        record = await self._store.revoke(key_id)
        return None if record is None else KeyView.of(record)
