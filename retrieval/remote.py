"""Document search over the bus, for processes that do not hold the vector store.

The embedded store is a folder one process owns (the one running the retrieval role), so
every other process, the gateway's ``search_docs`` included, asks the retrieval role:
`RemoteSearch` publishes a `SearchTask` command on the retrieval stream of the run's shard
and waits on a reply stream; the retrieval role's handler (`make_search_handler`)
searches with the command's tenant and groups and writes the hits there.

* The command belongs to the caller's run (its shard, deadline and cancel apply) and its
  step id is derived from the caller's request id, so a retried request is the same step.
* The reply is a one-entry stream under the run's keys, kept for the run's lifetime: a
  caller that retries (a redelivered gateway step) reads the first reply instead of
  searching again, and a search the runtime redelivers only adds a second, equal entry.
* The caller checks every hit against its own tenant and groups again, so a wrong reply
  can never show it another tenant's or group's chunk.
"""

from __future__ import annotations

import hashlib
import time
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict

from bus import keys, wire
from bus.commands import Command, SearchTask
from bus.publish import publish
from bus.runtime.context import StepContext, StepResult
from bus.runtime.groups import ensure_group
from retrieval.errors import RetrievalError, SearchUnanswered
from retrieval.models import PUBLIC, Access, Hit, StoredChunk
from retrieval.search import Searcher

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.runtime.worker import Handler
    from bus.settings import BusSettings


class ReplyHit(BaseModel):
    """One hit as the reply carries it: the stored chunk and its score."""

    model_config = ConfigDict(frozen=True)

    id: str
    tenant: str
    acl: tuple[str, ...]
    doc_id: str
    version: str
    source: str
    title: str
    position: int
    heading: str
    text: str
    content_hash: str
    score: float

    def hit(self) -> Hit:
        """Back to the search's own type."""
        chunk = StoredChunk(**self.model_dump(exclude={"score"}))
        return Hit(chunk, self.score, {"hybrid": self.score})


class SearchReply(BaseModel):
    """What the retrieval role answers: the hits, or the error code that stopped it."""

    model_config = ConfigDict(frozen=True)

    status: Literal["ok", "error"]
    code: str = ""
    hits: list[ReplyHit] = []


def reply_key(command: Command) -> str:
    """The stream a search command's reply is written to (under the run's keys)."""
    return keys.run_blob(command.run_id, command.shard, f"search:{command.branch}")


def make_search_handler(searcher: Searcher) -> Handler:
    """The retrieval role's handler for `SearchTask` commands."""

    async def handle(ctx: StepContext, command: Command) -> StepResult:
        task = command.payload
        if not isinstance(task, SearchTask):
            raise TypeError(f"search got a {task.kind} payload")
        access = Access.of(command.tenant_id, command.groups)
        try:
            hits = await searcher.search(task.query, access, top_k=task.top_k)
            reply = SearchReply(
                status="ok",
                hits=[
                    ReplyHit(score=h.score, **{f: getattr(h.chunk, f) for f in _CHUNK_FIELDS})
                    for h in hits
                ],
            )
        except RetrievalError as e:  # the caller reports it; retrying would not help
            reply = SearchReply(status="error", code=e.code)
        key = reply_key(command)
        async with ctx.redis.pipeline(transaction=False) as pipe:
            pipe.xadd(key, {wire.DATA_FIELD: reply.model_dump_json()})
            pipe.expire(key, ctx.settings.run_ttl_s)
            await pipe.execute()
        return StepResult()

    return handle


_CHUNK_FIELDS = tuple(f for f in ReplyHit.model_fields if f != "score")


def _readable(chunk: StoredChunk, access: Access) -> bool:
    return chunk.tenant == access.tenant and (
        PUBLIC in chunk.acl or bool(access.groups & set(chunk.acl))
    )


class RemoteSearch:
    """Searches through the retrieval role, on behalf of a run.

    Args:
        redis: the broker.
        settings: shard count, stream length, the default run deadline.
    """

    def __init__(self, redis: Redis, settings: BusSettings) -> None:
        self._redis = redis
        self._settings = settings
        self._grouped: set[int] = set()

    async def search(
        self,
        query: str,
        access: Access,
        *,
        top_k: int,
        run_id: str,
        subject: str,
        request_id: str,
        deadline: float | None,
        wait_s: float,
    ) -> list[Hit]:
        """The best ``top_k`` chunks ``access`` may read, found by a retrieval worker.

        Args:
            query: what to look for.
            access: the caller's tenant and groups (the search's filter).
            top_k: how many chunks.
            run_id: the run the search belongs to.
            subject: the user behind the run.
            request_id: unique within the run and stable across retries (a tool call id).
            deadline: the run's deadline (Unix time); None gives it the default length.
            wait_s: how long to wait for the reply.

        Raises:
            SearchUnanswered: no retrieval worker answered within ``wait_s``.
            RetrievalError: the retrieval worker's search failed (its code).
        """
        digest = hashlib.sha256(request_id.encode()).hexdigest()[:24]
        command = Command(
            run_id=run_id,
            tenant_id=access.tenant,
            subject=subject,
            shard=keys.shard_of(run_id, self._settings.shards),
            role=keys.Role.RETRIEVAL,
            branch=f"q{digest}",
            deadline=deadline or time.time() + self._settings.run_deadline_s,
            groups=tuple(sorted(access.groups)),
            payload=SearchTask(query=query, top_k=top_k),
        )
        key = reply_key(command)
        if command.shard not in self._grouped:
            # A retrieval worker starting later would create its group at "$" and skip
            # what was published before it existed.
            stream = keys.role_stream(keys.Role.RETRIEVAL, command.shard)
            await ensure_group(self._redis, stream, keys.group_name(keys.Role.RETRIEVAL))
            self._grouped.add(command.shard)
        if not await self._redis.exists(key):  # a retry finds its first reply instead
            await publish(self._redis, command, self._settings)
        found = await self._redis.xread({key: "0-0"}, count=1, block=max(1, int(wait_s * 1000)))
        if not found:
            raise SearchUnanswered(f"no retrieval worker answered within {wait_s:g}s")
        _, entries = found[0]
        reply = SearchReply.model_validate_json(wire.raw_data(entries[0][1]))
        if reply.status == "error":
            error = RetrievalError(f"the retrieval worker's search failed ({reply.code})")
            error.code = reply.code
            raise error
        hits = [h.hit() for h in reply.hits]
        return [h for h in hits if _readable(h.chunk, access)]
