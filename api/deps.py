"""What the API's routes need, wired once by the composition root and handed to the app."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.auth import Authenticator
from api.limits import TenantLimits
from api.relay import Relay
from api.starter import RunStarter

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from agents.gates import AllowAlways
    from api.bootstrap import Stores
    from bus.settings import Settings
    from bus.store import (
        ApiKeyStore,
        CheckpointStore,
        ConversationStore,
        RunStore,
        TenantSettingsStore,
        WebhookSecretStore,
    )


@dataclass(frozen=True, kw_only=True)
class ApiDeps:
    """Dependencies of the API app (no module globals: every route reads these).

    Attributes:
        settings: the deployment settings.
        redis: the shared Redis client.
        runs: the run store.
        conversations: the conversation store.
        keys: the API key store.
        tenant_settings: the tenants' preferences.
        auth: turns API keys into principals.
        limits: per-tenant rate limit and concurrent-run quota.
        starter: admits and publishes runs.
        relay: the process's shared reader of run event streams.
    """

    settings: Settings
    redis: Redis
    runs: RunStore
    conversations: ConversationStore
    keys: ApiKeyStore
    tenant_settings: TenantSettingsStore
    auth: Authenticator
    limits: TenantLimits
    starter: RunStarter
    relay: Relay
    checkpoints: CheckpointStore | None = None
    allow_always: AllowAlways | None = None
    webhook_secrets: WebhookSecretStore | None = None


def make_deps(settings: Settings, redis: Redis, stores: Stores) -> ApiDeps:
    """Wire the API's dependencies from a Redis client and the store's repositories."""
    from api.bootstrap import allow_always_hook  # the composition root imports this module

    limits = TenantLimits(
        redis,
        per_minute=settings.api_rate_per_minute,
        burst=settings.api_rate_burst,
        max_active=settings.api_max_active_runs,
    )
    return ApiDeps(
        settings=settings,
        redis=redis,
        runs=stores.runs,
        conversations=stores.conversations,
        keys=stores.keys,
        tenant_settings=stores.tenant_settings,
        auth=Authenticator(stores.keys, cache_s=settings.api_key_cache_s),
        limits=limits,
        starter=RunStarter(redis, settings, stores.tenant_settings, limits),
        relay=Relay(redis, shards=settings.shards, block_ms=settings.relay_block_ms),
        checkpoints=stores.checkpoints,
        allow_always=allow_always_hook(stores),
        webhook_secrets=stores.webhook_secrets,
    )
