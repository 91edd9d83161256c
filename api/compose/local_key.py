"""The embedded mode's local API key: created on first start, printed once, kept in a file.

The key is an admin key of ``ApiSettings.tenant`` for ``ApiSettings.subject`` (the same identity
the CLI uses), saved to ``<data_dir>/local-api-key`` with mode 0600 so local tools can
read it and nobody else can.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from api import credentials
from bus.store import KeyRole

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from api.settings import ApiSettings
    from bus.store import ApiKeyStore

LOCAL_KEY_FILE = "local-api-key"


def local_key_path(settings: ApiSettings) -> Path:
    """Where the local key is kept."""
    return settings.data_dir / LOCAL_KEY_FILE


def read_local_key(settings: ApiSettings) -> str | None:
    """The saved local key, if there is one."""
    try:
        return local_key_path(settings).read_text().strip() or None
    except FileNotFoundError:
        return None


async def ensure_local_key(settings: ApiSettings, keys: ApiKeyStore) -> str | None:
    """Create the local admin key unless one exists; returns a new key (print it once).

    Returns None when the saved key is still known to the store, including when it was
    revoked on purpose (a revocation is respected, not undone). A saved key the store
    does not know (the database was replaced) is minted again.
    """
    saved = read_local_key(settings)
    if saved is not None:
        kid = credentials.key_id(saved)
        if kid is not None and await keys.get(kid) is not None:
            return None
    minted = await credentials.create_key(
        keys, settings.tenant, settings.subject, KeyRole.ADMIN, name="local"
    )
    _write_private(local_key_path(settings), minted.key + "\n")
    return minted.key


def local_key_message(key: str, settings: ApiSettings) -> str:
    """What to print for a new local key."""
    return (
        f"API key (admin of tenant {settings.tenant!r}; shown once, saved to "
        f"{local_key_path(settings)}):\n  {key}"
    )


async def page_login_url(
    s: ApiSettings, redis: Redis, keys: ApiKeyStore, *, host: str, port: int
) -> str | None:
    """A one-time link that signs the page in with the local admin key (None: no usable key)."""
    from api.app.sessions import login_url, mint_login_token
    from api.streams.session_store import RedisSessionStore

    key = read_local_key(s)
    kid = credentials.key_id(key) if key else None
    record = await keys.get(kid) if kid else None
    if record is None or not record.active:
        return None
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    token = await mint_login_token(RedisSessionStore(redis), record.id)
    return login_url(f"http://{shown}:{port}", token)


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.unlink(missing_ok=True)
    # Created 0600 from the start, then renamed: the key is never readable by others.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.replace(tmp, path)
