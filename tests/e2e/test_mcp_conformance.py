"""The official MCP conformance suite against ``/mcp`` of a real ``agentbus up``.

The suite (``@modelcontextprotocol/conformance``, pinned in ``mcp_conformance/``) is
installed by ``tests.npm`` and run in its server mode. Its client sends no credentials, so
it talks to the API through a small proxy that adds the bearer key and passes everything
else as it came, the Host and Origin headers included: the server judges the suite's own
requests. A scenario that fails must be listed, with the reason, in
``mcp_conformance/baseline.json``; a listed scenario that passes fails the test too, so
the list only shrinks.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from starlette.types import Receive, Scope, Send

from tests.e2e.test_multitask_processes import ready
from tests.e2e.test_up import embedded_env, until_up
from tests.npm import NODE, installed, node_env
from tests.processes import free_port, processes, spawn
from tests.support import wait_for

SUITE = Path(__file__).with_name("mcp_conformance")
#: Headers the proxy does not pass on: hop-by-hop ones (each side frames its own message)
#: and the client's Authorization (the key replaces it).
DROPPED = {b"connection", b"keep-alive", b"transfer-encoding", b"content-length", b"authorization"}
#: The folder the suite saves one scenario's checks in: server-<scenario>-<timestamp>.
RESULT_DIR = re.compile(r"server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z")


class KeyProxy:
    """An ASGI app that forwards each request to ``upstream`` with the bearer ``key``.

    Args:
        upstream: the API's base URL.
        key: the API key the suite's client cannot send itself.
    """

    def __init__(self, upstream: str, key: str) -> None:
        self.http = httpx.AsyncClient(base_url=upstream, timeout=httpx.Timeout(30, read=None))
        self._key = key

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """One request, passed on; the response streams back as it comes (SSE)."""
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in DROPPED]
        headers.append((b"authorization", f"Bearer {self._key}".encode()))
        query = scope["query_string"].decode()
        url = scope["path"] + (f"?{query}" if query else "")
        request = self.http.build_request(scope["method"], url, headers=headers, content=body)
        response = await self.http.send(request, stream=True)
        try:
            kept = [(k, v) for k, v in response.headers.raw if k.lower() not in DROPPED]
            start = {"type": "http.response.start", "status": response.status_code}
            await send(start | {"headers": kept})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


@contextlib.asynccontextmanager
async def proxy(upstream: str, key: str) -> AsyncGenerator[str]:
    """The key proxy served on a loopback port while entered; yields its base URL."""
    app = KeyProxy(upstream, key)
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="critical",  # a stream the suite left open is cut at the end: not news
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        await wait_for(lambda: asyncio.sleep(0, server.started), within=20)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 20)
        await app.http.aclose()


async def run_suite(url: str, out: Path, log: Path) -> None:
    """The suite's active server scenarios against ``url``, their checks saved in ``out``."""
    cli = installed(SUITE) / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    args = [str(cli), "server", "--url", url, "--output-dir", str(out)]
    with log.open("wb") as output:
        suite = await asyncio.create_subprocess_exec(
            str(NODE), *args, env=node_env(), stdout=output, stderr=asyncio.subprocess.STDOUT
        )
        await asyncio.wait_for(suite.wait(), 400)  # its exit code counts failures: read below


def outcomes(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Each scenario the suite ran, with the checks that did not pass (none: it passed)."""
    results: dict[str, list[dict[str, Any]]] = {}
    for checks in out.glob("*/checks.json"):
        named = RESULT_DIR.fullmatch(checks.parent.name)
        assert named, f"unexpected result folder {checks.parent.name}"
        ran = json.loads(checks.read_text())
        bad = [c for c in ran if c["status"] in ("FAILURE", "WARNING")]
        results[named["scenario"]] = bad
    return results


@pytest.mark.timeout(900)
async def test_the_mcp_endpoint_passes_the_official_conformance_suite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    baseline: dict[str, str] = json.loads((SUITE / "baseline.json").read_text())["failing"]
    await asyncio.to_thread(installed, SUITE)  # first run only: npm ci into the cache
    port = free_port()
    data, env = embedded_env(
        tmp_path, monkeypatch, AGENTBUS_LLM="scripted", AGENTBUS_API_PORT=str(port)
    )
    base = f"http://127.0.0.1:{port}"
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
        key = (data / "local-api-key").read_text().strip()
        async with proxy(base, key) as url:
            await run_suite(f"{url}/mcp", tmp_path / "results", tmp_path / "suite.log")
    results = outcomes(tmp_path / "results")

    failing = {name: bad for name, bad in results.items() if bad}
    unexpected = {
        name: [f"{c['id']}: {c.get('errorMessage', c['status'])}" for c in bad]
        for name, bad in failing.items()
        if name not in baseline
    }
    print(f"\nMCP conformance: {len(results)} scenarios, {len(results) - len(failing)} passed,")
    print(f"{len(failing)} failed ({len(failing) - len(unexpected)} in the baseline)")
    assert "dns-rebinding-protection" in results and "server-initialize" in results
    assert unexpected == {}  # each scenario's failed checks; the suite's log: suite.log
    assert sorted(set(baseline) - set(failing)) == []  # passing now, or no longer in the suite
