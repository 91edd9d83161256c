"""The real system a browser drives: every role, the API and a TCP proxy in this process.

``agentbus bench page`` and the browser tests (``tests/e2e/web``) run it. The browser
(Debian's chromium, driven by Playwright) talks to the API through :class:`CutProxy`, a
plain TCP relay a test can cut to drop every open connection (the page must then reconnect
on its own). The model is the caller's (a scripted one).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from redis.asyncio import Redis

from agents.llm.ports import LLM
from api import credentials
from api.app.sessions import mint_login_token
from api.compose.edge import run_edge
from api.compose.roles import UP_ROLES, Roles
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from api.streams.session_store import RedisSessionStore
from bus import keys
from bus.runtime.runner import Runner
from bus.store import KeyRole, Stores, open_store
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.stack import open_retrieval

CHROMIUM = os.environ.get("AGENTBUS_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ROLES = tuple(r for r in UP_ROLES if r != keys.Role.NOOP)


class CutProxy:
    """A TCP relay in front of the API; :meth:`cut` drops every connection it carries."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.cuts = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(OSError, RuntimeError):
                dst.close()

        await asyncio.gather(pump(reader, up_writer), pump(up_reader, writer))
        self._writers -= {writer, up_writer}

    def cut(self) -> None:
        """Drop every open connection (both sides), as a network failure would."""
        self.cuts += 1
        for w in list(self._writers):
            transport = w.transport
            with contextlib.suppress(Exception):
                transport.abort()
        self._writers.clear()

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()


@dataclass
class System:
    """A running system and the handles a browser test needs."""

    api_base: str
    base: str
    redis: Redis
    settings: AppSettings
    stores: Stores
    proxy: CutProxy
    http: httpx.AsyncClient

    async def key(
        self, tenant: str = "t1", subject: str = "alice", role: KeyRole = KeyRole.USER
    ) -> str:
        """A new API key."""
        return (await credentials.create_key(self.stores.keys, tenant, subject, role)).key

    async def login_url(self, key: str, conversation: str | None = None) -> str:
        """A one-time sign-in link for ``key`` (what `agentbus up` prints for its key)."""
        kid = credentials.key_id(key)
        assert kid is not None
        token = await mint_login_token(RedisSessionStore(self.redis), kid)
        opened = f"c={conversation}&" if conversation else ""
        return f"{self.base}/#{opened}login={token}"

    def auth(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    async def put_settings(self, admin_key: str, **prefs: Any) -> None:
        got = await self.http.put("/api/v1/settings", json=prefs, headers=self.auth(admin_key))
        assert got.status_code == 200, got.text


@contextlib.asynccontextmanager
async def running_system(
    redis: Redis, settings: AppSettings, llm: LLM, data: Path, proxy: CutProxy | None = None
) -> AsyncGenerator[System, None]:
    """Every role, the API (port 0) and the proxy, until the block ends.

    Pass the ``proxy`` of an earlier system to keep the page's origin across a restart.
    """
    async with (
        open_store(settings.bus, migrate=True) as stores,
        open_retrieval(
            settings.retrieval, embedder=HashingEmbedder(), path=data / "qdrant"
        ) as retrieval,
    ):
        roles = Roles(settings, stores, llm=llm, retrieval=retrieval)
        workers = build_workers(ROLES, redis, settings.bus, roles, concurrency=4)
        for w in workers:
            await w.ensure_groups()
        runner = Runner(workers, redis)
        runner_task = asyncio.create_task(runner.run())
        stop = asyncio.Event()
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        edge = asyncio.create_task(
            run_edge(
                settings, redis, stores, stop, host="127.0.0.1", port=0, on_started=port.set_result
            )
        )
        bound = await asyncio.wait_for(port, 20)
        if proxy is None:
            proxy = CutProxy(bound)
            await proxy.start()
        else:
            proxy.cut()
            proxy.target_port = bound
        api_base = f"http://127.0.0.1:{bound}"
        http = httpx.AsyncClient(base_url=api_base, timeout=20)
        system = System(
            api_base, f"http://127.0.0.1:{proxy.port}", redis, settings, stores, proxy, http
        )
        try:
            yield system
        finally:
            await http.aclose()
            proxy.cut()  # the caller stops it (it may carry on to a restarted system)
            stop.set()
            await asyncio.wait_for(edge, 20)
            runner.stop()
            await asyncio.wait_for(runner_task, 20)
