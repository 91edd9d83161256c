"""The bus's channels as an AsyncAPI 3.0 document (served at ``/asyncapi``).

The channels are declared on a FastStream ``RedisBroker`` that is never connected or
started: it only carries the declarations to FastStream's AsyncAPI generator, so the
document is built from the same pydantic models the bus validates against.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from faststream.redis import RedisBroker, StreamSub
from faststream.specification import AsyncAPI

from agentbus_contracts.events import ClientEvent
from bus import keys
from bus.commands import Command, Question, RunResult
from bus.runtime.deadletter import DeadLetter

_AGENT_ROLES = [r for r in keys.Role if r is not keys.Role.NOOP]


def _server_url(redis_url: str | None) -> str:
    # Only scheme, host and port: the document is public, credentials must not leak.
    url = redis_url or ""
    parts = urlsplit(url)
    if parts.scheme in ("redis", "rediss") and parts.hostname:
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{parts.hostname}{port}"
    return "redis://localhost:6379"


def _declare(broker: RedisBroker) -> None:
    @broker.subscriber(
        stream=StreamSub(keys.QUESTIONS_STREAM, group=keys.ADMISSION_GROUP, consumer="api"),
        title=keys.QUESTIONS_STREAM,
        description=(
            "External publishers XADD a Question here as one field: data=<Question JSON> "
            "(not FastStream's wire format), plus signature=<hex HMAC-SHA256 of data's "
            "bytes under the key's signing secret> when it carries key_id instead of "
            "api_key. Admitted or rejected, the entry is deleted. The answer is XADDed to "
            "the Question's reply_to stream as a RunResult."
        ),
    )
    async def questions(body: Question) -> None:  # pragma: no cover - never consumed
        """A question from a system without HTTP."""

    for role in _AGENT_ROLES:

        async def handle(body: Command) -> None:  # pragma: no cover - never consumed
            """A step for the role."""

        broker.subscriber(
            stream=StreamSub(keys.role_stream(role, 0), group=keys.group_name(role), consumer="w"),
            title=f"role.{role}",
            description=(
                f"The {role} role's work on shard 0 (shard k: {{k}} in the key); internal. "
                "Entries: data=<Command JSON>."
            ),
        )(handle)

    broker.publisher(
        stream=keys.RESULTS_STREAM,
        title="reply_to",
        schema=RunResult,
        description=(
            "Where a finished run is announced: the Question's reply_to stream "
            f"(e.g. {keys.RESULTS_STREAM}). Entries: data=<RunResult JSON>."
        ),
    )
    broker.publisher(
        stream=keys.run_events("{run_id}", 0),
        title="run.events",
        schema=ClientEvent,
        description=(
            "A run's client events, replayable by entry id; the API relays them over "
            "/api/v1/ws and /api/v1/runs/{run_id}/events. Entries: data=<event JSON>."
        ),
    )
    broker.publisher(
        stream=keys.DEAD_LETTER_STREAM,
        title="dead_letters",
        schema=DeadLetter,
        description="Messages that failed too often or could not be parsed, with the error.",
    )


def build_asyncapi(redis_url: str | None, version: str = "0.1.0") -> dict[str, Any]:
    """The AsyncAPI document of the bus's channels, as JSON-ready data; the server it
    names is ``redis_url``'s scheme, host and port."""
    broker = RedisBroker(
        "redis://localhost:6379",
        specification_url=_server_url(redis_url),
        logger=None,  # pyright: ignore[reportArgumentType]
    )
    _declare(broker)
    spec = AsyncAPI(
        broker,
        title="agentbus bus channels",
        version=version,
        description="Redis Streams channels of agentbus; every entry has one field, data.",
        schema_version="3.0.0",
    ).to_specification()
    doc: dict[str, Any] = spec.to_jsonable()
    return doc
