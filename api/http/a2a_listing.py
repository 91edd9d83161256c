"""``ListTasks``: its parameters checked and turned into a store query, and its page tokens.

A2A 1.0 (section 3.1.4 and ``ListTasksRequest``): ``pageSize`` 1 to 100 (default 50),
``historyLength`` not negative, ``status`` one of the task states, ``statusTimestampAfter``
an ISO 8601 time, ``pageToken`` one this server gave. Anything else is -32602. The token is
opaque to the client: the last task's update time and id, so the next page starts exactly
after it even when tasks share a timestamp.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import UTC

from a2a.types import a2a_pb2 as a2a
from pydantic import ValidationError

from api.http.a2a_rpc import INVALID_PARAMS, RpcError, parse_params
from api.http.a2a_tasks import STATES
from bus.events import RunStatus
from bus.json_values import is_object
from bus.store import RunCursor, RunQuery, RunRecord

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class TaskListing:
    """A checked ``ListTasks`` request: what to find, how much, and how to show each task."""

    query: RunQuery
    page_size: int
    after: RunCursor | None
    history_length: int | None
    include_artifacts: bool


def listing_of(params: object) -> TaskListing:
    """The listing ``params`` ask for, or ``RpcError`` (-32602) naming the bad parameter."""
    given = parse_params(params, a2a.ListTasksRequest())
    status = params.get("status") if is_object(params) else None
    if (
        status is not None
        and given.status == a2a.TASK_STATE_UNSPECIFIED
        and status
        not in (
            0,
            "TASK_STATE_UNSPECIFIED",
        )
    ):  # the parser drops a state it does not know instead of refusing it
        raise RpcError(INVALID_PARAMS, f"status: one of the TaskState names, not {status!r}")
    page_size = given.page_size if given.HasField("page_size") else DEFAULT_PAGE_SIZE
    if not 1 <= page_size <= MAX_PAGE_SIZE:
        raise RpcError(INVALID_PARAMS, f"pageSize: 1 to {MAX_PAGE_SIZE}, got {page_size}")
    history = given.history_length if given.HasField("history_length") else None
    if history is not None and history < 0:
        raise RpcError(INVALID_PARAMS, f"historyLength: 0 or more, got {history}")
    query = RunQuery(
        conversation_id=given.context_id or None,
        statuses=_statuses(given.status),
        updated_since=(
            given.status_timestamp_after.ToDatetime(UTC)
            if given.HasField("status_timestamp_after")
            else None
        ),
    )
    after = read_token(given.page_token) if given.page_token else None
    return TaskListing(query, page_size, after, history, given.include_artifacts)


def _statuses(state: a2a.TaskState) -> frozenset[RunStatus] | None:
    if state == a2a.TASK_STATE_UNSPECIFIED:
        return None
    # A state no run is ever in (auth-required) matches nothing, which is the right answer.
    return frozenset(RunStatus(status) for status, s in STATES.items() if s == state)


def next_token(page: list[RunRecord], more: bool) -> str:
    """The token of the page after ``page`` ("" when nothing follows it)."""
    if not more or not page:
        return ""
    last = page[-1]
    raw = f"{last.updated_at.isoformat()}|{last.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_token(token: str) -> RunCursor:
    """The cursor a page token holds, or -32602 for a token this server did not give."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        at, _, run_id = raw.partition("|")
        return RunCursor.model_validate({"updated_at": at, "run_id": run_id})
    except (binascii.Error, UnicodeDecodeError, ValidationError) as e:
        raise RpcError(INVALID_PARAMS, "pageToken: not a token this server gave") from e
