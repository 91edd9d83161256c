"""``agentbus login-url``: a fresh one-time sign-in link to the web page (as ``up`` prints)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from api.cli.common import run_async, settings

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from api.settings import ApiSettings
    from bus.store import ApiKeyStore


async def page_login_url(
    s: ApiSettings, redis: Redis, keys: ApiKeyStore, *, host: str, port: int
) -> str | None:
    """A one-time link that signs the page in with the local admin key (None: no usable key)."""
    from api import credentials
    from api.app.sessions import login_url, mint_login_token
    from api.compose.local_key import read_local_key
    from api.streams.session_store import RedisSessionStore

    key = read_local_key(s)
    kid = credentials.key_id(key) if key else None
    record = await keys.get(kid) if kid else None
    if record is None or not record.active:
        return None
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    token = await mint_login_token(RedisSessionStore(redis), record.id)
    return login_url(f"http://{shown}:{port}", token)


def page_message(url: str | None) -> str:
    """What ``up`` and ``login-url`` print."""
    from api.app.sessions import LOGIN_TTL_S

    if url is None:
        return "web page: no local key to sign in with; open the page and paste an API key"
    minutes = LOGIN_TTL_S // 60
    return f"web page (sign-in link works once, within {minutes} min):\n  {url}"


@run_async
async def login_url_cmd(
    port: Annotated[int | None, typer.Option(help="The API's port (AGENTBUS_API_PORT).")] = None,
) -> None:
    """Print a new one-time sign-in link to the web page of a running `agentbus up`."""
    from api.compose.connection import connect
    from bus.store import open_store

    s = settings()
    async with open_store(s.bus) as stores, connect(s.bus) as conn:
        url = await page_login_url(
            s.api, conn.redis, stores.keys, host=s.api.api_host, port=port or s.api.api_port
        )
    typer.echo(page_message(url))
    if url is None:
        raise typer.Exit(1)
