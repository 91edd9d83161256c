"""One websocket connection: authenticate, read frames, send events (see ``ws_protocol``).

Two tasks per connection: the receiver handles the client's frames (ask, join, cancel,
ping) and the idle timeout; the sender drains the connection's :class:`Outbox`. Run events
reach the outbox from the relay through :class:`RunFeed`; when a client cannot keep up the
outbox overflows and the sender cuts the client off with the last id it sent per run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import ValidationError
from redis.exceptions import RedisError
from starlette.websockets import WebSocket, WebSocketState

from agentbus_contracts.ids import new_run_id
from api.app import metrics
from api.app.access import RunAccess, RunRef
from api.app.ask import Ask
from api.app.auth import Principal, bearer_token
from api.app.errors import (
    BACKEND_FAILURES,
    ApiError,
    InvalidRequest,
    Unauthorized,
    Unavailable,
)
from api.app.feed import Frame, Outbox, RunFeed
from api.app.webhook_requests import webhook_of
from api.http import ws_protocol as proto
from api.http.trace_headers import caller_trace

if TYPE_CHECKING:
    from api.app.auth import Authenticator
    from api.app.gate_actions import Gates
    from api.app.joins import Joins
    from api.app.ports import CancelRun, RunEvents
    from api.app.starter import RunStarter
    from api.settings import ApiSettings

log = structlog.get_logger("api.ws")


def _control(doc: dict[str, Any]) -> Frame:
    return Frame(json.dumps(doc))


class WsSession:
    """Serves one websocket connection until either side closes it.

    Args:
        ws: the connection.
        settings: the API's settings (origins, frame and buffer limits).
        auth: turns the first frame's key into the caller.
        starter: starts the runs the connection asks.
        access: which runs the caller may see or cancel.
        joins: where a (re)join of a run's events starts.
        gates: resumes paused runs.
        cancel: asks a run to stop.
        events: the process's reader of run event streams.
    """

    def __init__(
        self,
        ws: WebSocket,
        *,
        settings: ApiSettings,
        auth: Authenticator,
        starter: RunStarter,
        access: RunAccess,
        joins: Joins,
        gates: Gates,
        cancel: CancelRun,
        events: RunEvents,
    ) -> None:
        self.ws = ws
        self.settings = settings
        self.auth, self.starter, self.access, self.joins = auth, starter, access, joins
        self.gates, self.cancel, self.events = gates, cancel, events
        self.outbox = Outbox(settings.ws_buffer_events)
        self.principal: Principal | None = None
        self.feeds: dict[str, RunFeed] = {}
        # Runs whose `done` has not been sent yet, with the last event id sent of each.
        self.watching: dict[str, str] = {}

    async def serve(self) -> None:
        """Run the connection to its end."""
        headers = self.ws.headers
        if not proto.origin_allowed(
            headers.get("origin"), headers.get("host"), self.settings.api_allowed_origins
        ):
            metrics.WS_CLOSED.labels("origin").inc()
            await self.ws.close(proto.CLOSE_ORIGIN)
            return
        await self.ws.accept()
        token = bearer_token(headers.get("authorization"))
        if token is not None:
            try:
                await self._authenticate(token)
            except Unauthorized as e:
                await self._refuse(e)
                return
        metrics.WS_CONNECTIONS.inc()
        sender = asyncio.create_task(self._send_loop())
        receiver = asyncio.create_task(self._receive_loop())
        try:
            await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sender, receiver):
                task.cancel()
            await asyncio.gather(sender, receiver, return_exceptions=True)
            for feed in list(self.feeds.values()):
                feed.close()
            self.outbox.close()
            metrics.WS_CONNECTIONS.dec()
            await self._close(1000)

    async def _authenticate(self, token: str) -> None:
        self.principal = await self.auth.authenticate(token)
        structlog.contextvars.bind_contextvars(tenant_id=self.principal.tenant_id)
        self.outbox.put_control(_control({"type": "ready"}))

    async def _refuse(self, error: Unauthorized) -> None:
        metrics.WS_CLOSED.labels("unauthorized").inc()
        with contextlib.suppress(Exception):
            await self.ws.send_text(json.dumps(self._error_doc(error, None)))
        await self._close(proto.CLOSE_UNAUTHORIZED, "unauthorized")

    async def _close(self, code: int, reason: str = "") -> None:
        if self.ws.application_state == WebSocketState.CONNECTED:
            with contextlib.suppress(Exception):
                await self.ws.close(code, reason)

    # --- receiving ---------------------------------------------------------------------

    async def _receive_loop(self) -> None:
        try:
            await self._receive_frames()
        except Unauthorized as e:
            await self._refuse(e)

    async def _receive_frames(self) -> None:
        while True:
            waited = proto.AUTH_TIMEOUT_S if self.principal is None else None
            try:
                message = await asyncio.wait_for(
                    self.ws.receive(), waited or self.settings.ws_idle_timeout_s
                )
            except TimeoutError:
                if self.principal is None:
                    raise Unauthorized("no auth frame in time") from None
                if self.feeds:
                    continue  # watching a run is not idling
                metrics.WS_CLOSED.labels("idle").inc()
                await self._close(proto.CLOSE_IDLE, "idle timeout")
                return
            if message["type"] == "websocket.disconnect":
                return
            text = message.get("text")
            if text is None:
                text = (message.get("bytes") or b"").decode(errors="replace")
            if len(text) > self.settings.ws_max_frame_bytes:
                metrics.WS_CLOSED.labels("frame_too_big").inc()
                await self._close(proto.CLOSE_TOO_BIG, "frame too large")
                return
            await self._handle_text(text)

    async def _handle_text(self, text: str) -> None:
        request_id = None
        try:
            try:
                frame = proto.CLIENT_FRAME.validate_json(text)
            except ValidationError as e:
                raise frame_error(e) from None
            request_id = getattr(frame, "request_id", None)
            if isinstance(frame, proto.AuthFrame):
                if self.principal is not None:
                    raise InvalidRequest("already authenticated", field="type")
                await self._authenticate(frame.api_key)
                return
            if self.principal is None:
                raise Unauthorized("the first frame must be an auth frame")
            await self._dispatch(self.principal, frame, request_id)
        except Unauthorized:
            raise
        except ApiError as e:
            metrics.REJECTED.labels(e.code).inc()
            self.outbox.put_control(_control(self._error_doc(e, request_id)))
        except (*BACKEND_FAILURES, RedisError) as e:
            # The connection outlives a backend hiccup; the client may retry the frame.
            log.error("backend failed during a websocket request", error=str(e))
            error = Unavailable("Redis or the state store failed")
            self.outbox.put_control(_control(self._error_doc(error, request_id)))

    async def _dispatch(self, who: Principal, frame: proto.ClientFrame, rid: str | None) -> None:
        match frame:
            case proto.PingFrame():
                self.outbox.put_control(_control({"type": "pong", "request_id": rid}))
            case proto.AskFrame():
                self._room_for_one_more()
                run_id = new_run_id()
                ref = RunRef(run_id, self.access.shard_of(run_id), None)
                # Subscribed before publishing: the run's first events are relayed live,
                # held back until `accepted` is queued ahead of them.
                feed = self._feed(ref, "0-0")
                feed.subscribe()
                try:
                    hook = webhook_of(frame.webhook_url, frame.webhook_approvals)
                    trace = frame.trace or caller_trace(self.ws.headers)
                    ask = Ask(
                        frame.question,
                        frame.conversation_id,
                        frame.settings,
                        run_id,
                        webhook=hook,
                        trace=trace,
                        parent_message_id=frame.parent_message_id,
                    )
                    started = await self.starter.start(who, ask)
                except BaseException:
                    feed.close()
                    raise
                metrics.RUNS_STARTED.labels("websocket").inc()
                accepted = {
                    "type": "accepted",
                    "run_id": started.run_id,
                    "conversation_id": started.conversation_id,
                    "request_id": rid,
                }
                if started.queued:
                    accepted |= {"queued": True, "ahead": started.ahead}
                self.outbox.put_control(_control(accepted))
                await feed.go_live()
            case proto.JoinFrame():
                ref, plan = await self.joins.join(who, frame.run_id, frame.last_event_id)
                self._room_for_one_more(frame.run_id)
                if plan.snapshot is not None:
                    self.outbox.put_control(_control({**plan.snapshot, "request_id": rid}))
                if plan.follow_after is not None:
                    await self._follow(ref, plan.follow_after)
            case proto.CancelFrame():
                await self.access.visible(who, frame.run_id, read=None)
                await self.cancel(frame.run_id)
                doc = {"type": "cancel_requested", "run_id": frame.run_id, "request_id": rid}
                self.outbox.put_control(_control(doc))
            case proto.ResumeFrame():
                await self.gates.decide(who, frame.run_id, frame.decision)
                doc = {"type": "resumed", "run_id": frame.run_id, "request_id": rid}
                self.outbox.put_control(_control(doc))
            case _:  # pragma: no cover - the union is exhaustive
                raise InvalidRequest("unknown frame type", field="type")

    def _room_for_one_more(self, run_id: str | None = None) -> None:
        if run_id not in self.feeds and len(self.feeds) >= proto.MAX_RUNS_PER_CONNECTION:
            raise InvalidRequest(
                f"this connection already follows {proto.MAX_RUNS_PER_CONNECTION} runs",
                hint="wait for a run to finish, or open another connection",
            )

    async def _follow(self, ref: RunRef, after: str) -> None:
        await self._feed(ref, after).start()

    def _feed(self, ref: RunRef, after: str) -> RunFeed:
        """A feed of the run for this connection (replacing one it already had)."""
        old = self.feeds.pop(ref.run_id, None)
        if old is not None:
            old.close()
        feed = RunFeed(
            self.events,
            run_id=ref.run_id,
            stream=self.events.stream_of(ref.run_id, ref.shard),
            shard=ref.shard,
            after=after,
            outbox=self.outbox,
            on_end=self._feed_ended,
        )
        self.feeds[ref.run_id] = feed
        self.watching.setdefault(ref.run_id, after)
        return feed

    def _feed_ended(self, feed: RunFeed) -> None:
        if self.feeds.get(feed.run_id) is feed:
            del self.feeds[feed.run_id]

    # --- sending -------------------------------------------------------------------------

    async def _send_loop(self) -> None:
        while True:
            frame = await self.outbox.get()
            if frame is None:
                if self.outbox.overflowed:
                    await self._cut_off()
                return
            try:
                # asyncio.timeout, not wait_for: no extra task per frame on the hot path.
                async with asyncio.timeout(proto.SEND_TIMEOUT_S):
                    await self.ws.send_text(frame.text)
            except TimeoutError:
                await self._cut_off()
                return
            if frame.run_id is not None and frame.event_id is not None:
                if frame.added_ms is not None:
                    metrics.WS_SEND_DELAY.observe((time.time() * 1000 - frame.added_ms) / 1000)
                if frame.last:
                    self.watching.pop(frame.run_id, None)
                else:
                    self.watching[frame.run_id] = frame.event_id

    async def _cut_off(self) -> None:
        metrics.WS_CLOSED.labels("slow_consumer").inc()
        runs = [{"run_id": r, "last_event_id": last} for r, last in self.watching.items()]
        doc = {
            "type": "slow_consumer",
            "runs": runs,
            "message": "too far behind; reconnect and join each run with its last_event_id",
        }
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.ws.send_text(json.dumps(doc)), 2.0)
        await self._close(proto.CLOSE_SLOW, "slow consumer")

    @staticmethod
    def _error_doc(error: ApiError, request_id: str | None) -> dict[str, Any]:
        doc: dict[str, Any] = {"type": "request_error", **error.body()["error"]}
        doc["request_id"] = request_id
        return doc


def frame_error(e: ValidationError) -> InvalidRequest:
    """The client's error for a frame that failed validation, naming the field at fault."""
    err = e.errors()[0]
    where = ".".join(str(p) for p in err["loc"] if not isinstance(p, int)) or "type"
    # The discriminated union puts the frame type first in the location; drop it.
    parts = where.split(".")
    field = ".".join(parts[1:]) if len(parts) > 1 and parts[0] in proto.FRAME_TYPES else where
    return InvalidRequest(f"{field}: {err['msg']}", field=field)
