"""What the HTTP edge is given: the use cases the composition root (``api.compose.edge``) built."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from api.app.access import RunAccess
    from api.app.audit_reads import AuditReads
    from api.app.auth import Authenticator
    from api.app.completions import Completions
    from api.app.conversations import Conversations
    from api.app.doc_search import DocSearch
    from api.app.documents import Documents
    from api.app.erasure import Erasure
    from api.app.gate_actions import Gates
    from api.app.joins import Joins
    from api.app.keys import KeyBook
    from api.app.memories import MemoryBook
    from api.app.ports import (
        CancelRun,
        Prepare,
        RunEvents,
        SessionStore,
    )
    from api.app.preferences import Effective
    from api.app.readiness import Readiness
    from api.app.run_follow import RunFollower
    from api.app.scheduler import Scheduler
    from api.app.schedules import ScheduleBook
    from api.app.starter import RunStarter
    from api.app.teams import TeamBook
    from api.app.tenant_settings import SettingsBook
    from api.app.usage import Usage
    from api.app.webhook_secrets import WebhookSecrets
    from api.settings import ApiSettings
    from gateway.webhooks.push_configs import PushConfigs
    from gateway.webhooks.schedule import Schedule


@dataclass(frozen=True, kw_only=True)
class UseCases:
    """The use cases the composition root built for the HTTP edge, each with the few
    services it uses (no module globals). A route takes the ones it calls, one FastAPI
    dependency each (``routes.common.use_case``); the MCP and A2A servers pick theirs
    (``McpUses``, ``A2aUses``).

    Attributes:
        settings: the API's settings.
        broker_url: the Redis URL of the bus (the AsyncAPI document names its host).
        run_ttl_s: how long a run's state is kept (an MCP task's time to live).
        defaults: the deployment's run settings, before any tenant preference.
        readiness: whether the broker and the state store answer.
        prepare_streams: creates every role's consumer group before the first run starts.
        completions: a chat completion's conversation and outcome (the OpenAI dialect).
        conversation_book: the conversations' use cases (``/api/v1/conversations``).
        keys: the tenants' API keys, as their admins manage them (``/keys``).
        tenant_settings: the tenants' settings, read and written (``/settings``,
            ``/agents/config``).
        auth: turns API keys into principals.
        starter: admits and publishes runs.
        relay: the process's shared reader of run event streams (the run feed).
        cancel: asks a run to stop.
        usage: what callers spent on models, and their limits.
        access: which runs a caller may see or change.
        joins: a client (re)joining a run's events.
        follower: follows a run's events in-process.
        gates: resumes paused runs.
        doc_search: searches the caller's documents outside a run (the MCP server's tool).
        sessions: the web page's login tokens and sessions.
        audit_reads: the audit log as the API reads it (``/audit``, the web page's Activity).
        signing_master: what keys' signing secrets derive from (``api.signing``).
        documents: the uploaded documents' use cases (the web page's Documents panel).
        webhook_secrets: the tenants' webhook signing secrets (read, rotated).
        webhooks: the webhook delivery schedule (``GET /runs/{id}/deliveries`` reads it).
        push_configs: A2A tasks' push notification configs (None: A2A offers no push).
        schedules: the scheduled questions' use cases (``/api/v1/schedules``).
        scheduler: starts the scheduled questions' runs (every replica runs it).
        erasure: erases a user's data (``DELETE /api/v1/users/{subject}``, ``/api/v1/me``).
        memories: the users' long-term memories' use cases (``/api/v1/memories``).
        teams: the tenants' teams' use cases (``/api/v1/teams``).
        server_tools: the names of the gateway's own tools (built-ins, document search,
            plugins): a tool a client declares may not take one.
    """

    settings: ApiSettings
    broker_url: str | None
    run_ttl_s: int
    defaults: Effective
    readiness: Readiness
    prepare_streams: Prepare
    documents: Documents
    completions: Completions
    conversation_book: Conversations
    keys: KeyBook
    tenant_settings: SettingsBook
    auth: Authenticator
    starter: RunStarter
    relay: RunEvents
    cancel: CancelRun
    usage: Usage
    access: RunAccess
    joins: Joins
    follower: RunFollower
    gates: Gates
    doc_search: DocSearch
    sessions: SessionStore
    audit_reads: AuditReads
    signing_master: bytes | None = None
    webhook_secrets: WebhookSecrets | None = None
    webhooks: Schedule | None = None
    push_configs: PushConfigs | None = None
    schedules: ScheduleBook | None = None
    scheduler: Scheduler | None = None
    erasure: Erasure | None = None
    memories: MemoryBook | None = None
    teams: TeamBook | None = None
    server_tools: frozenset[str] = frozenset()
