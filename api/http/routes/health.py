"""Probes and documents: ``/healthz``, ``/readyz``, ``/metrics``, ``/asyncapi``."""

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel

from api.app.readiness import Readiness as Probes
from api.http.routes.common import use_case

router = APIRouter(tags=["operations"])


class Readiness(BaseModel):
    """Whether Redis and the state store answer, and what failed when one does not."""

    status: str
    checks: dict[str, str]


_READINESS: dict[int | str, dict[str, Any]] = {
    200: {"model": Readiness, "description": "Ready."},
    503: {"model": Readiness, "description": "Not ready: the failed checks say why."},
}

_Probes = Annotated[Probes, Depends(use_case(lambda deps: deps.readiness))]


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """Liveness: the process serves requests."""
    return {"status": "ok"}


@router.get("/readyz", responses=_READINESS)
async def readyz(probes: _Probes) -> JSONResponse:
    """Readiness: Redis and the state store answer (503 naming what does not)."""
    checks = await probes.check()
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
