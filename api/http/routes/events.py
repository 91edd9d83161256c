"""``GET /api/v1/runs/{run_id}/events``: a run's events as server-sent events.

Each event is ``id: <stream id>`` + ``data: <event JSON with "id">``; a browser's
EventSource reconnects with ``Last-Event-ID`` and gets exactly what it missed. When the
missed events were trimmed away the stream starts with ``event: snapshot``. The response
ends after the run's ``done`` event.
"""

import asyncio
import json
import re
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query
from fastapi.responses import StreamingResponse

from api.app import metrics
from api.app.access import RunRef
from api.app.errors import InvalidRequest, RunNotFound
from api.app.joins import JoinPlan, Joins
from api.app.run_follow import RunFollower
from api.http.responses import errors
from api.http.routes.common import Caller, use_case

router = APIRouter(prefix="/api/v1/runs", tags=["runs"])

_Joins = Annotated[Joins, Depends(use_case(lambda deps: deps.joins))]
_Follower = Annotated[RunFollower, Depends(use_case(lambda deps: deps.follower))]

EVENT_ID = re.compile(r"^\d{1,20}-\d{1,20}$")
KEEPALIVE_S = 15.0


def check_event_id(value: str, field: str) -> str:
    """A stream id as clients send it back, or raise ``InvalidRequest``."""
    if not EVENT_ID.match(value):
        raise InvalidRequest(f"{value[:40]!r} is not an event id like 1700000000000-0", field=field)
    return value


@router.get(
    "/{run_id}/events",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"text/event-stream": {}}, "description": "Server-sent events."},
        **errors(RunNotFound),
    },
)
async def run_events(
    run_id: str,
    joins: _Joins,
    follower: _Follower,
    caller: Caller,
    last_event_id: Annotated[
        str | None, Header(alias="Last-Event-ID", description="Resume after this event.")
    ] = None,
    after: Annotated[str | None, Query(description="Resume after this event id.")] = None,
) -> StreamingResponse:
    """Follow a run's events until ``done`` (replaying those after ``Last-Event-ID``)."""
    start = check_event_id(last_event_id or after or "0-0", "Last-Event-ID")
    ref, plan = await joins.join(caller, run_id, start)
    return StreamingResponse(
        _stream(follower, ref, plan),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _stream(follower: RunFollower, ref: RunRef, plan: JoinPlan) -> AsyncIterator[str]:
    if plan.snapshot is not None:
        last = plan.snapshot["last_event_id"]
        yield f"event: snapshot\nid: {last}\ndata: {json.dumps(plan.snapshot)}\n\n"
    if plan.follow_after is None:
        return
    feed, outbox = follower.feed(ref.run_id, after=plan.follow_after)
    sent = plan.follow_after
    metrics.SSE_STREAMS.inc()
    try:
        await feed.start()
        while not (feed.done and not len(outbox)):
            try:
                frame = await asyncio.wait_for(outbox.get(), KEEPALIVE_S)
            except TimeoutError:
                yield ": keep-alive\n\n"
                continue
            if frame is None:  # too slow: end here, EventSource resumes from its last id
                metrics.WS_CLOSED.labels("sse_slow_consumer").inc()
                doc = {"type": "slow_consumer", "run_id": ref.run_id, "last_event_id": sent}
                yield f"event: slow_consumer\ndata: {json.dumps(doc)}\n\n"
                return
            yield f"id: {frame.event_id}\ndata: {frame.text}\n\n"
            sent = frame.event_id or sent
    finally:
        feed.close()
        metrics.SSE_STREAMS.dec()
