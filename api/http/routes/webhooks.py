"""Webhooks: the tenant's signing secret (``/settings/webhook-secret``) and a run's deliveries."""

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends

from agentbus_contracts import Delivery as DeliveryView
from agentbus_contracts import DeliveryList, WebhookSecret
from api.app.errors import RunNotFound, Unavailable
from api.app.webhook_secrets import WebhookSecrets
from api.http.responses import ADMIN, errors
from api.http.routes.common import Access, Admin, Caller, use_case
from gateway.webhooks.schedule import Delivery, Schedule

router = APIRouter(prefix="/api/v1", tags=["webhooks"])


#: None: webhook secrets need the state store.
_Secrets = Annotated[WebhookSecrets | None, Depends(use_case(lambda deps: deps.webhook_secrets))]
#: None: this API process was not given the webhook schedule.
_Schedule = Annotated[Schedule | None, Depends(use_case(lambda deps: deps.webhooks))]


def _secrets(secrets: WebhookSecrets | None) -> WebhookSecrets:
    if secrets is None:
        raise Unavailable("webhook secrets need the state store")
    return secrets


def _schedule(schedule: Schedule | None) -> Schedule:
    if schedule is None:
        raise Unavailable("this API process was not given the webhook schedule")
    return schedule


@router.get("/settings/webhook-secret", response_model=WebhookSecret, responses=errors(*ADMIN))
async def get_webhook_secret(secrets: _Secrets, admin: Admin) -> WebhookSecret:
    """The tenant's webhook signing secret, made on first request (admin keys only)."""
    return await _secrets(secrets).current(admin)


@router.post(
    "/settings/webhook-secret/rotate", response_model=WebhookSecret, responses=errors(*ADMIN)
)
async def rotate_webhook_secret(secrets: _Secrets, admin: Admin) -> WebhookSecret:
    """Replace the secret; attempts from a few seconds later are signed with the new one."""
    return await _secrets(secrets).rotate(admin)


@router.get("/runs/{run_id}/deliveries", response_model=DeliveryList, responses=errors(RunNotFound))
async def list_deliveries(
    run_id: str, access: Access, schedule: _Schedule, caller: Caller
) -> DeliveryList:
    """The run's webhook deliveries and their status (404 for another user's or tenant's
    run; a tenant admin's read of another user's run is audited)."""
    ref = await access.visible(caller, run_id, read="read_run_deliveries")
    deliveries = await _schedule(schedule).for_run(ref.run_id, ref.shard)
    return DeliveryList(run_id=ref.run_id, deliveries=[_view(d) for d in deliveries])


def _when(ts: float | None) -> datetime | None:
    return None if ts is None else datetime.fromtimestamp(ts, UTC)


def _view(d: Delivery) -> DeliveryView:
    return DeliveryView(
        id=d.id,
        type=d.type,
        url=d.url,
        status=d.status.value,
        attempts=d.attempts,
        created_at=datetime.fromtimestamp(d.created_at, UTC),
        next_attempt_at=_when(d.next_attempt_at),
        last_attempt_at=_when(d.last_attempt_at),
        last_status_code=d.last_status_code,
        last_error=d.last_error,
        delivered_at=_when(d.delivered_at),
    )
