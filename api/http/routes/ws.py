"""``/api/v1/ws``: the websocket edge (protocol in ``api.http.ws_protocol``)."""

from fastapi import APIRouter, WebSocket

from api.http.ws_session import WsSession

router = APIRouter(tags=["websocket"])


@router.websocket("/api/v1/ws")
async def websocket_edge(websocket: WebSocket) -> None:
    """Ask, join (replay from a last event id), cancel and ping over one connection."""
    await WsSession(websocket, websocket.app.state.deps).serve()
