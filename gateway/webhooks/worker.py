"""The webhook worker: a watcher and a dispatcher per shard, run beside the gateway role.

It has the interface `bus.runtime.runner.Runner` drives (``run``, ``stop``, ``busy``,
``streams``, ``group``), so every process that runs gateway workers also sends webhooks,
from the same network position and through the same egress client as tool calls.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from bus.runtime.consumer import consumer_name
from gateway.egress.ssrf import system_resolver
from gateway.webhooks import signing
from gateway.webhooks.dispatcher import Dispatcher, RetryPolicy
from gateway.webhooks.schedule import Schedule
from gateway.webhooks.target import private_hosts
from gateway.webhooks.watcher import Watcher

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from bus.settings import BusSettings
    from bus.store import WebhookSecretStore
    from gateway.ports import Resolver, TenantPolicies
    from gateway.settings import GatewaySettings


def schedule_for(redis: Redis, settings: GatewaySettings, bus: BusSettings) -> Schedule:
    """The delivery schedule, keeping deliveries a run's lifetime past their retry window."""
    return Schedule(redis, ttl_s=int(settings.webhook_retry_for_s) + bus.run_ttl_s)


class StoredSecrets:
    """Each tenant's signing secret from the store, made on first use, cached briefly.

    Args:
        store: the webhook secret repository.
        cache_s: how long a secret is reused (a rotation reaches attempts this late).
    """

    def __init__(self, store: WebhookSecretStore, *, cache_s: float = 5.0) -> None:
        self._store = store
        self._cache_s = cache_s
        self._cache: dict[str, tuple[float, str]] = {}

    async def __call__(self, tenant_id: str) -> str:
        """The tenant's current secret."""
        now = time.monotonic()
        hit = self._cache.get(tenant_id)
        if hit is not None and hit[0] > now:
            return hit[1]
        record = await self._store.get(tenant_id)
        if record is None:
            record = await self._store.create_if_absent(
                tenant_id, signing.new_secret(), created_by="webhooks"
            )
        if len(self._cache) > 10_000:
            self._cache.clear()
        self._cache[tenant_id] = (now + self._cache_s, record.secret)
        return record.secret


class WebhookWorker:
    """Watches runs with webhooks and sends their deliveries, on every shard.

    Args:
        redis: the broker's client.
        settings: the retry window, backoff, timeout and private hosts.
        bus: the shards and how long a run's keys live.
        secrets: the tenants' signing secrets.
        policies: the tenants' egress allowlists.
        resolver: DNS for the egress client (tests inject one).
    """

    group = "webhooks"
    streams: list[str] = []

    def __init__(
        self,
        redis: Redis,
        settings: GatewaySettings,
        bus: BusSettings,
        secrets: WebhookSecretStore,
        policies: TenantPolicies,
        *,
        resolver: Resolver | None = None,
    ) -> None:
        self._shards = bus.shards
        self._stopping = asyncio.Event()
        schedule = schedule_for(redis, settings, bus)
        self.watcher = Watcher(redis, schedule, consumer_name(), retention_s=bus.run_ttl_s)
        self.dispatcher = Dispatcher(
            schedule,
            StoredSecrets(secrets),
            policies,
            retry=RetryPolicy(
                backoff_s=settings.webhook_backoff_s,
                backoff_max_s=settings.webhook_backoff_max_s,
                retry_for_s=settings.webhook_retry_for_s,
            ),
            timeout_s=settings.webhook_timeout_s,
            allow_private=private_hosts(settings.webhook_private_hosts),
            poll_s=settings.webhook_poll_ms / 1000,
            resolver=resolver or system_resolver,
        )

    @property
    def busy(self) -> bool:
        """True while an attempt is in flight (a drain waits for it)."""
        return bool(self.dispatcher.inflight)

    async def ensure_groups(self) -> None:
        """Nothing to create: the schedule is sorted sets and hashes, not a consumer group."""

    async def run(self) -> None:
        """Watch and dispatch on every shard until ``stop()``."""
        loops = [
            part
            for shard in range(self._shards)
            for part in (
                self.watcher.run(shard, self._stopping),
                self.dispatcher.run(shard, self._stopping),
            )
        ]
        await asyncio.gather(*loops)

    def stop(self) -> None:
        """Stop watching and claiming; attempts in flight finish first."""
        self._stopping.set()
