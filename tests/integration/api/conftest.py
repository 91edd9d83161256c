"""A real API server (uvicorn on a free port) with every single-mode role in this process.

The server, the relay, the admission consumer and the workers share one event loop and
the test Redis; clients talk to the server over real sockets (httpx, websockets).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
import pytest
from redis.asyncio import Redis
from websockets.asyncio.client import ClientConnection, connect

from agents.llm.ports import LLM
from agents.llm.scripted import ScriptedLLM
from api import credentials
from api.compose.edge import run_edge
from api.compose.roles import UP_ROLES, Roles
from api.compose.settings import AppSettings
from api.compose.workers import build_workers
from bus import keys
from bus.runtime.runner import Runner
from bus.store import KeyRole, Stores, open_store
from tests.sqlite_template import seed_sqlite

ROLES = tuple(r for r in UP_ROLES if r != keys.Role.NOOP)


@dataclass
class Api:
    """A running API and what tests need to talk to it."""

    base: str
    redis: Redis
    settings: AppSettings
    stores: Stores
    http: httpx.AsyncClient
    sockets: list[ClientConnection] = field(default_factory=list)

    @property
    def ws_url(self) -> str:
        return self.base.replace("http://", "ws://") + "/api/v1/ws"

    async def key(
        self,
        tenant: str = "t1",
        subject: str = "alice",
        role: KeyRole = KeyRole.USER,
        groups: tuple[str, ...] = (),
    ) -> str:
        """A new API key."""
        minted = await credentials.create_key(
            self.stores.keys, tenant, subject, role, groups=groups
        )
        return minted.key

    def auth(self, key: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {key}"}

    async def ws(self, key: str | None, **options: Any) -> ClientConnection:
        """An open websocket (closed at the end of the test); with a key, `ready` is read."""
        headers = self.auth(key) if key else {}
        conn = await connect(self.ws_url, additional_headers=headers, **options)
        self.sockets.append(conn)
        if key:
            assert (await recv(conn))["type"] == "ready"
        return conn


async def recv(conn: ClientConnection, within: float = 10) -> dict[str, Any]:
    """The next frame, decoded."""
    return json.loads(await asyncio.wait_for(conn.recv(), within))


async def until_done(conn: ClientConnection, within: float = 20) -> list[dict[str, Any]]:
    """Frames up to and including the next `done` event."""
    frames = []
    async with asyncio.timeout(within):
        while True:
            frame = await recv(conn, within)
            frames.append(frame)
            if frame["type"] == "done":
                return frames


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def store_backend(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Settings overrides for each state store: SQLite, and Postgres as a role RLS binds."""
    if request.param == "sqlite":
        return {}
    return {"database_url": request.getfixturevalue("postgres_migrated_url")}


class StartApi(Protocol):
    """The ``start_api`` fixture: call it to start an API server (see the fixture)."""

    def __call__(
        self, llm: LLM | None = None, *, retrieval: Any = None, **overrides: Any
    ) -> Awaitable[Api]: ...


@pytest.fixture
async def start_api(
    real_redis: Redis, make_settings: Callable[..., AppSettings]
) -> AsyncIterator[StartApi]:
    """Call with a model (default: the scripted benchmark turn), optionally retrieval for
    the workers, and setting overrides."""
    cleanups: list[Callable[[], Any]] = []

    async def start(llm: LLM | None = None, *, retrieval: Any = None, **overrides: Any) -> Api:
        s = make_settings(**overrides)
        await seed_sqlite(s.bus.resolved_database_url())  # migrated once, copied
        store_ctx = open_store(s.bus, migrate=True)
        stores = await store_ctx.__aenter__()
        roles = Roles(s, stores, llm=llm or ScriptedLLM(), retrieval=retrieval)
        workers = build_workers(ROLES, real_redis, s.bus, roles, concurrency=4)
        for w in workers:
            await w.ensure_groups()
        runner = Runner(workers, real_redis)
        runner_task = asyncio.create_task(runner.run())
        stop = asyncio.Event()
        port: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        edge = asyncio.create_task(
            run_edge(
                s, real_redis, stores, stop, host="127.0.0.1", port=0, on_started=port.set_result
            )
        )
        bound = await asyncio.wait_for(port, 20)
        base = f"http://127.0.0.1:{bound}"
        api = Api(base, real_redis, s, stores, httpx.AsyncClient(base_url=base, timeout=20))

        async def cleanup() -> None:
            for conn in api.sockets:
                await conn.close()
            await api.http.aclose()
            stop.set()
            await asyncio.wait_for(edge, 20)
            runner.stop()
            await asyncio.wait_for(runner_task, 20)
            await store_ctx.__aexit__(None, None, None)

        cleanups.append(cleanup)
        return api

    yield start
    for cleanup in reversed(cleanups):
        await cleanup()
