"""A2A push notifications: a task's ``TaskPushNotificationConfig`` methods (A2A 1.0, 3.1.7-10).

A config names a URL the task's updates are POSTed to (`gateway.webhooks.a2a_payloads`:
``input-required`` at a gate, the task once it ends), through agentbus's signed webhooks:
the URL must be one the tenant's webhooks may reach (its egress allowlist, no private
address unless the deployment named the host; else -32602), every attempt is signed
(``webhook-signature``) and carries the config's ``token`` as ``X-A2A-Notification-Token``
and its ``authentication`` as ``Authorization``. Only the task's owner may set, read or
delete its configs; another's task, or a config that does not exist, is -32001. Answers
never repeat ``authentication.credentials``.

A config given with ``SendMessage`` is followed from the run's first event; one created
later, from the moment it is created (on a task that has ended it is kept, and sends
nothing).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from a2a.types import a2a_pb2 as a2a
from google.protobuf import json_format

from api.app.access import RunRef
from api.app.errors import NotOwner, RunNotFound, WebhookRefused
from api.http.a2a_rpc import INVALID_PARAMS, TASK_NOT_FOUND, RpcError, parse_params
from bus.json_values import is_object
from gateway.webhooks.push_configs import FROM_NOW, MAX_CONFIGS, PushConfig, PushConfigs
from gateway.webhooks.schedule import WebhookSpec

if TYPE_CHECKING:
    from api.app.auth import Principal
    from api.http.a2a_uses import A2aUses

_MAX_ID = 128


def _configs(deps: A2aUses) -> PushConfigs:
    assert deps.push_configs is not None  # the route answers -32003 without them
    return deps.push_configs


async def _own_task(deps: A2aUses, who: Principal, task_id: str) -> RunRef:
    try:
        return await deps.access.visible(who, task_id, read=None)
    except (RunNotFound, NotOwner) as e:
        raise RpcError(TASK_NOT_FOUND, f"no task {task_id[:80]!r}: task not found") from e


def _view(task_id: str, config: PushConfig) -> dict[str, Any]:
    out = a2a.TaskPushNotificationConfig(
        id=config.id, task_id=task_id, url=config.url, token=config.token
    )
    if config.scheme:
        out.authentication.scheme = config.scheme
    return json_format.MessageToDict(out)


async def attach(
    deps: A2aUses,
    who: Principal,
    ref: RunRef,
    given: a2a.TaskPushNotificationConfig,
    *,
    cursor: str,
) -> PushConfig:
    """Keep ``given`` for the task and have its updates followed from ``cursor``.

    Raises:
        RpcError: -32602 for a config without a URL, one the tenant's webhooks may not
            reach, a bad id, or one config too many.
    """
    if not given.url:
        raise RpcError(INVALID_PARAMS, "url: the webhook URL is required")
    config_id = given.id or uuid.uuid4().hex
    if len(config_id) > _MAX_ID:
        raise RpcError(INVALID_PARAMS, f"id: at most {_MAX_ID} characters")
    try:
        url = await deps.starter.webhook_url(who.tenant_id, given.url)
    except WebhookRefused as e:
        raise RpcError(INVALID_PARAMS, f"url: {e.message}", {"code": e.code}) from e
    store = _configs(deps)
    known = await store.get(ref.run_id, ref.shard, config_id)
    if known is None and await store.count(ref.run_id, ref.shard) >= MAX_CONFIGS:
        raise RpcError(INVALID_PARAMS, f"a task has at most {MAX_CONFIGS} push configs")
    auth = given.authentication
    config = PushConfig(
        id=config_id, url=url, token=given.token, scheme=auth.scheme, credentials=auth.credentials
    )
    record = ref.record
    context = (record.conversation_id or "") if record is not None else ""
    spec = WebhookSpec(tenant_id=who.tenant_id, subject=who.subject, conversation_id=context)
    ended = record is not None and record.is_terminal
    await store.put(ref.run_id, ref.shard, config, spec, cursor=cursor, follow=not ended)
    return config


def _flat(params: object) -> object:
    # A2A 0.3 nested the config (``{"taskId", "pushNotificationConfig": {...}}``).
    if is_object(params) and is_object(nested := params.get("pushNotificationConfig")):
        return {**nested, "taskId": params.get("taskId", nested.get("taskId"))}
    return params


async def create(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``CreateTaskPushNotificationConfig``: the config as kept (its id made if not given)."""
    given = parse_params(_flat(params), a2a.TaskPushNotificationConfig())
    ref = await _own_task(deps, who, given.task_id)
    config = await attach(deps, who, ref, given, cursor=FROM_NOW)
    return _view(ref.run_id, config)


async def get(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``GetTaskPushNotificationConfig``: one config, or -32001."""
    given = parse_params(params, a2a.GetTaskPushNotificationConfigRequest())
    ref = await _own_task(deps, who, given.task_id)
    config = await _configs(deps).get(ref.run_id, ref.shard, given.id)
    if config is None:
        raise RpcError(TASK_NOT_FOUND, f"task {ref.run_id!r} has no push config {given.id!r}")
    return _view(ref.run_id, config)


async def listing(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``ListTaskPushNotificationConfigs``: every config of the task (one page)."""
    given = parse_params(params, a2a.ListTaskPushNotificationConfigsRequest())
    ref = await _own_task(deps, who, given.task_id)
    found = await _configs(deps).list(ref.run_id, ref.shard)
    return {"configs": [_view(ref.run_id, c) for c in found], "nextPageToken": ""}


async def delete(deps: A2aUses, who: Principal, params: object) -> dict[str, Any]:
    """``DeleteTaskPushNotificationConfig``: gone, whether it was there or not."""
    given = parse_params(params, a2a.DeleteTaskPushNotificationConfigRequest())
    ref = await _own_task(deps, who, given.task_id)
    await _configs(deps).delete(ref.run_id, ref.shard, given.id)
    return {}
