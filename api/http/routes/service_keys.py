"""``GET /.well-known/agentbus-service-keys``: the public keys of the service tokens.

Tools send a signed token naming tenant, user, groups, run and tool with each request to a
private service the operator allowed (``gateway.service_token``); a service verifies it
against these keys (a JSON Web Key Set). No key is needed to read them: they are public.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from api.app.errors import Unavailable
from api.http.routes.common import use_case
from gateway.service_token import ServiceTokens

router = APIRouter(tags=["operations"])

#: What keys' signing secrets derive from; None: this process was not given it.
_Master = Annotated[bytes | None, Depends(use_case(lambda deps: deps.signing_master))]


@router.get("/.well-known/agentbus-service-keys")
async def service_keys(master: _Master) -> dict[str, Any]:
    """The Ed25519 public keys service tokens are signed with, as a JWKS."""
    if master is None:
        raise Unavailable("this API process was not given the deployment's signing key")
    return ServiceTokens(master).jwks()
