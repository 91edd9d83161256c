"""``agentbus mcp``: the MCP tools over stdio, for an assistant or IDE that starts a command.

The stdio server is a thin relay to a running API's ``/mcp`` endpoint (``agentbus up`` or
``agentbus api``), with the API key as its bearer token: each JSON-RPC message the assistant
writes is POSTed there as it is, and what the API answers (a tool call's progress
notifications, then its result, as server-sent events) is written back line by line as it
arrives. So there is one implementation of the tools and one way a caller is authenticated
(the API's keys, rate limits, quotas, budgets and audit), whichever transport the assistant
speaks; the command itself holds no state and opens no store. It speaks MCP's
``initialize`` handshake (the API's endpoint is stateless: no session to keep), and imports
no MCP library: it starts in a fraction of the time the SDK takes to import.

At start it checks the endpoint with an ``initialize`` of its own, so a wrong address or key
is one line on stderr and exit status 1, before the assistant sends anything.

The API's address is ``--api-url`` or ``AGENTBUS_API_URL`` (default: the local API,
``http://AGENTBUS_API_HOST:AGENTBUS_API_PORT``); the key is ``AGENTBUS_API_KEY``, or else the
local admin key ``agentbus up`` saved (``<data dir>/local-api-key``). Stdout carries the
protocol only.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated, cast

import typer

if TYPE_CHECKING:
    from api.settings import ApiSettings


def mcp_cmd(
    api_url: Annotated[
        str | None,
        typer.Option(help="The API to relay to (AGENTBUS_API_URL; default: the local API)."),
    ] = None,
) -> None:
    """Serve agentbus's MCP tools (ask, resume, search_docs) over stdio, through a running API.

    For assistants and IDEs that start an MCP server as a command. The key is
    ``AGENTBUS_API_KEY`` (or the local key ``agentbus up`` saved); the API's own
    streamable-HTTP endpoint is ``/mcp``.
    """
    from api.settings import ApiSettings

    api = ApiSettings()
    url = (api_url or api.api_url or f"http://{api.api_host}:{api.api_port}").rstrip("/")
    key = _key(api)
    if not key:
        raise typer.BadParameter(
            "no API key: set AGENTBUS_API_KEY, or start `agentbus up` once (it saves a local key)"
        )
    import asyncio  # here, not at the top: a tenth of the time to print a help

    from api.cli.mcp_relay import relay

    try:
        asyncio.run(relay(f"{url}/mcp", key))
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # the API is down or refused the key: one line, not a traceback
        typer.echo(f"error: the MCP endpoint {url}/mcp failed: {_cause(e)}", err=True)
        sys.exit(1)


def _cause(error: BaseException) -> str:
    """The innermost error of a (task-group) exception, as one line."""
    while isinstance(error, BaseExceptionGroup):
        error = cast("BaseExceptionGroup[BaseException]", error).exceptions[0]  # never empty
    return f"{type(error).__name__}: {error}"


def _key(api: ApiSettings) -> str | None:
    if api.api_key is not None:
        return api.api_key.get_secret_value()
    from api.compose.local_key import read_local_key

    return read_local_key(api)
