"""A run's events over the websocket, surviving dropped connections.

:class:`EventStream` joins the run (``join`` with the last event id it has), yields each
event as its ``agentbus_contracts.events`` model, and, when the connection drops (a
network cut, a proxy restart, the server cutting a slow client off with 4409), reconnects
and joins again with the last id it yielded: the server replays exactly what was missed,
so the caller sees no gap and no repeat. The stream ends after the run's ``done`` event
(or a snapshot of a run that already ended, when the missed events had been trimmed away).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from types import TracebackType
from typing import Any

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidHandshake, InvalidStatus

from agentbus_client.errors import ConnectionFailed, Unauthorized, error_from
from agentbus_contracts import Snapshot
from agentbus_contracts.events import ClientEvent, parse_event

StreamItem = ClientEvent | Snapshot
"""What a stream yields: a run event, or a snapshot when the events were trimmed away."""

CLOSE_UNAUTHORIZED = 4401
_SKIP = frozenset({"ready", "pong", "cancel_requested", "resumed", "accepted"})


def _newer(a: str, b: str) -> bool:
    am, _, aseq = a.partition("-")
    bm, _, bseq = b.partition("-")
    return (int(am), int(aseq or 0)) > (int(bm), int(bseq or 0))


class EventStream:
    """The events of one run, after ``last_event_id``, until its end.

    Use it as an async iterator (``async for event in stream``) and close it when leaving
    early (``async with`` does). ``last_event_id`` is the id of the last item yielded:
    pass it to ``join`` to continue elsewhere.

    Args:
        ws_url: the API's websocket URL.
        headers: the connection's headers (the API key).
        run_id: the run to follow.
        last_event_id: the last event already seen (``"0-0"`` for all of them).
        conversation_id: the run's conversation, when known (kept for the caller).
        max_reconnects: consecutive failed reconnects before giving up.
        backoff_s: first delay between reconnects (doubling, at most 5 s).
        on_reconnect: called with the last event id each time the stream rejoins.
    """

    def __init__(
        self,
        ws_url: str,
        headers: dict[str, str],
        run_id: str,
        *,
        last_event_id: str = "0-0",
        conversation_id: str | None = None,
        max_reconnects: int = 8,
        backoff_s: float = 0.1,
        on_reconnect: Callable[[str], None] | None = None,
    ) -> None:
        self.run_id = run_id
        self.conversation_id = conversation_id
        self.last_event_id = last_event_id
        self.reconnects = 0
        self.finished = False
        self._url, self._headers = ws_url, headers
        self._max_reconnects, self._backoff_s = max_reconnects, backoff_s
        self._on_reconnect = on_reconnect
        self._ws: ClientConnection | None = None
        self._failures = 0

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> StreamItem:
        while not self.finished:
            if self._ws is None:
                await self._connect()
            assert self._ws is not None
            try:
                raw = await self._ws.recv()
            except ConnectionClosed as e:
                await self._dropped(e)
                continue
            item = self._item(json.loads(raw))
            if item is not None:
                return item
        await self.aclose()
        raise StopAsyncIteration

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection (the run goes on; ``join`` it again any time)."""
        ws, self._ws = self._ws, None
        if ws is not None:
            await ws.close()

    async def _connect(self) -> None:
        while True:
            try:
                ws = await connect(
                    self._url, additional_headers=self._headers, max_size=2**24, open_timeout=10
                )
            except InvalidStatus as e:
                if e.response.status_code in (401, 403):
                    raise Unauthorized(
                        "the websocket refused the API key", code="unauthorized"
                    ) from e
                await self._backoff(e)
                continue
            except (OSError, InvalidHandshake, TimeoutError) as e:
                await self._backoff(e)
                continue
            join = {"type": "join", "run_id": self.run_id, "last_event_id": self.last_event_id}
            try:
                await ws.send(json.dumps(join))
            except ConnectionClosed as e:
                await self._backoff(e)
                continue
            self._ws = ws
            return

    async def _dropped(self, e: ConnectionClosed) -> None:
        self._ws = None
        code = e.rcvd.code if e.rcvd is not None else None
        if code == CLOSE_UNAUTHORIZED:
            raise Unauthorized("the API closed the connection: unauthorized", code="unauthorized")
        self.reconnects += 1
        if self._on_reconnect is not None:
            self._on_reconnect(self.last_event_id)
        await self._backoff(e, first=True)

    async def _backoff(self, cause: BaseException, *, first: bool = False) -> None:
        if not first:
            self._failures += 1
        if self._failures > self._max_reconnects:
            raise ConnectionFailed(
                f"lost the connection to the run's events ({type(cause).__name__}) and could "
                f"not reconnect after {self._max_reconnects} attempts",
                code="connection_failed",
                hint=f"join run {self.run_id} after {self.last_event_id} once the API is back",
            ) from cause
        await asyncio.sleep(min(self._backoff_s * 2**self._failures, 5.0))

    def _item(self, frame: dict[str, Any]) -> StreamItem | None:
        kind = frame.get("type")
        if kind in _SKIP or kind == "slow_consumer":  # the server closes next; we rejoin
            return None
        self._failures = 0
        if kind == "request_error":
            raise error_from(frame)
        if kind == "snapshot":
            snapshot = Snapshot.model_validate(frame)
            self.last_event_id = snapshot.last_event_id
            self.finished = snapshot.run.finished
            return snapshot
        if frame.get("run_id") != self.run_id:
            return None
        event_id = frame.pop("id", None)
        if event_id is None or not _newer(event_id, self.last_event_id):
            return None  # already yielded before a reconnect
        event = parse_event(json.dumps(frame))
        self.last_event_id = event_id
        if event.type == "done":
            self.finished = True
        return event
