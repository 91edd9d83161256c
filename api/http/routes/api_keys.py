"""``/api/v1/keys``: an admin manages its own tenant's API keys."""

from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, status
from pydantic import BaseModel, ConfigDict, Field

from agentbus_contracts.ids import NAME_PATTERN
from api import credentials, signing
from api.app.errors import InvalidRequest, KeyNotFound, UserErased
from api.app.ports import ErasedLately
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, Auth, Keys, use_case
from bus.store import ApiKeyRecord, KeyRole

router = APIRouter(prefix="/api/v1/keys", tags=["keys"])

#: Whether the erasure fence holds a user (None: nothing is fenced in this process).
_ErasedLately = Annotated[ErasedLately | None, Depends(use_case(lambda deps: deps.erased_lately))]
#: What keys' signing secrets derive from (None: keys get no signing secret).
_Master = Annotated[bytes | None, Depends(use_case(lambda deps: deps.signing_master))]


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
    def of(cls, record: ApiKeyRecord) -> "KeyView":
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


@router.get("", response_model=KeyList, responses=errors(*ADMIN))
async def list_keys(keys: Keys, admin: Admin) -> KeyList:
    """The admin's tenant's keys (revoked ones included)."""
    return KeyList(keys=[KeyView.of(k) for k in await keys.list(admin.tenant_id)])


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyCreated,
    responses=errors(*ADMIN, UserErased),
)
async def create_key(
    body: KeyCreate, keys: Keys, erased: _ErasedLately, master: _Master, admin: Admin
) -> KeyCreated:
    """Create a key in the admin's tenant; store the returned ``key``, it is shown once.
    409 ``user_erased`` for a user erased lately (their steps would commit nothing)."""
    if erased is not None and await erased(admin.tenant_id, body.subject):
        raise UserErased(f"the user {body.subject[:80]!r} of this tenant was erased lately")
    try:
        minted = await credentials.create_key(
            keys, admin.tenant_id, body.subject, body.role, body.name, body.groups
        )
    except ValueError as e:
        raise InvalidRequest(str(e), field="subject") from e
    secret = None
    if master is not None:
        secret = signing.signing_secret(master, minted.record.id)
    return KeyCreated(
        **KeyView.of(minted.record).model_dump(), key=minted.key, signing_secret=secret
    )


@router.delete("/{key_id}", response_model=KeyView, responses=errors(*ADMIN, KeyNotFound))
async def revoke_key(key_id: str, keys: Keys, auth: Auth, admin: Admin) -> KeyView:
    """Revoke a key of the admin's tenant (every replica stops accepting it within seconds)."""
    record = await keys.revoke(key_id, admin.tenant_id)
    if record is None:
        raise KeyNotFound(f"no key {key_id[:40]!r}")
    auth.forget(key_id)
    return KeyView.of(record)
