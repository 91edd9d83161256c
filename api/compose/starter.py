"""How runs start, wired from the settings: the deployment's defaults, the tenant limits and
the one `RunStarter` the API, the websocket and ``agentbus ask`` share.

Kept apart from the edge's wiring (`api.compose.edge`), so the CLI can start a run
without importing the HTTP app.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

from redis.asyncio import Redis
from redis.exceptions import RedisError

from api.app.auth import Principal
from api.app.preferences import Effective, deployment_defaults
from api.app.starter import RunStarter
from api.app.turn_publisher import TurnPublisher
from api.compose.settings import AppSettings
from api.compose.teams import team_book
from api.streams.idempotency_claims import RedisIdempotencyClaims
from api.streams.limits import TenantLimits
from api.streams.memory_marks import RedisMemoryMarks
from api.streams.run_publishing import RedisRunPublishing
from bus import tenant_versions
from bus.publish import request_cancel
from bus.store import Stores
from gateway.webhooks.target import private_hosts


def defaults_of(settings: AppSettings) -> Effective:
    """The deployment's run settings, gathered from the packages that own them."""
    agents = settings.agents
    return deployment_defaults(
        model=agents.default_model(),
        egress_enabled=settings.gateway.egress_enabled,
        allowed_egress_hosts=settings.gateway.allowed_egress_hosts,
        timeout_s=settings.bus.run_deadline_s,
        human_gate=agents.agent_human_gate,
        mode=agents.agent_mode,
        accuracy=agents.agent_accuracy,
        verifier_check=agents.verifier_check,
        max_tool_hops=agents.agent_max_tool_hops,
        approve_high_risk=agents.approve_high_risk,
    )


def limits_of(app_settings: AppSettings, redis: Redis) -> TenantLimits:
    """The per-tenant rate limit and concurrent-run quota."""
    settings = app_settings.api
    return TenantLimits(
        redis,
        per_minute=settings.api_rate_per_minute,
        burst=settings.api_rate_burst,
        max_active=settings.api_max_active_runs,
    )


def make_starter(
    app_settings: AppSettings,
    redis: Redis,
    stores: Stores,
    limits: TenantLimits | None = None,
    *,
    verify: Callable[[Principal], Awaitable[Principal]] | None = None,
) -> RunStarter:
    """The one way runs start: the API's, the websocket's and ``agentbus ask``'s (the same
    defaults, tenant settings, default sources, limits and checks). ``verify``: the API's
    check of a principal's pending tenant version (`Authenticator.verified`)."""
    publishing = RedisRunPublishing(redis, app_settings.bus)
    return RunStarter(
        RedisIdempotencyClaims(redis),
        app_settings.api,
        publishing,
        defaults_of(app_settings),
        stores.tenant_settings,
        limits or limits_of(app_settings, redis),
        stores.conversations,
        models=app_settings.agents.served_models(),
        documents=stores.documents,
        graph=app_settings.retrieval.graph_extractor != "none" and stores.facts is not None,
        webhook_private_hosts=private_hosts(app_settings.gateway.webhook_private_hosts),
        turns=None
        if stores.turns is None
        else TurnPublisher(publishing, stores.turns, publishing.first_turns),
        memories=stores.memories,
        memory_marks=RedisMemoryMarks(redis),
        verify=verify,
        version_copy=functools.partial(tenant_versions.raise_copy, redis),
        cancel=functools.partial(request_cancel, redis, settings=app_settings.bus),
        transport_errors=(RedisError,),
        teams=team_book(app_settings, stores),
    )
