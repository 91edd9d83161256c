"""``/api/v1/keys``: an admin manages its own tenant's API keys (``api.app.keys``)."""

from typing import Annotated

from fastapi import APIRouter, Depends, status

from api.app.errors import KeyNotFound, UserErased
from api.app.keys import KeyBook, KeyCreate, KeyCreated, KeyList, KeyView
from api.http.responses import ADMIN, errors
from api.http.routes.common import Admin, use_case

router = APIRouter(prefix="/api/v1/keys", tags=["keys"])

_Keys = Annotated[KeyBook, Depends(use_case(lambda deps: deps.keys))]


@router.get("", response_model=KeyList, responses=errors(*ADMIN))
async def list_keys(keys: _Keys, admin: Admin) -> KeyList:
    """The admin's tenant's keys (revoked ones included)."""
    return await keys.list(admin)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=KeyCreated,
    responses=errors(*ADMIN, UserErased),
)
async def create_key(body: KeyCreate, keys: _Keys, admin: Admin) -> KeyCreated:
    """Create a key in the admin's tenant; store the returned ``key``, it is shown once.
    409 ``user_erased`` for a user erased lately (their steps would commit nothing)."""
    return await keys.create(admin, body)


@router.delete("/{key_id}", response_model=KeyView, responses=errors(*ADMIN, KeyNotFound))
async def revoke_key(key_id: str, keys: _Keys, admin: Admin) -> KeyView:
    """Revoke a key of the admin's tenant (every replica stops accepting it within seconds)."""
    return await keys.revoke(admin, key_id)
