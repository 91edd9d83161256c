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
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Protocol

from a2a.types import a2a_pb2 as a2a
from pydantic import AwareDatetime, BaseModel, Field, ValidationError

from api.http.a2a_rpc import INVALID_PARAMS, RpcError, parse_params
from api.http.a2a_tasks import STATES
from bus.json_values import is_object

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 100


@dataclass(frozen=True, slots=True)
class TaskListing:
    """A checked ``ListTasks`` request: what to find, how much, and how to show each task."""

    conversation_id: str | None
    statuses: frozenset[str] | None
    updated_since: datetime | None
    page_size: int
    after: tuple[datetime, str] | None
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
    since = (
        given.status_timestamp_after.ToDatetime(UTC)
        if given.HasField("status_timestamp_after")
        else None
    )
    after = read_token(given.page_token) if given.page_token else None
    return TaskListing(
        given.context_id or None,
        _statuses(given.status),
        since,
        page_size,
        after,
        history,
        given.include_artifacts,
    )


def _statuses(state: a2a.TaskState) -> frozenset[str] | None:
    if state == a2a.TASK_STATE_UNSPECIFIED:
        return None
    # A state no run is ever in (auth-required) matches nothing, which is the right answer.
    return frozenset(status for status, s in STATES.items() if s == state)


class _Updated(Protocol):
    """What a page token is made from: a listed run's id and update time."""

    @property
    def id(self) -> str: ...

    @property
    def updated_at(self) -> datetime: ...


class _Cursor(BaseModel):
    """A page token's content: the last task's update time and id."""

    updated_at: AwareDatetime
    run_id: str = Field(min_length=1, max_length=64)


def next_token(page: Sequence[_Updated], more: bool) -> str:
    """The token of the page after ``page`` ("" when nothing follows it)."""
    if not more or not page:
        return ""
    last = page[-1]
    raw = f"{last.updated_at.isoformat()}|{last.id}".encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_token(token: str) -> tuple[datetime, str]:
    """Where the page a token follows ended (update time, run id), or -32602 for a token
    this server did not give."""
    try:
        raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        at, _, run_id = raw.partition("|")
        cursor = _Cursor.model_validate({"updated_at": at, "run_id": run_id})
        return cursor.updated_at, cursor.run_id
    except (binascii.Error, UnicodeDecodeError, ValidationError) as e:
        raise RpcError(INVALID_PARAMS, "pageToken: not a token this server gave") from e
