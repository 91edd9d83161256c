"""Service tokens: who is asking, signed by agentbus, for a private service a tool calls.

A tool the operator allowed to reach a private service (``AGENTBUS_TOOL_PRIVATE_HOSTS``)
sends, with every request to that service, the header ``X-Agentbus-Identity`` holding a
compact JWS (a JWT) signed with Ed25519 (``alg: EdDSA``):

* header: ``{"alg": "EdDSA", "typ": "agentbus-caller+jwt", "kid": KID}``;
* claims: ``iss`` ``agentbus``, ``aud`` the service's host (as the tool named it),
  ``sub`` the user, ``tenant``, ``groups`` (sorted), ``run``, ``tool``, ``call`` (the
  gateway step and call id: the same on a redelivery), ``iat``, ``exp`` (``iat`` + 60 s)
  and ``jti`` (random, 32 hex digits: a service that must refuse replays remembers them
  until ``exp``).

A service checks it with ``verify(token, jwks, audience="its.host")``, or with any JWT
library that knows EdDSA, against the public keys at ``GET
/.well-known/agentbus-service-keys`` (a JWKS). The private key is derived from the
deployment's signing key (``AGENTBUS_SIGNING_KEY``, see ``api.signing``), so every process
of a deployment signs with the same key.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bus.json_values import is_array, is_object
from gateway.errors import GatewayError
from gateway.ports import Caller

#: The request header that carries the token.
TOKEN_HEADER = "X-Agentbus-Identity"
TOKEN_TYPE = "agentbus-caller+jwt"
ISSUER = "agentbus"
LIFETIME_S = 60
_LABEL = b"agentbus/service-token/v1"


class ServiceTokenInvalid(GatewayError):
    """A service token that does not verify: malformed, forged, expired or for another host."""

    code = "service_token_invalid"
    hint = "refuse the request; a valid token comes only from the agentbus gateway"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except ValueError as e:
        raise ServiceTokenInvalid("the token is not base64url") from e


def key_id(public: Ed25519PublicKey) -> str:
    """A public key's id: the first 16 hex digits of the SHA-256 of its raw bytes."""
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:16]


class ServiceTokens:
    """Mints service tokens with the deployment's Ed25519 key.

    Args:
        master: the deployment's signing key (``api.signing.master_key``); the Ed25519 key
            is ``HMAC-SHA256(master, "agentbus/service-token/v1")`` used as a seed.
        clock: Unix seconds (tests pass their own).
    """

    def __init__(self, master: bytes, clock: Callable[[], float] = time.time) -> None:
        seed = hmac.new(master, _LABEL, hashlib.sha256).digest()
        self._key = Ed25519PrivateKey.from_private_bytes(seed)
        self._public = self._key.public_key()
        self.kid = key_id(self._public)
        self._clock = clock

    def jwks(self) -> dict[str, Any]:
        """The public key as a JSON Web Key Set (what services verify against)."""
        raw = self._public.public_bytes(Encoding.Raw, PublicFormat.Raw)
        jwk = {"kty": "OKP", "crv": "Ed25519", "x": _b64(raw), "kid": self.kid}
        return {"keys": [{**jwk, "use": "sig", "alg": "EdDSA"}]}

    def mint(self, caller: Caller, *, tool: str, audience: str) -> str:
        """A token naming ``caller`` and ``tool``, for the service at host ``audience``."""
        now = int(self._clock())
        header = {"alg": "EdDSA", "typ": TOKEN_TYPE, "kid": self.kid}
        claims = {
            "iss": ISSUER,
            "aud": audience,
            "sub": caller.subject,
            "tenant": caller.tenant_id,
            "groups": sorted(caller.groups),
            "run": caller.run_id,
            "tool": tool,
            "call": caller.request_id,
            "iat": now,
            "exp": now + LIFETIME_S,
            "jti": secrets.token_hex(16),
        }
        signing_input = ".".join(_b64(_json(part)) for part in (header, claims))
        signature = self._key.sign(signing_input.encode())
        return f"{signing_input}.{_b64(signature)}"


def _json(doc: Mapping[str, Any]) -> bytes:
    return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()


def _public_keys(jwks: Mapping[str, Any]) -> dict[str, Ed25519PublicKey]:
    found: dict[str, Ed25519PublicKey] = {}
    keys: object = jwks.get("keys")
    for jwk in keys if is_array(keys) else []:
        if is_object(jwk) and jwk.get("kty") == "OKP" and jwk.get("crv") == "Ed25519":
            public = Ed25519PublicKey.from_public_bytes(_unb64(str(jwk.get("x", ""))))
            found[str(jwk.get("kid") or key_id(public))] = public
    return found


def _part(text: str) -> dict[str, Any]:
    try:
        doc: object = json.loads(_unb64(text))
    except ValueError as e:
        raise ServiceTokenInvalid("the token's parts are not JSON") from e
    if not is_object(doc):
        raise ServiceTokenInvalid("the token's parts are not JSON objects")
    return doc


def verify(
    token: str,
    jwks: Mapping[str, Any],
    *,
    audience: str,
    now: float | None = None,
    leeway_s: int = 5,
) -> dict[str, Any]:
    """The claims of a valid service token for ``audience`` (the service's own host).

    Args:
        token: the ``X-Agentbus-Identity`` header's value.
        jwks: the gateway's public keys (``GET /.well-known/agentbus-service-keys``).
        audience: the host this service is reached at, as tools name it.
        now: Unix seconds; the clock when None.
        leeway_s: clock difference tolerated on ``iat`` and ``exp``.

    Raises:
        ServiceTokenInvalid: malformed, signed by another key, expired, not yet valid, or
            for another audience or issuer.
    """
    parts = token.split(".")
    if len(parts) != 3:
        raise ServiceTokenInvalid("a token has three dot-separated parts")
    header, claims = _part(parts[0]), _part(parts[1])
    if header.get("alg") != "EdDSA" or header.get("typ") != TOKEN_TYPE:
        raise ServiceTokenInvalid("not an agentbus service token (alg or typ)")
    public = _public_keys(jwks).get(str(header.get("kid")))
    if public is None:
        raise ServiceTokenInvalid("the token's key id is not one of the gateway's keys")
    try:
        public.verify(_unb64(parts[2]), f"{parts[0]}.{parts[1]}".encode())
    except InvalidSignature as e:
        raise ServiceTokenInvalid("the signature does not verify") from e
    at = time.time() if now is None else now
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int) or not isinstance(iat, int):
        raise ServiceTokenInvalid("the token has no exp or iat")
    if at > exp + leeway_s:
        raise ServiceTokenInvalid("the token expired")
    if at < iat - leeway_s:
        raise ServiceTokenInvalid("the token is not valid yet")
    if claims.get("iss") != ISSUER or claims.get("aud") != audience:
        raise ServiceTokenInvalid(f"the token is not for {audience!r} (iss or aud)")
    return claims
