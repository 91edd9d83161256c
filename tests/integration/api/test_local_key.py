"""The embedded mode's local key: minted once, saved 0600, respected when revoked."""

from __future__ import annotations

import stat
from collections.abc import Callable

from api import credentials
from api.app.auth import Authenticator
from api.compose.local_key import ensure_local_key, local_key_path, read_local_key
from api.compose.settings import AppSettings
from bus.store import open_store


async def test_the_local_key_is_created_once_and_kept_private(
    make_settings: Callable[..., AppSettings],
) -> None:
    settings = make_settings()
    s = settings.api
    async with open_store(settings.bus, migrate=True) as stores:
        key = await ensure_local_key(s, stores.keys)
        again = await ensure_local_key(s, stores.keys)
        who = await Authenticator(stores.keys).authenticate(read_local_key(s))
        mode = stat.S_IMODE(local_key_path(s).stat().st_mode)

        assert key is not None and again is None and read_local_key(s) == key
        assert mode == 0o600
        assert (who.tenant_id, who.subject, who.is_admin) == (s.tenant, s.subject, True)

        kid = credentials.key_id(key)
        assert kid is not None
        await stores.keys.revoke(kid)
        assert await ensure_local_key(s, stores.keys) is None  # a revocation is respected


async def test_a_key_the_store_does_not_know_is_minted_again(
    make_settings: Callable[..., AppSettings],
) -> None:
    settings = make_settings()
    s = settings.api
    local_key_path(s).parent.mkdir(parents=True, exist_ok=True)
    local_key_path(s).write_text("abk_0123456789ab_from-an-old-database\n")
    async with open_store(settings.bus, migrate=True) as stores:
        key = await ensure_local_key(s, stores.keys)
    assert key is not None and read_local_key(s) == key
