"""Web page sign-in: one-time login tokens and short-lived sessions, both kept in the
session store (`api.app.ports.SessionStore`; Redis in production).

``agentbus up`` prints ``http://host:port/#login=TOKEN``; the page POSTs the token to
``/api/v1/sessions`` and gets a session token in exchange (a pasted API key is exchanged
the same way), so the page never keeps a long-lived key or a key in a URL. A login token
works once (taken as it is read) within ``LOGIN_TTL_S``. A session acts for the API key it came
from: revoking the key ends its sessions (within the key cache time), a session idle for
``SESSION_IDLE_S`` expires, and none outlives ``SESSION_MAX_S``. The store keeps only
digests of both tokens.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.app.auth import Authenticator, Principal, principal_of
from api.app.errors import Unauthorized

if TYPE_CHECKING:
    from api.app.ports import SessionStore
    from bus.store import ApiKeyStore

SESSION_PREFIX = "abs_"
LOGIN_TTL_S = 3600
SESSION_IDLE_S = 3600
SESSION_MAX_S = 12 * 3600


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def mint_login_token(store: SessionStore, key_id: str, ttl_s: int = LOGIN_TTL_S) -> str:
    """A one-time token that signs the page in as the key ``key_id``."""
    token = secrets.token_urlsafe(32)
    await store.put_login(_digest(token), key_id, ttl_s)
    return token


async def redeem_login_token(store: SessionStore, token: str) -> str | None:
    """The key id a login token signs in as, or None; the token is used up either way."""
    if not token or len(token) > 128:
        return None
    return await store.take_login(_digest(token))


@dataclass(frozen=True, slots=True)
class Session:
    """A new session: ``token`` goes to the page once; the store keeps only its digest."""

    token: str
    expires_in: int


async def open_session(
    store: SessionStore, principal: Principal, *, now: float | None = None
) -> Session:
    """Start a session acting for the principal's API key."""
    token = SESSION_PREFIX + secrets.token_urlsafe(32)
    doc = {"key_id": principal.key_id, "started": time.time() if now is None else now}
    await store.put_session(_digest(token), json.dumps(doc), SESSION_IDLE_S)
    return Session(token, SESSION_IDLE_S)


async def close_session(store: SessionStore, token: str) -> None:
    """End a session (sign out)."""
    await store.drop_session(_digest(token))


def is_session_token(token: str | None) -> bool:
    """Whether ``token`` is a session token (not an API key)."""
    return bool(token) and token.startswith(SESSION_PREFIX)  # type: ignore[union-attr]


class SessionAuthenticator(Authenticator):
    """Authenticates API keys (as ``Authenticator``) and the web page's session tokens.

    Args:
        keys: the key store.
        sessions: where sessions live.
        cache_s: how long a checked key is trusted without re-reading the store.
        clock: wall-clock seconds for the sessions' age (tests pass a fake).
        signing_master: the deployment's signing master key (``api.signing``).
        version: a tenant's settings version (`Authenticator`).
    """

    def __init__(
        self,
        keys: ApiKeyStore,
        sessions: SessionStore,
        *,
        cache_s: float = 5.0,
        clock: Callable[[], float] = time.time,
        signing_master: bytes | None = None,
        version: Callable[[str], Awaitable[int]] | None = None,
    ) -> None:
        super().__init__(keys, cache_s=cache_s, signing_master=signing_master, version=version)
        self._sessions = sessions
        self._clock = clock

    async def authenticate(self, key: str | None, *, defer_version: bool = False) -> Principal:
        """The principal of an API key or of a live session (whose key's tenant version is
        always checked here), or raise ``Unauthorized``."""
        if not is_session_token(key):
            return await super().authenticate(key, defer_version=defer_version)
        assert key is not None
        digest = _digest(key)
        raw, ttl = await self._sessions.read_session(digest)
        if raw is None:
            raise Unauthorized("the session expired or was ended", hint="sign in again")
        doc = json.loads(raw)
        age = self._clock() - float(doc["started"])
        if age > SESSION_MAX_S:
            await self._sessions.drop_session(digest)
            raise Unauthorized("the session is too old", hint="sign in again")
        # Sliding expiry, refreshed at most every half idle period (not a write per request).
        if 0 <= ttl < SESSION_IDLE_S // 2:
            await self._sessions.touch_session(digest, SESSION_IDLE_S)
        record, version = await self._checked(doc["key_id"])  # pyright: ignore[reportPrivateUsage]
        if record is None or not record.active:
            await self._sessions.drop_session(digest)
            raise Unauthorized("the API key behind this session was revoked")
        return principal_of(record, version)


async def principal_of_key_id(auth: Authenticator, key_id: str) -> Principal:
    """The principal of a stored, active key id (a redeemed login token names one)."""
    record = await auth._record(key_id)  # pyright: ignore[reportPrivateUsage]
    if record is None or not record.active:
        raise Unauthorized("the login link's API key is unknown or revoked")
    return Principal(record.tenant_id, record.subject, record.role, record.id, record.groups)


def login_url(base: str, token: str) -> str:
    """The page's address with a login token in the fragment (never sent to a server)."""
    return f"{base.rstrip('/')}/#login={token}"
