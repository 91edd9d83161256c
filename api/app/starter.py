"""Starting a run: limits, idempotency, the settings overlay, and publishing it exactly once.

Every entry point (``POST /runs``, the websocket ``ask``, externally published questions)
goes through :class:`RunStarter`. A run is published by one Lua script that records its
owner (tenant and user) and queues its intake command for fair admission together
(`bus.fairshare`; a full tenant queue is 429 ``tenant_queue_full``): publishing the same run id
again (a client retry with the same ``Idempotency-Key``, a redelivered ``runs.questions``
entry) is a no-op, and a retry after a crash between claiming a key and publishing still
publishes. A ``conversation_id`` must be free or the caller's own: another user's or
tenant's is refused (404 ``conversation_not_found``) before anything is claimed or sent.

With the conversation turns wired in (`api.app.turn_publisher`), a run is admitted into its
conversation first (`bus.store.turns`): it is published now if nothing else of the
conversation runs, and otherwise the question's ``multitask`` policy decides (queued behind
the running run, 409 ``conversation_busy``, or the running run cancelled).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from redis.exceptions import RedisError

from agents.sources import MEMORY, WEB
from api.app import metrics
from api.app.access import owner_value
from api.app.auth import Principal
from api.app.errors import (
    ApiError,
    ConversationNotFound,
    CriticalToolNotApproved,
    IdempotencyKeyReused,
    InvalidRequest,
    ModelNotAllowed,
    NotOwner,
    QuestionTooLarge,
    RateLimited,
    TenantQueueFull,
    TooManyActiveRuns,
    Unavailable,
)
from api.app.limits import TenantLimits
from api.app.post_stages import mark
from api.app.preferences import (
    Effective,
    Preferences,
    models_chosen,
    overlay,
    stored_preferences,
    user_may_choose,
)
from api.app.preferences import run_settings as make_run_settings
from api.app.read_through import ReadThrough
from api.app.turn_admission import NewTurn, admit, give_back, refuse_if_busy
from api.app.turn_publisher import PUBLISH_ONCE, TurnPublisher, publish_call
from api.app.webhook_requests import WebhookRequest, check_webhook, webhook_registration
from bus import fairshare, keys, tracing, wire
from bus.commands import AgentTask, Command, RunState, TraceContext, new_run_id
from bus.errors import StoreError
from bus.run_state import Multitask, QuestionSettings, RunSettings
from bus.store import ConversationNotFound as NoSuchConversation
from bus.store import Scope
from bus.store.turn_types import TurnState
from bus.typed_redis import lua
from retrieval.gather_source import DOCUMENTS
from retrieval.graph.source import GRAPH

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from api.settings import ApiSettings
    from bus.settings import BusSettings
    from bus.store import ConversationStore, DocumentStore, MemoryStore, TenantSettingsStore


@dataclass(frozen=True, slots=True)
class Ask:
    """A question to start a run with."""

    question: str
    conversation_id: str | None = None
    settings: QuestionSettings = field(default_factory=QuestionSettings)
    run_id: str | None = None
    reply_to: str | None = None
    webhook: WebhookRequest | None = None
    trace: TraceContext | None = None
    """The caller's W3C trace context: the run's trace continues it."""
    sources: list[str] | None = None
    """``agentbus ask --sources``: the run's retrieval sources (None: the tenant's, else
    those that exist). Over the API they come from the tenant's settings only."""
    human_gate: bool = False
    """``agentbus ask --human-gate``: approve this run's answer (the API: tenant settings)."""
    priority: fairshare.Priority = "interactive"
    """Batch work (``runs.questions``) is admitted after interactive runs (`bus.fairshare`)."""
    parent_message_id: int | None = None
    """The message the question follows, to branch the conversation there (an edited
    question, another answer): an answer of the conversation, or 0 for its start. None:
    the end of the active branch."""


@dataclass(frozen=True, slots=True)
class Started:
    """A run that was published (or had been, for a retry)."""

    run_id: str
    conversation_id: str
    shard: int
    replayed: bool = False
    queued: bool = False
    """It waits for the conversation's running run to end (``multitask``)."""
    ahead: int = 0
    """How many runs of the conversation run or wait before it."""


class RunStarter:
    """Admits and publishes runs for authenticated callers.

    Args:
        redis: the shared Redis client.
        settings: the API's settings (question size, idempotency, cache time).
        bus: the bus's settings (shards, stream cap, key lifetime).
        defaults: the deployment's run settings, before any tenant preference.
        tenant_settings: the tenants' stored preferences.
        limits: the per-tenant rate limit and concurrent-run quota.
        conversations: the conversations, to refuse another user's conversation id.
        models: the models runs may choose (``AGENTBUS_LLM_MODELS``; empty: no choice).
        documents: the document catalogue (a tenant with documents gathers from them).
        graph: the knowledge graph is on (a tenant with documents gathers from it too).
        webhook_private_hosts: hosts the deployment lets webhooks reach on private
            addresses (``AGENTBUS_WEBHOOK_PRIVATE_HOSTS``, a gateway setting).
        turns: publishes runs in their conversation's turn (None: no ``multitask``
            policy; every run is published at once).
        memories: the users' long-term memories (a user with some gathers them).
    """

    def __init__(
        self,
        redis: Redis,
        settings: ApiSettings,
        bus: BusSettings,
        defaults: Effective,
        tenant_settings: TenantSettingsStore,
        limits: TenantLimits,
        conversations: ConversationStore,
        *,
        models: Sequence[str] = (),
        documents: DocumentStore | None = None,
        graph: bool = False,
        webhook_private_hosts: frozenset[str] = frozenset(),
        turns: TurnPublisher | None = None,
        memories: MemoryStore | None = None,
    ) -> None:
        self._redis = redis
        self._settings = settings
        self._bus = bus
        self._defaults = defaults
        self._tenant_settings = tenant_settings
        self._limits = limits
        self._conversations = conversations
        self._models = tuple(dict.fromkeys(models))
        self._documents = documents
        self._graph = graph
        self._webhook_private = webhook_private_hosts
        self.turns = turns
        self._publish = lua(redis, PUBLISH_ONCE)
        self._prefs: ReadThrough[Preferences | None] = ReadThrough(settings.api_key_cache_s)
        self._has_documents: ReadThrough[bool] = ReadThrough(settings.api_key_cache_s)
        self._memories = memories
        self._has_memory: ReadThrough[bool] = ReadThrough(settings.api_key_cache_s)

    async def effective(self, tenant_id: str) -> Effective:
        """The tenant's settings after the overlay (cached for ``api_key_cache_s``)."""
        prefs = await self._prefs.get(tenant_id, lambda: self._read_prefs(tenant_id))
        return overlay(self._defaults, prefs)

    async def _read_prefs(self, tenant_id: str) -> tuple[Preferences | None, bool]:
        record = await self._tenant_settings.get(tenant_id)
        return (None if record is None else stored_preferences(record.settings)), True

    def forget(self, tenant_id: str) -> None:
        """Drop a tenant's cached preferences (after they changed here)."""
        self._prefs.forget(tenant_id)
        self._has_documents.forget(tenant_id)

    @property
    def models(self) -> tuple[str, ...]:
        """The models runs may choose, the default first."""
        return self._models

    def check_models(self, chosen: set[str]) -> None:
        """Refuse a model the deployment does not serve.

        Raises:
            ModelNotAllowed: a model outside ``AGENTBUS_LLM_MODELS``.
        """
        refused = sorted(chosen - set(self._models))
        if refused:
            served = ", ".join(self._models) or "none: this deployment offers no choice"
            raise ModelNotAllowed(
                f"model(s) {', '.join(refused)} not served here (served: {served})",
                field="settings.model",
            )

    async def _has_any_documents(self, tenant_id: str) -> bool:
        """Whether the tenant has ingested any document (cached per tenant)."""
        if self._documents is None:
            return False
        documents = self._documents

        async def read() -> tuple[bool, bool]:
            try:
                return bool(await documents.list(tenant_id, limit=1)), True
            except StoreError as e:
                raise Unavailable(f"cannot read the document catalogue: {e}") from e

        return await self._has_documents.get(tenant_id, read)

    async def _has_memories(self, who: Principal) -> bool:
        """Whether the user has any long-term memory (a yes is cached, a no is not: the
        first memory counts from the next run on)."""
        if self._memories is None:
            return False
        memories, owner = self._memories, Scope.user(who.tenant_id, who.subject)

        async def read() -> tuple[bool, bool]:
            try:
                found = await memories.count(owner) > 0
            except StoreError as e:
                raise Unavailable(f"cannot read the memories: {e}") from e
            return found, found

        return await self._has_memory.get(f"{who.tenant_id}\n{who.subject}", read)

    async def _single_context(self, who: Principal, effective: Effective) -> list[str]:
        """Single mode's context: the tenant's documents, searched before the first model
        call, unless the tenant turned it off or chose sources without documents; and the
        user's memories as notes, while the tenant has memory on."""
        found: list[str] = []
        chosen = effective.sources
        documents = effective.single_context and (chosen is None or DOCUMENTS in chosen)
        if documents and await self._has_any_documents(who.tenant_id):
            found.append(DOCUMENTS)
        if await self._memory_exists(who, effective):
            found.append(MEMORY)
        return found

    async def _memory_exists(self, who: Principal, effective: Effective) -> bool:
        """Whether the run gathers the user's memories (memory on, not left out of the
        tenant's sources, and the user has some)."""
        chosen = effective.sources
        if not effective.memory or (chosen is not None and MEMORY not in chosen):
            return False
        return await self._has_memories(who)

    async def _default_sources(
        self, who: Principal, effective: Effective, has_history: bool
    ) -> list[str]:
        """The sources that exist for a run whose tenant chose none (cached per tenant)."""
        found: list[str] = []
        if await self._has_any_documents(who.tenant_id):
            found.append(DOCUMENTS)
            if self._graph:  # the facts extracted from those documents
                found.append(GRAPH)
        if has_history or await self._memory_exists(who, effective):
            found.append(MEMORY)
        if effective.egress_enabled:
            found.append(WEB)
        return found

    async def start(
        self,
        who: Principal,
        ask: Ask,
        *,
        idempotency_key: str | None = None,
    ) -> Started:
        """Check limits and publish the run's intake command.

        The run carries the caller's ACL groups (``Command.groups``), which every
        retrieval of the run filters by.

        Raises:
            QuestionTooLarge, InvalidRequest: the question is unacceptable.
            ConversationNotFound: the conversation id is another user's or tenant's.
            ConversationBusy: the conversation has a run in flight and ``multitask`` is
                ``reject``.
            NotOwner: an admin named another user's conversation (it may read, not add).
            CriticalToolNotApproved: it asks for a CRITICAL tool its tenant did not approve.
            ModelNotAllowed: it (or its tenant) chose a model the deployment does not serve,
                or a user key chose one its tenant's admins did not allow (``user_models``).
            WebhookRefused: the webhook URL may not be used by this tenant.
            IdempotencyKeyReused: the key was used before for a different request.
            RateLimited, TooManyActiveRuns: a tenant limit says no (with Retry-After).
            Unavailable: Redis failed.
        """
        if len(ask.question) > self._settings.api_max_question_chars:
            raise QuestionTooLarge(
                f"the question has {len(ask.question)} characters; the limit is "
                f"{self._settings.api_max_question_chars}",
                field="question",
            )
        if not ask.question.strip():
            raise InvalidRequest("the question is empty", field="question")
        try:
            effective = await self.effective(who.tenant_id)
            self.check_models(models_chosen(effective, ask.settings))
            chosen = ask.settings.model
            if chosen and not who.is_admin and not user_may_choose(effective, chosen):
                raise ModelNotAllowed(
                    f"the model {chosen!r} is not one this tenant's users may choose",
                    field="settings.model",
                    hint="choose one of GET /api/v1/models, or ask an admin to allow it",
                )
            if ask.settings.approve_critical:
                await self._check_critical(who, ask.settings.approve_critical)
            if ask.webhook is not None:  # refused before any limit is spent on the run
                checked = check_webhook(effective, ask.webhook, self._webhook_private)
                ask = replace(ask, webhook=checked)
            mark("prefs")
            return await self._start(who, ask, idempotency_key)
        except RedisError as e:
            raise Unavailable(f"cannot reach Redis: {e}") from e

    async def _check_conversation(self, who: Principal, conversation_id: str) -> bool:
        """Refuse a conversation id the caller does not own; a free id starts a new one.

        Returns:
            Whether the conversation exists already (it has history).
        """
        try:
            found = await self._conversations.probe(who.scope, conversation_id)
        except NoSuchConversation as e:
            raise ConversationNotFound(f"no conversation {conversation_id!r}") from e
        except StoreError as e:
            raise Unavailable(f"cannot check the conversation: {e}") from e
        if found is not None and found.subject != who.subject:
            raise NotOwner(f"conversation {conversation_id!r} belongs to another user")
        return found is not None

    async def _check_parent(self, who: Principal, conversation_id: str, message_id: int) -> None:
        """Refuse a parent that is not an answer of the caller's conversation."""
        try:
            found = await self._conversations.message(who.scope, conversation_id, message_id)
        except StoreError as e:
            raise Unavailable(f"cannot read the conversation: {e}") from e
        if found is None or found.role != "assistant":
            raise InvalidRequest(
                f"message {message_id} is not an answer of conversation {conversation_id!r}",
                field="parent_message_id",
                hint="name an assistant message of GET /api/v1/conversations/{id}, or 0 for "
                "the conversation's start",
            )

    async def published(self, who: Principal, run_id: str) -> bool:
        """Whether the caller already published the run ``run_id``.

        For re-admitting an entry whose admission died after publishing: the run must not
        start twice, nor count against the tenant's rate a second time.
        """
        shard = keys.shard_of(run_id, self._bus.shards)
        try:
            owner = await self._redis.get(keys.run_owner(run_id, shard))
        except RedisError as e:
            raise Unavailable(f"cannot reach Redis: {e}") from e
        if isinstance(owner, bytes):
            owner = owner.decode()
        return owner == owner_value(who.tenant_id, who.subject)

    async def _check_critical(self, who: Principal, asked: list[str]) -> None:
        """Refuse a run that asks for CRITICAL tools its tenant's admin has not approved."""
        approved = set((await self.effective(who.tenant_id)).approved_critical_tools)
        missing = sorted(set(asked) - approved)
        if missing:
            raise CriticalToolNotApproved(
                f"tenant {who.tenant_id!r} has not approved the CRITICAL tool(s) "
                f"{', '.join(missing)}",
                field="settings.approve_critical",
            )

    async def _start(self, who: Principal, ask: Ask, idem: str | None) -> Started:
        run_id = ask.run_id or new_run_id()
        conversation_id = ask.conversation_id or new_run_id()
        idem_key = None
        if idem is not None:
            # Per user, not only per tenant: another user's retry must never find this run.
            digest = hashlib.sha256(f"{who.subject}\n{idem}".encode()).hexdigest()
            idem_key = keys.idempotency(who.tenant_id, digest)
            earlier = await self._claim(idem_key, ask, run_id, conversation_id)
            if earlier is not None:
                run_id, conversation_id = earlier
                return await self._publish_run(who, ask, run_id, conversation_id, replay=True)
        mark("idempotency")
        try:
            if self.turns is not None and ask.conversation_id is not None:
                # A `reject` to a busy conversation is refused before a rate token is spent.
                policy = ask.settings.multitask or (await self.effective(who.tenant_id)).multitask
                await refuse_if_busy(self.turns.turns, who.scope, ask.conversation_id, policy)
            verdict = await self._limits.check_rate(who.tenant_id)
            mark("rate")
            if not verdict.allowed:
                raise RateLimited(
                    f"tenant {who.tenant_id!r} may start {self._limits.per_minute} runs a minute",
                    retry_after=verdict.retry_after_s,
                )
            history = False
            if ask.conversation_id is not None:
                history = await self._check_conversation(who, ask.conversation_id)
                if ask.parent_message_id:
                    await self._check_parent(who, ask.conversation_id, ask.parent_message_id)
            elif ask.parent_message_id is not None:
                raise InvalidRequest(
                    "parent_message_id needs the conversation_id it belongs to",
                    field="parent_message_id",
                )
            mark("conversation")
            return await self._publish_run(
                who, ask, run_id, conversation_id, replay=False, history=history
            )
        except BaseException:
            if idem_key is not None:  # let a later retry with the same key try again
                await self._redis.delete(idem_key)
            raise

    async def _claim(
        self, idem_key: str, ask: Ask, run_id: str, conversation_id: str
    ) -> tuple[str, str] | None:
        """Claim the idempotency key for this run; an earlier claim's (run, conversation)."""
        fingerprint = _fingerprint(ask)
        value = json.dumps({"run": run_id, "conv": conversation_id, "fp": fingerprint})
        ttl = self._settings.api_idempotency_ttl_s
        if await self._redis.set(idem_key, value, nx=True, ex=ttl):
            return None
        raw = await self._redis.get(idem_key)
        if raw is None:  # expired between the two calls: claim it again
            return await self._claim(idem_key, ask, run_id, conversation_id)
        earlier = json.loads(raw)
        if earlier["fp"] != fingerprint:
            raise IdempotencyKeyReused("this Idempotency-Key was used for another request")
        return earlier["run"], earlier["conv"]

    async def _publish_run(
        self,
        who: Principal,
        ask: Ask,
        run_id: str,
        conversation_id: str,
        *,
        replay: bool,
        history: bool = False,
    ) -> Started:
        effective = await self.effective(who.tenant_id)
        settings = make_run_settings(effective, ask.settings)
        if ask.priority != settings.priority:
            settings = settings.model_copy(update={"priority": ask.priority})
        if ask.human_gate:
            settings = settings.model_copy(update={"human_gate": True})
        if ask.sources is not None:
            settings = settings.model_copy(update={"sources": list(ask.sources)})
        elif settings.mode == "single":
            found = await self._single_context(who, effective)
            settings = settings.model_copy(update={"sources": found})
        elif effective.sources is None:
            found = await self._default_sources(who, effective, history)
            settings = settings.model_copy(update={"sources": found})
        s = self._bus
        deadline = time.time() + effective.timeout_s
        verdict = await self._limits.acquire(who.tenant_id, run_id, deadline)
        if not verdict.allowed:
            raise TooManyActiveRuns(
                f"tenant {who.tenant_id!r} already has {self._limits.max_active} runs in flight",
                retry_after=verdict.retry_after_s,
            )
        mark("quota")
        shard = keys.shard_of(run_id, s.shards)
        attributes = {
            "agentbus.run_id": run_id,
            "agentbus.tenant_id": who.tenant_id,
            "agentbus.conversation_id": conversation_id,
        }
        # Inside a traced request already in the caller's trace (FastAPI's server span
        # continued its header) that span is the parent; otherwise (a websocket frame's or a
        # question's own trace) the caller's trace is continued directly.
        parent = None if _same_trace(tracing.current(), ask.trace) else ask.trace
        with tracing.span("run publish", attributes, parent=parent, kind="producer"):
            policy = ask.settings.multitask or effective.multitask
            started = await self._send(
                who,
                ask,
                run_id,
                conversation_id,
                settings,
                shard,
                deadline,
                replay,
                policy,
                weight=effective.weight,
            )
        mark("publish")
        return started

    async def _send(
        self,
        who: Principal,
        ask: Ask,
        run_id: str,
        conversation_id: str,
        settings: RunSettings,
        shard: int,
        deadline: float,
        replay: bool,
        policy: Multitask,
        weight: int = 1,
    ) -> Started:
        s = self._bus
        tracing.set_attributes({"agentbus.mode": settings.mode, "agentbus.replay": replay})
        command = Command(
            run_id=run_id,
            tenant_id=who.tenant_id,
            subject=who.subject,
            shard=shard,
            role=keys.Role.INTAKE,
            deadline=deadline,
            trace=tracing.current() or ask.trace or TraceContext(),
            reply_to=ask.reply_to,
            groups=who.groups,
            payload=AgentTask(
                state=RunState(
                    question=ask.question,
                    conversation_id=conversation_id,
                    parent_message_id=ask.parent_message_id,
                    settings=settings,
                    started_at=time.time(),
                )
            ),
        )
        run_keys = [keys.run_owner(run_id, shard), keys.role_stream(keys.Role.INTAKE, shard)]
        run_keys += keys.fair_keys(shard)
        args: list[str | int | float] = [owner_value(who.tenant_id, who.subject), s.run_ttl_s]
        args += [s.stream_maxlen, wire.encode(command), int(s.fair_share), who.tenant_id]
        args += [fairshare.LEVEL[settings.priority], run_id, deadline, weight]
        args += [s.fair_max_pending, time.time(), s.fair_depth, s.fair_inflight]
        if ask.webhook is not None:
            extra_keys, extra_args = webhook_registration(
                who, ask.webhook, run_id, shard, conversation_id
            )
            run_keys, args = [*run_keys, *extra_keys], [*args, *extra_args]
        admission = None
        if self.turns is not None:
            turn = NewTurn(
                Scope.user(who.tenant_id, who.subject),
                conversation_id,
                run_id,
                ask.question,
                publish_call(run_keys, args),
                settings.timeout_s or deadline - time.time(),
                settings.mode,
                ask.parent_message_id,
            )
            try:
                admission = await admit(self.turns, turn, policy, self._redis, self._bus)
            except ApiError:
                await self._limits.release(who.tenant_id, run_id)
                raise
            if admission.state == TurnState.QUEUED:
                await self._limits.release(who.tenant_id, run_id)  # it holds no slot waiting
                return Started(
                    run_id,
                    conversation_id,
                    shard,
                    replayed=replay or admission.replayed,
                    queued=True,
                    ahead=admission.ahead,
                )
        try:
            reply = await self._publish(keys=run_keys, args=args)
        except BaseException:
            if admission is not None and not admission.replayed:
                await give_back(self.turns, who.scope, run_id)
            raise
        outcome = int(reply[0])
        if outcome < 0:
            await self._limits.release(who.tenant_id, run_id)
            if admission is not None and not admission.replayed:
                await give_back(self.turns, who.scope, run_id)
        if outcome == -2:
            waiting, room = int(reply[1]), int(reply[2])
            raise TenantQueueFull(
                f"tenant {who.tenant_id!r} has {waiting} runs waiting on this shard",
                retry_after=fairshare.retry_after_s(waiting, room),
            )
        if outcome < 0:
            raise InvalidRequest(f"run id {run_id!r} is taken", field="run_id")
        if outcome > 0:
            metrics.RUNS_BY_MODE.labels(settings.mode).inc()
        return Started(run_id, conversation_id, shard, replayed=replay or outcome == 0)


def _same_trace(current: TraceContext | None, caller: TraceContext | None) -> bool:
    if current is None or not current.traceparent:
        return False
    if caller is None or not caller.traceparent:
        return True
    return current.traceparent.split("-")[1] == caller.traceparent.split("-")[1]


def _fingerprint(ask: Ask) -> str:
    doc: dict[str, object] = {
        "q": ask.question,
        "c": ask.conversation_id,
        "s": ask.settings.model_dump(),
        "r": ask.reply_to,
    }
    if ask.webhook is not None:  # only then: earlier keys' fingerprints stay as they were
        doc["w"] = [ask.webhook.url, ask.webhook.approvals]
    if ask.parent_message_id is not None:
        doc["p"] = ask.parent_message_id
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]
