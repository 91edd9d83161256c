"""``agentbus login-url``: a fresh one-time sign-in link to the web page (as ``up`` prints)."""

from __future__ import annotations

from typing import Annotated

import typer

from api.cli.common import run_async, settings


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
    from api.compose.commands import page_login_url

    s = settings()
    url = await page_login_url(s, port or s.api.api_port)
    typer.echo(page_message(url))
    if url is None:
        raise typer.Exit(1)
