"""A question's ``webhook_url``: checked when the run starts, registered with its publication.

The URL must be one the tenant's egress path could reach (its allowlist, no literal private
address unless the deployment named the host); the dispatcher checks it again, with DNS,
before every attempt. The registration is written with the run's publication
(`api.app.ports.RunPublishing`), so a run that was published always has its webhook, and
one that was not never does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from api.app.errors import WebhookRefused
from gateway.egress.policy import EgressPolicy
from gateway.errors import GatewayError
from gateway.webhooks.target import precheck

if TYPE_CHECKING:
    from api.app.preferences import Effective


@dataclass(frozen=True, slots=True)
class WebhookRequest:
    """Where a question wants its run's result POSTed, and whether approvals go there too."""

    url: str
    approvals: bool = False


def webhook_of(url: str | None, approvals: bool) -> WebhookRequest | None:
    """The webhook a request names, if it names one."""
    return WebhookRequest(url, approvals) if url else None


def check_webhook(
    effective: Effective, webhook: WebhookRequest, allow_private: frozenset[str]
) -> WebhookRequest:
    """The request with its URL normalised, or ``WebhookRefused`` if the tenant's egress
    path may not reach it (``allow_private``: the deployment's named private hosts)."""
    hosts = frozenset(effective.egress_hosts)
    egress = EgressPolicy(enabled=effective.egress_enabled, allowed_hosts=hosts)
    try:
        url = precheck(webhook.url, egress, allow_private)
    except (GatewayError, ValueError) as e:
        raise WebhookRefused(str(e), field="webhook_url") from e
    return WebhookRequest(url, webhook.approvals)
