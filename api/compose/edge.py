"""The HTTP edge of a process: its dependencies wired from the stores, then served.

``agentbus api`` runs :func:`run_edge`; ``agentbus up`` starts ``agentbus api`` as a child
process (``edge_process``).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable

from redis.asyncio import Redis

from agents.gates import AllowAlways
from api import signing
from api.app.access import RunAccess
from api.app.audit_reads import AuditReads
from api.app.completions import Completions
from api.app.conversations import Conversations
from api.app.doc_search import SEARCH_WAIT_S, DocSearch
from api.app.documents import Documents
from api.app.gate_actions import Gates
from api.app.joins import Joins
from api.app.keys import KeyBook
from api.app.memories import MemoryBook
from api.app.readiness import Readiness
from api.app.run_follow import RunFollower
from api.app.sessions import SessionAuthenticator
from api.app.tenant_settings import SettingsBook
from api.app.usage import Usage
from api.app.webhook_secrets import WebhookSecrets
from api.compose.erasure import erasure_of
from api.compose.resumes import BusResumes
from api.compose.schedules import schedule_book, scheduler_of
from api.compose.settings import AppSettings
from api.compose.starter import defaults_of as defaults_of  # re-exported: the API's wiring
from api.compose.starter import limits_of, make_starter
from api.compose.teams import team_book
from api.compose.tool_names import server_tool_names
from api.compose.uploads import RetrievalUploads
from api.http.app import create_app
from api.http.server import GRACEFUL_S, serve
from api.http.use_cases import UseCases
from api.streams.admission import QuestionAdmission
from api.streams.ingest_jobs import RedisIngestJobs
from api.streams.relay import Relay
from api.streams.run_owner import run_owner_of
from api.streams.session_store import RedisSessionStore
from bus import tenant_versions
from bus.budget import BudgetLedger
from bus.fence import Fence, erasure_key
from bus.publish import request_cancel
from bus.runtime.groups import ensure_role_groups
from bus.store import AuditEntry, Scope, Stores
from bus.typed_redis import commands
from gateway.tools.search_docs import over_the_bus
from gateway.webhooks.push_configs import PushConfigs
from gateway.webhooks.worker import schedule_for
from retrieval.remote import RemoteSearch


def make_use_cases(app_settings: AppSettings, redis: Redis, stores: Stores) -> UseCases:
    """Wire the API's dependencies from a Redis client and the store's repositories."""
    settings, bus = app_settings.api, app_settings.bus
    master = signing.master_key(settings.signing_key, bus.data_dir)
    defaults = defaults_of(app_settings)
    limits = limits_of(app_settings, redis)
    sessions = RedisSessionStore(redis)
    auth = SessionAuthenticator(
        stores.keys,
        sessions,
        cache_s=settings.api_key_cache_s,
        signing_master=master,
        version=functools.partial(tenant_versions.current, redis),
    )
    starter = make_starter(app_settings, redis, stores, limits, verify=auth.verified)
    # Every process caching a tenant's policy reads this version before using it.
    stores.tenant_settings.on_change(
        functools.partial(tenant_versions.bump, redis, shards=bus.shards)
    )
    relay = Relay(redis, shards=bus.shards, block_ms=settings.relay_block_ms)
    resumes = (
        None
        if stores.checkpoints is None
        else BusResumes(stores.checkpoints, stores.runs, redis, bus, allow_always_hook(stores))
    )
    access = RunAccess(
        shard_of=relay.shard_of, run_owner=run_owner_of(redis), runs=stores.runs, audit=stores.audit
    )
    follower = RunFollower(events=relay, buffer_events=settings.ws_buffer_events)
    return UseCases(
        settings=settings,
        broker_url=bus.redis_url,
        run_ttl_s=bus.run_ttl_s,
        defaults=defaults,
        readiness=Readiness(
            broker=commands(redis).ping,
            # Any tenant-scoped read touches the database; this id cannot exist.
            store=functools.partial(stores.runs.get, Scope.user("-", "-"), "-"),
        ),
        prepare_streams=functools.partial(ensure_role_groups, redis, bus.shards),
        completions=Completions(stores.conversations, follower),
        conversation_book=Conversations(
            store=stores.conversations,
            summaries=stores.summaries,
            turns=starter.turns,
            audit=stores.audit,
        ),
        tenant_settings=SettingsBook(stores.tenant_settings, defaults),
        auth=auth,
        keys=KeyBook(
            stores.keys,
            forget=auth.forget,
            erased_lately=functools.partial(Fence(erasure_key(master)).holds, redis, shard=0),
            signing_master=master,
            changed=functools.partial(tenant_versions.bump, redis, shards=bus.shards),
        ),
        starter=starter,
        relay=relay,
        cancel=functools.partial(request_cancel, redis, settings=bus),
        usage=Usage(ledgers=functools.partial(BudgetLedger, redis), effective=starter.effective),
        access=access,
        joins=Joins(
            access=access, events=relay, run_ttl_s=bus.run_ttl_s, events_ttl_s=bus.events_ttl_s
        ),
        follower=follower,
        gates=Gates(resumes=resumes, checkpoints=stores.checkpoints, audit=stores.audit),
        doc_search=DocSearch(over_the_bus(RemoteSearch(redis, bus), SEARCH_WAIT_S)),
        sessions=sessions,
        audit_reads=AuditReads(stores.audit, stores.conversations),
        signing_master=master,
        documents=Documents(
            catalogue=stores.documents,
            jobs=RedisIngestJobs(redis, bus),
            uploads=RetrievalUploads(app_settings.retrieval, bus.max_message_bytes),
            changed=functools.partial(tenant_versions.bump, redis, shards=bus.shards),
        ),
        webhook_secrets=(
            None if stores.webhook_secrets is None else WebhookSecrets(stores.webhook_secrets)
        ),
        webhooks=schedule_for(redis, app_settings.gateway, bus),
        push_configs=(
            PushConfigs(redis, ttl_s=bus.run_ttl_s) if settings.a2a_push_notifications else None
        ),
        schedules=schedule_book(app_settings, stores, starter),
        scheduler=scheduler_of(app_settings, stores, starter),
        erasure=erasure_of(app_settings, stores, redis),
        memories=None if stores.memories is None else MemoryBook(stores.memories),
        teams=team_book(app_settings, stores),
        server_tools=server_tool_names(app_settings.gateway),
    )


def allow_always_hook(stores: Stores) -> AllowAlways:
    """``egress_allow_always``: add the host to the tenant's allowlist, enable egress, audit.

    The allowlist and its audit row are written in one transaction.
    """

    async def persist(tenant_id: str, subject: str, run_id: str, host: str) -> None:
        record = await stores.tenant_settings.get(tenant_id)
        prefs = dict(record.settings) if record else {}
        prefs["egress_hosts"] = sorted({*(prefs.get("egress_hosts") or []), host})
        prefs["egress_enabled"] = True
        audit = [
            AuditEntry(
                tenant_id=tenant_id,
                subject=subject,
                run_id=run_id,
                agent="egress_gate",
                call_id=f"allow_always:{host}",
                tool="egress_allowlist",
                args={"host": host},
                status="ok",
                code="allow_always",
                message=f"{host} added to the tenant's egress allowlist",
                duration_ms=0.0,
            )
        ]
        await stores.tenant_settings.put(tenant_id, prefs, updated_by=subject, audit=audit)

    return persist


def question_admission(
    settings: AppSettings, redis: Redis, deps: UseCases, *, consumer: str | None = None
) -> QuestionAdmission:
    """The admission of ``runs.questions``, with the API's authenticator and run starter."""
    return QuestionAdmission(
        redis,
        auth=deps.auth,
        starter=deps.starter,
        api=settings.api,
        bus=settings.bus,
        consumer=consumer,
    )


async def run_edge(
    settings: AppSettings,
    redis: Redis,
    stores: Stores,
    stop_event: asyncio.Event,
    *,
    host: str | None = None,
    port: int | None = None,
    admission: bool = True,
    on_started: Callable[[int], None] | None = None,
) -> None:
    """The API and (optionally) the admission of ``runs.questions``, until ``stop_event``.

    This is what ``agentbus api`` runs, and what ``agentbus up`` can run beside its workers.
    """
    deps = make_use_cases(settings, redis, stores)
    app = create_app(deps)
    consumer = question_admission(settings, redis, deps) if admission else None
    tasks: list[asyncio.Task[None]] = [
        asyncio.create_task(
            serve(
                app,
                host or settings.api.api_host,
                settings.api.api_port if port is None else port,
                stop_event,
                ws_max_bytes=settings.api.ws_max_frame_bytes,
                on_started=on_started,
            )
        )
    ]
    if consumer is not None:
        tasks.append(asyncio.create_task(consumer.run()))
    stopper = asyncio.create_task(stop_event.wait())
    try:
        # Either a stop request, or a part ending on its own (e.g. the port was taken).
        await asyncio.wait({stopper, *tasks}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if consumer is not None:
            consumer.stop()
        stop_event.set()
        await asyncio.wait(tasks, timeout=GRACEFUL_S + 10)
        for task in [*tasks, stopper]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.gather(stopper, return_exceptions=True)
    for task in tasks:
        if not task.cancelled() and (error := task.exception()) is not None:
            raise error
