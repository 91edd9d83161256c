"""Webhooks: the tenant's signing secret and a run's deliveries."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from agentbus_contracts.base import View


class WebhookSecret(View):
    """The tenant's signing secret: verify ``webhook-signature`` with it (Standard Webhooks)."""

    secret: str = Field(description="whsec_ + base64 of the HMAC-SHA256 key.")
    created_at: datetime


class Delivery(View):
    """One webhook message of a run and where its delivery stands."""

    id: str = Field(description="The webhook-id header: the same on every retry.")
    type: str
    url: str
    status: str = Field(description="pending | sending | retrying | delivered | failed | refused")
    attempts: int
    created_at: datetime
    next_attempt_at: datetime | None = None
    last_attempt_at: datetime | None = None
    last_status_code: int | None = None
    last_error: str | None = None
    delivered_at: datetime | None = None


class DeliveryList(View):
    """A run's webhook deliveries, oldest first."""

    run_id: str
    deliveries: list[Delivery]
