"""``/mcp``'s Host and Origin guard: loopback by default, then what the settings name."""

from __future__ import annotations

import pytest
from starlette.types import Scope

from api.app.errors import ApiError
from api.http.error_kinds import status_of
from api.http.routes.mcp import HostAndOrigin
from api.settings import ApiSettings


async def status(settings: ApiSettings, host: str, origin: str | None = None) -> int:
    """What the guard answers a request with these headers (200: let through)."""
    headers = [(b"host", host.encode())] + ([(b"origin", origin.encode())] if origin else [])
    scope: Scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers}
    try:
        await HostAndOrigin(settings).check(scope)
    except ApiError as e:
        return status_of(e)
    return 200


@pytest.mark.parametrize(
    ("host", "origin", "expected"),
    [
        ("127.0.0.1:8080", None, 200),
        ("localhost", "http://localhost:6274", 200),
        ("[::1]:18400", "https://[::1]:18400", 200),
        ("LOCALHOST:8080", None, 421),  # as sent: clients send the name in lower case
        ("evil.example.com", "http://evil.example.com", 403),
        ("evil.example.com", None, 421),
        ("127.0.0.1:8080", "http://evil.example.com", 403),
    ],
)
async def test_loopback_on_any_port_is_the_default(
    host: str, origin: str | None, expected: int
) -> None:
    assert await status(ApiSettings(), host, origin) == expected


async def test_a_named_port_allows_that_port_and_origins_extend_the_hosts_own() -> None:
    settings = ApiSettings(
        mcp_allowed_hosts="MCP.example.org:8443, localhost",
        api_allowed_origins="https://chat.example.org/, *",
    )

    assert await status(settings, "mcp.example.org:8443", "https://mcp.example.org:8443") == 200
    assert await status(settings, "mcp.example.org:9443") == 421
    assert await status(settings, "mcp.example.org") == 421
    assert await status(settings, "localhost:1", "https://chat.example.org") == 200
    assert await status(settings, "localhost:1", "https://other.example.org") == 403  # not '*'
