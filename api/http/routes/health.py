"""Probes and documents: ``/healthz``, ``/readyz``, ``/metrics``, ``/asyncapi``."""

import asyncio
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from api.http.routes.common import Deps
from bus.store import Scope

router = APIRouter(tags=["operations"])


class Readiness(BaseModel):
    """Whether Redis and the state store answer, and what failed when one does not."""

    status: str
    checks: dict[str, str]


_READINESS: dict[int | str, dict[str, Any]] = {
    200: {"model": Readiness, "description": "Ready."},
    503: {"model": Readiness, "description": "Not ready: the failed checks say why."},
}

READY_TIMEOUT_S = 2.0


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness: the process serves requests."""
    return {"status": "ok"}


@router.get("/readyz", responses=_READINESS)
async def readyz(deps: Deps) -> JSONResponse:
    """Readiness: Redis and the state store answer (503 naming what does not)."""
    checks: dict[str, str] = {}
    probes: dict[str, Any] = {
        "redis": deps.broker_ping(),
        # Any tenant-scoped read touches the database; this id cannot exist.
        "store": deps.runs.get(Scope.user("-", "-"), "-"),
    }
    # At once, so the answer comes within READY_TIMEOUT_S (the probes' timeout is longer).
    results = await asyncio.gather(
        *(asyncio.wait_for(p, READY_TIMEOUT_S) for p in probes.values()), return_exceptions=True
    )
    for name, result in zip(probes, results, strict=True):
        if isinstance(result, BaseException):  # any failure means not ready; say which and why
            checks[name] = f"failed: {type(result).__name__}: {str(result)[:200]}"
        else:
            checks[name] = "ok"
    ready = all(v == "ok" for v in checks.values())
    return JSONResponse(
        {"status": "ready" if ready else "not_ready", "checks": checks},
        status_code=200 if ready else 503,
    )


@router.get("/metrics", include_in_schema=False)
async def prometheus_metrics() -> Response:
    """Prometheus metrics of this process."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


@router.get("/asyncapi", summary="AsyncAPI 3.0 document of the bus channels")
async def asyncapi(request: Request) -> JSONResponse:
    """The Redis Streams channels (questions, role streams, run events, replies)."""
    return JSONResponse(request.app.state.asyncapi)
