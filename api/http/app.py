"""The FastAPI app: REST and websocket edge over the bus, stateless between requests.

Everything a request needs comes from the use cases the composition root built (the
``UseCases`` given to :func:`create_app`; each route takes the ones it calls); the only
per-process state is the relay (which streams this process reads for its clients)
and short caches of checked keys and tenant preferences, none of which a restart loses
anything by dropping. Any number of replicas can run behind a load balancer.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from redis.exceptions import RedisError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.app import metrics, post_stages
from api.app.errors import (
    BACKEND_FAILURES,
    ApiError,
    BodyTooLarge,
    InvalidRequest,
    NotFound,
    Unavailable,
)
from api.http.asyncapi import build_asyncapi
from api.http.error_kinds import headers_of, status_of
from api.http.mcp_uses import McpUses
from api.http.responses import CALLER, PUBLIC, errors
from api.http.routes import (
    a2a,
    activity,
    ag_ui,
    agents,
    api_keys,
    audit,
    conversations,
    documents,
    erasure,
    events,
    gates,
    health,
    mcp,
    memories,
    openai_v1,
    page,
    runs,
    schedules,
    service_keys,
    session,
    settings,
    teams,
    usage,
    webhooks,
    ws,
)
from api.http.use_cases import UseCases

log = structlog.get_logger("api")

VERSION = "0.1.0"

#: How often an API replica sweeps the conversation turns (`api.app.turn_publisher`).
SWEEP_S = 30.0


def create_app(deps: UseCases) -> FastAPI:
    """The API app; the caller serves it (``api.http.server.serve``) and owns ``deps``."""

    mcp_endpoint = mcp.McpEndpoint(McpUses.of(deps), VERSION)

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncGenerator[None]:
        # Before the first run is published: its intake may not have started yet.
        await deps.prepare_streams()
        await deps.relay.start()
        turns = deps.starter.turns
        # Every replica sweeps (at start, then now and then): turns whose publish was lost.
        sweeper = None if turns is None else asyncio.create_task(turns.sweep_forever(SWEEP_S))
        # Every replica runs the scheduler too: its claims keep each tick to one run.
        scheduler = deps.scheduler
        ticking = (
            None
            if scheduler is None
            else asyncio.create_task(scheduler.run_forever(deps.settings.schedule_poll_s))
        )
        try:
            async with mcp_endpoint.run():
                yield
        finally:
            for task in (sweeper, ticking):
                if task is not None:
                    task.cancel()
                    await asyncio.gather(task, return_exceptions=True)
            await deps.relay.stop()

    app = FastAPI(
        title="agentbus",
        version=VERSION,
        description=(
            "Ask questions answered by agents on Redis Streams. Authenticate with "
            "`Authorization: Bearer <api key>`. Live events: websocket /api/v1/ws or SSE "
            "/api/v1/runs/{run_id}/events. Bus channels: /asyncapi. MCP tools (streamable "
            "HTTP): /mcp."
        ),
        lifespan=lifespan,
        # `/api/v1/runs/` is no run (an empty id), not the list: no redirect to `/api/v1/runs`.
        redirect_slashes=False,
    )
    app.state.deps = deps
    app.state.asyncapi = build_asyncapi(deps.broker_url, VERSION)
    # Every error of the agentbus API has one body (``api.app.errors``); each route declares
    # the statuses it answers with (``api.http.responses``), the app those every route has.
    routers = (runs, gates, agents, events, ws, settings, conversations, audit, api_keys)
    for module in (
        *routers,
        session,
        documents,
        activity,
        webhooks,
        usage,
        schedules,
        erasure,
        memories,
        teams,
    ):
        app.include_router(module.router, responses=errors(*CALLER))
    for module in (health, service_keys):
        app.include_router(module.router, responses=errors(*PUBLIC))
    # The OpenAI dialect, AG-UI and A2A answer errors in their own protocol's shape.
    for module in (openai_v1, ag_ui, a2a, page):
        app.include_router(module.router)
    app.router.routes.append(mcp_endpoint.route())  # MCP: JSON-RPC errors, tool results
    _install_error_handlers(app)
    # Bodies are small JSON documents; anything far larger is refused before it is read.
    max_body = deps.settings.api_max_question_chars * 4 + 64 * 1024
    uploads = {documents.router.prefix: documents.MAX_UPLOAD_BYTES}
    app.add_middleware(_BodyLimit, max_bytes=max_body, larger=uploads)
    app.add_middleware(_Metrics)
    return app


def _error_response(error: ApiError, status: int | None = None) -> JSONResponse:
    metrics.REJECTED.labels(error.code).inc()
    return JSONResponse(
        error.body(), status_code=status or status_of(error), headers=headers_of(error)
    )


def _install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(_request: Request, exc: ApiError) -> JSONResponse:
        return _error_response(exc)

    @app.exception_handler(RequestValidationError)
    async def invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        err: dict[str, Any] = exc.errors()[0]
        # ("body", "settings", "mode") -> settings.mode; ("header", "Idempotency-Key") too.
        loc = [str(p) for p in err.get("loc", ()) if p not in ("body", "query", "path")]
        where = ".".join(p for p in loc if not p.isdigit()) or "body"
        return _error_response(InvalidRequest(f"{where}: {err.get('msg')}", field=where))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(_request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 404:
            return _error_response(NotFound("no such endpoint", hint="see /docs"))
        if exc.status_code == 400:  # FastAPI's "error parsing the body": not JSON, not UTF-8
            return _error_response(InvalidRequest(f"body: {exc.detail}", field="body"))
        error = ApiError(str(exc.detail), hint="see /docs")
        error.code = f"http_{exc.status_code}"
        return _error_response(error, exc.status_code)

    async def store_down(_request: Request, exc: Exception) -> JSONResponse:
        log.error("store failed", error=str(exc))
        return _error_response(Unavailable("the state store failed"))

    for failure in BACKEND_FAILURES:
        app.add_exception_handler(failure, store_down)

    @app.exception_handler(RedisError)
    async def redis_down(_request: Request, exc: RedisError) -> JSONResponse:
        log.error("redis failed", error=str(exc))
        return _error_response(Unavailable("Redis failed"))


def _too_large(limit: int) -> JSONResponse:
    # Made only for a body over the limit: an error made for every request cost each one.
    return _error_response(BodyTooLarge(f"the body is over {limit} bytes"))


class _BodyOverLimit(Exception):
    """Raised from ``receive`` when a body grows past the limit."""


class _BodyLimit:
    """Refuses bodies larger than any valid request (413), declared or not.

    A declared ``Content-Length`` over the limit is refused before anything is read; a body
    without one (chunked) is counted as it arrives and refused as soon as it passes the
    limit, so no request makes the API hold more than ``max_bytes`` of it.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, larger: dict[str, int] | None = None) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.larger = larger or {}  # path -> limit, for the few routes that take files

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.larger.get(scope["path"].rstrip("/"), self.max_bytes)
        length = next((v for k, v in scope["headers"] if k == b"content-length"), None)
        if length is not None and length.isdigit() and int(length) > limit:
            await _too_large(limit)(scope, receive, send)
            return
        received, over, responded = 0, False, False

        async def counted() -> Message:
            nonlocal received, over
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    over = True
                    raise _BodyOverLimit
            return message

        async def tracked(message: Message) -> None:
            # The framework may turn the failed read into its own error response (FastAPI
            # answers 400 "error parsing the body"): the 413 goes out instead.
            nonlocal responded
            if over:
                if not responded and message["type"] == "http.response.start":
                    responded = True
                    await _too_large(limit)(scope, receive, send)
                return
            responded = responded or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted, tracked)
        except _BodyOverLimit:
            if not responded:
                await _too_large(limit)(scope, receive, send)


_POST_RUNS = "/api/v1/runs"


class _Metrics:
    """Counts requests by route template (not raw path: run ids would explode the labels)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        timed = scope["method"] == "POST" and scope["path"] == _POST_RUNS

        async def observe(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                if timed and status == 202:
                    post_stages.mark("respond")
                route = scope.get("route")
                name = getattr(route, "path", "unmatched")
                metrics.REQUESTS.labels(name, scope["method"], str(status)).inc()
                metrics.REQUEST_SECONDS.labels(name).observe(time.perf_counter() - started)
            await send(message)

        if not timed:
            await self.app(scope, receive, observe)
            return
        with post_stages.timed():
            await self.app(scope, receive, observe)
