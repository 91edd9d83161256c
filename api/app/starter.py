"""Starting a run: limits, idempotency, the settings overlay, and publishing it exactly once.

Every entry point (``POST /runs``, the websocket ``ask``, externally published questions)
goes through :class:`RunStarter`. A run is published exactly once (`api.app.ports.RunPublishing`)
with its owner (tenant and user) and its intake command queued for fair admission together
(a full tenant queue is 429 ``tenant_queue_full``): publishing the same run id
again (a client retry with the same ``Idempotency-Key``, a redelivered ``runs.questions``
entry) is a no-op, and a retry after a crash between claiming a key and publishing still
publishes. A ``conversation_id`` must be free or the caller's own: another user's or
tenant's is refused (404 ``conversation_not_found``) before anything is claimed or sent.

A caller whose cached key's tenant version was not read for this request
(``Principal.version_pending``, ``POST /runs``) costs no round trip for it: a question
that starts a new conversation is published with a check of the version in the same step
(`api.app.run_publish`); if it moved, the key is checked again and the start runs again
with it (its rate token not spent twice). Any other question checks it first.

With the conversation turns wired in (`api.app.turn_publisher`), a run is admitted into its
conversation first (`bus.store.turns`): it is published now if nothing else of the
conversation runs, and otherwise the question's ``multitask`` policy decides (queued behind
the running run, 409 ``conversation_busy``, or the running run cancelled). A question
that starts a conversation is its first turn, written with the run by its publication
(`PreparedRun.publish`): the conversation's id is drawn on the run's shard for that.

The parts are modules of their own: what a start takes and gives (`api.app.ask`), the
idempotency key (`api.app.idempotency`), the conversation a question names
(`api.app.conversation_checks`), the sources a run gathers from (`api.app.run_sources`),
and the publish itself (`api.app.run_publish`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from api.app.access import owner_value
from api.app.ask import Ask, RunToPublish, Started
from api.app.auth import Principal
from api.app.conversation_checks import check_parent, owned_conversation
from api.app.errors import (
    CriticalToolNotApproved,
    InvalidRequest,
    ModelNotAllowed,
    QuestionTooLarge,
    RateLimited,
    TooManyActiveRuns,
    Unavailable,
)
from api.app.idempotency import claim, idempotency_digest
from api.app.ports import Verdict
from api.app.post_stages import mark
from api.app.preferences import (
    Effective,
    Preferences,
    check_user_model,
    models_chosen,
    overlay,
    stored_preferences,
)
from api.app.preferences import run_settings as make_run_settings
from api.app.read_through import ReadThrough
from api.app.run_publish import RunPublisher, VersionMoved, same_trace
from api.app.run_sources import RunSources
from api.app.team_runs import built_in, following, pin, sources_for
from api.app.team_runs import deadline as run_deadline
from api.app.turn_admission import refuse_if_busy
from api.app.turn_publisher import TurnPublisher
from api.app.webhook_requests import WebhookRequest, check_webhook
from bus import tracing
from bus.commands import new_run_id

#: The rate verdict of a start that runs again after one that spent its token.
RATED = Verdict(allowed=True)

if TYPE_CHECKING:
    from api.app.ports import (
        CancelRun,
        IdempotencyClaims,
        MemoryMarks,
        RateLimits,
        RunPublishing,
        TransportErrors,
    )
    from api.app.teams import TeamBook
    from api.settings import ApiSettings
    from bus.store import ConversationStore, DocumentStore, MemoryStore, TenantSettingsStore

__all__ = ["Ask", "RunStarter", "Started"]


class RunStarter:
    """Admits and publishes runs for authenticated callers.

    Args:
        claims: the idempotency keys' claims.
        settings: the API's settings (question size, idempotency, cache time).
        publishing: publishes runs exactly once, each on its shard with its owner.
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
        memory_marks: whether a user has memories, known without a count.
        verify: checks a principal's pending tenant version (`Authenticator.verified`;
            None: no principal of this starter has one pending).
        version_copy: raises a shard's copy of a tenant's settings version to one read
            from the version itself (`bus.tenant_versions.raise_copy`).
        cancel: asks a run to stop (a question that interrupts or rolls it back).
        transport_errors: what the ports raise when Redis fails (each is ``Unavailable``).
        teams: the tenants' teams, for a question that names one (None: no teams store).
    """

    def __init__(
        self,
        claims: IdempotencyClaims,
        settings: ApiSettings,
        publishing: RunPublishing,
        defaults: Effective,
        tenant_settings: TenantSettingsStore,
        limits: RateLimits,
        conversations: ConversationStore,
        *,
        models: Sequence[str] = (),
        documents: DocumentStore | None = None,
        graph: bool = False,
        webhook_private_hosts: frozenset[str] = frozenset(),
        turns: TurnPublisher | None = None,
        memories: MemoryStore | None = None,
        memory_marks: MemoryMarks | None = None,
        verify: Callable[[Principal], Awaitable[Principal]] | None = None,
        version_copy: Callable[[str, int, int], Awaitable[None]] | None = None,
        cancel: CancelRun,
        transport_errors: TransportErrors,
        teams: TeamBook | None = None,
    ) -> None:
        self._claims = claims
        self._transport_errors = transport_errors
        self._settings = settings
        self._publishing = publishing
        self._defaults = defaults
        self._tenant_settings = tenant_settings
        self._limits = limits
        self._conversations = conversations
        self._models = tuple(dict.fromkeys(models))
        self._webhook_private = webhook_private_hosts
        self.turns = turns
        self._publisher = RunPublisher(publishing, cancel, limits, turns)
        self._verify = verify
        self._version_copy = version_copy
        self._prefs: ReadThrough[Preferences | None] = ReadThrough(settings.api_key_cache_s)
        self._teams = teams
        self._sources = RunSources(
            documents, memories, graph=graph, cache_s=settings.api_key_cache_s, marks=memory_marks
        )

    async def effective(self, tenant_id: str, version: int | None = None) -> Effective:
        """The tenant's settings after the overlay.

        With ``version`` (the tenant's settings version a request's key check read,
        `Principal.settings_version`), cached beside it: a settings change in any process
        bumps it before its PUT returns, so the next run starts with the new settings.
        Without, cached for ``api_key_cache_s``.
        """
        key = tenant_id if version is None else f"{tenant_id}\n{version}"
        prefs = await self._prefs.get(key, lambda: self._read_prefs(tenant_id))
        return overlay(self._defaults, prefs)

    async def _read_prefs(self, tenant_id: str) -> tuple[Preferences | None, bool]:
        record = await self._tenant_settings.get(tenant_id)
        return (None if record is None else stored_preferences(record.settings)), True

    def forget(self, tenant_id: str) -> None:
        """Drop a tenant's cached preferences (after they changed here): every tenant's,
        as kept beside a version too (a change is rare; each tenant reads its own again)."""
        self._prefs.forget(tenant_id)  # and its read in flight
        self._prefs.clear()
        self._sources.forget(tenant_id)

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
            TeamNotFound: it names a team its tenant does not have.
            TeamNotRunnable: it names a team a run cannot follow yet.
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
            if who.version_pending and not _checked_at_publish(ask, idempotency_key):
                who = await self._verified(who)
            effective = await self.effective(who.tenant_id, who.settings_version)
            self.check_models(models_chosen(effective, ask.settings))
            check_user_model(effective, ask.settings.model, is_admin=who.is_admin)
            if ask.settings.approve_critical:
                await self._check_critical(who, ask.settings.approve_critical)
            if ask.settings.team is not None:  # pinned now: an edit never changes the run
                ask = replace(ask, settings=built_in(ask.settings))
                if ask.settings.team is not None:
                    team = await pin(self._teams, who.tenant_id, ask.settings.team)
                    ask = replace(ask, team=team)
            if ask.webhook is not None:  # refused before any limit is spent on the run
                checked = check_webhook(effective, ask.webhook, self._webhook_private)
                ask = replace(ask, webhook=checked)
            mark("prefs")
            try:
                return await self._start(who, ask, idempotency_key)
            except VersionMoved as moved:  # nothing was published: check the key, go again
                who = await self._verified(who)
                if self._version_copy is not None and who.settings_version is not None:
                    await self._version_copy(moved.tenant_id, moved.shard, who.settings_version)
                return await self._start(who, ask, idempotency_key, rated=True)
        except self._transport_errors as e:
            raise Unavailable(f"cannot reach Redis: {e}") from e

    async def _verified(self, who: Principal) -> Principal:
        """``who`` with its tenant version checked now (Unauthorized: the key is gone)."""
        if self._verify is None:
            raise RuntimeError("a principal with its tenant version pending needs `verify`")
        return await self._verify(who)

    async def webhook_url(self, tenant_id: str, url: str) -> str:
        """``url`` normalised, if the tenant's webhooks may go there (an A2A push config).

        Raises:
            WebhookRefused: the tenant's egress path may not reach it.
        """
        effective = await self.effective(tenant_id)
        return check_webhook(effective, WebhookRequest(url), self._webhook_private).url

    async def published(self, who: Principal, run_id: str) -> bool:
        """Whether the caller already published the run ``run_id``.

        For re-admitting an entry whose admission died after publishing: the run must not
        start twice, nor count against the tenant's rate a second time.
        """
        try:
            owner = await self._publishing.owner(run_id)
        except self._transport_errors as e:
            raise Unavailable(f"cannot reach Redis: {e}") from e
        return owner == owner_value(who.tenant_id, who.subject)

    async def _check_critical(self, who: Principal, asked: list[str]) -> None:
        """Refuse a run that asks for CRITICAL tools its tenant's admin has not approved."""
        effective = await self.effective(who.tenant_id, who.settings_version)
        approved = set(effective.approved_critical_tools)
        missing = sorted(set(asked) - approved)
        if missing:
            raise CriticalToolNotApproved(
                f"tenant {who.tenant_id!r} has not approved the CRITICAL tool(s) "
                f"{', '.join(missing)}",
                field="settings.approve_critical",
            )

    async def _start(
        self, who: Principal, ask: Ask, idem: str | None, *, rated: bool = False
    ) -> Started:
        """Claim the idempotency key, check the rate (unless ``rated``: this request's token
        was spent by a start that published nothing) and the conversation, publish."""
        run_id = ask.run_id or new_run_id()
        conversation_id = ask.conversation_id or self._new_conversation_id(run_id)
        digest = None
        if idem is not None:
            digest = idempotency_digest(who, idem)
            ttl = self._settings.api_idempotency_ttl_s
            earlier = await claim(
                self._claims, who.tenant_id, digest, ask, run_id, conversation_id, ttl
            )
            if earlier is not None:
                run_id, conversation_id = earlier
                return await self._publish_run(who, ask, run_id, conversation_id, replay=True)
        mark("idempotency")
        try:
            if self.turns is not None and ask.conversation_id is not None:
                # A `reject` to a busy conversation is refused before a rate token is spent.
                chosen = await self.effective(who.tenant_id, who.settings_version)
                policy = ask.settings.multitask or chosen.multitask
                await refuse_if_busy(self.turns, who.scope, ask.conversation_id, policy)
            verdict = RATED if rated else await self._limits.check_rate(who.tenant_id)
            mark("rate")
            if not verdict.allowed:
                raise RateLimited(
                    f"tenant {who.tenant_id!r} may start {self._limits.per_minute} runs a minute",
                    retry_after=verdict.retry_after_s,
                )
            history = False
            if ask.conversation_id is not None:
                history = await owned_conversation(self._conversations, who, ask.conversation_id)
                if ask.parent_message_id:
                    await check_parent(
                        self._conversations, who, ask.conversation_id, ask.parent_message_id
                    )
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
            if digest is not None:  # let a later retry with the same key try again
                await self._claims.drop(who.tenant_id, digest)
            raise

    def _new_conversation_id(self, run_id: str) -> str:
        """A new conversation's id, on its first run's shard: the run's publish writes the
        conversation's first turn with it (`PreparedRun.publish`)."""
        shard_of = self._publishing.shard_of
        shard = shard_of(run_id)
        while shard_of(conversation_id := new_run_id()) != shard:
            pass
        return conversation_id

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
        effective = await self.effective(who.tenant_id, who.settings_version)
        settings = make_run_settings(effective, ask.settings)
        if ask.priority != settings.priority:
            settings = settings.model_copy(update={"priority": ask.priority})
        if ask.human_gate:
            settings = settings.model_copy(update={"human_gate": True})
        if ask.answer_schema is not None:
            settings = settings.model_copy(update={"answer_schema": ask.answer_schema})
        if ask.client_tools:
            settings = settings.model_copy(
                update={
                    "client_tools": list(ask.client_tools),
                    "client_tool_required": ask.tool_required,
                }
            )
        if ask.team is not None:
            settings = following(settings, ask.team)
        if ask.sources is not None:
            settings = settings.model_copy(update={"sources": list(ask.sources)})
        elif settings.mode == "single":
            found = await self._sources.single_context(who, effective)
            settings = settings.model_copy(update={"sources": found})
        elif effective.sources is None:
            found = await self._sources.default_sources(who, effective, history)
            if ask.team is not None:  # its first agent's sources, decided with its version
                found = sources_for(ask.team, found)
            settings = settings.model_copy(update={"sources": found})
        deadline = run_deadline(time.time(), effective.timeout_s, ask.team)
        verdict = await self._limits.acquire(who.tenant_id, run_id, deadline)
        if not verdict.allowed:
            raise TooManyActiveRuns(
                f"tenant {who.tenant_id!r} already has {self._limits.max_active} runs in flight",
                retry_after=verdict.retry_after_s,
            )
        mark("quota")
        shard = self._publishing.shard_of(run_id)
        attributes = {
            "agentbus.run_id": run_id,
            "agentbus.tenant_id": who.tenant_id,
            "agentbus.conversation_id": conversation_id,
        }
        # Inside a traced request already in the caller's trace (FastAPI's server span
        # continued its header) that span is the parent; otherwise (a websocket frame's or a
        # question's own trace) the caller's trace is continued directly.
        parent = None if same_trace(tracing.current(), ask.trace) else ask.trace
        with tracing.span("run publish", attributes, parent=parent, kind="producer"):
            policy = ask.settings.multitask or effective.multitask
            run = RunToPublish(
                who,
                ask,
                run_id,
                conversation_id,
                settings,
                shard,
                deadline,
                effective.weight,
                version=who.settings_version if who.version_pending else None,
            )
            started = await self._publisher.send(run, replay, policy)
        mark("publish")
        return started


def _checked_at_publish(ask: Ask, idempotency_key: str | None) -> bool:
    """Whether a pending tenant version can wait for the publish script: the run and its
    conversation are drawn now and no key is claimed, so nothing is written before it (a
    named conversation may queue the run, and a replay publishes nothing new)."""
    return ask.conversation_id is None and ask.run_id is None and idempotency_key is None
