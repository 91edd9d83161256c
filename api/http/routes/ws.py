"""``/api/v1/ws``: the websocket edge (protocol in ``api.http.ws_protocol``)."""

from fastapi import APIRouter, WebSocket

from api.http.routes.common import deps_of
from api.http.ws_session import WsSession

router = APIRouter(tags=["websocket"])


@router.websocket("/api/v1/ws")
async def websocket_edge(websocket: WebSocket) -> None:
    """Ask, join (replay from a last event id), cancel and ping over one connection."""
    deps = deps_of(websocket)
    session = WsSession(
        websocket,
        settings=deps.settings,
        auth=deps.auth,
        starter=deps.starter,
        access=deps.access,
        joins=deps.joins,
        gates=deps.gates,
        cancel=deps.cancel,
        events=deps.relay,
    )
    await session.serve()
