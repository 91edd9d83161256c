"""Admission of questions that other systems XADD to ``runs.questions`` (no HTTP needed).

An entry is one field, ``data``, holding a :class:`bus.commands.Question` as JSON (plus a
``signature`` field when the question is signed instead of carrying its key: see
``api.signing``). Each API process runs one consumer of the ``admission`` group, so
admission scales with the API. Per entry: parse and validate, authenticate the key (or
verify the signature, its age and that it was not used before), apply the tenant's limits
and settings, publish the intake command (through the same :class:`RunStarter` as REST),
then delete the entry.

* No secret rests on the bus: once an entry is admitted or rejected, XACK and XDEL remove
  it in one MULTI (with an approximate XTRIM capping whatever backlog is left), so the
  stream holds only entries not yet admitted.
* The run id is the question's own, or derived from the entry id (``q-<entry id>``), so an
  entry redelivered after its run was published (the admitter died before deleting it)
  publishes nothing new and is not counted against the tenant's rate again.
* A bad entry (not JSON, invalid, unknown key, bad or stale signature, over a limit) is
  answered on its ``reply_to`` stream (when it names a valid one) with a ``RunResult`` of
  status ``rejected`` and the error code in ``stop_reason``, then deleted; it never blocks
  the entries after it.
* A transient failure (Redis or the store down) leaves the entry pending; it is retried
  by reclaim and rejected with ``internal_error`` after ``max_deliveries``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import TYPE_CHECKING

import structlog
from pydantic import TypeAdapter, ValidationError
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from api import signing
from api.app import metrics
from api.app.ask import Ask
from api.app.auth import Principal
from api.app.errors import (
    ApiError,
    SignatureExpired,
    SignatureReplayed,
    Unauthorized,
    Unavailable,
)
from api.app.webhook_requests import webhook_of
from bus import keys, wire
from bus.commands import Question, ReplyTo, RunResult
from bus.errors import MessageInvalid, StoreError
from bus.json_values import is_object
from bus.readers import QUESTION
from bus.runtime.consumer import consumer_name
from bus.runtime.groups import ensure_group

if TYPE_CHECKING:
    from api.app.auth import Authenticator
    from api.app.starter import RunStarter
    from api.settings import ApiSettings
    from bus.settings import BusSettings

log = structlog.get_logger("api.streams.admission")

_REPLY_TO: TypeAdapter[str | None] = TypeAdapter(ReplyTo)
_SIGNATURE = signing.SIGNATURE_FIELD.encode()


def run_id_for(entry_id: str) -> str:
    """The run id of a question that brought none: stable across redeliveries."""
    return f"q-{entry_id}"


class Rejected(Exception):
    """An entry that cannot become a run; answered on reply_to and acked."""

    def __init__(self, code: str, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.retry_after = retry_after


class QuestionAdmission:
    """Consumes ``runs.questions`` and starts a run for each valid question.

    Args:
        redis: the broker the questions stream is on.
        auth: turns API keys (or signed entries) into principals.
        starter: admits and publishes runs, as REST does.
        api: the API's settings (the stream's length, signatures' age).
        bus: the bus's settings.
        consumer: this consumer's name in the group (default: host, pid, random).
        batch: entries read per XREADGROUP.
    """

    def __init__(
        self,
        redis: Redis,
        *,
        auth: Authenticator,
        starter: RunStarter,
        api: ApiSettings,
        bus: BusSettings,
        consumer: str | None = None,
        batch: int = 16,
    ) -> None:
        self.redis = redis
        self.auth = auth
        self.starter = starter
        self.api = api
        self.settings = bus
        self.consumer = consumer or consumer_name()
        self.batch = batch
        self._stopping = asyncio.Event()

    def stop(self) -> None:
        """Stop after the entries in hand."""
        self._stopping.set()

    async def run(self) -> None:
        """Consume until ``stop()``."""
        await ensure_group(self.redis, keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP)
        reclaim = asyncio.create_task(self._reclaim_loop())
        try:
            while not self._stopping.is_set():
                try:
                    resp = await self.redis.xreadgroup(
                        keys.ADMISSION_GROUP,
                        self.consumer,
                        {keys.QUESTIONS_STREAM: ">"},
                        count=self.batch,
                        block=self.settings.read_block_ms,
                    )
                except ResponseError as e:
                    if "NOGROUP" not in str(e):
                        raise
                    await ensure_group(self.redis, keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP)
                    continue
                except (RedisConnectionError, RedisTimeoutError) as e:
                    log.warning("broker unreachable, retrying", error=str(e))
                    await asyncio.sleep(1.0)
                    continue
                for _, entries in resp or ():
                    for entry_id, fields in entries:
                        await self.handle(entry_id.decode(), fields, delivery=1)
        finally:
            reclaim.cancel()
            await asyncio.gather(reclaim, return_exceptions=True)

    async def handle(self, entry_id: str, fields: dict[bytes, bytes], *, delivery: int) -> str:
        """Admit one entry; returns the outcome (also counted in metrics)."""
        outcome = "admitted"
        try:
            try:
                await self._admit(entry_id, fields)
            except (Unavailable, StoreError, RedisConnectionError, RedisTimeoutError) as e:
                if delivery < self.settings.max_deliveries:
                    log.warning("admission failed, left for retry", entry=entry_id, error=str(e))
                    outcome = "retry"
                    return outcome
                raise Rejected("internal_error", f"could not admit: {e}") from e
        except Rejected as e:
            outcome = "rejected"
            log.warning("question rejected", entry=entry_id, code=e.code, error=str(e))
            await self._reply_rejected(entry_id, fields, e.code, e.retry_after)
        await self._settle(entry_id)
        metrics.ADMISSIONS.labels(outcome).inc()
        return outcome

    async def _settle(self, entry_id: str) -> None:
        """Ack and delete the entry (it may hold a key) in one MULTI; cap the backlog."""
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.xack(keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP, entry_id)
            pipe.xdel(keys.QUESTIONS_STREAM, entry_id)
            pipe.xtrim(
                keys.QUESTIONS_STREAM,
                maxlen=self.api.api_questions_maxlen,
                approximate=True,
            )
            await pipe.execute()

    async def _admit(self, entry_id: str, fields: dict[bytes, bytes]) -> None:
        try:
            data = wire.raw_data(fields)
            question = QUESTION.read_json(data)
        except MessageInvalid as e:
            raise Rejected("invalid_question", str(e)) from e
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(p) for p in err["loc"]) or "(root)"
            raise Rejected("invalid_question", f"{where}: {err['msg']}") from e
        except ValueError as e:  # not JSON, or a schema_version this release cannot read
            raise Rejected("invalid_question", str(e)) from e
        try:
            who = await self._authenticate(entry_id, question, data, fields)
            run_id = question.run_id or run_id_for(entry_id)
            if await self.starter.published(who, run_id):
                return  # admitted before; the admitter died before deleting the entry
            ask = Ask(
                question=question.question,
                conversation_id=question.conversation_id,
                settings=question.settings,
                run_id=run_id,
                reply_to=question.reply_to,
                trace=question.trace,
                webhook=webhook_of(question.webhook_url, question.webhook_approvals),
                priority="batch",
            )
            started = await self.starter.start(who, ask)
        except Unavailable:
            raise
        except ApiError as e:
            raise Rejected(e.code, e.message, e.retry_after) from e
        if not started.replayed:
            metrics.RUNS_STARTED.labels("stream").inc()

    async def _authenticate(
        self, entry_id: str, question: Question, data: bytes, fields: dict[bytes, bytes]
    ) -> Principal:
        """The question's principal: from its key, or from its key id and signature."""
        if question.api_key is not None:
            return await self.auth.authenticate(question.api_key)
        assert question.key_id is not None and question.signed_at is not None
        signature = fields.get(_SIGNATURE, b"").decode(errors="replace")
        if not signature:
            raise Unauthorized(f"a question with key_id needs a {signing.SIGNATURE_FIELD!r} field")
        who = await self.auth.authenticate_signed(question.key_id, data, signature)
        window = self.api.api_signature_max_age_s
        if abs(time.time() - question.signed_at) > window:
            raise SignatureExpired(f"signed_at is more than {window} s away from the server's time")
        # One entry per signature: a copy of a signed entry (same bytes, new entry id) is a
        # replay. The mark outlives every moment at which signed_at would still be accepted.
        mark = keys.question_signature(signature)
        if not await self.redis.set(mark, entry_id, nx=True, ex=2 * window + 60):
            holder = await self.redis.get(mark)
            if holder is not None and _text(holder) != entry_id:
                raise SignatureReplayed("this signature was already used by another entry")
        return who

    async def _reply_rejected(
        self, entry_id: str, fields: dict[bytes, bytes], code: str, retry_after: int | None
    ) -> None:
        reply_to, run_id = _loose_reply_to(fields), None
        if reply_to is None:
            return
        with contextlib.suppress(Exception):
            run_id = json.loads(wire.raw_data(fields)).get("run_id")
        result = RunResult(
            run_id=run_id if isinstance(run_id, str) else run_id_for(entry_id),
            tenant_id="",
            status="rejected",
            stop_reason=code,
            retry_after_s=retry_after,
        )
        await self.redis.xadd(
            reply_to,
            {wire.DATA_FIELD: wire.encode(result)},
            maxlen=self.settings.stream_maxlen,
            approximate=True,
        )

    async def _reclaim_loop(self) -> None:
        """Take over entries a crashed API process left pending."""
        interval = max(0.05, min(5.0, self.settings.claim_idle_ms / 2000))
        cursor = "0-0"
        while True:
            await asyncio.sleep(interval)
            try:
                cursor = await self._reclaim(cursor)
            except Exception as e:  # the loop must outlive any one failure
                log.warning("admission reclaim failed", error=repr(e))

    async def _reclaim(self, cursor: str) -> str:
        reply = await self.redis.xautoclaim(
            keys.QUESTIONS_STREAM,
            keys.ADMISSION_GROUP,
            self.consumer,
            self.settings.claim_idle_ms,
            start_id=cursor,
            count=self.batch,
        )
        next_cursor = reply[0].decode() if isinstance(reply[0], bytes) else str(reply[0])
        for entry_id, fields in reply[1]:
            if entry_id is None or fields is None:
                continue
            eid = entry_id.decode()
            pending = await self.redis.xpending_range(
                keys.QUESTIONS_STREAM, keys.ADMISSION_GROUP, min=eid, max=eid, count=1
            )
            delivery = int(pending[0]["times_delivered"]) if pending else 2
            await self.handle(eid, fields, delivery=delivery)
        return next_cursor


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _loose_reply_to(fields: dict[bytes, bytes]) -> str | None:
    """The reply_to of an entry that may not parse, if it names a valid stream."""
    try:
        doc = json.loads(wire.raw_data(fields))
        value = doc.get("reply_to") if is_object(doc) else None
        return _REPLY_TO.validate_python(value) if isinstance(value, str) else None
    except (MessageInvalid, ValueError, ValidationError):
        return None
