"""The dispatcher: sends due deliveries, signed, through the gateway's egress client.

Each attempt: claim the delivery (a lease on its schedule entry), sign the stored body with
the tenant's current secret and this attempt's timestamp, POST it through
`HttpEgressClient` with the tenant's egress allowlist (then the SSRF guard on every
resolved address, the connection pinned to the checked one; redirects are not followed;
an A2A push config's own headers beside the signature),
and record the outcome: ``delivered`` on 2xx; ``refused`` when the egress path refuses the
destination; ``failed`` on 410 Gone or once the retry window is over; otherwise
``retrying`` after an exponential backoff with a little jitter.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import structlog
from prometheus_client import Counter

from bus.errors import StoreError
from gateway.egress.client import HttpEgressClient
from gateway.egress.policy import EgressPolicy
from gateway.egress.ssrf import system_resolver
from gateway.errors import EgressBlocked, GatewayError, HostUndeclared, SsrfBlocked
from gateway.ports import Resolver, TenantPolicies
from gateway.webhooks import signing
from gateway.webhooks.schedule import Delivery, DeliveryStatus, Schedule

log = structlog.get_logger("gateway.webhooks.dispatcher")

ATTEMPTS = Counter(
    "agentbus_webhook_attempts_total", "Webhook delivery attempts by outcome", ["outcome"]
)

SecretOf = Callable[[str], Awaitable[str]]
"""The tenant's current signing secret (``whsec_...``)."""

_REFUSED = (EgressBlocked, SsrfBlocked, HostUndeclared)
_MAX_ERROR = 300


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How long and how often a failing delivery is tried again."""

    backoff_s: float = 5.0
    backoff_max_s: float = 3600.0
    retry_for_s: float = 86_400.0

    def next_at(self, delivery: Delivery, now: float) -> float | None:
        """When to try again after ``delivery.attempts`` failures; None once past the window."""
        delay = min(self.backoff_s * 2 ** (delivery.attempts - 1), self.backoff_max_s)
        at = now + delay * (1 + random.random() / 10)
        return at if at <= delivery.created_at + self.retry_for_s else None


class Dispatcher:
    """Claims and sends due deliveries, at most ``concurrency`` at once per process.

    Args:
        schedule: the delivery schedule.
        secret_of: the tenant's signing secret.
        policies: the tenants' egress allowlists (the gateway's own policies).
        retry: the backoff and retry window.
        timeout_s: time a receiver has for one attempt.
        allow_private: operator-named hosts that may be private addresses.
        resolver: DNS (tests inject their own).
        concurrency: attempts in flight at once.
        poll_s: how often to look for due deliveries when there are none.
    """

    def __init__(
        self,
        schedule: Schedule,
        secret_of: SecretOf,
        policies: TenantPolicies,
        *,
        retry: RetryPolicy,
        timeout_s: float = 10.0,
        allow_private: frozenset[str] = frozenset(),
        resolver: Resolver = system_resolver,
        concurrency: int = 16,
        poll_s: float = 0.25,
    ) -> None:
        self._schedule = schedule
        self._secret_of = secret_of
        self._policies = policies
        self._retry = retry
        self._timeout_s = timeout_s
        self._allow_private = allow_private
        self._resolver = resolver
        self._slots = asyncio.Semaphore(concurrency)
        self._concurrency = concurrency
        self._poll_s = poll_s
        self.inflight: set[asyncio.Task[None]] = set()

    async def run(self, shard: int, stopping: asyncio.Event) -> None:
        """Send the shard's due deliveries until ``stopping``, then let attempts finish."""
        try:
            while not stopping.is_set():
                pause = self._poll_s
                try:
                    started = await self._round(shard)
                except Exception:  # the loop serves every webhook: it must outlive any error
                    log.exception("webhook dispatch failed, retrying", shard=shard)
                    started, pause = 0, max(1.0, self._poll_s)
                if not started:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stopping.wait(), pause)
        finally:
            if self.inflight:
                await asyncio.wait(self.inflight, timeout=self._timeout_s + 5)

    async def _round(self, shard: int) -> int:
        now = time.time()
        started = 0
        for delivery_id in await self._schedule.due(shard, now, self._concurrency):
            await self._slots.acquire()
            lease = now + self._timeout_s * 2 + 5
            try:
                delivery = await self._schedule.claim(
                    shard, delivery_id, now=time.time(), lease_until=lease
                )
            except BaseException:
                self._slots.release()
                raise
            if delivery is None:
                self._slots.release()
                continue
            task = asyncio.create_task(self._attempt(shard, delivery))
            self.inflight.add(task)
            task.add_done_callback(self._done)
            started += 1
        return started

    def _done(self, task: asyncio.Task[None]) -> None:
        self.inflight.discard(task)
        self._slots.release()

    async def _attempt(self, shard: int, delivery: Delivery) -> None:
        try:
            status, changes = await self._send(delivery)
        except Exception as e:  # a bug in one attempt must not lose the delivery
            log.exception("webhook attempt crashed", delivery=delivery.id)
            status = DeliveryStatus.RETRYING
            changes: dict[str, str | int | float] = {"last_error": repr(e)[:_MAX_ERROR]}
        now = time.time()
        next_at = None
        if status is DeliveryStatus.RETRYING:
            next_at = self._retry.next_at(delivery, now)
            if next_at is None:
                status = DeliveryStatus.FAILED
        if status is DeliveryStatus.DELIVERED:
            changes["delivered_at"] = now
        ATTEMPTS.labels(status.value).inc()
        owned = await self._schedule.finish(
            shard, delivery, status, next_at=next_at, changes=changes
        )
        log.info(
            "webhook attempt",
            delivery=delivery.id,
            run_id=delivery.run_id,
            tenant_id=delivery.tenant_id,
            attempt=delivery.attempts,
            status=status.value,
            recorded=owned,
        )

    async def _send(
        self, delivery: Delivery
    ) -> tuple[DeliveryStatus, dict[str, str | int | float]]:
        try:
            secret = await self._secret_of(delivery.tenant_id)
            policy = await self._policies.for_tenant(delivery.tenant_id)
        except StoreError as e:
            return DeliveryStatus.RETRYING, _error(str(e))
        egress = EgressPolicy(
            enabled=policy.egress_enabled, allowed_hosts=policy.allowed_egress_hosts
        )
        body = delivery.body.encode()
        headers = signing.signed_headers(secret, delivery.id, int(time.time()), body)
        headers["content-type"] = "application/json"
        if delivery.headers:  # an A2A push config's token and Authorization
            headers.update(json.loads(delivery.headers))
        client = HttpEgressClient(
            egress,
            resolver=self._resolver,
            timeout_s=self._timeout_s,
            max_response_bytes=4096,
            max_redirects=0,
            user_agent="agentbus-webhooks/0.1",
            allow_private=self._allow_private,
        )
        try:
            async with client:
                response = await client.request("POST", delivery.url, headers=headers, content=body)
        except _REFUSED as e:
            return DeliveryStatus.REFUSED, _error(f"{e.code}: {e}")
        except GatewayError as e:
            return DeliveryStatus.RETRYING, _error(f"{e.code}: {e}")
        code = response.status_code
        changes: dict[str, str | int | float] = {"last_status_code": code, "last_error": ""}
        if 200 <= code < 300:
            return DeliveryStatus.DELIVERED, changes
        changes["last_error"] = f"the receiver answered {code}"
        if code == 410:  # Gone: the receiver asks never to be sent this again
            return DeliveryStatus.FAILED, changes
        return DeliveryStatus.RETRYING, changes


def _error(text: str) -> dict[str, str | int | float]:
    return {"last_error": text[:_MAX_ERROR]}
