"""Who is calling: an API key becomes a ``Principal`` (tenant, subject, role, groups).

Checked keys are cached in the process, so a busy client does not cost one SQL read per
request. A cached key is used only while its tenant's settings version
(``bus.tenant_versions``, in Redis) is the one it was read at: every change of a key
(revoking it, erasing its user) bumps that version before the request that made it
returns, and every replica reads the key again on its next use. So, with the version kept,
a cached key does not expire with ``api_key_cache_s``: it is kept until its tenant's
version moves, at most ``VERSIONED_KEY_CACHE_S`` (a bound for a change made by a process
that does not bump the version: an earlier release, during a rolling upgrade); a burst of
requests never waits for a key's periodic re-read. Without a version, a key is trusted for
``api_key_cache_s`` (default 5 s). A request that starts a run may leave that version to be
checked where the run is published, in the same round trip (``version_pending``;
`RunStarter`). Concurrent requests share one read of a key, and a key in use is re-read
shortly before it expires (``api.app.read_through``). Unknown, malformed
and revoked keys all fail the same way, and so does a signed question (``api.signing``)
whose signature does not verify.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from api import credentials, signing
from api.app.errors import AdminOnly, Unauthorized
from api.app.read_through import ReadThrough
from bus.store import ApiKeyRecord, ApiKeyStore, KeyRole, Scope

_CACHE_LIMIT = 10_000
#: How long a checked key is kept while its tenant's settings version stays the one it was
#: read at (and ``api_key_cache_s`` is not 0, which turns the cache off).
VERSIONED_KEY_CACHE_S = 300.0
#: A key as read, and its tenant's settings version read just after.
_Checked = tuple[ApiKeyRecord, int]


@dataclass(frozen=True, slots=True)
class Principal:
    """The authenticated caller; every read and write is scoped to `scope`."""

    tenant_id: str
    subject: str
    role: KeyRole
    key_id: str
    groups: tuple[str, ...] = ()
    #: The tenant's settings version (`bus.tenant_versions`) read when the key was checked
    #: for this request (None: not read), for caches kept current by it.
    settings_version: int | None = field(default=None, compare=False)
    #: ``settings_version`` is the one the key was cached at, not yet compared with the
    #: tenant's current one: whoever acts for the caller checks it first (`verified`), or
    #: where it writes, in the same atomic step (the run starter's publish script).
    version_pending: bool = field(default=False, compare=False)

    @property
    def is_admin(self) -> bool:
        """Whether the caller may manage its tenant's keys and settings."""
        return self.role is KeyRole.ADMIN

    @property
    def scope(self) -> Scope:
        """What the caller may see: its own runs and conversations; an admin, the tenant's."""
        if self.is_admin:
            return Scope.admin(self.tenant_id, self.subject)
        return Scope.user(self.tenant_id, self.subject)

    @property
    def own_scope(self) -> Scope:
        """What the caller owns, an admin's too: its own runs, conversations and memories."""
        return Scope.user(self.tenant_id, self.subject)

    def require_admin(self) -> None:
        """Raise ``AdminOnly`` unless the caller holds an admin key."""
        if not self.is_admin:
            raise AdminOnly("this needs an admin key of your tenant")


def local_user(
    tenant_id: str,
    subject: str,
    groups: tuple[str, ...] = (),
    *,
    admin: bool = False,
    key_id: str = "",
) -> Principal:
    """Someone acting on this host without a key (the CLI's tenant and subject, or the
    operator acting as a tenant's admin); ``key_id`` names the way in, not a stored key."""
    role = KeyRole.ADMIN if admin else KeyRole.USER
    return Principal(tenant_id, subject, role, key_id, groups)


def principal_of(
    record: ApiKeyRecord, version: int | None = None, *, pending: bool = False
) -> Principal:
    """The principal of a checked key (``version``: its tenant's settings version, as read
    for this request, or as the key was cached at when ``pending``)."""
    return Principal(
        record.tenant_id, record.subject, record.role, record.id, record.groups, version, pending
    )


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not authorization:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return None
    return token.strip()


class Authenticator:
    """Turns API keys into principals, with a short in-process cache of checked keys.

    Args:
        keys: the key store.
        cache_s: how long a checked key is trusted without re-reading the store when no
            ``version`` is kept (0: not cached at all); with one,
            ``VERSIONED_KEY_CACHE_S``.
        clock: monotonic seconds (tests pass a fake).
        signing_master: the deployment's signing master key (``api.signing``); without it
            signed questions are refused.
        version: a tenant's settings version (None: cached keys are trusted for
            ``cache_s`` whatever changed).
    """

    def __init__(
        self,
        keys: ApiKeyStore,
        *,
        cache_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        signing_master: bytes | None = None,
        version: Callable[[str], Awaitable[int]] | None = None,
    ) -> None:
        self._keys = keys
        self._master = signing_master
        self._version = version
        if version is not None and cache_s > 0:
            cache_s = max(cache_s, VERSIONED_KEY_CACHE_S)
        self._cache: ReadThrough[_Checked | None] = ReadThrough(
            cache_s, clock=clock, limit=_CACHE_LIMIT
        )

    async def authenticate(self, key: str | None, *, defer_version: bool = False) -> Principal:
        """The principal of ``key``, or raise ``Unauthorized``.

        ``defer_version``: a cached key is trusted without reading its tenant's settings
        version; the principal says so (``version_pending``) and the caller checks it.
        """
        if not key:
            raise Unauthorized("no API key was sent")
        kid = credentials.key_id(key)
        if kid is None:
            raise Unauthorized("the API key is malformed")
        record, version = await self._checked(kid, defer=defer_version)
        # Key ids are not secret (they are listed and logged); only the digest comparison
        # must not leak timing, and credentials.matches is constant-time.
        if record is None or not record.active or not credentials.matches(key, record):
            raise Unauthorized("the API key is unknown or revoked")
        return principal_of(record, version, pending=defer_version and version is not None)

    async def verified(self, who: Principal) -> Principal:
        """``who`` with its tenant's settings version checked now: the key re-read when
        the version moved since it was cached, or raise ``Unauthorized``."""
        if not who.version_pending:
            return who
        record, version = await self._checked(who.key_id)
        if record is None or not record.active:
            raise Unauthorized("the API key is unknown or revoked")
        return principal_of(record, version)

    async def authenticate_signed(self, key_id: str, data: bytes, signature: str) -> Principal:
        """The principal of the key ``key_id`` if ``signature`` signs ``data`` with its
        signing secret, or raise ``Unauthorized`` (the entry's freshness is the caller's)."""
        if self._master is None:
            raise Unauthorized("this API does not accept signed questions")
        record, version = await self._checked(key_id)
        secret = signing.signing_secret(self._master, key_id)
        if record is None or not record.active or not signing.verify(secret, data, signature):
            raise Unauthorized("the key id is unknown or revoked, or the signature is wrong")
        return principal_of(record, version)

    def forget(self, key_id: str) -> None:
        """Drop a key from this process's cache (after revoking it here)."""
        self._cache.forget(key_id)

    async def _record(self, kid: str) -> ApiKeyRecord | None:
        return (await self._checked(kid))[0]

    async def _checked(
        self, kid: str, *, defer: bool = False
    ) -> tuple[ApiKeyRecord | None, int | None]:
        """The key's record and its tenant's settings version as read now (None: no
        version is kept, or no such key); ``defer``: the version it was cached at."""
        checked = await self._cache.get(kid, lambda: self._load(kid))
        if checked is None or self._version is None:
            return (None, None) if checked is None else (checked[0], None)
        record, seen = checked
        if defer or await self._version(record.tenant_id) == seen:
            return record, seen
        self._cache.forget(kid)  # the tenant changed something since: read the key again
        checked = await self._cache.get(kid, lambda: self._load(kid))
        return (None, None) if checked is None else checked

    async def _load(self, kid: str) -> tuple[_Checked | None, bool]:
        record = await self._keys.get(kid)
        if record is None or not record.active:
            return None, False  # only live keys are cached
        seen = 0 if self._version is None else await self._version(record.tenant_id)
        return (record, seen), True
